"""What the device negotiated (``VirtioRxSetup``: the device, apart from the frame), its checks
against the kernel (``check_virtio_setup``) and everything the kernel and the setup fix for every frame
(``config``): virtnet_probe's mode choice, the buffer sizes, the copy head, which checks exist.

This is the one place on the virtio receive path that asks the profile which changes a kernel
carries (``KernelProfile.has``) and reads its constants (``KernelProfile.value``); the plan and
the narration read the answers from ``Config`` (an attached XDP program's: xdp_config.py,
loaded only when there is one). Facts: docs/kernel/virtio-net-rx.md §3-§5.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Final

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.changes import (
    BIG_BUILD_SKB_GIVE_PAGES,
    BIG_PACKETS_MTU_SIZED,
    BIG_RECV_LEN_CHECK,
    PADDED_VNET_HDR_V1_HASH,
    PAGE_TO_SKB_BUILD_SKB,
    RQ_ALLOC_FRESH_PAGE_SHRINK,
    RX_PREMAPPED_BY_DEFAULT,
    SMALL_USED_LEN_CHECK,
    VIRTIO_RX_PAGE_POOL,
    VIRTIO_XDP_MULTI_BUF,
    VNET_HDR_UDP_TUNNEL,
    Change,
)
from vnetrx.kernel.constants import (
    ETH_DATA_LEN,
    ETH_HLEN,
    GOOD_COPY_LEN,
    GOOD_PACKET_LEN,
    IP_MAX_MTU,
    SKB_FRAG_PAGE_BYTES,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.layouts.virtio_net import padded_vnet_hdr, virtio_net_hdr_mrg_rxbuf, virtnet_rq_dma
from vnetrx.paths.skbuff import Head, kmalloc_reserve, napi_alloc_head, shinfo_size
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net import buffers as bufs
from vnetrx.paths.virtio_net.buffers import CarvedMemo, PostedBuffer, RxAllocator
from vnetrx.paths.virtio_net_hdr import HdrRules, VnetHdr, hdr_rules
from vnetrx.records import NamedTuple

if TYPE_CHECKING:
    from vnetrx.paths.virtio_net.xdp_config import XdpConfig

MAX_FRAME_LEN: Final = 65535
MAX_MTU: Final = 65535  # dev->max_mtu when VIRTIO_NET_F_MTU is not negotiated
MAX_RING_SIZE: Final = 32768  # virtio: a split ring has at most 32768 entries


class VirtioRxSetup(NamedTuple):
    """The device: what it negotiated (features, MTU, header length), how its ring and buffers
    are set up and the XDP program attached to it. The frame (``RxFrame``: its length, the
    header the device writes in front of it, the buffer it lands in) is not part of it: the
    stages take it beside the device, so one setup serves every frame of a sweep or a replay.
    ``None`` fields are filled in by ``check_virtio_setup``."""

    mergeable: bool = False  # VIRTIO_NET_F_MRG_RXBUF
    guest_gso: bool = False  # any of GUEST_TSO4/TSO6/ECN/UFO (→ big mode without MRG_RXBUF)
    mtu: int = 1500  # with VIRTIO_NET_F_MTU when not 1500
    hdr_len: int | None = None  # vi->hdr_len; None → 12 (VIRTIO_F_VERSION_1)
    buf_len: int | None = None  # mergeable buffer length; None → get_mergeable_buf_len()
    ewma: int | None = None  # rq->mrg_avg_pkt_len; None → the frame's length (a steady stream)
    ring_size: int = 256
    # An XDP program attached to the device (virtnet_xdp_set) returning this verdict: "pass",
    # "drop", "tx", "redirect" (bpf_redirect to the device itself), "aborted"; None: no program
    xdp: str | None = None
    xdp_frags: bool = False  # the program was loaded with BPF_F_XDP_HAS_FRAGS (6.3+)
    xdp_adjust_head: int = 0  # the program calls bpf_xdp_adjust_head(ctx, N) first
    xdp_adjust_tail: int = 0  # then bpf_xdp_adjust_tail(ctx, N)
    xdp_meta: int = 0  # and bpf_xdp_adjust_meta(ctx, -N): N bytes of metadata before the frame
    # the frame lands in a buffer posted before the program was attached (headroom 0: the first
    # ring after an attach), which the XDP path copies into a fresh page (xdp_linearize_page)
    xdp_posted_before: bool = False
    # 6.17+ UDP-tunnel GSO (virtnet_probe @6.17.0, @6.18.9; vi->hdr_len 24): "gso" =
    # GUEST_UDP_TUNNEL_GSO (vi->rx_tnl), "gso-csum" = with GUEST_UDP_TUNNEL_GSO_CSUM too
    # (vi->rx_tnl_csum), "host" = HOST_UDP_TUNNEL_GSO only (the header is 24 bytes, the receive
    # takes no tunnel); None: not said (a tunnel bit or UDP_TUNNEL_CSUM is refused as not
    # modelled with a 24-byte header)
    udp_tunnel: str | None = None


class RxFrame(NamedTuple):
    """One frame the device receives, apart from the device: its length, the virtio_net_hdr
    the device wrote in front of it and the posted buffer(s) it lands in."""

    len: int  # bytes after the virtio-net header, Ethernet header included
    # the virtio_net_hdr the device wrote (None: flags 0, GSO_NONE, what QEMU writes for a
    # frame from a backend without a header)
    hdr: VnetHdr | None = None
    buffer_index: int = 0  # which posted buffer (0 = the first of a fresh page) it lands in
    # The posted buffers the device fills, in order, when a ring model (replay) knows them;
    # empty: carve them from a fresh page as add_recvbuf_* would.
    buffers: tuple[PostedBuffer, ...] = ()


def check_frame_len(frame_len: int) -> None:
    """A frame length vnetrx models: bytes after the virtio-net header, Ethernet header
    included. 0: the device wrote the virtio-net header alone, which receive_buf's short-packet
    guard drops (len < vi->hdr_len + ETH_HLEN: drivers/net/virtio_net.c:receive_buf @ 6.1,
    6.12)."""
    if not 0 <= frame_len <= MAX_FRAME_LEN:
        raise InputError(f"frame length {frame_len} out of range (valid: 0..{MAX_FRAME_LEN})")


def check_virtio_setup(k: KernelProfile, s: VirtioRxSetup, frame: RxFrame | None = None
                       ) -> VirtioRxSetup:
    """Check the device against the kernel and fill in what the features imply; with
    ``frame``, where that frame lands too (``check_rx_frame``, after the ring and before the
    XDP program: the order the checks have always been reported in)."""
    if not 68 <= s.mtu <= MAX_FRAME_LEN:
        raise InputError(f"MTU {s.mtu} out of range (valid: 68..{MAX_FRAME_LEN})")
    # With MRG_RXBUF the driver is in mergeable mode whatever the GSO features say; guest GSO
    # still sets vi->big_packets, which sizes rq->min_buf_len for IP_MAX_MTU (config()).
    if s.udp_tunnel is not None:
        if s.udp_tunnel not in UDP_TUNNEL_CHOICES:
            raise InputError(f"UDP-tunnel features {s.udp_tunnel!r} unknown (valid: "
                             f"{', '.join(UDP_TUNNEL_CHOICES)})")
        if not k.has(VNET_HDR_UDP_TUNNEL):
            raise UnsupportedError(f"UDP-tunnel GSO features ({VNET_HDR_UDP_TUNNEL.commit}) are "
                                   f"not in {k.name} (valid: --kernel 6.17 or later)")
        if s.hdr_len not in (None, 24):
            raise InputError(f"UDP-tunnel GSO makes vi->hdr_len 24 (virtnet_probe), not "
                             f"{s.hdr_len} (valid: 24, or leave --hdr-len out)")
    hdr_len = vnet_hdr_len(s)
    if hdr_len == 10 and s.mergeable:
        raise InputError(
            "hdr_len 10 (legacy virtio_net_hdr) cannot go with MRG_RXBUF, which makes "
            "the header at least 12 bytes (virtnet_probe)"
        )
    check_hdr_len(k, hdr_len)
    if s.buf_len is not None:
        if not s.mergeable:
            raise InputError("--buf-len sets the mergeable buffer size: it needs --mergeable")
        low, high = hdr_len + ETH_HLEN, _page_frag_bytes(k)
        if not low <= s.buf_len <= high:
            raise InputError(f"buffer length {s.buf_len} out of range (valid: {low}..{high})")
    if s.ewma is not None and not 0 <= s.ewma <= MAX_FRAME_LEN:
        raise InputError(f"EWMA {s.ewma} out of range (valid: 0..{MAX_FRAME_LEN})")
    if not 1 <= s.ring_size <= MAX_RING_SIZE:
        raise InputError(f"ring size {s.ring_size} out of range (valid: 1..{MAX_RING_SIZE})")
    if frame is not None:
        check_rx_frame(s, frame)
    _check_xdp(k, s)
    return s._replace(hdr_len=hdr_len)


def vnet_hdr_len(s: VirtioRxSetup) -> int:
    """vi->hdr_len: as the device says, else 24 with UDP-tunnel GSO (virtnet_probe @6.17),
    else 12 (VIRTIO_F_VERSION_1)."""
    if s.hdr_len is not None:
        return s.hdr_len
    return 24 if s.udp_tunnel is not None else 12


def check_rx_frame(s: VirtioRxSetup, f: RxFrame) -> None:
    """Check where the frame ``f`` (its length checked by ``check_frame_len``) lands on the
    device ``s``."""
    # with given buffers (a ring model), buffer_index only labels the first of them
    if not 0 <= f.buffer_index < (s.ring_size if not f.buffers else 1 << 31):
        raise InputError(
            f"buffer index {f.buffer_index} out of range (valid: 0..{s.ring_size - 1})"
        )
    if (f.buffer_index or f.buffers) and not s.mergeable and _big_packets(s.guest_gso, s.mtu):
        raise InputError(
            "--buffer-index applies to small and mergeable buffers; big mode "
            "posts page chains from rq->pages"
        )


UDP_TUNNEL_CHOICES: Final = ("gso", "gso-csum", "host")


def check_hdr_len(k: KernelProfile, hdr_len: int) -> None:
    """vi->hdr_len: a virtio-net header size this kernel's driver knows."""
    if hdr_len not in (10, 12, 20, 24):
        raise InputError(
            f"hdr_len {hdr_len} is not a virtio-net header size (valid: 10, 12, 20, 24)"
        )
    if hdr_len == 20 and not k.has(PADDED_VNET_HDR_V1_HASH):
        raise UnsupportedError(
            f"hdr_len 20 (VIRTIO_NET_F_HASH_REPORT) needs 5.18 or later, not {k.name}"
        )
    if hdr_len == 24 and not k.has(VNET_HDR_UDP_TUNNEL):
        raise UnsupportedError(f"hdr_len 24 (UDP tunnel GSO) needs 6.17 or later, not {k.name}")


