"""The setup half of ``virtio_rx_plan``: what the device negotiated (``VirtioRxSetup``), its
checks against the kernel (``resolve``) and what it fixes for every frame length (``config``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import islice
from typing import NamedTuple

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.changes import (
    BIG_BUILD_SKB_GIVE_PAGES,
    BIG_RECV_LEN_CHECK,
    PADDED_VNET_HDR_V1_HASH,
    PAGE_TO_SKB_BUILD_SKB,
    SMALL_USED_LEN_CHECK,
    VIRTIO_RX_PAGE_POOL,
    VNET_HDR_UDP_TUNNEL,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths.skbuff import ETH_HLEN, Head, kmalloc_reserve, napi_alloc_head, shinfo_size

PostedBuffer = bufs.PostedBuffer
MAX_FRAME_LEN = 65535


@dataclass(frozen=True)
class VirtioRxSetup:
    """What the device negotiated and what arrives. ``None`` fields are derived by ``resolve``."""

    frame_len: int  # bytes after the virtio-net header (Ethernet header included)
    mergeable: bool = False  # VIRTIO_NET_F_MRG_RXBUF
    guest_gso: bool = False  # any of GUEST_TSO4/TSO6/ECN/UFO (→ big mode without MRG_RXBUF)
    mtu: int = 1500  # with VIRTIO_NET_F_MTU when not 1500
    hdr_len: int | None = None  # vi->hdr_len; None → 12 (VIRTIO_F_VERSION_1)
    buf_len: int | None = None  # mergeable buffer length; None → get_mergeable_buf_len()
    ewma: int | None = None  # rq->mrg_avg_pkt_len; None → frame_len (a steady stream of it)
    ring_size: int = 256
    buffer_index: int = 0  # which posted buffer (0 = the first of a fresh page) the frame lands in
    # The posted buffers the device fills, in order, when a ring model (replay) knows them;
    # empty: carve them from a fresh page as add_recvbuf_* would.
    buffers: tuple[bufs.PostedBuffer, ...] = ()


def resolve(k: KernelProfile, s: VirtioRxSetup) -> VirtioRxSetup:
    """Check the request against the kernel and fill in what the features imply."""
    if not 1 <= s.frame_len <= MAX_FRAME_LEN:
        raise InputError(f"frame length {s.frame_len} out of range (valid: 1..{MAX_FRAME_LEN})")
    if not 68 <= s.mtu <= MAX_FRAME_LEN:
        raise InputError(f"MTU {s.mtu} out of range (valid: 68..{MAX_FRAME_LEN})")
    # With MRG_RXBUF the driver is in mergeable mode whatever the GSO features say; guest GSO
    # still sets vi->big_packets, which sizes rq->min_buf_len for IP_MAX_MTU (config()).
    hdr_len = 12 if s.hdr_len is None else s.hdr_len
    if hdr_len not in (10, 12, 20, 24):
        raise InputError(
            f"hdr_len {hdr_len} is not a virtio-net header size (valid: 10, 12, 20, 24)"
        )
    if hdr_len == 10 and s.mergeable:
        raise InputError(
            "hdr_len 10 (legacy virtio_net_hdr) cannot go with MRG_RXBUF, which makes "
            "the header at least 12 bytes (virtnet_probe)"
        )
    if hdr_len == 20 and not k.has(PADDED_VNET_HDR_V1_HASH):
        raise UnsupportedError(
            f"hdr_len 20 (VIRTIO_NET_F_HASH_REPORT) needs 5.18 or later, not {k.name}"
        )
    if hdr_len == 24 and not k.has(VNET_HDR_UDP_TUNNEL):
        raise UnsupportedError(f"hdr_len 24 (UDP tunnel GSO) needs 6.18 or later, not {k.name}")
    if s.buf_len is not None:
        if not s.mergeable:
            raise InputError("--buf-len sets the mergeable buffer size: it needs --mergeable")
        low, high = hdr_len + ETH_HLEN, bufs.page_frag_size(k)
        if not low <= s.buf_len <= high:
            raise InputError(f"buffer length {s.buf_len} out of range (valid: {low}..{high})")
    if s.ewma is not None and not 0 <= s.ewma <= MAX_FRAME_LEN:
        raise InputError(f"EWMA {s.ewma} out of range (valid: 0..{MAX_FRAME_LEN})")
    if not 1 <= s.ring_size <= 32768:
        raise InputError(f"ring size {s.ring_size} out of range (valid: 1..32768)")
    # with given buffers (a ring model), buffer_index only labels the first of them
    if not 0 <= s.buffer_index < (s.ring_size if not s.buffers else 1 << 31):
        raise InputError(
            f"buffer index {s.buffer_index} out of range (valid: 0..{s.ring_size - 1})"
        )
    if (
        (s.buffer_index or s.buffers)
        and not s.mergeable
        and (s.guest_gso or s.mtu > bufs.ETH_DATA_LEN)
    ):
        raise InputError(
            "--buffer-index applies to small and mergeable buffers; big mode "
            "posts page chains from rq->pages"
        )
    return replace(s, hdr_len=hdr_len)


class Config(NamedTuple):
    """Everything about one kernel + setup that does not depend on the frame length."""

    mode: str  # "small" | "big" | "mergeable"
    hdr_len: int
    big_packets: bool
    shinfo_size: int  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
    sk_buff_aligned: int  # SKB_DATA_ALIGN(sizeof(struct sk_buff))
    build_skb_path: bool  # page_to_skb has the build_skb path (5.13+)
    net_ip_align: int
    napi_head: Head  # napi_alloc_skb(GOOD_COPY_LEN)'s head
    napi_reserve: int  # NET_SKB_PAD + NET_IP_ALIGN
    page_size: int
    # small mode
    small_bufsize: int  # add_recvbuf_small's SKB_DATA_ALIGN(hdr + PAD + 1518) + shinfo
    small_pad: int  # VIRTNET_RX_PAD
    small_posted: PostedBuffer | None  # the buffer the frame lands in
    small_len_check: bool  # "rx error: len %u exceeds max size" (5.14+)
    buflen_from_ctx: bool  # 7.x: receive_small's buflen is the ctx truesize
    # big mode
    big_num_skbfrags: int
    big_padded: int  # sizeof(struct padded_vnet_hdr)
    big_capacity: int  # frame bytes a page chain holds
    big_len_check: bool  # receive_big's max_len check (6.18 and backports)
    big_give_pages: bool  # build_skb returns the unused chain (5.15+)
    # mergeable mode
    mrg_hdr_len: int  # hdr_padded_len for mergeable (and the sizing header length)
    min_buf_len: int
    buf_len: int | None  # fixed buffer length (--buf-len, a given EWMA, given buffers), or None
    # None: sized per frame for a steady stream (ewma = frame length)
    buffer_index: int
    given: tuple[PostedBuffer, ...]  # buffers a ring model handed over (replay)
    ewma: int | None
    max_skb_frags: int
    l1_cache_bytes: int
    frag_list_truesize: int  # alloc_skb(0, GFP_ATOMIC)'s truesize (a frag_list skb)
    carved: dict[int, Carved]  # buf_len → buffers from a fresh page (a cache; -1: given ones)


class Carved(NamedTuple):
    """Posted buffers with what lets a plan skip walking them: prefix sums of their lengths and
    runs of buffers that follow each other in the same page (which skb_coalesce_rx_frag merges)."""

    buffers: tuple[PostedBuffer, ...]
    prefix: tuple[int, ...]  # prefix[i] = total length of buffers[:i]
    run: tuple[int, ...]  # run[i] = how many times contiguity breaks among buffers[0..i]


def config(k: KernelProfile, s: VirtioRxSetup) -> Config:
    """What ``s`` (resolved) fixes for every frame length."""
    assert s.hdr_len is not None
    hdr = s.hdr_len
    big_packets = s.guest_gso or s.mtu > bufs.ETH_DATA_LEN
    mode = "mergeable" if s.mergeable else "big" if big_packets else "small"
    small_bufsize = bufs.small_bufsize(k, hdr)
    small_posted = None
    if mode == "small":
        small_posted = (
            s.buffers[0]
            if s.buffers
            else next(islice(bufs.iter_small(k, small_bufsize), s.buffer_index, None))
        )
    n = bufs.big_num_skbfrags(k, s.guest_gso, s.mtu, k.build.max_skb_frags)
    max_mtu = s.mtu if s.mtu != bufs.ETH_DATA_LEN else bufs.MAX_MTU
    min_buf_len = bufs.mergeable_min_buf_len(k, hdr, big_packets, max_mtu, s.ring_size)
    buf_len = s.buf_len
    if buf_len is None and s.buffers:
        buf_len = s.buffers[0].len
    elif buf_len is None and s.ewma is not None:
        buf_len = bufs.get_mergeable_buf_len(k, hdr, s.ewma, min_buf_len)
    return Config(
        mode=mode,
        hdr_len=hdr,
        big_packets=big_packets,
        shinfo_size=shinfo_size(k),
        sk_buff_aligned=k.sk_buff_aligned,
        build_skb_path=k.has(PAGE_TO_SKB_BUILD_SKB),
        net_ip_align=k.build.net_ip_align,
        napi_head=napi_alloc_head(k, bufs.GOOD_COPY_LEN),
        napi_reserve=k.net_skb_pad + k.build.net_ip_align,
        page_size=k.build.page_size,
        small_bufsize=small_bufsize,
        small_pad=bufs.virtnet_rx_pad(k),
        small_posted=small_posted,
        small_len_check=k.has(SMALL_USED_LEN_CHECK),
        buflen_from_ctx=k.has(VIRTIO_RX_PAGE_POOL),
        big_num_skbfrags=n,
        big_padded=bufs.padded_hdr_size(k),
        big_capacity=bufs.big_capacity(k, n),
        big_len_check=k.has(BIG_RECV_LEN_CHECK),
        big_give_pages=k.has(BIG_BUILD_SKB_GIVE_PAGES),
        mrg_hdr_len=bufs.mergeable_hdr_len(k, hdr),
        min_buf_len=min_buf_len,
        buf_len=buf_len,
        buffer_index=s.buffer_index,
        given=s.buffers,
        ewma=s.ewma,
        max_skb_frags=k.build.max_skb_frags,
        l1_cache_bytes=k.build.l1_cache_bytes,
        frag_list_truesize=kmalloc_reserve(k, 0).truesize,
        carved={},
    )
