"""``vnetrx replay --path vhost-rx``: a burst the host's tap queued, through vhost-net's
handle_rx into the guest's rx ring and the guest's receive path: one JSON line per packet
(vnetrx.vhost-rx-row/1) with --jsonl, else a table."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from vnetrx.cli.options import BuildChoice, load_profile
from vnetrx.cli.trace_vhost import mode_of, no_tap_offload_option, uniform_buffers_option

# replay's options a vhost-rx replay reads; every other one given is refused
_READS = frozenset({
    "path", "mergeable", "guest_gso", "mtu", "hdr_len", "buf_len", "kernel", "config", "arch",
    "page_size", "cache_line", "max_skb_frags", "as_jsonl", "no_tap_offload",
    "uniform_buffers", "in_order",
})
_VHOST_ONLY = ("buf_len", "no_tap_offload", "uniform_buffers", "in_order")


def vhost_replay_options(f: Any) -> Any:
    """--path, and the options only --path vhost-rx reads."""
    f = uniform_buffers_option(f)
    f = no_tap_offload_option(f)
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
        "path; --jsonl: one vnetrx.vhost-rx-row/1 line per packet vhost takes off the tap.")(f)


def run_vhost(lengths: str | None, from_file: str | None, o: dict[str, Any]) -> bool:
    """``replay``'s dispatch: False for --path virtio and tap (after refusing what only
    vhost-rx reads), else the vhost-rx or vhost-tx replay, done."""
    ctx = click.get_current_context()
    if o["path"] == "vhost-tx":
        from vnetrx.cli.replay_vhost_tx import replay_vhost_tx

        replay_vhost_tx(ctx, lengths, from_file, o)
        return True
    if o["path"] != "vhost-rx":
        if _given(ctx, ("buf_len",)):
            raise click.UsageError(
                "--buf-len does not apply to replay: each refill sizes its buffers from the "
                "EWMA of the frames before it (get_mergeable_buf_len); --path vhost-rx takes "
                "it", ctx)
        if _given(ctx, ("in_order",)):
            raise click.UsageError("--in-order applies to --path vhost-rx and vhost-tx only",
                                   ctx)
        given = _given(ctx, _VHOST_ONLY)
        if given:
            raise click.UsageError(
                f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to --path "
                "vhost-rx only", ctx)
        for name in _VHOST_ONLY:
            o.pop(name, None)
        return False
    _replay_vhost(ctx, lengths, from_file, o)
    return True


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
    from vnetrx.replay.vhost import length_frames, read_host_frames

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
    frames = (length_frames(parse_list(lengths)) if lengths is not None
              else read_host_frames(str(from_file)))
    choice = BuildChoice(o["arch"], o["page_size"], o["cache_line"], o["max_skb_frags"])
    profile = load_profile(o["kernel"], o["config"], choice)
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