def _check_xdp(k: KernelProfile, s: VirtioRxSetup) -> None:
    """The XDP options: a known verdict, the helpers only with a program, and the kernels whose
    XDP receive path was read (5.15.215, 6.1.192, 6.2.12, 6.6.150, 6.12.117, 6.18.9, 7.1.5)."""
    if s.xdp is None:
        if (s.xdp_frags or s.xdp_adjust_head or s.xdp_adjust_tail or s.xdp_meta
                or s.xdp_posted_before):
            raise InputError("--xdp-frags/--xdp-adjust-head/--xdp-adjust-tail/--xdp-meta/"
                             "--xdp-posted-before describe the XDP program: give --xdp ACTION "
                             "too")
        return
    from vnetrx.paths.xdp import ACTIONS

    if s.xdp not in ACTIONS:
        raise InputError(f"XDP action {s.xdp!r} unknown (valid: {', '.join(ACTIONS)})")
    if not k.has(PAGE_TO_SKB_BUILD_SKB):
        raise UnsupportedError(
            f"virtio-net XDP is modelled from 5.13 (sources read from 5.15.215), not {k.name}")
    if s.xdp_frags and not k.has(VIRTIO_XDP_MULTI_BUF):
        raise UnsupportedError(
            f"--xdp-frags: virtio-net has no multi-buffer XDP before 6.3 (fab89bafa95b), and "
            f"{k.name} treats a BPF_F_XDP_HAS_FRAGS program like any other; drop --xdp-frags")
    for name, value in (("--xdp-adjust-head", s.xdp_adjust_head),
                        ("--xdp-adjust-tail", s.xdp_adjust_tail)):
        if not -65535 <= value <= 65535:
            raise InputError(f"{name} {value} out of range (valid: -65535..65535)")
    if not 0 <= s.xdp_meta <= 255:
        raise InputError(f"--xdp-meta {s.xdp_meta} out of range (valid: 0..255)")


