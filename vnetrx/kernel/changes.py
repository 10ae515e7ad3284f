"""The behaviour table: every upstream commit that changes what vnetrx simulates.

Path code asks ``profile.has(CHANGE)`` at the one place where the kernel diverges; it never compares
version numbers itself. Facts come from ../shared/reference/virtio-rx.md (section 1 and appendix A)
and tap-and-tx-headroom.md; where a commit id or release was not pinned there, ``commit`` is "" and
``note`` says what is uncertain.
"""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.kernel.version import KernelVersion, v


@dataclass(frozen=True)
class Change:
    """One upstream commit (or series) and the kernels that carry it."""

    key: str  # stable id: appears in JSON ``because`` and in ``vnetrx kernels --changes``
    subject: str  # the commit subject, verbatim
    commit: str  # 12-hex upstream id, or "" where no source showed it
    since: KernelVersion  # first mainline release that has it
    summary: str  # what the kernel does from ``since`` on, present tense
    until: KernelVersion | None = None  # first mainline release where it was reverted
    # Stable point releases known to carry a backport: the change is present in that point
    # release and every later one of the same series. The real first carrier may be earlier.
    backports: tuple[KernelVersion, ...] = ()
    note: str = ""  # what is uncertain about it


PAGE_TO_SKB_BUILD_SKB = Change(
    key="page_to_skb_build_skb",
    subject="virtio-net: page_to_skb() use build_skb when there's sufficient tailroom",
    commit="fb32856b16ad",
    since=v("5.13"),
    summary="page_to_skb() wraps the rx buffer with build_skb() when the frame is longer than "
    "GOOD_COPY_LEN and the buffer's tailroom holds skb_shared_info; with it come 'restrict "
    "build_skb() use to some arches' (NET_IP_ALIGN == 0 only) and 'fix skb_over_panic inside "
    "big mode' (1a8024239dac: the big-mode header gap is subtracted from the tailroom)",
)
BIG_BUILD_SKB_GIVE_PAGES = Change(
    key="big_build_skb_give_pages",
    subject="virtio-net: fix pages leaking when building skb in big mode",
    commit="",
    since=v("5.15"),
    summary="after build_skb() in big mode the unused chained pages go back to rq->pages "
    "(give_pages); 5.13 and 5.14 leak them",
    note="commit id not seen; believed v5.15-rc (Sep 2021)",
)
SMALL_USED_LEN_CHECK = Change(
    key="small_used_len_check",
    subject="virtio-net: Add validation for used length",
    commit="ad993a95c508",
    since=v("5.14"),
    summary="receive_small() drops a frame longer than GOOD_PACKET_LEN (1518) "
    "('rx error: len %u exceeds max size %d')",
)
PADDED_VNET_HDR_V1_HASH = Change(
    key="padded_vnet_hdr_v1_hash",
    subject="drivers/net/virtio_net: Fixed padded vheader to use v1 with hash",
    commit="c1ddc42da2b2",
    since=v("5.18"),
    summary="struct padded_vnet_hdr grows from 16 to 32 bytes (virtio_net_hdr_v1_hash + 12); "
    "mergeable hdr_padded_len and the buffer sizing use vi->hdr_len, which may be 20 with "
    "VIRTIO_NET_F_HASH_REPORT (91f41f01d219)",
)
BIG_PACKETS_MTU_SIZED = Change(
    key="big_packets_mtu_sized",
    subject="virtio-net: use mtu size as buffer length for big packets",
    commit="4959aebba8c0",
    since=v("6.1"),
    summary="without guest GSO, big mode posts DIV_ROUND_UP(mtu, PAGE_SIZE) + 1 pages per "
    "buffer instead of MAX_SKB_FRAGS + 1",
)
NAPI_SMALL_PAGE_FRAG = Change(
    key="napi_small_page_frag",
    subject="net: skb: introduce and use a single page frag cache",
    commit="dbae2b062824",
    since=v("6.1"),
    until=v("6.14"),
    summary="napi_alloc_skb() serves heads up to SKB_WITH_OVERHEAD(1024) from 1 KiB slices of an "
    "order-0 page (4 KiB-page kernels only); reverted in 6.14 (6bc7e4eb0499)",
)
SKB_SMALL_HEAD_CACHE = Change(
    key="skb_small_head_cache",
    subject="net: add dedicated kmem_cache for typical/small skb->head",
    commit="bf9f1baa279f",
    since=v("6.3"),
    summary="__alloc_skb() takes heads of up to SKB_SMALL_HEAD_CACHE_SIZE from the "
    "skbuff_small_head slab instead of kmalloc",
)
SMALL_HEAD_GRO_SIZED = Change(
    key="small_head_gro_sized",
    subject="net: allow small head cache usage with large MAX_SKB_FRAGS values",
    commit="14ad6ed30a10",
    since=v("6.14"),
    backports=(v("6.12.117"),),
    summary="SKB_SMALL_HEAD_CACHE_SIZE covers max(MAX_TCP_HEADER, GRO_MAX_HEAD + NET_SKB_PAD + "
    "NET_IP_ALIGN), and napi_alloc_skb() uses that cache for small heads",
    note="6.12.117 carries it; the first 6.12.y with it was not pinned",
)
RX_PREMAPPED_BY_DEFAULT = Change(
    key="rx_premapped_by_default",
    subject="virtio_net: enable premapped mode by default",
    commit="",
    since=v("6.13"),
    summary="every rx page_frag page starts with a 16-byte struct virtnet_rq_dma; small and "
    "mergeable buffers start at offset 16 of their backing page",
    note="series applied Nov 2024, ids not seen. 6.6-6.9 do the same only when the virtqueue "
    "uses the DMA API (not modelled: typical QEMU does not); 6.10 always (not profiled)",
)
BIG_RECV_LEN_CHECK = Change(
    key="big_recv_len_check",
    subject="virtio-net: fix received length check in big packets",
    commit="0c716703965f",
    since=v("6.18"),
    backports=(v("6.1.192"), v("6.12.117")),
    summary="receive_big() drops L > (num_skbfrags + 1) * PAGE_SIZE - sizeof(padded_vnet_hdr) + "
    "hdr_len; page_to_skb() loses its 'too much data' check",
    note="6.1.192 and 6.12.117 carry the backport; the first point releases with it were not pinned",
)
VNET_HDR_UDP_TUNNEL = Change(
    key="vnet_hdr_udp_tunnel",
    subject="virtio_net: UDP tunnel GSO (VIRTIO_NET_F_GUEST/HOST_UDP_TUNNEL_GSO)",
    commit="",
    since=v("6.18"),
    summary="vi->hdr_len may be 24 (struct virtio_net_hdr_v1_hash_tunnel)",
    note="present in 6.18 (BTF) and 7.3; the release that added it (about 6.17) was not pinned",
)
V1_HASH_SPLIT_HASH_VALUE = Change(
    key="v1_hash_split_hash_value",
    subject="virtio_net: fix alignment for virtio_net_hdr_v1_hash",
    commit="0ddebed6a84c",
    since=v("6.18"),
    summary="hash_value (le32) becomes hash_value_lo/hash_value_hi (le16 each): same 20 bytes, "
    "alignment 2",
    note="seen in 6.18.44 BTF; the mainline release was not checked",
)

