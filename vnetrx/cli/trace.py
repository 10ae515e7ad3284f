"""``vnetrx trace``: one frame through one receive path (virtio-net rx, or a tun/tap write)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from vnetrx.cli import cli
from vnetrx.cli.device_options import DEVICE_OPTIONS, device_options, xdp_program_options
from vnetrx.cli.export_options import export_options, export_pictures
from vnetrx.cli.frame_options import frame_options
from vnetrx.cli.gro_options import gro_options, resolve_napi
from vnetrx.cli.options import Count, build_options, check_option, kernel_option
from vnetrx.cli.tap_options import tap_options
from vnetrx.cli.trace_vhost import VHOST_RX_ONLY, check_path, vhost_rx_options
from vnetrx.engine import trace_tap
from vnetrx.errors import InputError
from vnetrx.kernel.choice import options_profile
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import EXIT_CHECK, MAX_SEGMENTS, STACK_OUTCOMES, Trace
from vnetrx.paths.virtio_net import MAX_FRAME_LEN
from vnetrx.trace_input import (
    frame_input,
    rx_frame,
    tap_frame,
    tap_setup,
    vhost_tx_setup,
    virtio_setup,
    virtio_trace,
)

if TYPE_CHECKING:
    from vnetrx.flow import FlowRun

_VIRTIO_ONLY = (*DEVICE_OPTIONS, "ewma", "buffer_index", "xdp_frags", "xdp_posted_before",
                "udp_tunnel", *VHOST_RX_ONLY)
_TAP_ONLY = (
    "blocking",
    "sndbuf",
    "vnet_hdr_sz",
    "no_vnet_hdr",
    "tun",
    "frag_source",
    *VHOST_RX_ONLY,
)
_VHOST_ONLY = ("zcopy", "zcopy_offset", "iff_napi")
# what a vhost-tx trace does not take: the guest's receive device, a write's fd, the XDP
# program's helper calls (only its verdict is modelled on vhost's buffer)
_NOT_VHOST_TX = (*_VIRTIO_ONLY, "blocking", "no_vnet_hdr", "tun", "frag_source",
                 "xdp_adjust_head", "xdp_adjust_tail", "xdp_meta")


# the options that describe a flow through GRO: refused without --gro
GRO_ONLY = ("segments", "napi", "gro_flush_timeout", "gro_max_size", "gro_ipv4_max_size")


def not_for(path: str) -> tuple[str, ...]:
    """The trace options that do not apply to ``path`` (``vnetrx sweep`` shares it)."""
    if path == "vhost-tx":
        return _NOT_VHOST_TX
    return (*(_TAP_ONLY if path == "virtio" else _VIRTIO_ONLY), *_VHOST_ONLY)


def _given(ctx: click.Context, names: tuple[str, ...]) -> list[str]:
    """The options among ``names`` the user typed (not defaults), as they are spelled."""
    spelled = {p.name: p.opts[0] for p in ctx.command.params}
    return [
        spelled.get(name, "--" + name.replace("_", "-"))
        for name in names
        if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
    ]


# what --load leaves to the saved trace's reader: how to print it (every other option describes
# a new trace)
_LOAD_KEEPS = ("load", "as_json", "svg", "html", "check")


@cli.command()
@click.option(
    "--path",
    "path",
    type=click.Choice(["virtio", "tap", "vhost-tx", "vhost-rx"]),
    default="virtio",
    show_default=True,
    callback=check_path,
    help="virtio: a frame received by virtio-net; tap: a write(2) to a tun/tap fd (IFF_NO_PI); "
    "vhost-tx: a frame a guest transmits, on the host: vhost-net's handle_tx into the tap "
    "(batched into tun_xdp_one, or through tun_get_user); vhost-rx: a frame the host's tap "
    "transmits, through vhost-net into the guest's ring and the guest's receive path.",
)
@click.option(
    "--len",
    "frame_len",
    type=Count(0, MAX_FRAME_LEN),
    default=None,
    help="Frame length in bytes after the virtio-net header (Ethernet header included; 0: "
    "the header alone). Required unless --frame gives the frame.",
)
@device_options(
    *DEVICE_OPTIONS,
    where={"hdr_len": "Default: 12.",
           "ring_size": "It also bounds --buffer-index.",
           "buf_len": "Default: get_mergeable_buf_len for the EWMA."},
)
@click.option(
    "--ewma",
    type=Count(0, MAX_FRAME_LEN),
    default=None,
    help="Average packet length the driver has seen (default: the frame length, i.e. "
    "a steady stream of such frames). Sizes mergeable buffers.",
)
@click.option(
    "--buffer-index",
    type=Count(0, 32767, "buffers"),
    default=0,
    help="Which posted buffer the frame lands in, counted from a fresh page (0): e.g. 20 is "
    "the 21st buffer of a 32 KiB page_frag page, which absorbs the leftover hole.",
)
@click.option(
    "--udp-tunnel",
    type=click.Choice(["gso", "gso-csum", "host"]),
    default=None,
    help="virtio, 6.17+: the UDP-tunnel GSO features negotiated, which make vi->hdr_len 24: "
    "gso = VIRTIO_NET_F_GUEST_UDP_TUNNEL_GSO (vi->rx_tnl), gso-csum = with _GSO_CSUM too "
    "(rx_tnl_csum), host = HOST_UDP_TUNNEL_GSO only (a 24-byte header, no tunnel received). "
    "Default: none said (with --hdr-len 24 a tunnel header is not modelled).",
)
@click.option(
    "--gro",
    is_flag=True,
    help="virtio: send a TCP flow of --segments frames of this shape (--l4 tcp4|tcp6 or a TCP "
    "--frame) into the next posted buffers, then through GRO: what each segment became "
    "(held, its frags moved, its head stolen as a frag, chained on frag_list, flushed) and the "
    "skbs the stack receives (schema vnetrx.gro/1 with --json). vhost-rx: the flow queued on "
    "the host's tap, through handle_rx into the guest's ring and its GRO, polled as vhost "
    "signals (done_idx > 64, the empty ring).",
)
@click.option(
    "--segments",
    type=Count(1, MAX_SEGMENTS, "segments"),
    default=2,
    show_default=True,
    help="With --gro: the flow's segments (virtio: polls of up to 64, the NAPI budget; tap: "
    "one write each; vhost-rx: one burst on the tap).",
)
@gro_options
@frame_options
@tap_options
@click.option("--tun", is_flag=True, help="tap path: an IFF_TUN device (IP packets), not IFF_TAP.")
@vhost_rx_options
@xdp_program_options(
    "is attached. virtio: virtnet_xdp_set must accept it, buffers are posted with 256 bytes of "
    "XDP headroom, receive_small/receive_mergeable run it (big mode never does). tap: native "
    "XDP in tun_build_skb, generic XDP for other writes. vhost-tx: native XDP in tun_xdp_one on "
    "vhost's buffer (its verdict only; 256 more bytes of pad).",
    bare="pass",
    frags="virtio: a frame over several mergeable buffers reaches it as a multi-buffer "
    "xdp_buff instead of being linearised or dropped, and the MTU limit goes.",
)
@click.option("--xdp-adjust-head", type=int, default=0, metavar="N",
              help="With --xdp: the program first calls bpf_xdp_adjust_head(ctx, N) "
              "(N < 0 grows the frame at the front, N > 0 cuts it).")
@click.option("--xdp-adjust-tail", type=int, default=0, metavar="N",
              help="With --xdp: then bpf_xdp_adjust_tail(ctx, N) (N > 0 grows it).")
@click.option("--xdp-posted-before", is_flag=True,
              help="virtio, with --xdp: the frame lands in buffers posted before the program "
              "was attached (no XDP headroom; the rings are not reset on attach), which the XDP "
              "path copies into a fresh page (xdp_linearize_page).")
@click.option("--xdp-meta", type=Count(0, 255, "bytes"), default=0, metavar="N",
              help="With --xdp: then bpf_xdp_adjust_meta(ctx, -N), N bytes of metadata in front "
              "of the frame (at most 32 before 6.8, 252 after; native tun XDP only from 6.15). "
              "XDP_PASS keeps it: skb_metadata_len.")
@click.option(
    "--frag-source",
    type=click.Choice(["task-frag", "per-queue", "full-page"]),
    default=None,
    help="tap path what-if: memory per packet and packets per 32 KiB fragment page for a "
    "stream of writes, against one 4 KiB page per packet (the 2017 design question).",
)
@click.option("--zcopy", is_flag=True,
              help="vhost-tx: vhost_net loaded with experimental_zcopytx=1 "
              "(handle_tx_zerocopy): a chain of at least VHOST_GOODCOPY_LEN (256) bytes, the "
              "vnet header included, has its first hdr_len (or 128) frame bytes copied and "
              "the rest of the guest's pages pinned as frags (zerocopy_sg_from_iter); shorter "
              "ones are copied by tun_get_user.")
@click.option("--zcopy-offset", type=Count(0, 65535, "bytes"), default=0, show_default=True,
              help="vhost-tx with --zcopy: where the guest's buffer (one descriptor: the vnet "
              "header, then the frame) starts in its page; the pinned frags follow from it.")
@click.option("--iff-napi", is_flag=True,
              help="vhost-tx: the tap has IFF_NAPI, so its skbs go through GRO (QEMU does not "
              "set it).")
@kernel_option
@build_options
@click.option(
    "--load",
    "load",
    metavar="FILE",
    default=None,
    help="Print a saved `vnetrx trace --json` document (FILE, or - for standard input) again: "
    "as text, or with --json as JSON. The kernel profile is rebuilt from its name and build "
    "(not for --kernel running). No option that describes a trace goes with it.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object (schema vnetrx.trace/1)."
)
@check_option("no skb reaches the stack: the driver drops the frame, the write fails, or an "
              "XDP program's verdict keeps it")
@export_options
@click.pass_context
def trace(ctx: click.Context, /, path: str, frame_len: int | None, **opts: Any) -> None:
    """Trace one frame: virtio-net receive (default) or a tun/tap write (--path tap).

    \b
    Mode: --mergeable (MRG_RXBUF), --guest-gso without --mergeable (big mode), or small
    (neither; an MTU above 1500 also selects big mode). Shown: each kernel step with its
    source, a map of the receive buffer, the skb after eth_type_trans (what napi_gro_receive
    sees), and the per-packet cost.

    \b
    Offloads: the virtio_net_hdr in front of the frame (what the device or a tap writer puts
    there) goes through virtio_net_hdr_to_skb as the chosen kernel has it: --hdr HEX, or
    --csum/--gso to build one for a real frame (--l4 tcp4|tcp6|udp4|udp6, --tcp-options N,
    or --frame FILE). A header the kernel refuses is a drop counted in rx_frame_errors
    (virtio) or write() failing with EINVAL (tap), and the check that refused it is named.

    \b
    Examples:
      vnetrx trace --len 1000 --mergeable              # build_skb, truesize 1792
      vnetrx trace --len 1000 --mergeable --kernel 5.12  # copy 14 B + 1 frag, truesize 2304
      vnetrx trace --len 1000 --mtu 9000 --kernel 6.1  # big mode
      vnetrx trace --len 1400 --mergeable --json | jq '.skb.truesize'
      vnetrx trace --len 1514 --mergeable --buffer-index 20 --kernel 6.1  # 2048-byte buffer
      vnetrx trace --len 1000 --mergeable --arch arm64 --page-size 64k --kernel 6.1
      vnetrx trace --path tap --len 1000                # build_skb, truesize 1664 (6.18)
      vnetrx trace --path tap --len 1000 --blocking     # tun_alloc_skb, truesize 2304
      vnetrx trace --path tap --len 9000 --kernel 6.1   # fully linear 16 KiB head
      vnetrx trace --path tap --len 1514 --frag-source full-page
      vnetrx trace --path vhost-tx --len 1000          # batched: tun_xdp_one, truesize 1728
      vnetrx trace --path vhost-tx --len 3637          # -ENOSPC: tun_get_user
      vnetrx trace --len 9014 --guest-gso --l4 tcp4 --gso tcpv4:1448 --kernel 6.1
      vnetrx trace --len 1514 --mergeable --l4 tcp4 --csum valid   # CHECKSUM_UNNECESSARY
      vnetrx trace --path tap --len 3000 --l4 tcp4 --csum none --gso tcpv4:1448 --kernel 6.6.46
      vnetrx trace --path tap --len 3000 --l4 tcp4 --gso tcpv4:1448 --tunnel ipv4 --vnet-hdr-sz 24 --kernel 6.18
      vnetrx trace --len 1000 --xdp pass                # receive_small_xdp, truesize 2432
      vnetrx trace --len 1000 --mergeable --xdp pass --kernel 6.1  # headroom 268, truesize 4352
      vnetrx trace --len 9014 --mergeable --mtu 9000 --xdp pass --xdp-frags --kernel 6.12

    \b
    Saved traces (--load FILE, or - for standard input):
      vnetrx trace --len 1000 --mergeable --json > t.json
      vnetrx trace --load t.json                       # the same text, from the file
      vnetrx trace --len 1000 --xdp tx --json | vnetrx trace --load -
    """
    if path == "vhost-rx":
        from vnetrx.cli.trace_vhost import trace_vhost_rx

        trace_vhost_rx(ctx, frame_len, opts)
        return
    if opts["gro"]:
        _gro(ctx, path, frame_len, opts)
        return
    stray = _given(ctx, GRO_ONLY)
    if stray:
        raise click.UsageError(f"{', '.join(stray)} goes with --gro (a TCP flow through GRO)")
    result = _run(ctx, path, frame_len, opts)
    export_pictures(
        lambda: _picture(result),
        opts["svg"],
        opts["html"],
        f"vnetrx trace: {result.path}, {dict(result.input)['frame_len']}-byte frame, "
        f"Linux {result.kernel.name}",
    )
    if opts["as_json"]:
        from vnetrx.render.json_out import render_trace

        sys.stdout.write(render_trace(result))
    else:
        from vnetrx.render.text import print_trace, stdout_console

        print_trace(result, stdout_console())
    if opts["check"] and result.outcome not in STACK_OUTCOMES:
        sys.stdout.flush()
        sys.exit(EXIT_CHECK)


def _gro(ctx: click.Context, path: str, frame_len: int | None, opts: dict[str, Any]) -> None:
    """``--gro``: a TCP flow of the traced frame's shape through the receive path and GRO."""
    run = _flow(ctx, path, frame_len, opts)
    if opts["as_json"]:
        from vnetrx.codec import flow_to_dict
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps(flow_to_dict(run)))
        return
    from vnetrx.render.gro_text import flow_renderable
    from vnetrx.render.text import stdout_console

    stdout_console().print(flow_renderable(run))


