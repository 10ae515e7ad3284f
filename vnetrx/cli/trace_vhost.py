"""``vnetrx trace --path vhost-rx``: a frame the host's tap transmits, through vhost-net's
handle_rx into the guest's rx ring, then through the guest's receive path (paths/vhost/rx.py)."""

from __future__ import annotations

import sys
from typing import Any

import click

from vnetrx.errors import InputError
from vnetrx.kernel.choice import options_profile
from vnetrx.kernel.constants import ETH_DATA_LEN
from vnetrx.trace_input import frame_input

# the options only vhost-rx reads (trace and sweep refuse them on the other paths)
VHOST_RX_ONLY = ("no_tap_offload", "vlan", "uniform_buffers")
# trace's options a vhost-rx trace reads
_READS = frozenset({
    "path", "frame_len", "l4", "tcp_options", "frame_file", "hdr", "csum", "gso", "mergeable",
    "guest_gso", "mtu", "hdr_len", "buf_len", "ewma", "kernel", "config", "arch", "page_size",
    "cache_line", "max_skb_frags", "as_json", *VHOST_RX_ONLY,
    "gro", "segments", "gro_max_size", "gro_ipv4_max_size",
})
_GRO_ONLY = ("segments", "gro_max_size", "gro_ipv4_max_size")


def no_tap_offload_option(f: Any) -> Any:
    return click.option(
        "--no-tap-offload", is_flag=True,
        help="vhost-rx: the guest negotiated no offloads (no GUEST_CSUM/TSO*/USO*), so QEMU "
        "gives the tap none: the host stack segments GSO skbs and finishes checksums before "
        "the tap. Default: TUN_F_CSUM, and TSO4/TSO6/ECN (USO4/USO6 from 6.2) with "
        "--mergeable or --guest-gso (big mode).")(f)


def uniform_buffers_option(f: Any) -> Any:
    return click.option(
        "--uniform-buffers", is_flag=True,
        help="vhost-rx, with --mergeable: every posted buffer exactly --buf-len bytes (a "
        "driver that does not carve them from a 32 KiB page_frag as Linux does, where the "
        "last buffer of a page absorbs the hole). Without --mergeable, with --buf-len: a "
        "driver of its own posting one --buf-len buffer a chain (VERSION_1 with --hdr-len 12, "
        "or legacy with 10; no MRG_RXBUF), the tap's offloads as --no-tap-offload says: what "
        "vhost does only, no Linux guest receives it.")(f)


def vhost_rx_options(f: Any) -> Any:
    """trace's options for --path vhost-rx only."""
    f = uniform_buffers_option(f)
    f = click.option(
        "--vlan", is_flag=True,
        help="vhost-rx: the host skb carries a VLAN tag out of band (skb_vlan_tag_present): "
        "peek_head_len adds 4, tun_put_user inserts it and moves csum_start by 4.")(f)
    return no_tap_offload_option(f)


def check_path(ctx: click.Context, param: click.Parameter, value: str) -> str:  # noqa: ARG001
    """--path's callback: vhost-rx is modelled by trace (and replay) only."""
    if value == "vhost-rx" and ctx.command.name != "trace":
        raise click.UsageError(f"--path vhost-rx: vnetrx {ctx.command.name} does not model it "
                               "(vnetrx trace and vnetrx replay do)", ctx)
    return value


def mode_of(mergeable: bool, big: bool, mtu: int) -> str:
    """virtnet_probe's choice, as the options say it."""
    return "mergeable" if mergeable else "big" if big or mtu > ETH_DATA_LEN else "small"