def _page_frag_bytes(k: KernelProfile) -> int:
    """PAGE_SIZE << SKB_FRAG_PAGE_ORDER: 32 KiB on 4 KiB pages; one page when pages are bigger."""
    return max(k.value(SKB_FRAG_PAGE_BYTES), k.build.page_size)


def _big_packets(guest_gso: bool, mtu: int) -> bool:
    """virtnet_probe: vi->big_packets = guest GSO or an MTU above ETH_DATA_LEN."""
    return guest_gso or mtu > ETH_DATA_LEN


def rx_allocator(k: KernelProfile) -> RxAllocator:
    """Where this kernel's small and mergeable rx buffers come from."""
    if k.has(VIRTIO_RX_PAGE_POOL):
        return RxAllocator(True, k.build.page_size, 0, 0, k.build.page_pool_frag_align)
    dma = virtnet_rq_dma().size  # sizeof(struct virtnet_rq_dma)
    return RxAllocator(
        False,
        _page_frag_bytes(k),
        dma if k.has(RX_PREMAPPED_BY_DEFAULT) else 0,
        dma if k.has(RQ_ALLOC_FRESH_PAGE_SHRINK) else 0,
        k.build.page_pool_frag_align,
    )


def mergeable_hdr_len(k: KernelProfile, hdr_len: int) -> int:
    """The header length mergeable sizing uses: sizeof(struct virtio_net_hdr_mrg_rxbuf) (12) up
    to 5.17, vi->hdr_len from 5.18 (c1ddc42da2b2)."""
    return hdr_len if k.has(PADDED_VNET_HDR_V1_HASH) else virtio_net_hdr_mrg_rxbuf().size


