"""One write(2) into a tap fd, as ``vnetrx verify tap`` asks for it (``WriteCase``: the frame
and the fd/device setup) and as the kernel answered it (``WriteResult``: write's return value or
errno and the tracepoint events). Pure records: vnetrx.live.verify predicts and compares them,
vnetrx.live.tap (root) makes the writes."""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.observed.rx_event import RxEvent


@dataclass(frozen=True)
class WriteCase:
    """One write and the fd/device setup it is made with."""

    frame_len: int
    blocking: bool = False
    sndbuf: int | None = None  # None: the default (INT_MAX)
    vnet_hdr: bool = True
    vnet_hdr_sz: int | None = None  # None: the default (10)
    hdr: bytes | None = None  # vnet header bytes (zero-padded); None: all zero
    l4: str | None = None  # a real TCP/UDP frame (vnetrx.packet.build_frame); None: EtherType
    tcp_options: int = 0  # 0x88B5 and zeros
    xdp: str | None = None  # an attached XDP program's verdict (vnetrx.live.bpf); None: none
    xdp_adjust_head: int = 0  # the program's bpf_xdp_adjust_head(ctx, N) before its verdict
    xdp_adjust_tail: int = 0  # and bpf_xdp_adjust_tail(ctx, N)
    tunnel: str | None = None  # the l4 frame wrapped in VXLAN (vnetrx.packet.parse_tunnel)
    offload: int | None = None  # TUNSETOFFLOAD flags set before the write; None: not called


@dataclass(frozen=True)
class WriteResult:
    """What write(2) returned and the tracepoint event(s) it produced."""

    ret: int | None  # bytes written, or None on failure
    errno: str | None  # "EINVAL" etc. on failure
    events: tuple[RxEvent, ...]
    reads: tuple[int, ...] = ()  # with XDP: what each read() on the fd returned afterwards
    read_hdr: str | None = None  # the vnet header bytes of the first read, hex
    read_same: bool | None = None  # the first read's frame bytes are the frame written
    counters: dict[str, int] | None = None  # with XDP: /proc/net/dev deltas over write + reads
    offload_errno: str | None = None  # what TUNSETOFFLOAD failed with (None: it succeeded)
