"""What ``vnetrx trace``'s options describe, as the core's records: the frame and its
virtio_net_hdr (``frame_input``: --len, --l4, --tcp-options, --frame, --hdr, --csum, --gso,
--tunnel together), the virtio-net device and the posted buffer the frame lands in, a tap and
the write, vhost-net's TX queue.

``o`` is always a command's parameters by name, as click gives them. No click here: the click
commands (trace, sweep, verify) and ``vnetrx.fast_trace`` (trace command lines served before
click is imported) share these functions, so both build the same records and refuse the same
combinations with the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vnetrx.engine import trace_virtio
from vnetrx.errors import InputError
from vnetrx.packet import (
    MAX_FRAME,
    Headers,
    build_frame,
    build_tunnel_frame,
    check_fits,
    find_headers,
    gso_l4,
    headers_of,
    offload_header,
    parse_gso,
    parse_tunnel,
    read_frame,
    tunnel_header,
    tunnel_headers,
)
from vnetrx.paths.virtio_net import RxFrame, VirtioRxSetup
from vnetrx.paths.virtio_net_hdr import VnetHdr
from vnetrx.records import NamedTuple

if TYPE_CHECKING:
    from vnetrx.kernel.profile import KernelProfile
    from vnetrx.model import Trace
    from vnetrx.paths.tun import TapFrame, TapSetup
    from vnetrx.paths.vhost import VhostTxSetup


class FrameInput(NamedTuple):
    """The frame and header the options describe."""

    frame_len: int
    frame: bytes | None  # the frame's bytes, when --l4 or --frame gave them
    headers: Headers | None
    hdr: VnetHdr | None  # None: no header given (all zero)
    hdr_bytes: bytes | None  # the header as given or built (tap writes these)


def frame_input(frame_len: int | None, o: Mapping[str, Any]) -> FrameInput:
    """Resolve --len, --l4, --tcp-options, --frame, --hdr, --csum, --gso and --tunnel
    together."""
    if o["frame_file"] is not None and o["l4"] is not None:
        raise InputError("--frame and --l4 exclude each other (the file is the frame)")
    if o["hdr"] is not None and (o["csum"] is not None or o["gso"] is not None):
        raise InputError("--hdr gives the header's bytes; --csum and --gso build one: use one way")
    if o["tcp_options"] and o["l4"] is None:
        raise InputError("--tcp-options needs --l4 tcp4 or tcp6")
    tunnel = parse_tunnel(o["tunnel"]) if o.get("tunnel") is not None else None
    if tunnel is not None and (o["hdr"] is not None or o["frame_file"] is not None):
        raise InputError("--tunnel builds the frame and its 24-byte header: drop --hdr and "
                         "--frame (or give the 24 header bytes with --hdr alone)")
    frame: bytes | None = None
    headers: Headers | None = None
    gso = parse_gso(o["gso"]) if o["gso"] is not None else None
    if o["frame_file"] is not None:
        frame = read_frame(o["frame_file"])
        if frame_len is not None and frame_len != len(frame):
            raise InputError(
                f"--len {frame_len} disagrees with the {len(frame)}-byte --frame "
                f"{o['frame_file']}: give one of them"
            )
        frame_len = len(frame)
        headers = find_headers(frame)
    if frame_len is None:
        raise InputError("give the frame length (--len N) or the frame itself (--frame FILE)")
    l4 = o["l4"]
    if l4 is None and frame is None and (o["csum"] == "partial" or gso is not None):
        l4 = gso_l4(gso[0]) if gso is not None else None
        if l4 is None:
            raise InputError(
                "--csum partial needs to know where the transport header is: add --l4 "
                "tcp4|tcp6|udp4|udp6 or --frame FILE"
            )
    if tunnel is not None:
        if l4 is None:
            raise InputError("--tunnel wraps a TCP or UDP frame: add --l4 tcp4|tcp6|udp4|udp6 "
                             "(or --gso, which implies one)")
        inner = headers_of(l4, o["tcp_options"])
        need = tunnel.inner_mac + inner.end
        if not need <= frame_len <= MAX_FRAME:
            raise InputError(f"--len {frame_len} does not hold a VXLAN-wrapped {l4} frame "
                             f"(valid: {need}..{MAX_FRAME}: {tunnel.inner_mac} outer bytes + "
                             f"{inner.end} inner header bytes)")
        headers = tunnel_headers(tunnel, inner)
        frame = build_tunnel_frame(frame_len, tunnel, l4, o["tcp_options"])
    elif l4 is not None:
        headers = check_fits(frame_len, l4, o["tcp_options"])
        frame = build_frame(frame_len, l4, o["tcp_options"])
    hdr: VnetHdr | None = None
    hdr_bytes: bytes | None = o["hdr"]
    if hdr_bytes is not None:
        hdr = VnetHdr.from_bytes(hdr_bytes)
    elif tunnel is not None:
        hdr = tunnel_header(offload_header(headers, o["csum"], gso), tunnel)
        hdr_bytes = hdr.to_bytes(24)
    elif o["csum"] is not None or gso is not None:
        hdr = offload_header(headers, o["csum"], gso)
        hdr_bytes = hdr.to_bytes(10)
    return FrameInput(frame_len, frame, headers, hdr, hdr_bytes)


def rx_frame(frame: FrameInput, o: Mapping[str, Any]) -> RxFrame:
    """The frame the trace's options ``o`` describe: ``frame``, behind the header the device
    writes, in the posted buffer ``--buffer-index`` (``vnetrx sweep`` shares it)."""
    size = int(o["hdr_len"]) if o["hdr_len"] is not None else (
        24 if o.get("udp_tunnel") is not None else 12)
    if o["hdr"] is not None and len(o["hdr"]) > size:
        raise InputError(
            f"--hdr has {len(o['hdr'])} bytes, more than the {size}-byte header "
            "(--hdr-len) the device writes"
        )
    return RxFrame(frame.frame_len, frame.hdr, o["buffer_index"])


def virtio_setup(o: Mapping[str, Any]) -> VirtioRxSetup:
    """The device the trace's options ``o`` describe (``vnetrx sweep`` shares it)."""
    return VirtioRxSetup(
        mergeable=o["mergeable"],
        guest_gso=o["guest_gso"],
        mtu=o["mtu"],
        hdr_len=None if o["hdr_len"] is None else int(o["hdr_len"]),
        buf_len=o["buf_len"],
        ewma=o["ewma"],
        ring_size=o["ring_size"],
        xdp=o["xdp"],
        xdp_frags=o["xdp_frags"],
        xdp_adjust_head=o["xdp_adjust_head"],
        xdp_adjust_tail=o["xdp_adjust_tail"],
        xdp_meta=o["xdp_meta"],
        xdp_posted_before=o["xdp_posted_before"],
        udp_tunnel=o.get("udp_tunnel"),
    )