SHINFO_XDP_FRAGS_UNION = Change(
    key="shinfo_xdp_frags_union",
    subject="xdp: add generic xdp_buff_add_frag()",
    commit="",
    since=v("6.14"),
    summary="skb_shared_info: xdp_frags_size and the new xdp_frags_truesize share a union with "
    "destructor_arg at offset 40; offset 36 becomes a hole (size unchanged, 320 with 17 frags)",
    note="series 'xdp: a fistful of generic changes' (Lobakin, v4 Nov 2024), believed merged "
    "for 6.14; the union is in 6.18.44's BTF, and 6.12.117's source still has "
    "xdp_frags_size at 36",
)

CHANGES: tuple[Change, ...] = (
    SMALL_USED_LEN_CHECK,
    PAGE_TO_SKB_BUILD_SKB,
    BIG_BUILD_SKB_GIVE_PAGES,
    PADDED_VNET_HDR_V1_HASH,
    BIG_PACKETS_MTU_SIZED,
    NAPI_SMALL_PAGE_FRAG,
    SKB_SMALL_HEAD_CACHE,
    RX_PREMAPPED_BY_DEFAULT,
    SMALL_HEAD_GRO_SIZED,
    BIG_RECV_LEN_CHECK,
    VNET_HDR_UDP_TUNNEL,
    V1_HASH_SPLIT_HASH_VALUE,
    SHINFO_XDP_FRAGS_UNION,
)