def min_buf_len(k: KernelProfile, hdr_len: int, guest_gso: bool, mtu: int, ring_size: int) -> int:
    """rq->min_buf_len (virtnet_probe → mergeable_min_buf_len). dev->max_mtu is the MTU with
    VIRTIO_NET_F_MTU (assumed negotiated when the MTU is not 1500), else MAX_MTU; guest GSO or an
    MTU above 1500 sets big_packets, which sizes for IP_MAX_MTU."""
    max_mtu = mtu if mtu != ETH_DATA_LEN else MAX_MTU
    packet_len = IP_MAX_MTU if _big_packets(guest_gso, mtu) else max_mtu
    return bufs.mergeable_min_buf_len(
        mergeable_hdr_len(k, hdr_len), packet_len, ring_size, k.value(GOOD_PACKET_LEN)
    )


class Config(NamedTuple):
    """Everything about one kernel + setup that does not depend on the frame length."""

    kernel: str  # the profile's name, for the narration
    present: frozenset[str]  # the keys of the changes the kernel carries (``cite``)
    mode: str  # "small" | "big" | "mergeable"
    mergeable: bool  # VIRTIO_NET_F_MRG_RXBUF
    guest_gso: bool
    mtu: int
    hdr_len: int  # vi->hdr_len
    big_packets: bool
    good_packet_len: int  # GOOD_PACKET_LEN
    good_copy_len: int  # GOOD_COPY_LEN
    shinfo_size: int  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
    sk_buff_aligned: int  # SKB_DATA_ALIGN(sizeof(struct sk_buff))
    build_skb_path: bool  # page_to_skb has the build_skb path (fb32856b16ad, 5.13)
    net_ip_align: int
    napi_head: Head  # napi_alloc_skb(GOOD_COPY_LEN)'s head
    napi_reserve: int  # NET_SKB_PAD + NET_IP_ALIGN
    page_size: int
    l1_cache_bytes: int
    max_skb_frags: int
    alloc: RxAllocator  # page_frag or page_pool, and how a page starts
    page_frag_bytes: int  # PAGE_SIZE << SKB_FRAG_PAGE_ORDER (the largest --buf-len)
    # small mode
    small_bufsize: int  # add_recvbuf_small's SKB_DATA_ALIGN(hdr + PAD + 1518) + shinfo
    small_pad: int  # VIRTNET_RX_PAD = NET_IP_ALIGN + NET_SKB_PAD
    small_len_check: bool  # "rx error: len %u exceeds max size" (ad993a95c508, 5.14)
    buflen_from_ctx: bool  # 7.x: receive_small's buflen is the ctx truesize
    # big mode
    big_num_skbfrags: int  # vi->big_packets_num_skbfrags
    big_padded: int  # sizeof(struct padded_vnet_hdr)
    big_capacity: int  # frame bytes a page chain holds
    big_len_check: bool  # receive_big's max_len check (0c716703965f, 6.18 and backports)
    big_give_pages: bool  # build_skb returns the unused chain to rq->pages (5.15)
    # mergeable mode
    mrg_hdr_len: int  # hdr_padded_len for mergeable (and the sizing header length)
    min_buf_len: int
    buf_len: int | None  # fixed buffer length (--buf-len, a given EWMA, given buffers), or None:
    # sized per frame for a steady stream (ewma = frame length)
    buf_len_fixed: bool  # --buf-len: no get_mergeable_buf_len step
    ewma: int | None
    frag_list_truesize: int  # alloc_skb(0, GFP_ATOMIC)'s truesize (a frag_list skb)
    hdr_rules: HdrRules  # this kernel's virtio_net_hdr_to_skb
    # vi->rx_tnl / vi->rx_tnl_csum (6.17+): GUEST_UDP_TUNNEL_GSO(_CSUM) negotiated; None: a
    # 24-byte header whose features were not said (a tunnel header: not modelled)
    rx_tnl: bool | None
    rx_tnl_csum: bool | None
    rx_hash: bool  # receive_buf copies the hash report into skb->hash (HASH_REPORT, RXHASH)
    profile: KernelProfile  # for what runs per frame on kernel facts (pskb_expand_head's sizes)
    xdp: XdpConfig | None  # an attached XDP program (None: none)
    carved: CarvedMemo  # posted buffers by (buffer_index, buf_len): a memo, not a setting
    # Where the frame lands (``for_frame``; ``config`` gives the first buffer of a fresh page
    # and no header): the device resolved once serves every frame of a sweep or a replay.
    hdr: VnetHdr | None  # the header the device wrote (None: all zero)
    buffer_index: int
    given: tuple[PostedBuffer, ...]  # buffers a ring model handed over (replay)
    small_posted: PostedBuffer | None  # small mode: the buffer the frame lands in

    def cite(self, *changes: Change) -> tuple[Change, ...]:
        """The ``changes`` this kernel carries, in the order given: a step's ``because``. For
        citing only; branches read the booleans above."""
        return tuple(c for c in changes if c.key in self.present)


