"""``vnetrx replay --path vhost-rx``: a burst the host's tap queued, through vhost-net's
handle_rx into the guest's rx ring and the guest's receive path: one JSON line per packet
(vnetrx.vhost-rx-row/1) with --jsonl, else a table."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from click import UsageError

from vnetrx.cli.trace_vhost import mode_of, no_tap_offload_option, uniform_buffers_option
from vnetrx.kernel.choice import options_profile

# replay's options a vhost-rx replay reads; every other one given is refused
_READS = frozenset({
    "path", "mergeable", "guest_gso", "mtu", "hdr_len", "buf_len", "kernel", "config", "arch",
    "page_size", "cache_line", "max_skb_frags", "as_jsonl", "no_tap_offload",
    "uniform_buffers", "in_order", "gro", "polls", "summary", "no_gro", "gro_max_size",
    "gro_ipv4_max_size",
})
# read only with --gro (the guest's GRO after handle_rx)
_GRO_READS = ("polls", "summary", "no_gro", "gro_max_size", "gro_ipv4_max_size")
_VHOST_ONLY = ("buf_len", "no_tap_offload", "uniform_buffers", "in_order")
_VHOST_TX_ONLY = ("zcopy", "zcopy_offset")


def vhost_replay_options(f: Any) -> Any:
    """--path, and the options only --path vhost-rx reads."""
    f = uniform_buffers_option(f)
    f = no_tap_offload_option(f)
    f = click.option(
        "--zcopy-offset", type=click.IntRange(0, 65535), default=0, show_default=True,
        help="vhost-tx with --zcopy: where each chain (one descriptor: the vnet header, then "
        "the frame) starts in its page; the pinned frags follow from it.")(f)
    f = click.option(
        "--zcopy", is_flag=True,
        help="vhost-tx: vhost_net loaded with experimental_zcopytx=1 (handle_tx_zerocopy): no "
        "batching, one sendmsg per chain; chains of at least VHOST_GOODCOPY_LEN (256) bytes "
        "have their pages pinned as frags, and each chain is used and signalled alone once "
        "its skb is freed.")(f)
    f = click.option(
        "--in-order", "in_order", is_flag=True,
        help="vhost-rx, vhost-tx: VIRTIO_F_IN_ORDER negotiated (6.17+, 45347e79b544): one used "
        "element per vhost-rx packet (used_elems: the last chain's used length) and per "
        "vhost-tx used-ring update (used_elem: the update's last chain, len 0); used->idx "
        "still moves by every buffer. From the kernel source only: not measured (no 6.17+ "
        "vhost_net ran here).")(f)
    return click.option(
        "--path", "path", type=click.Choice(["virtio", "tap", "vhost-tx", "vhost-rx"]),
        default="virtio",
        show_default=True,
        help="virtio: the guest's rx ring fed frame by frame (a device that writes each frame "
        "as it comes); tap: frames written into an IFF_NAPI tap, one write(2) each "
        "(tun_get_user, then the tap's NAPI and GRO: with --gro, polled as --napi says); "
        "vhost-tx: frames a guest transmits (--from FILE.json of {\"len\", \"hdr\"} objects, "
        "or --len LIST), queued before one kick, through vhost-net's handle_tx into the tap: "
        "the batches, the runs, each buffer's place in vhost's page frag (--sndbuf, --xdp, "
        "--vnet-hdr-sz); --jsonl: one vnetrx.vhost-tx-row/1 line per frame. "
        "vhost-rx: frames the host's tap transmits (--from FILE.json of {\"len\", "
        "\"l4\", \"hdr\"} objects, or --len LIST), through vhost-net's handle_rx into the "
        "guest's buffers (--mergeable --buf-len N; --guest-gso: big mode; or small), then the guest's receive "
        "path; --jsonl: one vnetrx.vhost-rx-row/1 line per packet vhost takes off the tap. "
        "With --gro (objects {\"frame\": HEX, \"hdr\": HEX}, hdr the skb's offload state): "
        "then the guest's GRO, polling what each used-ring update and signal made visible, "
        "64 a poll (or --polls): rows as replay --gro's.")(f)


def run_vhost(lengths: str | None, from_file: str | None, o: dict[str, Any]) -> bool:
    """``replay``'s dispatch: False for --path virtio and tap (after refusing what only
    vhost-rx reads), else the vhost-rx or vhost-tx replay, done."""
    ctx = click.get_current_context()
    if o["path"] == "vhost-tx":
        from vnetrx.cli.replay_vhost_tx import replay_vhost_tx

        replay_vhost_tx(ctx, lengths, from_file, o)
        return True
    if o["path"] != "vhost-rx":
        _only(ctx, _VHOST_TX_ONLY, "vhost-tx")
        for name in _VHOST_TX_ONLY:
            o.pop(name, None)
        if _given(ctx, ("buf_len",)):
            raise click.UsageError(
                "--buf-len does not apply to replay: each refill sizes its buffers from the "
                "EWMA of the frames before it (get_mergeable_buf_len); --path vhost-rx takes "
                "it", ctx)
        if _given(ctx, ("in_order",)):
            raise click.UsageError("--in-order applies to --path vhost-rx and vhost-tx only",
                                   ctx)
        _only(ctx, _VHOST_ONLY, "vhost-rx")
        for name in _VHOST_ONLY:
            o.pop(name, None)
        return False
    _replay_vhost(ctx, lengths, from_file, o)
    return True


def _only(ctx: click.Context, names: tuple[str, ...], path: str) -> None:
    """Refuse ``names`` given on the command line: they apply to ``--path path`` only."""
    given = _given(ctx, names)
    if given:
        raise click.UsageError(
            f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to --path "
            f"{path} only", ctx)


def _given(ctx: click.Context, names: tuple[str, ...]) -> list[str]:
    spelled = {p.name: p.opts[0] for p in ctx.command.params}
    return [spelled.get(n, "--" + n.replace("_", "-")) for n in names
            if ctx.get_parameter_source(n) not in (None, click.core.ParameterSource.DEFAULT)]


def _replay_vhost(ctx: click.Context, lengths: str | None, from_file: str | None,
                  o: dict[str, Any]) -> None:
    from vnetrx.paths.vhost.rx import (
        VhostRxSetup,
        host_skbs,
        notes_of,
        vhost_rx_config,
        vhost_rx_stream,
    )
    from vnetrx.render.vhost_rx import row_to_dict
    from vnetrx.replay.frames import parse_list
    from vnetrx.replay.vhost import length_frames, read_host_frame_bytes

    wrong = _given(ctx, tuple(p.name for p in ctx.command.params
                              if p.name is not None and p.name not in _READS
                              and p.name not in ("lengths", "from_file")))
    if wrong:
        raise click.UsageError(
            f"{', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not apply to --path "
            "vhost-rx", ctx)
    if (lengths is None) == (from_file is None):
        raise click.UsageError("give the frames with exactly one of --len LIST and --from FILE",
                               ctx)
    if not o["gro"]:
        wrong = _given(ctx, _GRO_READS)
        if wrong:
            raise click.UsageError(f"{', '.join(wrong)} {'needs' if len(wrong) == 1 else 'need'}"
                                   " --gro with --path vhost-rx", ctx)
    elif lengths is not None:
        raise click.UsageError("--gro merges by the frames' TCP/IP headers: give JSON objects "
                               "{\"frame\": HEX, \"hdr\": HEX} (--from FILE)", ctx)
    data: tuple[bytes | None, ...] = ()
    if lengths is not None:
        frames = length_frames(parse_list(lengths))
    else:
        frames, data = read_host_frame_bytes(str(from_file))
    profile = options_profile(o)
    setup = VhostRxSetup(
        mode=mode_of(o["mergeable"], o["guest_gso"], o["mtu"]),
        hdr_len=int(o["hdr_len"]),
        buf_len=o["buf_len"],
        mtu=o["mtu"],
        tap_offload=not o["no_tap_offload"],
        uniform=o["uniform_buffers"],
        in_order=o["in_order"],
    )
    c = vhost_rx_config(profile, setup)
    xmits, skbs = host_skbs(c, frames)
    segmented = [x for x in xmits if x.segmented is not None]
    out = sys.stdout
    if o["gro"]:
        _vhost_gro(profile, c, xmits, skbs, data, segmented, o, f"--from {from_file}")
        return
    if o["as_jsonl"]:
        for x, p, g in vhost_rx_stream(profile, c, xmits, skbs):
            out.write(json.dumps(row_to_dict(x, p, g, c.in_order)) + "\n")
    else:
        from vnetrx.paths.vhost.rx import VhostRx
        from vnetrx.render.vhost_rx import text_lines

        rows = tuple(vhost_rx_stream(profile, c, xmits, skbs))
        result = VhostRx(profile.name, c, xmits, tuple(p for _, p, _ in rows),
                         tuple(g for _, _, g in rows), notes_of(c))
        title = (f"vnetrx replay --path vhost-rx: {len(frames)} frame(s) from the host's tap "
                 f"into a guest with {setup.mode} buffers"
                 + (f" of {c.buf_len} bytes" if c.mergeable else "")
                 + f", Linux {profile.name}")
        click.echo("\n".join(text_lines(result, [], [*profile.notes, *notes_of(c)], title)))
    if segmented:  # say so, on stderr: the rows are the packets
        out.flush()
        reason = segmented[0].segmented
        sys.stderr.write(
            f"vnetrx: note: {len(segmented)} GSO frame(s) segmented by the host stack before "
            f"the tap ({reason}: "
            + ("--no-tap-offload, the guest negotiated no guest offloads"
               if setup.tap_offload is False else
               "the guest's small mode has no guest TSO" if setup.mode == "small" else
               f"tun has no USO on {profile.name}")
            + f"): {sum(x.segments for x in segmented)} skbs\n")


def _vhost_gro(profile: Any, c: Any, xmits: Any, skbs: Any, data: tuple[bytes | None, ...],
               segmented: list[Any], o: dict[str, Any], source: str) -> None:
    """``--path vhost-rx --gro``: the packets through handle_rx, the guest's receive path and
    then its GRO (vnetrx.flow.vhost_rx_gro), printed as replay --gro prints."""
    from vnetrx.errors import InputError, UnsupportedError
    from vnetrx.flow import VHOST_POLLS_NOTE, VHOST_RX_NOTES, vhost_rx_gro
    from vnetrx.paths.gro import gro_limits, read_frame
    from vnetrx.paths.vhost.rx import NOTES, handle_rx, vhost_rx_stream
    from vnetrx.replay.frames import parse_list

    missing = [i for i, b in enumerate(data) if b is None]
    if missing:
        raise InputError(f"frame {missing[0]} gives no \"frame\" bytes: --gro merges by the "
                         "frames' own TCP/IP headers (objects {\"frame\": HEX, \"hdr\": HEX})")
    if segmented:
        raise UnsupportedError(
            f"frame {segmented[0].frame} is a GSO skb the host stack segments before the tap "
            f"({segmented[0].segmented}): the segments' own headers, which GRO reads, are not "
            "modelled", hint="give the segments as frames, or keep the tap's offloads")
    if not c.linux_guest:
        raise UsageError("--gro runs the guest's Linux receive path: not with "
                         "--uniform-buffers without --mergeable (a driver of its own)")
    polls = parse_list(o["polls"], where="--polls") if o["polls"] is not None else ()
    if polls:  # checked before any row is printed: handle_rx alone is cheap
        used = sum(1 for p in handle_rx(c, skbs) if p.discard is None)
        if min(polls) < 1 or sum(polls) != used:
            raise InputError(
                f"the polls ({', '.join(map(str, polls))}) must be at least 1 packet each and "
                f"add up to the {used} packet(s) vhost put in the guest's ring")
    limits = gro_limits(profile, o["gro_max_size"], o["gro_ipv4_max_size"])
    inputs = [read_frame(b, len(b), True) for b in data if b is not None]
    delivered = vhost_rx_gro(profile, vhost_rx_stream(profile, c, xmits, skbs),
                             inputs.__getitem__, polls, not o["no_gro"], limits)
    if o["as_jsonl"]:
        from vnetrx.render.gro_json import write_delivered

        write_delivered(delivered, sys.stdout)
        return
    from vnetrx.render.gro_text import print_replay_gro
    from vnetrx.render.text import stdout_console

    heading = (f"vnetrx replay --path vhost-rx --gro {source} on Linux {profile.name}: the "
               f"skbs the guest's stack receives, {c.setup.mode} buffers, NAPI poll by poll "
               + ("(--polls)" if polls else "(what each used-ring update made visible, 64 a "
                  "poll)"))
    notes = (*NOTES, *VHOST_RX_NOTES, *(() if polls else (VHOST_POLLS_NOTE,)))
    print_replay_gro(heading, notes, delivered, stdout_console(), o["summary"])
