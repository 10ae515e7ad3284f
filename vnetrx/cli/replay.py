"""``vnetrx replay``: a stream of frames through a stateful virtio-net receive ring."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, TypeVar

import click

from vnetrx.cli import cli
from vnetrx.cli.device_options import device_options, xdp_program_options
from vnetrx.cli.gro_options import gro_options, resolve_napi
from vnetrx.cli.options import Count, build_options, kernel_option
from vnetrx.cli.replay_vhost import run_vhost, vhost_replay_options
from vnetrx.cli.tap_options import tap_options
from vnetrx.errors import InputError
from vnetrx.kernel.choice import options_profile
from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.replay import RingConfig, Stream
from vnetrx.replay.frames import (
    MAX_FRAMES,
    BeyondMtu,
    Frames,
    Item,
    nonempty,
    open_frames,
    parse_list,
    watched_lists,
)
from vnetrx.replay.napi import every_frame, no_frame

if TYPE_CHECKING:
    from vnetrx.paths.gro import Delivered, UdpGro
    from vnetrx.replay.gro import GroFrames
    from vnetrx.stop import StopOnSignal

T = TypeVar("T")
PROGRESS_FROM = 20_000


@cli.command()
@click.option(
    "--len",
    "lengths",
    metavar="LIST",
    default=None,
    help="Frame lengths, comma-separated: N, A-B, A-B:STEP, NxCOUNT (e.g. 60x11,9014,9018 or "
    "60,1000,3400-3500:8). Bytes after the virtio-net header, Ethernet header included.",
)
@click.option(
    "--from",
    "-r",
    "from_file",
    metavar="FILE",
    default=None,
    help="Read the frames from FILE (- for standard input): a pcap/pcapng capture (Ethernet, "
    "Linux cooked SLL/SLL2 from tcpdump -i any, or raw IP: each packet replayed as the "
    "Ethernet frame a device received, what this host sent left out; read as a stream, "
    "lengths as on the wire), a JSON array of lengths or of objects "
    "{\"len\": L, \"hdr\": HEX, \"l4\": \"tcp4\", \"tcp_options\": N} or {\"frame\": HEX, "
    "\"hdr\": HEX} (frame: the Ethernet frame's bytes; hdr: the 10-byte virtio_net_hdr the "
    "device wrote, or 12 with num_buffers, which is not read), or text in the LIST syntax (# "
    "starts a comment). -r FILE as tcpdump's.",
)
@click.option(
    "-c",
    "--count",
    type=Count(1, 1 << 62, "frames"),
    default=None,
    help="Stop after N frames (as tcpdump -c).",
)
@click.option(
    "-l",
    "--line-buffered",
    is_flag=True,
    help="Write each row as soon as it is computed, whatever standard output is (as tcpdump "
    "-l). Rows are written so already when --from - is a pipe or a terminal.",
)
@device_options(
    "mergeable", "guest_gso", "mtu", "hdr_len", "ring_size", "buf_len",
    where={"guest_gso": "Replayed without --mergeable too (as --mtu above 1500): each frame "
           "in a chain of its own, decided alone in order with its NAPI poll; no EWMA, no "
           "page_frag and no ring occupancy (those fields are null).",
           "buf_len": "Only with --path vhost-rx (default: get_mergeable_buf_len of a fresh "
           "ring, EWMA 0); --path virtio sizes each refill from the EWMA of the frames "
           "before it."},
    defaults={"hdr_len": "12"},
)
@vhost_replay_options
@click.option(
    "--ifindex",
    type=Count(1, (1 << 31) - 1, "(an interface index)"),
    default=None,
    help="With a Linux cooked v2 capture (tcpdump -i any): only the packets of the interface "
    "with this index (ip -o link shows them; cat /sys/class/net/DEV/ifindex).",
)
@click.option(
    "--batch",
    type=Count(1, MAX_FRAMES, "frames"),
    default=1,
    show_default=True,
    help="Frames the device writes before each NAPI poll (a poll takes at most 64).",
)
@click.option(
    "--polls",
    metavar="LIST",
    default=None,
    help="Batch sizes in order instead of --batch, e.g. 33,31 or 1x20,44 (what the guest's "
    "napi:napi_poll tracepoint reported as work); they must add up to the frame count.",
)
@xdp_program_options("is attached before virtnet_open, so every buffer is posted with the "
                     "XDP geometry (see `vnetrx trace --xdp`); each frame is decided by the "
                     "XDP branch's decisions, once per geometry.")
@kernel_option
@build_options
@click.option(
    "--show",
    type=Count(0, MAX_FRAMES - 1, "(a frame index)"),
    default=None,
    metavar="N",
    help="Also print frame N's buffers inside their backing pages, and its skb.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (vnetrx.replay/1).")
@click.option(
    "--offload",
    type=click.Choice(["none", "auto", "auto-valid"]),
    default="none",
    show_default=True,
    help="With a capture: derive each frame's virtio_net_hdr from its bytes. auto: NEEDS_CSUM "
    "at the TCP/UDP header (what a host's own stack sends); auto-valid: DATA_VALID (what it "
    "forwards after its NIC's GRO); either way a frame longer than the MTU is GSO (TCPV4/TCPV6 "
    "or UDP_L4, gso_size --mss). none: no header (flags 0, GSO_NONE).",
)
@click.option(
    "--mss",
    type=Count(1, 65535, "bytes"),
    default=None,
    help="With --offload: the gso_size of GSO frames. Default: the MTU less the frame's IP and "
    "TCP/UDP headers.",
)
@click.option("--gro", is_flag=True,
              help="Then GRO, over a capture or JSON objects with \"frame\". The skbs of each "
              "NAPI poll (--batch, --polls) go through GRO together (the frames' own TCP/IP "
              "headers decide the merges; a capture's checksums are trusted, a JSON frame's are "
              "summed when its skb is CHECKSUM_NONE, as GRO sums them): one row "
              "per skb the stack receives, in delivery order (vnetrx.replay-gro-row/1 with "
              "--jsonl), or the totals with --summary.")
@gro_options
@tap_options
@click.option("--udp-gro-socket", "udp_gro_socket", type=Count(1, 65535, "port"), multiple=True,
              metavar="PORT",
              help="With --gro: a UDP socket with UDP_GRO (setsockopt SOL_UDP UDP_GRO) is bound "
              "to the wildcard address on PORT (repeatable): udp4/6_gro_receive finds it and "
              "merges the datagrams to that port (CHECKSUM_PARTIAL, SKB_GSO_UDP_L4, at most 64 "
              "a skb). Without one a UDP datagram is never merged.")
@click.option("--udp-gro-forwarding", is_flag=True,
              help="With --gro: NETIF_F_GRO_UDP_FWD on the device (ethtool -K DEV "
              "rx-udp-gro-forwarding on): datagrams to a port without a UDP_GRO socket are "
              "merged too.")
@click.option("--gro-list", is_flag=True,
              help="With --gro: NETIF_F_GRO_FRAGLIST on the device (ethtool -K DEV rx-gro-list "
              "on): datagrams no UDP_GRO socket takes are chained whole on frag_list "
              "(SKB_GSO_FRAGLIST; TCP fraglist GRO is not modelled).")
@click.option("--no-gro", is_flag=True,
              help="With --gro: the device's GRO is off (ethtool -K DEV gro off: "
              "netif_elide_gro): every skb goes on unmerged.")
@click.option("--jsonl", "as_jsonl", is_flag=True,
              help="Stream one compact JSON row per frame (vnetrx.replay-row/1).")
@click.option("--detail", is_flag=True,
              help="With --jsonl: each frame's full record with its narrated trace "
              "(vnetrx.replay-frame/1), instead of the compact row.")
@click.option("--summary", is_flag=True,
              help="Only the totals: frames, bytes, drops by reason, build_skb share, bytes "
              "copied, allocations, buffers, pages, truesize sum/min/median/p99/max and per frame "
              "byte, frag_list skbs (text, or vnetrx.replay-summary/1 with --json).")
def replay(lengths: str | None, from_file: str | None, **o: Any) -> None:
    """Feed a stream of frames through a stateful virtio-net rx ring.

    \b
    The ring is filled when the device starts (virtnet_open, EWMA 0), every frame uses the
    next posted buffers in order, the EWMA of frame lengths sizes each refill, and NAPI
    refills only when more than min(budget 64, ring size) / 2 descriptors are free. Per frame:
    the buffers it used (page and offset), the skb (truesize, frags), the EWMA and the ring.
    Big mode (no --mergeable; --guest-gso or --mtu above 1500) posts a page chain per buffer
    from rq->pages: each frame is decided in a chain of its own, in order, with its NAPI poll
    (no EWMA, no page_frag; the chains' places in the ring are not followed).

    \b
    Examples:
      vnetrx replay --len 60x11,9014,9018 --mergeable --mtu 9000 --kernel 6.12
      vnetrx replay --len 60,1000,3400-3500:8 --mergeable --show 2
      vnetrx replay --from capture.pcapng --mergeable --kernel 6.1 --json
      vnetrx replay --len 9000x40 --mergeable --batch 8 --jsonl | jq .ewma
      tcpdump -i tap0 -w - | vnetrx replay --from - --mergeable --summary
      vnetrx replay --from lens.txt --mergeable --mtu 9000 --polls 33,31 --kernel 6.1
      vnetrx replay --from gso-frames.json --mergeable --guest-gso --kernel 6.6.44
      vnetrx replay --from flow.pcap --mergeable --batch 64 --gro --jsonl
      vnetrx replay --from frames.json --mtu 9000 --kernel 6.12 --gro --polls 46,1
      vnetrx replay --from flow.pcap --path tap --gro --napi timeout --summary
      vnetrx replay --path vhost-rx --len 3000,100 --mergeable --buf-len 1536 --in-order
    """
    if run_vhost(lengths, from_file, o):  # --path vhost-rx (cli/replay_vhost.py)
        return
    from vnetrx.stop import StopOnSignal

    with StopOnSignal() as stop:
        try:
            frames = _replay(lengths, from_file, o, stop)
        except InputError:
            if stop.stopped:  # the input ended early because of the signal: not its fault
                raise KeyboardInterrupt from None
            raise
    if stop.stopped:  # Ctrl-C/SIGTERM: what was printed covers the frames before it
        what = f"{frames:,} frames" if frames is not None else "the frames"
        click.echo(f"vnetrx: interrupted (the output covers {what} before it)", err=True)
        sys.exit(130)


def _replay(lengths: str | None, from_file: str | None, o: dict[str, Any],
            stop: StopOnSignal) -> int | None:
    """Run and print; returns how many frames the output covers (None: not counted)."""
    if (lengths is None) == (from_file is None):
        raise click.UsageError("give the frames with exactly one of --len LIST and --from FILE")
    _check_path_options(o)
    if o["as_json"] and o["as_jsonl"]:
        raise click.UsageError("--json and --jsonl exclude each other")
    if o["show"] is not None and (o["as_json"] or o["as_jsonl"] or o["summary"]):
        raise click.UsageError("--show applies to the text output (the JSON has every frame)")
    if o["detail"] and not o["as_jsonl"]:
        raise click.UsageError("--detail applies to --jsonl (rows with each frame's full trace)")
    if o["summary"] and o["as_jsonl"]:
        raise click.UsageError("--summary prints the totals only: not with --jsonl")
    if o["polls"] is not None and _given_batch():
        raise click.UsageError("--batch and --polls exclude each other")
    if o["mss"] is not None and o["offload"] == "none":
        raise click.UsageError("--mss sets the gso_size --offload derives: give --offload too")
    if o["xdp_frags"] and o["xdp"] is None:
        raise click.UsageError("--xdp-frags describes the program: give --xdp ACTION too")
    derive = None
    if o["offload"] != "none":
        if lengths is not None:
            raise click.UsageError("--offload derives headers from a capture's bytes: use "
                                   "--from FILE")
        from vnetrx.packet import CaptureDeriver

        derive = CaptureDeriver(o["offload"], o["mtu"], o["mss"])
    kept: GroFrames | None = None
    if o["gro"]:
        if lengths is not None:
            raise click.UsageError("--gro merges by the frames' TCP/IP headers: give a capture "
                                   "or JSON objects {\"frame\": HEX, \"hdr\": HEX} (--from "
                                   "FILE)")
        if o["as_json"] or o["show"] is not None or o["detail"]:
            raise click.UsageError("--gro prints the skbs GRO delivers: as text, --jsonl or "
                                   "--summary (not --json, --show or --detail)")
        from vnetrx.replay.gro import GroFrames

        # what GRO reads of each frame, its writev boundaries (--napi frags) and, on the
        # tap, its capture time: kept by frame index as the frames are read
        kept = GroFrames(o["path"] == "tap" and o["napi"] == "frags", o["path"] == "tap")
    live = (from_file == "-" and _live_input()) or o["line_buffered"]
    if o["line_buffered"]:
        with contextlib.suppress(AttributeError, ValueError):
            sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    frames = (Frames(parse_list(lengths), None, False) if lengths is not None
              else open_frames(str(from_file), derive, partial=True, ifindex=o["ifindex"],
                               before_read=_flush_output if live else None, keep=kept,
                               # a capture's lengths in lists, their headers kept as read
                               # (the tap's GRO keeps time stamps too: frame by frame)
                               see=kept if kept is not None and not kept.timed else None))
    if o["count"] is not None:  # tcpdump -c: the frames after the Nth are not read
        frames = frames._replace(items=_first(frames.items, o["count"]))
    if o["ifindex"] is not None and from_file is None:
        raise click.UsageError("--ifindex selects a cooked capture's interface: give --from FILE")
    known = len(frames.items) if isinstance(frames.items, tuple) else None
    if o["show"] is not None and known is not None and o["show"] >= known:
        raise InputError(f"--show {o['show']}: there are {known} frames (valid: 0..{known - 1})")
    polls = parse_list(o["polls"], where="--polls") if o["polls"] is not None else ()
    if polls and known is not None and sum(polls) != known:
        raise InputError(
            f"the batches ({', '.join(map(str, polls))}) must be at least 1 frame each and "
            f"add up to the {known} frame(s)"
        )
    profile = options_profile(o)
    source = f"--len {lengths}" if lengths is not None else f"--from {from_file}"
    if o["path"] == "tap":
        writes = stop.items(_nonempty(_progress(frames.items, known, quiet=False), source,
                                      frames))
        assert kept is not None  # --path tap needs --gro (_check_path_options)
        return _after(frames, _tap_gro(profile, writes, kept, o, source,
                                       timed=known is None, live=live))
    device = VirtioRxSetup(mergeable=o["mergeable"], guest_gso=o["guest_gso"], mtu=o["mtu"],
                           hdr_len=int(o["hdr_len"]), ring_size=o["ring_size"], xdp=o["xdp"],
                           xdp_frags=o["xdp_frags"])
    config = RingConfig(device, batch=o["batch"], polls=polls)
    beyond = BeyondMtu(o["mtu"])
    items = beyond.watch(_progress(frames.items, known, quiet=o["as_json"] and not o["summary"]))
    if o["as_json"] and not o["summary"]:  # one document: every frame with its trace
        from vnetrx.render.replay_json import write_replay
        from vnetrx.replay import validate

        listed = tuple(islice(items, MAX_FRAMES + 1))
        if not listed:
            raise _no_frames(source, frames)
        if len(listed) > MAX_FRAMES:
            raise InputError(
                f"{source}: more than {MAX_FRAMES} frames for one --json document",
                hint="--jsonl and --summary stream any number of frames",
            )
        lens = tuple(x if isinstance(x, int) else x[0] for x in listed)
        validate(profile, config, lens)  # every frame, before the document begins
        # written as the frames go through: a document of 100,000 traced frames is gigabytes
        # as one dict (the same text; its input.frames is the input's count)
        stream = Stream(profile, config, stop.items(listed), want_trace=every_frame)
        done = write_replay(stream, source, len(listed), sys.stdout, lambda: stop.stopped)
        return _after(frames, done, beyond)
    want = every_frame if o["detail"] else no_frame
    show = o["show"]
    if show is not None:
        shown: int = show

        def want(index: int) -> bool:
            return index == shown
    # the compact rows and the totals show no per-frame ring: not keeping it is cheaper
    rings = not o["summary"] and (not o["as_jsonl"] or o["detail"])
    lists = watched_lists(frames, beyond)
    if (lists is not None and o["count"] is None
            and not _bar(known, quiet=o["as_json"] and not o["summary"])):
        # a capture's lengths (with --offload, their derived headers) read in lists: watched,
        # checked for a signal (between two lists: at most LENGTHS_BATCH frames later) and for
        # none at all list by list, then taken one by one through C's iteration
        frame_items: Iterable[Item] = chain.from_iterable(
            stop.items(_nonempty(lists, source, frames)))
    else:
        frame_items = stop.items(_nonempty(items, source, frames))
    stream = Stream(profile, config, frame_items, want_trace=want, rings=rings, frags=o["gro"])
    if o["offload"] != "none":
        stream.notes = (*stream.notes, _offload_note(o["offload"], o["mtu"], o["mss"]))
    if o["gro"]:
        assert kept is not None
        return _after(frames, _gro(profile, config, stream, kept, o, source, live), beyond)
    if o["as_jsonl"]:
        from vnetrx.render.replay_json import write_rows

        write_rows(stream, sys.stdout, detail=o["detail"], live=live)
        return _after(frames, None, beyond)
    if o["summary"] and o["as_json"]:
        from vnetrx.render.json_out import dumps
        from vnetrx.replay import new_totals

        totals = new_totals(profile, config)
        totals.add_all(stream.records)
        summary = totals.to_dict()
        if stop.stopped:
            summary["interrupted"] = True
        sys.stdout.write(dumps(summary))
        return _after(frames, totals.frames, beyond)
    from vnetrx.render.totals_text import plain_stdout, totals_line

    if o["summary"] and show is None and plain_stdout():  # one plain line: rich not loaded
        from vnetrx.replay import new_totals

        totals = new_totals(profile, config)
        totals.add_all(stream.records)
        sys.stdout.write(totals_line(totals) + "\n")
        return _after(frames, totals.frames, beyond)
    from vnetrx.render.replay_text import print_stream
    from vnetrx.render.text import stdout_console

    totals = print_stream(stream, stdout_console(), show, summary_only=o["summary"], live=live)
    if show is not None and show >= totals.frames and not stop.stopped:
        raise InputError(f"--show {show}: there are {totals.frames} frames "
                         f"(valid: 0..{totals.frames - 1})")
    return _after(frames, totals.frames, beyond)


def _after(frames: Frames, count: int | None, beyond: BeyondMtu | None = None) -> int | None:
    """``count``, once the output is written; a capture damaged after its first record is
    reported now, after the output of every whole record before the damage (tcpdump prints
    them, then its error, and exits 1)."""
    note = frames.cooked.note() if frames.cooked is not None else None
    if note:  # how a capture of another link type was read: after the output, on stderr
        sys.stdout.flush()
        sys.stderr.write(f"vnetrx: note: {note}\n")
    note = beyond.note() if beyond is not None else None
    if note:
        sys.stdout.flush()
        sys.stderr.write(f"vnetrx: note: {note}\n")
    if frames.damage:
        sys.stdout.flush()
        raise frames.damage[0]
    return count


def _offload_note(mode: str, mtu: int, mss: int | None) -> str:
    csum = ("NEEDS_CSUM at the TCP/UDP header" if mode == "auto"
            else "DATA_VALID (GSO frames too)")
    size = f"gso_size {mss}" if mss else "gso_size = the MTU less the IP and TCP/UDP headers"
    return (
        f"assumed (--offload {mode}): every TCP/UDP frame came with {csum}, and one longer "
        f"than the MTU ({mtu}) plus its Ethernet header is GSO ({size}); other frames with no "
        "header. What the host really wrote is not in a capture."
    )


def _udp_gro(o: dict[str, Any]) -> UdpGro:
    """--udp-gro-socket, --udp-gro-forwarding, --gro-list."""
    from vnetrx.paths.gro import UdpGro

    return UdpGro(tuple(o["udp_gro_socket"]), o["udp_gro_forwarding"], o["gro_list"])


def _gro(profile: KernelProfile, config: RingConfig, stream: Stream, kept: GroFrames,
         o: dict[str, Any], source: str, live: bool) -> int:
    """``--gro``: GRO over the replay, printed as it goes; returns the frames it covered."""
    from vnetrx.paths.gro import gro_limits, gso_window_note
    from vnetrx.replay.gro import replay_gro

    limits = gro_limits(profile, o["gro_max_size"], o["gro_ipv4_max_size"])
    delivered = replay_gro(profile, config, stream.records, kept, not o["no_gro"],
                           limits, udp_gro=_udp_gro(o))
    window = gso_window_note(profile)
    # --jsonl rows and --summary have none: the text renderer (and rich) is not imported
    heading = ""
    if not o["as_jsonl"] and not o["summary"]:
        from vnetrx.render.gro_text import virtio_gro_heading

        heading = virtio_gro_heading(stream, source)
    return _print_gro(delivered, o, heading, (*stream.notes, *((window,) if window else ())),
                      live)


def _print_gro(delivered: Iterable[tuple[int, Delivered]], o: dict[str, Any], heading: str,
               notes: tuple[str, ...], live: bool) -> int:
    """The skbs GRO delivers, as --jsonl rows or text; returns the frames they carry.
    ``live``: a feed read as it arrives (see write_delivered)."""
    if o["as_jsonl"]:
        from vnetrx.render.gro_json import write_delivered

        return write_delivered(delivered, sys.stdout, live)
    from vnetrx.render.totals_text import plain_stdout

    if o["summary"] and plain_stdout():  # the totals and notes, plain: rich not loaded
        from vnetrx.render.totals_text import gro_totals_lines, write_plain
        from vnetrx.replay.gro import GroTotals

        totals = GroTotals()
        totals.add_all(delivered)
        write_plain(gro_totals_lines(totals, notes))
        return totals.frames
    from vnetrx.render.gro_text import print_replay_gro
    from vnetrx.render.text import stdout_console

    return print_replay_gro(heading, notes, delivered, stdout_console(), o["summary"])


def _tap_gro(profile: KernelProfile, items: Iterable[Item], kept: GroFrames,
             o: dict[str, Any], source: str, timed: bool, live: bool) -> int:
    """``--path tap --gro``: each frame a write into an IFF_NAPI tap, then the tap's GRO.
    ``timed``: a capture, whose record times age the held skbs when --gro-flush-timeout NS
    is given."""
    from vnetrx.flow import (
        TAP_NAPI,
        TAP_NOTES,
        TIMED_NOTE,
        UNTIMED_NOTE,
        GroClock,
        TapWrite,
        replay_tap_gro,
    )
    from vnetrx.paths.gro import gro_limits, gso_window_note
    from vnetrx.paths.tun import TapSetup
    from vnetrx.render.gro_text import tap_gro_heading

    setup = TapSetup(blocking=o["blocking"], sndbuf=o["sndbuf"], vnet_hdr=not o["no_vnet_hdr"],
                     vnet_hdr_sz=o["vnet_hdr_sz"])
    size = o["vnet_hdr_sz"] or 10

    def writes() -> Iterator[TapWrite]:
        for index, item in enumerate(items):
            length, hdr = (item, None) if isinstance(item, int) else item
            if hdr is not None and not setup.vnet_hdr:
                raise InputError(f"frame {index} gives a virtio_net_hdr, but the tap has no "
                                 "IFF_VNET_HDR (--no-vnet-hdr)")
            yield TapWrite(index, length, hdr.to_bytes(size) if hdr is not None else None,
                           kept.read_input(index), kept.splits.pop(index, ()),
                           kept.times.pop(index, None))

    refused: list[str] = []
    limits = gro_limits(profile, o["gro_max_size"], o["gro_ipv4_max_size"])
    timeout = o["gro_flush_timeout"]
    clock = GroClock(timeout) if timed and timeout else None
    delivered = replay_tap_gro(profile, setup, writes(), o["napi"], not o["no_gro"], limits,
                               refused, clock, udp_gro=_udp_gro(o))
    timing = (() if o["napi"] != "timeout" else (TIMED_NOTE,) if clock is not None
              else (UNTIMED_NOTE,))
    window = gso_window_note(profile)
    count = _print_gro(delivered, o, tap_gro_heading(profile, o["napi"], source),
                       (*TAP_NOTES, TAP_NAPI[o["napi"]], *timing, *((window,) if window else ())),
                       live)
    if refused:
        sys.stdout.flush()
        sys.stderr.write(f"vnetrx: note: {len(refused)} write(s) did not reach GRO, e.g. "
                         f"{refused[0]}\n")
    return count


_VIRTIO_ONLY = ("mergeable", "guest_gso", "mtu", "hdr_len", "ring_size", "batch", "polls", "xdp",
                "xdp_frags", "show", "detail")
_TAP_ONLY = ("napi", "gro_flush_timeout", "blocking", "sndbuf", "vnet_hdr_sz", "no_vnet_hdr")
_GRO_ONLY = ("no_gro", "gro_max_size", "gro_ipv4_max_size", "udp_gro_socket",
             "udp_gro_forwarding", "gro_list")


def _check_path_options(o: dict[str, Any]) -> None:
    """Options of the other path, or GRO's without --gro: refused, naming them."""
    ctx = click.get_current_context()

    def given(names: tuple[str, ...]) -> list[str]:
        return ["--" + n.replace("_", "-") for n in names
                if ctx.get_parameter_source(n) is not click.core.ParameterSource.DEFAULT]

    if o["path"] == "tap" and not o["gro"]:
        raise click.UsageError("--path tap replays the writes through the tap's NAPI and GRO: "
                               "add --gro (one write's skb: vnetrx trace --path tap; every "
                               "length: vnetrx sweep --path tap)")
    wrong = given(_VIRTIO_ONLY if o["path"] == "tap" else _TAP_ONLY)
    if wrong:
        raise click.UsageError(f"{', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not "
                               f"apply to --path {o['path']}")
    wrong = [] if o["gro"] else given(_GRO_ONLY)
    if wrong:
        raise click.UsageError(f"{', '.join(wrong)} {'needs' if len(wrong) == 1 else 'need'} "
                               "--gro")
    o["napi"] = resolve_napi(ctx, o)


def _live_input() -> bool:
    """Standard input is a pipe, a socket or a terminal (``tcpdump -U -w - | vnetrx replay
    --from -``): a feed whose rows are written as they come, not a file read in bulk."""
    import os
    import stat

    try:
        return not stat.S_ISREG(os.fstat(0).st_mode)
    except OSError:
        return False


def _flush_output() -> None:
    """Before the capture reader waits for more of a live feed: what is computed is shown."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()


def _no_frames(source: str, frames: Frames) -> InputError:
    """A capture (or list) with no frame to replay; a cooked capture says what it left out."""
    note = frames.cooked.note() if frames.cooked is not None else None
    return InputError(f"{source}: no frames" + (f" ({note})" if note else ""))


def _first(items: Iterable[Item], count: int) -> Iterable[Item]:
    """The first ``count`` frames (a tuple stays a tuple: its length is known)."""
    if isinstance(items, tuple):
        return items[:count]
    return islice(items, count)


def _nonempty(items: Iterable[T], source: str, frames: Frames) -> Iterator[T]:
    """The frames, or an error if there are none (when the first is asked for)."""
    return nonempty(items, lambda: _no_frames(source, frames))


def _progress(items: Iterable[Item], total: int | None, quiet: bool) -> Iterable[Item]:
    """Frames with a progress bar on stderr (a terminal only; never on stdout), for runs of
    more than PROGRESS_FROM frames or of unknown length."""
    return _with_bar(items, total) if _bar(total, quiet) else items


def _bar(total: int | None, quiet: bool) -> bool:
    """Whether ``_progress`` shows a bar."""
    return not quiet and sys.stderr.isatty() and (total is None or total >= PROGRESS_FROM)


def _with_bar(items: Iterable[Item], total: int | None) -> Iterator[Item]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(f"{task.speed or 0:>10,.0f} frames/s")

    columns: list[ProgressColumn] = [TextColumn("replaying")]
    columns += [BarColumn(), MofNCompleteColumn()] if total else [
        TextColumn("{task.completed:,} frames")]
    columns += [Rate(), TimeElapsedColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("replay", total=total)
        step = 0
        for item in items:
            yield item
            step += 1
            if step == 4096:
                progress.advance(task, step)
                step = 0


def _given_batch() -> bool:
    ctx = click.get_current_context()
    return ctx.get_parameter_source("batch") not in (None, click.core.ParameterSource.DEFAULT)
