"""``vnetrx replay``: a stream of frames through a stateful virtio-net receive ring."""

from __future__ import annotations

import sys
from typing import Any

import click

from vnetrx.cli import cli
from vnetrx.cli.options import BuildChoice, Count, build_options, kernel_option, load_profile
from vnetrx.errors import InputError
from vnetrx.paths.virtio_net import MAX_FRAME_LEN
from vnetrx.replay import MAX_RING_SIZE, RingConfig
from vnetrx.replay import replay as run_replay
from vnetrx.replay.frames import MAX_FRAMES, parse_list, read_frames


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
    "from_file",
    metavar="FILE",
    default=None,
    help="Read the frames from FILE: a pcap/pcapng capture (Ethernet), a JSON array of lengths "
    "or of objects {\"len\": L, \"hdr\": HEX, \"l4\": \"tcp4\", \"tcp_options\": N} (hdr: the "
    "10-byte virtio_net_hdr the device wrote), or text in the LIST syntax (# starts a comment).",
)
@click.option(
    "--mergeable", is_flag=True, help="VIRTIO_NET_F_MRG_RXBUF negotiated: mergeable rx buffers."
)
@click.option(
    "--guest-gso",
    is_flag=True,
    help="Guest GSO negotiated (GUEST_TSO4/TSO6/ECN/UFO), with --mergeable: vi->big_packets "
    "sizes rq->min_buf_len for IP_MAX_MTU (matters with a small ring and an MTU below 65535).",
)
@click.option(
    "--mtu",
    type=Count(68, MAX_FRAME_LEN),
    default=1500,
    show_default=True,
    help="Device MTU (VIRTIO_NET_F_MTU). Without --mergeable it must be at most 1500 (small mode).",
)
@click.option(
    "--hdr-len",
    type=click.Choice(["10", "12", "20", "24"]),
    default="12",
    show_default=True,
    help="vi->hdr_len: 10 legacy, 12 VERSION_1 or MRG_RXBUF, 20 hash report (5.18+), 24 UDP "
    "tunnel GSO (6.18+).",
)
@click.option(
    "--ring-size",
    type=Count(1, MAX_RING_SIZE, "entries"),
    default=256,
    show_default=True,
    help="Entries in the rx virtqueue (QEMU's rx_queue_size).",
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
@click.option("--jsonl", "as_jsonl", is_flag=True, help="Print one JSON object per frame.")
def replay(lengths: str | None, from_file: str | None, **o: Any) -> None:
    """Feed a stream of frames through a stateful virtio-net rx ring.

    \b
    The ring is filled when the device starts (virtnet_open, EWMA 0), every frame uses the
    next posted buffers in order, the EWMA of frame lengths sizes each refill, and NAPI
    refills only when more than min(budget 64, ring size) / 2 descriptors are free. Per frame:
    the buffers it used (page and offset), the skb (truesize, frags), the EWMA and the ring.

    \b
    Examples:
      vnetrx replay --len 60x11,9014,9018 --mergeable --mtu 9000 --kernel 6.12
      vnetrx replay --len 60,1000,3400-3500:8 --mergeable --show 2
      vnetrx replay --from capture.pcapng --mergeable --kernel 6.1 --json
      vnetrx replay --len 9000x40 --mergeable --batch 8 --jsonl | jq .ring.ewma
      vnetrx replay --from lens.txt --mergeable --mtu 9000 --polls 33,31 --kernel 6.1
      vnetrx replay --from gso-frames.json --mergeable --guest-gso --kernel 6.6.44
    """
    if (lengths is None) == (from_file is None):
        raise click.UsageError("give the frames with exactly one of --len LIST and --from FILE")
    if o["as_json"] and o["as_jsonl"]:
        raise click.UsageError("--json and --jsonl exclude each other")
    if o["show"] is not None and (o["as_json"] or o["as_jsonl"]):
        raise click.UsageError("--show applies to the text output (the JSON has every frame)")
    frames, hdrs = (
        (parse_list(lengths), None) if lengths is not None else read_frames(str(from_file))
    )
    if o["show"] is not None and o["show"] >= len(frames):
        raise InputError(
            f"--show {o['show']}: there are {len(frames)} frames (valid: 0..{len(frames) - 1})"
        )
    if o["polls"] is not None and _given_batch():
        raise click.UsageError("--batch and --polls exclude each other")
    polls = parse_list(o["polls"], where="--polls") if o["polls"] is not None else ()
    choice = BuildChoice(o["arch"], o["page_size"], o["cache_line"], o["max_skb_frags"])
    profile = load_profile(o["kernel"], o["config"], choice)
    config = RingConfig(
        mergeable=o["mergeable"],
        guest_gso=o["guest_gso"],
        mtu=o["mtu"],
        hdr_len=int(o["hdr_len"]),
        ring_size=o["ring_size"],
        batch=o["batch"],
        polls=polls,
    )
    result = run_replay(profile, config, frames, hdrs)
    if o["as_json"] or o["as_jsonl"]:
        from vnetrx.render.replay_json import render_replay, render_replay_lines

        source = f"--len {lengths}" if lengths is not None else f"--from {from_file}"
        sys.stdout.write(
            render_replay_lines(result) if o["as_jsonl"] else render_replay(result, source)
        )
        return
    from vnetrx.render.replay_text import print_replay
    from vnetrx.render.text import stdout_console

    print_replay(result, stdout_console(), o["show"])


def _given_batch() -> bool:
    ctx = click.get_current_context()
    return ctx.get_parameter_source("batch") not in (None, click.core.ParameterSource.DEFAULT)