def _flow(ctx: click.Context, path: str, frame_len: int | None, opts: dict[str, Any]) -> FlowRun:
    clash = _given(ctx, ("load", "svg", "html", "check"))
    if clash:
        raise click.UsageError(f"{', '.join(clash)} does not go with --gro")
    if path == "vhost-tx":
        raise click.UsageError("--gro does not apply to --path vhost-tx (a tap with --iff-napi "
                               "hands its skbs to GRO; the flow is not modelled)")
    if path == "virtio" and _given(ctx, ("napi", "gro_flush_timeout")):
        raise click.UsageError(f"{', '.join(_given(ctx, ('napi', 'gro_flush_timeout')))} "
                               "applies to --path tap (a virtio-net device is polled after its "
                               "interrupt)")
    opts["napi"] = resolve_napi(ctx, opts)
    profile = options_profile(opts)
    return flow_for(profile, path, frame_len, opts)


def flow_for(profile: KernelProfile, path: str, frame_len: int | None,
             opts: dict[str, Any]) -> FlowRun:
    """The flow trace's options ``opts`` describe with frames of ``frame_len`` bytes, on
    ``profile`` (``vnetrx sweep --gro`` makes one per length)."""
    from vnetrx.flow import check_segments, tap_flow, virtio_flow
    from vnetrx.packet import tcp_flow_frames
    from vnetrx.paths.gro import gro_limits

    frame = frame_input(frame_len, opts)
    if frame.frame is None or frame.headers is None:
        raise InputError("--gro needs a TCP frame: add --l4 tcp4|tcp6 or --frame FILE")
    if not frame.headers.tcp:
        raise InputError(
            "--gro needs a TCP frame (--l4 tcp4|tcp6, or --frame with one): GRO merges TCP "
            "segments; plain UDP is not merged without a UDP GRO socket"
        )
    check_segments(opts["segments"])
    frames = tcp_flow_frames(frame.frame, frame.headers, opts["segments"])
    limits = gro_limits(profile, opts["gro_max_size"], opts["gro_ipv4_max_size"])
    if path == "tap":
        return tap_flow(profile, tap_setup(opts, frame), [(frame.hdr_bytes, f) for f in frames],
                        opts["napi"], limits=limits)
    return virtio_flow(profile, virtio_setup(opts), rx_frame(frame, opts), frames, limits)