def config(k: KernelProfile, s: VirtioRxSetup) -> Config:
    """What ``s`` (checked by ``check_virtio_setup``) fixes for every frame length."""
    assert s.hdr_len is not None
    hdr = s.hdr_len
    big_packets = _big_packets(s.guest_gso, s.mtu)
    mode = "mergeable" if s.mergeable else "big" if big_packets else "small"
    alloc = rx_allocator(k)
    good_packet_len = k.value(GOOD_PACKET_LEN)
    small_pad = k.build.net_ip_align + k.net_skb_pad  # VIRTNET_RX_PAD
    small_bufsize = bufs.small_bufsize(
        k.smp_cache_bytes, hdr, small_pad, good_packet_len, shinfo_size(k)
    )
    # virtnet_set_big_packets (6.1+, 4959aebba8c0): ceil(mtu / PAGE_SIZE) pages without guest
    # GSO; MAX_SKB_FRAGS before, and with guest GSO
    if k.has(BIG_PACKETS_MTU_SIZED) and not s.guest_gso:
        num_skbfrags = -(-s.mtu // k.build.page_size)
    else:
        num_skbfrags = k.build.max_skb_frags
    padded = padded_vnet_hdr(k.has(PADDED_VNET_HDR_V1_HASH)).size
    mrg_hdr_len = mergeable_hdr_len(k, hdr)
    min_len = min_buf_len(k, hdr, s.guest_gso, s.mtu, s.ring_size)
    buf_len = s.buf_len
    if buf_len is None and s.ewma is not None:
        buf_len = bufs.get_mergeable_buf_len(
            mrg_hdr_len, s.ewma, min_len, k.build.page_size, k.build.l1_cache_bytes
        )
    return Config(
        kernel=k.name,
        present=k.change_keys,
        mode=mode,
        mergeable=s.mergeable,
        guest_gso=s.guest_gso,
        mtu=s.mtu,
        hdr_len=hdr,
        big_packets=big_packets,
        good_packet_len=good_packet_len,
        good_copy_len=k.value(GOOD_COPY_LEN),
        shinfo_size=shinfo_size(k),
        sk_buff_aligned=k.sk_buff_aligned,
        build_skb_path=k.has(PAGE_TO_SKB_BUILD_SKB),
        net_ip_align=k.build.net_ip_align,
        napi_head=napi_alloc_head(k, k.value(GOOD_COPY_LEN)),
        napi_reserve=k.net_skb_pad + k.build.net_ip_align,
        page_size=k.build.page_size,
        l1_cache_bytes=k.build.l1_cache_bytes,
        max_skb_frags=k.build.max_skb_frags,
        alloc=alloc,
        page_frag_bytes=_page_frag_bytes(k),
        small_bufsize=small_bufsize,
        small_pad=small_pad,
        small_len_check=k.has(SMALL_USED_LEN_CHECK),
        buflen_from_ctx=k.has(VIRTIO_RX_PAGE_POOL),
        big_num_skbfrags=num_skbfrags,
        big_padded=padded,
        big_capacity=(num_skbfrags + 1) * k.build.page_size - padded,
        big_len_check=k.has(BIG_RECV_LEN_CHECK),
        big_give_pages=k.has(BIG_BUILD_SKB_GIVE_PAGES),
        mrg_hdr_len=mrg_hdr_len,
        min_buf_len=min_len,
        buf_len=buf_len,
        buf_len_fixed=s.buf_len is not None,
        ewma=s.ewma,
        frag_list_truesize=kmalloc_reserve(k, 0).truesize,
        hdr_rules=hdr_rules(k),
        rx_tnl=_rx_tnl(s, hdr, "gso", "gso-csum"),
        rx_tnl_csum=_rx_tnl(s, hdr, "gso-csum"),
        # virtnet_probe: has_rss_hash_report comes with VIRTIO_NET_F_HASH_REPORT, the only
        # feature that makes hdr_len 20; NETIF_F_RXHASH is assumed on (virtnet_probe adds it to
        # hw_features). A 24-byte (UDP-tunnel) header may or may not come with HASH_REPORT: not
        # modelled, the hash is left 0.
        rx_hash=hdr == 20,
        profile=k,
        xdp=None if s.xdp is None else _xdp_config(k, s, hdr, small_pad, good_packet_len),
        carved=CarvedMemo(),
        hdr=None,
        buffer_index=0,
        given=(),
        small_posted=_small_posted(alloc, small_bufsize, 0) if mode == "small" else None,
    )


def _rx_tnl(s: VirtioRxSetup, hdr_len: int, *on: str) -> bool | None:
    """virtnet_probe @6.18.9: vi->rx_tnl with GUEST_UDP_TUNNEL_GSO, vi->rx_tnl_csum with its
    _CSUM; unknown (None) for a 24-byte header whose features were not said."""
    if s.udp_tunnel is None:
        return None if hdr_len == 24 else False
    return s.udp_tunnel in on


def for_frame(c: Config, f: RxFrame) -> Config:
    """The device ``c`` with the frame ``f`` landing: its header, and the posted buffer(s) it
    fills (given by a ring model, or carved from a fresh page). Nothing here asks the kernel
    again."""
    if f.hdr is c.hdr and f.buffer_index == c.buffer_index and f.buffers == c.given:
        return c
    small_posted = c.small_posted
    if c.mode == "small":
        small_posted = (f.buffers[0] if f.buffers
                        else _small_posted(c.alloc, c.small_bufsize, f.buffer_index))
    buf_len = c.buf_len
    if f.buffers and not c.buf_len_fixed:  # a ring model's buffers are the size they are
        buf_len = f.buffers[0].len
    return c._replace(hdr=f.hdr, buffer_index=f.buffer_index, given=f.buffers,
                      small_posted=small_posted, buf_len=buf_len)


def _small_posted(alloc: RxAllocator, bufsize: int, buffer_index: int) -> PostedBuffer:
    """add_recvbuf_small's ``buffer_index``-th buffer of a fresh page."""
    return next(islice(bufs.carve_fresh(alloc, bufsize, False), buffer_index, None))


def _xdp_config(k: KernelProfile, s: VirtioRxSetup, hdr: int, small_pad: int,
                good_packet_len: int) -> XdpConfig:
    """An attached program's facts (xdp_config.py, imported only when there is one)."""
    from vnetrx.paths.virtio_net.xdp_config import xdp_config

    return xdp_config(k, s, hdr, small_pad, good_packet_len)


def narrate_probe(c: Config, log: StepLog) -> None:
    """virtnet_probe's step: which receive mode the negotiated features select."""
    log.add(
        "drivers/net/virtio_net.c",
        "virtnet_probe",
        f"{c.mode} receive buffers: "
        + (
            "VIRTIO_NET_F_MRG_RXBUF is negotiated"
            if c.mergeable
            else "no MRG_RXBUF; guest GSO or MTU > 1500 sets big_packets"
            if c.big_packets
            else "no MRG_RXBUF, no guest GSO, MTU <= 1500"
        ),
        mergeable_rx_bufs=c.mergeable,
        big_packets=c.big_packets,
        guest_gso=c.guest_gso,
        mtu=c.mtu,
        hdr_len=c.hdr_len,
    )