def trace_vhost_rx(ctx: click.Context, frame_len: int | None, opts: dict[str, Any]) -> None:
    from vnetrx.cli.trace import _given
    from vnetrx.paths.steps import StepLog
    from vnetrx.paths.vhost.rx import HostFrame, VhostRxSetup, vhost_rx
    from vnetrx.paths.vhost.rx_steps import narrate
    from vnetrx.render.vhost_rx import document, text_lines

    wrong = _given(ctx, tuple(p.name for p in ctx.command.params
                              if p.name is not None and p.name not in _READS))
    if wrong:
        raise click.UsageError(
            f"{', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not apply to --path "
            "vhost-rx", ctx)
    if opts["hdr"] is not None and len(opts["hdr"]) > 10:
        raise InputError(f"--hdr has {len(opts['hdr'])} bytes: give the host skb's state as the "
                         "10-byte virtio_net_hdr (num_buffers is vhost's to write) (valid: 0..10 "
                         "bytes)")
    if not opts["gro"] and _given(ctx, _GRO_ONLY):
        raise click.UsageError(f"{', '.join(_given(ctx, _GRO_ONLY))} goes with --gro (a TCP "
                               "flow through GRO)", ctx)
    profile = options_profile(opts)
    frame = frame_input(frame_len, opts)
    setup = VhostRxSetup(
        mode=mode_of(opts["mergeable"], opts["guest_gso"], opts["mtu"]),
        hdr_len=12 if opts["hdr_len"] is None else int(opts["hdr_len"]),
        buf_len=opts["buf_len"],
        ewma=opts["ewma"] if opts["ewma"] is not None else frame.frame_len,
        mtu=opts["mtu"],
        tap_offload=not opts["no_tap_offload"],
        uniform=opts["uniform_buffers"],
    )
    if opts["gro"]:
        _gro(profile, setup, frame, opts)
        return
    host = HostFrame(frame.frame_len, frame.hdr, frame.headers, opts["vlan"])
    result = vhost_rx(profile, setup, [host])
    log = StepLog(profile)
    narrate(result, log)
    notes = [*log.notes, *result.notes]
    if opts["as_json"]:
        from vnetrx.render.json_out import dumps

        inputs = {
            "frame_len": frame.frame_len,
            "l4": None if frame.headers is None else frame.headers.l4,
            "hdr": None if frame.hdr is None else frame.hdr.to_bytes(10).hex(),
            "vlan": host.vlan,
            "mode": setup.mode,
            "hdr_len": setup.hdr_len,
            "buf_len": setup.buf_len,
            "ewma": setup.ewma,
            "mtu": setup.mtu,
            "tap_offload": setup.tap_offload,
            "uniform_buffers": setup.uniform,
        }
        sys.stdout.write(dumps(document(profile, result, inputs, log.steps, notes)))
        return
    title = (f"vnetrx trace --path vhost-rx: a {frame.frame_len}-byte frame from the host's tap "
             f"into a guest with {setup.mode} buffers, Linux {profile.name}")
    click.echo("\n".join(text_lines(result, log.steps, notes, title)))


def _gro(profile: Any, setup: Any, frame: Any, opts: dict[str, Any]) -> None:
    """``--gro``: a TCP flow of the traced frame's shape queued on the host's tap, through
    handle_rx, the guest's receive path and its GRO (vnetrx.flow.vhost_rx_flow)."""
    from vnetrx.flow import vhost_rx_flow
    from vnetrx.packet import tcp_flow_frames
    from vnetrx.paths.gro import gro_limits
    from vnetrx.paths.vhost.rx import vhost_rx_config

    if frame.frame is None or frame.headers is None or not frame.headers.tcp:
        raise InputError("--gro needs a TCP frame (--l4 tcp4|tcp6, or --frame with one): GRO "
                         "merges TCP segments")
    if opts["vlan"]:
        raise InputError("--gro with --vlan is not modelled (GRO of VLAN-tagged frames)")
    c = vhost_rx_config(profile, setup)
    if not c.linux_guest:
        raise click.UsageError("--gro runs the guest's Linux receive path: not with "
                               "--uniform-buffers without --mergeable (a driver of its own)")
    from vnetrx.flow import check_segments

    check_segments(opts["segments"])
    frames = tcp_flow_frames(frame.frame, frame.headers, opts["segments"])
    limits = gro_limits(profile, opts["gro_max_size"], opts["gro_ipv4_max_size"])
    run = vhost_rx_flow(profile, c, frames, frame.hdr, frame.headers, limits)
    if opts["as_json"]:
        from vnetrx.codec import flow_to_dict
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps(flow_to_dict(run)))
        return
    from vnetrx.render.gro_text import flow_renderable
    from vnetrx.render.text import stdout_console

    stdout_console().print(flow_renderable(run))