def _picture(result: Trace) -> Any:
    from vnetrx.render.text import trace_renderable

    return trace_renderable(result)


def run_flow_args(args: list[str]) -> FlowRun:
    """The flow ``vnetrx trace ARGS --gro`` would print (``vnetrx diff`` of two flows)."""
    with trace.make_context("trace", list(args)) as ctx:
        params = dict(ctx.params)
        return _flow(ctx, params.pop("path"), params.pop("frame_len"), params)


def run_trace_args(args: list[str]) -> Trace:
    """The Trace ``vnetrx trace ARGS`` would print (``vnetrx diff`` runs two of these)."""
    with trace.make_context("trace", list(args)) as ctx:
        params = dict(ctx.params)
        return _run(ctx, params.pop("path"), params.pop("frame_len"), params)


def _run(ctx: click.Context, path: str, frame_len: int | None, opts: dict[str, Any]) -> Trace:
    if opts["load"] is not None:
        return _load(ctx, opts["load"])
    if path == "vhost-rx":  # vnetrx diff: not a Trace
        raise click.UsageError("--path vhost-rx prints its own document (vnetrx.vhost-rx/1): "
                               "vnetrx diff does not compare it")
    wrong = _given(ctx, not_for(path))
    if wrong:
        raise click.UsageError(
            f"{', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not apply to --path {path}"
        )
    profile = options_profile(opts)
    if path == "tap":
        return _trace_tap(profile, frame_len, opts)
    if path == "vhost-tx":
        return _trace_vhost_tx(profile, frame_len, opts)
    return virtio_trace(profile, frame_len, opts)