def virtio_trace(profile: KernelProfile, frame_len: int | None, o: Mapping[str, Any]) -> Trace:
    """The virtio-net receive trace the options ``o`` describe (``vnetrx trace`` on the virtio
    path, through click or served before it, see vnetrx.fast_trace)."""
    return trace_virtio(profile, virtio_setup(o), rx_frame(frame_input(frame_len, o), o))


def tap_frame(frame: FrameInput) -> TapFrame:
    """A write of ``frame`` behind its vnet header (``vnetrx sweep`` shares it)."""
    from vnetrx.paths.tun import TapFrame  # only for --path tap (start-up time)

    return TapFrame(frame.frame_len, frame.hdr_bytes)


def tap_setup(o: Mapping[str, Any], frame: FrameInput) -> TapSetup:
    """The tap device trace's options ``o`` describe, with ``frame``'s bytes when the options
    build them (a USO-in-UDP-tunnel header's inner IP version is read from them; ``vnetrx
    sweep`` shares it)."""
    from vnetrx.paths.tun import TapSetup  # only for --path tap (start-up time)

    return TapSetup(
        tun=o["tun"],
        blocking=o["blocking"],
        sndbuf=o["sndbuf"],
        vnet_hdr=not o["no_vnet_hdr"],
        vnet_hdr_sz=o["vnet_hdr_sz"],
        xdp=o["xdp"],
        xdp_adjust_head=o["xdp_adjust_head"],
        xdp_adjust_tail=o["xdp_adjust_tail"],
        frag_source=o["frag_source"],
        xdp_meta=o["xdp_meta"],
        frame=frame.frame,
    )


def vhost_tx_setup(o: Mapping[str, Any]) -> VhostTxSetup:
    """The vhost-net TX queue and tap the trace's options ``o`` describe (``vnetrx sweep``
    shares it); each frame the guest sends is a ``tap_frame``."""
    from vnetrx.paths.vhost import VhostTxSetup

    return VhostTxSetup(sndbuf=o["sndbuf"], xdp=o["xdp"], zcopy=o["zcopy"],
                        vnet_hdr_sz=o["vnet_hdr_sz"], napi=o["iff_napi"],
                        zcopy_offset=o.get("zcopy_offset") or 0)