def _load(ctx: click.Context, file: str) -> Trace:
    """The trace a saved ``vnetrx trace --json`` document holds (``-``: standard input)."""
    clash = _given(ctx, tuple(p.name for p in ctx.command.params
                              if p.name is not None and p.name not in _LOAD_KEEPS))
    if clash:
        raise click.UsageError(
            f"--load prints a saved trace: {', '.join(clash)} "
            f"{'describes' if len(clash) == 1 else 'describe'} a new one (drop "
            f"{'it' if len(clash) == 1 else 'them'}, or drop --load)")
    from vnetrx.codec import load_trace
    from vnetrx.files import MiB, read_bounded

    data = read_bounded(file, 4 * MiB, "--load")  # a saved trace: ~20 KB
    return load_trace(data, "standard input" if file == "-" else file)


def _trace_tap(profile: KernelProfile, frame_len: int | None, o: dict[str, Any]) -> Trace:
    frame = frame_input(frame_len, o)
    return trace_tap(profile, tap_setup(o, frame), tap_frame(frame))


def _trace_vhost_tx(profile: KernelProfile, frame_len: int | None, o: dict[str, Any]) -> Trace:
    from vnetrx.engine import trace_vhost_tx

    frame = frame_input(frame_len, o)
    return trace_vhost_tx(profile, vhost_tx_setup(o), tap_frame(frame))

