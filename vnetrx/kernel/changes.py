"""The behaviour table: every upstream commit that changes what vnetrx simulates.

Path code asks ``profile.has(CHANGE)`` at the one place where the kernel diverges; it never compares
version numbers itself. Facts come from docs/kernel/virtio-net-rx.md (§2 and Appendix A),
docs/kernel/tun-tap.md, docs/kernel/tx-headroom.md and docs/kernel/offloads.md; where a commit id or release was not pinned there, ``commit`` is "" and
``note`` says what is uncertain.
"""

from __future__ import annotations

from vnetrx.kernel.version import KernelVersion, v
from vnetrx.records import NamedTuple


class Change(NamedTuple):
    """One upstream commit (or series) and the kernels that carry it."""

    key: str  # stable id: appears in JSON ``because`` and in ``vnetrx kernels --changes``
    subject: str  # the commit subject, verbatim
    commit: str  # 12-hex upstream id, or "" where no source showed it
    since: KernelVersion | None  # first mainline release that has it (None: no mainline release)
    summary: str  # what the kernel does from ``since`` on, present tense
    until: KernelVersion | None = None  # first mainline release where it was reverted
    # Stable point releases known to carry a backport: the change is present in that point
    # release and every later one of the same series. The real first carrier may be earlier.
    backports: tuple[KernelVersion, ...] = ()
    # Stable windows read release by release: (first point release with it, first without it
    # again or None). Exact, unlike ``backports``: a short-lived backport that a later point
    # release reverted or replaced is one window.
    stable: tuple[tuple[KernelVersion, KernelVersion | None], ...] = ()
    note: str = ""  # what is uncertain about it

    def windows(self) -> tuple[tuple[KernelVersion, KernelVersion | None], ...]:
        """Every stable window, ``backports`` included (as windows with no end)."""
        return (*((bp, None) for bp in self.backports), *self.stable)


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
    backports=(v("6.12.100"), v("6.13.5")),
    summary="SKB_SMALL_HEAD_CACHE_SIZE covers max(MAX_TCP_HEADER, GRO_MAX_HEAD + NET_SKB_PAD + "
    "NET_IP_ALIGN), and napi_alloc_skb() uses that cache for small heads",
    note="merged for 6.14-rc4; 6.13.5's release notes list it (2025-02-27). Measured in 6.12.100 "
    "(a 14-byte write through vhost's tun_get_user fallback: a 704-byte small head, truesize "
    "960; tests/data/vhost) and 6.12.117; the first 6.12.y with it (likely 6.12.17, released "
    "with 6.13.5) was not pinned: 6.12.17-6.12.99 are modelled without it",
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
RQ_ALLOC_FRESH_PAGE_SHRINK = Change(
    key="rq_alloc_fresh_page_shrink",
    subject="virtio-net: fix overflow inside virtnet_rq_alloc",
    commit="6aacd1484468",
    since=v("6.13"),
    backports=(v("6.12.5"),),
    summary="add_recvbuf_mergeable() calls skb_page_frag_refill() itself and, on a fresh page "
    "(offset 0), shrinks a buffer by sizeof(struct virtnet_rq_dma) when the buffer and that "
    "header would not fit the page; the hole rule then gives the bytes back when no dma header "
    "is written (6.12), so only premapped pages (6.13+) see a shorter buffer",
    note="read in Debian's 6.12.117 source; the stable review mail ([PATCH 6.12 330/466], "
    "2024-12-12) puts it in 6.12.5; part of the series that made premapped mode the default",
)
VIRTNET_RQ_DMA = Change(
    key="virtnet_rq_dma",
    subject="virtio_net: merge dma operations when filling mergeable buffers",
    commit="",
    since=v("6.6"),
    summary="drivers/net/virtio_net.c defines struct virtnet_rq_dma (dma addr, ref, len, "
    "need_sync), the header of a premapped rx page",
    note="part of the 6.6 premapped-mode series; the struct is in Debian 6.12.117's virtio_net.ko "
    "BTF and not in 6.1.192's (checked by tests/test_btf_split.py); the commit id was not pinned",
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
TUN_VNET_HDR_GET = Change(
    key="tun_vnet_hdr_get",
    subject="tun: Decouple vnet handling",
    commit="2506251e81d1",
    since=v("6.15"),
    summary="drivers/net/tun_vnet.h's __tun_vnet_hdr_get reads the header: hdr_len is checked "
    "against the bytes left after the parsed header (10, or 24 with UDP-tunnel GSO) instead of "
    "after all of vnet_hdr_sz, so it may exceed the frame by vnet_hdr_sz - 10",
    note="the 'tun-unify-vnet-implementation' series (1d41e2fa93f7 extracts tun_vnet.h); 6.14.0 "
    "lacks it, 6.17.0 has it; measured on 6.18.44: vnet_hdr_sz 12, a 100-byte frame takes "
    "hdr_len 102 and refuses 103",
)
VIRTNET_RECEIVE_DONE = Change(
    key="virtnet_receive_done",
    subject="virtio_net: separate receive_buf",
    commit="c86c120fde29",
    since=v("6.11"),
    summary="what receive_buf does with the skb receive_*() built (hash, DATA_VALID, "
    "virtio_net_hdr_to_skb, eth_type_trans, napi_gro_receive) moves into "
    "virtnet_receive_done(), shared with the AF_XDP zero-copy receive",
    note="posted for net-next in June 2024 (the AF_XDP series); absent in 6.8.0, present in "
    "6.11.11",
)
VNET_HDR_UDP_TUNNEL = Change(
    key="vnet_hdr_udp_tunnel",
    subject="net: implement virtio helpers to handle UDP GSO tunneling.",
    commit="a2fb4bc4e2a6",
    since=v("6.17"),
    summary="include/linux/virtio_net.h gains struct virtio_net_hdr_v1_hash_tunnel (24 bytes: "
    "outer_th_offset, inner_nh_offset) and virtio_net_hdr_tnl_to_skb / _tnl_from_skb: a "
    "gso_type with VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4 (0x20) or _IPV6 (0x40) is refused unless "
    "UDP-tunnel GSO was negotiated, needs NEEDS_CSUM, an inner TCP or USO type and ordered "
    "offsets, and sets SKB_GSO_UDP_TUNNEL[_CSUM], the inner headers and skb->encapsulation; "
    "virtio-net's vi->hdr_len is 24 with GUEST/HOST_UDP_TUNNEL_GSO (56a06bd40fab)",
    note="Paolo Abeni's 'virtio: introduce GSO over UDP tunnel' series, in net-next on "
    "2025-07-16 (kernel.org post-receive log), so 6.17; read @6.17.0 (busysteve import) and "
    "@6.18.9; 6.12.117 has none of it, 6.13-6.16 were not read",
)
TUN_UDP_TUNNEL_GSO = Change(
    key="tun_udp_tunnel_gso",
    subject="tun: enable gso over UDP tunnel support.",
    commit="288f30435132",
    since=v("6.17"),
    summary="a TUNSETVNETHDRSZ of at least 24 (TUN_VNET_TNL_SIZE) makes tun_get_user and "
    "tun_xdp_one read the 24-byte header and treat UDP-tunnel GSO and its csum as negotiated "
    "(tun_vnet_hdr_guest_features); TUNSETOFFLOAD takes TUN_F_UDP_TUNNEL_GSO (0x80, only with "
    "TUN_F_CSUM and a TSO4/TSO6/USO offload) and TUN_F_UDP_TUNNEL_GSO_CSUM (0x100, only with "
    "it); before, both bits are left over and refused with EINVAL",
    note="same series as a2fb4bc4e2a6 (net-next 2025-07-16); set_offload and tun_vnet.h read "
    "@6.17.0 and @6.18.9; measured on 6.18.44 (tests/data/tap_tunnel)",
)
VHOST_UDP_TUNNEL_GSO = Change(
    key="vhost_udp_tunnel_gso",
    subject="vhost/net: enable gso over UDP tunnel support.",
    commit="bbca931fce26",
    since=v("6.17"),
    summary="vhost_net_set_features makes hdr_len sizeof(struct virtio_net_hdr_v1_hash_tunnel) "
    "= 24 when VIRTIO_NET_F_HOST_UDP_TUNNEL_GSO or _GUEST_UDP_TUNNEL_GSO is negotiated (the "
    "extended feature bits 65/67: 333c515d1896 'vhost-net: allow configuring extended "
    "features'); else 12 with MRG_RXBUF or VERSION_1, else 10",
    note="same series as a2fb4bc4e2a6 (net-next 2025-07-16); read @6.17.0 and @6.18.9; from "
    "source only: this host has no vhost_net",
)
VHOST_IN_ORDER = Change(
    key="vhost_in_order",
    subject="vhost_net: basic in_order support",
    commit="45347e79b544",
    since=v("6.17"),
    summary="vhost-net offers VIRTIO_F_IN_ORDER (35); negotiated, vhost_get_vq_desc takes heads "
    "in descriptor order (next_avail_head) and vhost_add_used_n_in_order writes one used "
    "element per batch: handle_tx_copy's batch of up to 64 frames is one element (the last "
    "head, len 0) and handle_rx's packet of num_buffers chains is one element (the last chain's "
    "head and its used length); used->idx still advances by every buffer",
    note="with 67a873df0c41 'vhost: basic in order support'; in Michael Tsirkin's 'virtio, "
    "vhost: features, fixes' pull for 6.17 (2025-08-01) and the mainline merge 821c9e515db5; "
    "read @6.17.0 and @6.18.9 (drivers/vhost/net.c, vhost.c); from source only: no 6.17+ "
    "vhost_net was run here. Zerocopy TX (vhost_zerocopy_signal_used) passes no nheads and "
    "keeps one element per frame",
)
VHOST_NUM_BUFFERS_VERSION_1 = Change(
    key="vhost_num_buffers_version_1",
    subject="vhost/net: Set num_buffers for virtio 1.0",
    commit="a3b9c053d82a",
    since=v("6.14"),
    summary="handle_rx writes num_buffers (= headcount, 1) at offset 10 of the 12-byte header "
    "when VIRTIO_F_VERSION_1 is negotiated without MRG_RXBUF (set_num_buffers = mergeable || "
    "VERSION_1); before it those two bytes are left as the guest posted them",
    note="in the virtio pull for 6.14 ('[GIT PULL] virtio: features, fixes, cleanups', "
    "2025-01-27, based on 6.13-rc6); absent in Debian's 6.12.117 "
    "(../shared/reference/offloads-xdp.md §4.4, which brackets it as 6.17+: 6.13-6.16 were not "
    "read there); carries Fixes: 41e3e42108bc but no stable backport was seen",
)
TUN_USO = Change(
    key="tun_uso",
    subject="driver/net/tun: Added features for USO.",
    commit="399e0827642f",
    since=v("6.2"),
    summary="TUNSETOFFLOAD takes TUN_F_USO4|TUN_F_USO6 and the tap advertises "
    "NETIF_F_GSO_UDP_L4, so a USO skb reaches tun_put_user whole (virtio_net_hdr_from_skb "
    "writes VIRTIO_NET_HDR_GSO_UDP_L4, 860b7f27b8f7); before it the host stack segments it "
    "before the tap",
    note="the USO series (Melnychenko, v5 Dec 2022; b22bbdd17a5a, 399e0827642f, 34061b348ae9, "
    "860b7f27b8f7, 418044e1de30, as a merge log lists them); 6.2 as VNET_HDR_GSO_UDP_L4: absent "
    "in 6.1.y (no UDP_L4 in virtio_net_hdr_from_skb), present in 6.8.0",
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

TUN_BUILD_SKB = Change(
    key="tun_build_skb",
    subject="tap: use build_skb() for small packet",
    commit="66ccbc9c87c2",
    since=v("4.14"),
    summary="tun_get_user() copies a small TAP frame from a non-blocking writer with the default "
    "sndbuf into a page fragment (current->task_frag, after 0bbd7dad34f8 'tun: make "
    "tun_build_skb() thread safe') and wraps it with build_skb() (tun_can_build_skb, "
    "tun_build_skb); everything else still goes through tun_alloc_skb()",
    note="tun.c @4.13.4 has no build_skb; first seen @4.14.5. The pre-0bbd7dad34f8 per-queue "
    "page_frag is known only from that commit's message",
)
TUN_XDP = Change(
    key="tun_xdp",
    subject="tap: XDP support",
    commit="",
    since=v("4.14"),
    summary="an XDP program can be attached to a tun/tap device; with 7df13219d757 'tun: reserve "
    "extra headroom only when XDP is set' tun_build_skb() adds XDP_PACKET_HEADROOM (256) to pad "
    "only while a program is attached; other skbs get generic XDP",
    note="commit id not seen; present @4.14.5 (TUN_HEADROOM 256), absent @4.13.4",
)
TUN_XDP_ACT_STATS = Change(
    key="tun_xdp_act_stats",
    subject="tun: add missing rx stats accounting in tun_xdp_act",
    commit="f1084c427f55",
    since=v("6.8"),
    stable=((v("6.1.76"), None), (v("6.6.15"), None)),
    summary="tun_xdp_act() counts a successful XDP_TX or XDP_REDIRECT in rx_packets/rx_bytes "
    "(data_end - data) and, with 5744ba05e7c4 'tun: fix missing dropped counter in "
    "tun_xdp_act', a failed one in rx_dropped; before, only XDP_DROP/ABORTED moved a counter",
    note="both v6.8-rc2, in the 6.1 and 6.6 stable reviews of January 2024; the first point "
    "releases (6.1.76, 6.6.15) are from a release-by-release bisection of squashed mirrors; "
    "absent @5.15.215. Present @6.1.192 and @6.12.117 (read)",
)
VIRTIO_XDP_SHARED_TX_QUEUES = Change(
    key="virtio_xdp_shared_tx_queues",
    subject="virtio-net: support XDP when not more queues",
    commit="97c2c69e1926",
    since=v("5.13"),
    summary="virtnet_xdp_set() accepts a program when there are fewer free queue pairs than "
    "CPUs: XDP_TX and XDP_REDIRECT share the stack's tx queues under their lock (a warning); "
    "before, the attach failed with -ENOMEM 'Too few free TX rings available'",
    note="stable backports to 5.4.y and 5.10.y (Aug 2021 review mails), first point releases "
    "not pinned, so those series are modelled without it; the refusal read @5.12.9",
)
VIRTIO_XDP_MTU_FRAGS = Change(
    key="virtio_xdp_mtu_frags",
    subject="virtio-net: fix calculation of MTU for single-buffer xdp",
    commit="e814b958ad88",
    since=v("6.3"),
    summary="virtnet_xdp_set()'s MTU limit becomes PAGE_SIZE - SKB_DATA_ALIGN(XDP_PACKET_HEADROOM "
    "+ sizeof(skb_shared_info)) - ETH_HLEN (3506) and applies only to a program without "
    "BPF_F_XDP_HAS_FRAGS (multi-buffer XDP, same series); before, PAGE_SIZE - "
    "sizeof(struct padded_vnet_hdr) (4064; 4080 before 5.18) for every program, also on detach",
    note="series merged as 40ea3ee2ced1 (v6.3); read @6.2.12 (old rule) and @6.6.150 (new)",
)
MERGEABLE_LEN_CHECK = Change(
    key="mergeable_len_check",
    subject="virtio-net: ensure the received length does not exceed allocated size",
    commit="",
    since=v("6.16"),
    backports=(v("5.15.215"), v("6.1.144"), v("6.6.97"), v("6.12.117")),
    summary="xdp_linearize_page checks every further buffer with check_mergeable_len(): len > "
    "ctx truesize - room counts rx_length_errors and fails the copy. Up to 6.2 an XDP buffer's "
    "ctx truesize is its length (3520) without the room (576), so any further buffer longer "
    "than 2944 bytes is counted (measured: Debian 6.1.192)",
    note="in Linux 6.16-rc5's shortlog (Bui Quang Minh, with 'use the check_mergeable_len "
    "helper'); upstream id not pinned. Present @5.15.215, @6.1.166, @6.1.192, @6.6.150, "
    "@6.12.117, @6.17.0; absent @6.12.15, @6.14. 6.1.144 and 6.6.97 are from a release "
    "bisection in docs/kernel/xdp-source-notes.md, 5.15.215 and 6.12.117 only the releases read "
    "(the first carriers there are earlier, not pinned)",
)
XDP_METADATA_252 = Change(
    key="xdp_metadata_252",
    subject="net, xdp: Allow metadata > 32",
    commit="2ebe81c81435",
    since=v("6.8"),
    summary="bpf_xdp_adjust_meta() accepts up to 252 bytes of metadata (type_max of "
    "skb_shared_info.meta_len, 4-byte aligned) instead of 32",
    note="bpf-next Dec 2023; xdp_metalen_invalid read @6.6.150 (32) and @6.8, @6.12.117 (252)",
)
TUN_XDP_METADATA = Change(
    key="tun_xdp_metadata",
    subject="net: tun: Enable XDP metadata support",
    commit="c2315ebb0588",
    since=v("6.15"),
    summary="tun_build_skb() prepares the xdp_buff with metadata support, so a native program "
    "may call bpf_xdp_adjust_meta(), and (0ca23a4d64ce 'net: tun: Enable transfer of XDP "
    "metadata to skb') XDP_PASS sets skb_metadata_len; before, the helper fails with -ENOTSUPP",
    note="bpf-next Mar 2025; absent @6.14, present @6.17.0 and @6.18.9 (read)",
)
VIRTIO_XDP_MULTI_BUF = Change(
    key="virtio_xdp_multi_buf",
    subject="virtio-net: support multi-buffer xdp",
    commit="fab89bafa95b",
    since=v("6.3"),
    summary="mergeable buffers posted for XDP record ctx truesize PAGE_SIZE (len + room) and "
    "never absorb the page's hole (484beac2ffc1 'virtio-net: disable the hole mechanism for "
    "xdp'); a frame over several buffers reaches a program loaded with BPF_F_XDP_HAS_FRAGS as "
    "a multi-buffer xdp_buff (virtnet_build_xdp_buff_mrg, at most MAX_SKB_FRAGS + 1 buffers), "
    "and is linearised (xdp_linearize_page) or dropped for any other program; XDP_PASS builds "
    "the skb from the xdp_buff (b26aa481b4b7 'virtio-net: build skb from multi-buffer xdp'), "
    "no longer through page_to_skb, so it never copies",
    note="series merged as 40ea3ee2ced1 (v6.3); read @6.2.12 (absent) and @6.6.150, @6.12.117, "
    "@6.18.9 (present)",
)
VIRTIO_RECEIVE_XDP_SPLIT = Change(
    key="virtio_receive_xdp_split",
    subject="virtio_net: introduce receive_small_xdp()",
    commit="c5f3e72f04c0",
    since=v("6.5"),
    summary="receive_small()'s and receive_mergeable()'s XDP branches move into "
    "receive_small_xdp() and receive_mergeable_xdp() (d8f2835a4746), the verdicts into "
    "virtnet_xdp_handler(): the same arithmetic under new names",
    note="net-next May 2023; inline @6.2.12, split @6.6.0",
)
VIRTIO_XDP_NEEDS_CSUM_DROP = Change(
    key="virtio_xdp_needs_csum_drop",
    subject="virtio_net: fixing XDP for fully checksummed packets handling",
    commit="703eec1b2422",
    since=v("6.10"),
    stable=((v("6.6.36"), None),),
    summary="with a program attached, receive_small_xdp() and mergeable_xdp_get_buf() drop a "
    "frame whose header has VIRTIO_NET_HDR_F_NEEDS_CSUM (xdp_drops, drops), and receive_buf() "
    "saves the header's flags before the program runs, so DATA_VALID survives XDP_PASS; "
    "before, an XDP skb's zeroed header left it CHECKSUM_NONE",
    note="with 604141c036e1 'virtio_net: checksum offloading handling fix' (same series, "
    "v6.10-rc4); which hunk belongs to which commit is inferred. Present @6.6.36 (release "
    "bisection of a squashed 6.6.y mirror), @6.11.11, @6.12.117, @6.18.9; absent @6.1.192, "
    "@6.2.12, @6.8. The 6.9.y series was not read and is modelled without it",
)
GENERIC_XDP_MULTI_BUF = Change(
    key="generic_xdp_multi_buf",
    subject="xdp: add multi-buff support for xdp running in generic mode",
    commit="e6d5dbdd20aa",
    since=v("6.9"),
    summary="netif_receive_generic_xdp() measures the headroom a generic-XDP skb needs (256) "
    "at the MAC header, not at the network header, and a program loaded with "
    "BPF_F_XDP_HAS_FRAGS gets a page_pool copy (skb_cow_data_for_xdp) instead of "
    "pskb_expand_head() + skb_linearize()",
    note="read @6.8 (absent) and @6.11.11, @6.12.117, @6.18.9 (present); merged Feb 2024",
)
TUN_BUILD_SKB_OWNER = Change(
    key="tun_build_skb_owner",
    subject="tun: mark small packets as owned by the tap sock",
    commit="",
    since=v("5.3"),
    summary="tun_build_skb() calls skb_set_owner_w(): the build-path skb is charged to the tap "
    "socket's sk_wmem_alloc (its truesize does not change)",
    note="commit id not seen; a list mail says it was backported to 4.14.y/4.19.y/5.2.y "
    "(first point releases not pinned): absent @4.14.5, present @5.15.100",
)
TUN_BUILD_SKB_XDP_HEADROOM_LIMIT = Change(
    key="tun_build_skb_xdp_headroom_limit",
    subject="drivers: net: prevent tun_build_skb() to exceed the packet size limit",
    commit="59eeb2329405",
    since=v("6.5"),
    backports=(v("5.15.127"), v("6.1.46")),
    summary="tun_can_build_skb() always counts XDP_PACKET_HEADROOM (256) in its one-page size "
    "check, program attached or not: the build path ends at 3456-byte frames instead of 3712",
    note="stable backports of 2023-08-16: the Linux 5.15.127 and 6.1.46 release notes list it "
    "(Andrew Kanner, with 'net: core: remove unnecessary frame_sz check in "
    "bpf_xdp_adjust_tail()'), as 4.19.292's do; absent @5.15.100. Measured: a 3637-byte frame "
    "through vhost's tun_get_user fallback is tun_alloc_skb'd (truesize 4352) on 6.1.170 and "
    "6.1.192 (tests/data/vhost)",
)
TUN_ALLOC_SKB_BIG_PAGED = Change(
    key="tun_alloc_skb_big_paged",
    subject="net: tun: change tun_alloc_skb() to allow bigger paged allocations",
    commit="ce7c7fef1473",
    since=v("6.6"),
    summary="with 6231e47b6fad 'tun: avoid high-order page allocation for packet header': "
    "tun_get_user() caps the linear part at good_linear even when hdr_len is 0, and "
    "tun_alloc_skb() asks sock_alloc_send_pskb() for frags of order <= "
    "PAGE_ALLOC_COSTLY_ORDER (3), clamping linear so that the frags fit",
)
ALLOC_SKB_WITH_FRAGS_HIGH_ORDER = Change(
    key="alloc_skb_with_frags_high_order",
    subject="net: allow alloc_skb_with_frags() to allocate bigger packets",
    commit="09c2c90705bb",
    since=v("6.6"),
    summary="alloc_skb_with_frags() fills data_len with compound pages of up to the caller's "
    "max order, lowering the order while PAGE_ALIGN(remaining) < PAGE_SIZE << order; each "
    "chunk adds PAGE_SIZE << order to truesize",
)

# --- TX headroom (vnetrx headroom): docs/kernel/tx-headroom.md, and the 3.15.5, 3.16.0,
# 4.13.4, 4.14.5 and 5.15.100 trees listed in its section 0 (read for net/ipv4/ip_output.c,
# net/ipv6/ip6_output.c, net/ipv4/tcp.c, drivers/net/virtio_net.c) ---------------------------
UDP_UFO = Change(
    key="udp_ufo",
    subject="UDP fragmentation offload (NETIF_F_UFO)",
    commit="",
    since=v("2.6.15"),
    until=v("4.14"),
    summary="with NETIF_F_UFO on the device (virtio-net: VIRTIO_NET_F_HOST_UFO), a UDP datagram "
    "longer than the MTU becomes one GSO skb: ip_ufo_append_data()/ip6_ufo_append_data() "
    "allocate hh_len + IP + 8 + 20 linear bytes, skb_reserve(hh_len), and put the payload "
    "in current->task_frag page frags",
    note="present @3.16.0 and @4.13.4, gone @4.14.5; the removal series (2017) and the release "
    "that added UFO (2.6.15) are from memory, ids not pinned",
)
TX_NEEDED_HEADROOM = Change(
    key="tx_needed_headroom",
    subject="virtio-net: Set needed_headroom for virtio-net when VIRTIO_F_ANY_LAYOUT is true",
    commit="6ebbc1a6383f",
    since=v("3.16"),
    summary="virtnet_probe() sets dev->needed_headroom to the header size (12 with MRG_RXBUF, "
    "else 10) when any_header_sg: LL_RESERVED_SPACE grows from 16 to 32, so a locally built "
    "UDP skb reaches xmit_skb() with 18 bytes of headroom instead of 2",
    note="release inferred from trees: absent @3.15.5, present @3.16.0 (fact sheet B.1)",
)
TX_NEEDED_HEADROOM_HDR_LEN = Change(
    key="tx_needed_headroom_hdr_len",
    subject="virtio_net: needed_headroom = vi->hdr_len (virtio 1.0 support)",
    commit="",
    since=v("3.19"),
    summary="virtnet_probe() sets dev->needed_headroom = vi->hdr_len, which is 12 with MRG_RXBUF "
    "or VIRTIO_F_VERSION_1 (later 20 with HASH_REPORT, 24 with UDP tunnel GSO)",
    note="subject paraphrased, commit not pinned: the 3.16.0-3.18.140 form is replaced @3.19.8",
)
TCP_SENDMSG_FRAGS_ONLY = Change(
    key="tcp_sendmsg_frags_only",
    subject="tcp: sendmsg() puts no payload in the linear area",
    commit="",
    since=v("5.15"),
    summary="tcp_sendmsg() allocates data skbs with sk_stream_alloc_skb(sk, 0, ...) / "
    "tcp_stream_alloc_skb(): MAX_TCP_HEADER bytes, all reserved; the payload goes to page frags. "
    "Before, select_size() gave a new skb SKB_WITH_OVERHEAD(2048 - MAX_TCP_HEADER) linear "
    "payload bytes (every new skb @3.16.0; the first skb of an empty write queue @4.13.4, "
    "@4.14.5: linear_payload_sz)",
    note="subject paraphrased, commit not pinned: seen @5.15.100, absent @4.14.5; the 5.12 and "
    "5.13 profiles assume the older linear_payload_sz() behaviour",
)
MAX_TCP_HEADER_L1_ALIGNED = Change(
    key="max_tcp_header_l1_aligned",
    subject="tcp: MAX_TCP_HEADER = L1_CACHE_ALIGN(128 + MAX_HEADER)",
    commit="",
    since=v("5.15"),
    summary="include/net/tcp.h rounds MAX_TCP_HEADER up to a cache line (304 -> 320 with the "
    "Debian amd64 config); before it was 128 + MAX_HEADER",
    note="subject paraphrased, commit not pinned: seen @5.15.100, absent @4.14.5 (fact sheet "
    "B.4); the 5.12 and 5.13 profiles assume the unaligned form",
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

MAX_SKB_FRAGS_CONFIGURABLE = Change(
    key="max_skb_frags_configurable",
    subject="net: make MAX_SKB_FRAGS configurable",
    commit="",
    since=v("6.4"),
    summary="MAX_SKB_FRAGS = CONFIG_MAX_SKB_FRAGS (17..45, default 17) instead of "
    "max(16, 65536 / PAGE_SIZE + 1): 64 KiB-page kernels go from 16 to 17 frags",
    note="patch dated Mar 2023; release inferred as 6.4",
)
VIRTIO_RX_PAGE_POOL = Change(
    key="virtio_rx_page_pool",
    subject="virtio_net: add page pool support for buffer allocation",
    commit="",
    since=v("7.1"),
    summary="small and mergeable rx buffers come from a per-queue page_pool of order-0 pages "
    "(page_pool_alloc_va): a buffer whose double would not fit is a whole page, otherwise "
    "buffers are carved from one page and the last one absorbs the rest (1536 + 2560 per 4 KiB "
    "page); the ctx carries the real allocation, and skbs are marked for recycling",
    note="not in 6.18 (BTF has no page_pool in receive_queue); in 7.1.5 (a GitHub import, "
    "the same rx functions as 7.3.4), 7.2.12, 7.2.13 and 7.3.4. Posted Jan 2026, so 7.0 may "
    "already have it: 7.0 was not read",
)

SKB_FRAG_NETMEM = Change(
    key="skb_frag_netmem",
    subject="net: add netmem to skb_frag_t",
    commit="21d2e6737c97",
    since=v("6.9"),
    summary="skb_frag_t is struct skb_frag {netmem_ref netmem; len; offset} instead of struct "
    "bio_vec {bv_page; bv_len; bv_offset}: the same 16 bytes under other names",
    note="v7 posted Feb 2024, merged with 'abstract-page-from-net-stack' for 6.9; what 6.6 "
    "called the members was not checked (bio_vec assumed)",
)

# --- include/linux/virtio_net.h:virtio_net_hdr_to_skb (virtio-net receive, tap writes, decode).
# Read @5.12.9, @6.8.0, @6.11.11, @6.13.7, @6.18.35, @7.1.5 and, point release by point release,
# in the 5.15.y (to 5.15.215), 6.1.y (to 6.1.166, then Debian 6.1.192), 6.6.y (to 6.6.150) and
# 6.12.y (6.12.10-15, then Debian 6.12.117) trees: docs/kernel/offloads.md §8. A ``stable`` window
# below is exact (its series was read release by release). ---------------------------------------
VNET_HDR_UFO_THLEN = Change(
    key="vnet_hdr_ufo_thlen",
    subject="net: virtio_net_hdr_to_skb: count transport header in UFO",
    commit="cf9acc90c80e",
    since=v("5.16"),
    stable=((v("5.15.5"), None),),
    summary="UFO's 'too small to be GSO' test leaves the UDP header out (nh_off -= thlen): "
    "before it a UFO frame whose payload is exactly gso_size + 8 became GSO",
)
VNET_HDR_GSO_BY_FRAGS = Change(
    key="vnet_hdr_gso_by_frags",
    subject="net: be more gentle about silly gso requests coming from user",
    commit="b616be6b9768",
    since=v("6.5"),
    stable=((v("5.15.128"), None), (v("6.1.47"), None)),
    summary="virtio_net_hdr_to_skb() refuses gso_size == GSO_BY_FRAGS (0xffff): -EINVAL",
)
VNET_HDR_GSO_UDP_L4 = Change(
    key="vnet_hdr_gso_udp_l4",
    subject="linux/virtio_net.h: Support USO offload in vnet header.",
    commit="860b7f27b8f7",
    since=v("6.2"),
    summary="virtio_net_hdr_to_skb() accepts VIRTIO_NET_HDR_GSO_UDP_L4 (5) as SKB_GSO_UDP_L4; "
    "before it gso_type 5 is -EINVAL",
    note="absent in 6.1.0 and every 6.1.y read (to 6.1.192), present in 6.8.0; 6.2 was not read",
)
VNET_HDR_UDP_L4_STRICT = Change(
    key="vnet_hdr_udp_l4_strict",
    subject="net: more strict VIRTIO_NET_HDR_GSO_UDP_L4 validation",
    commit="fc8b2a619469",
    since=v("6.6"),
    stable=((v("5.15.167"), None), (v("6.1.107"), None)),
    summary="GSO_UDP_L4 needs NEEDS_CSUM, csum_offset 6 (udphdr.check), at most "
    "gso_size * UDP_MAX_SEGMENTS payload bytes and no ECN bit, else -EINVAL",
    note="present in 6.6.0; 5.15.167 and 6.1.107 took the lines with the csum-offset backport, "
    "but there they are dead code (those series never decode UDP_L4)",
)
PARTIAL_CSUM_SET_MAGIC = Change(
    key="partial_csum_set_magic",
    subject="net: skb_partial_csum_set() fix against transport header magic value",
    commit="424f8416bb39",
    since=v("6.4"),
    stable=((v("6.1.30"), None),),
    summary="skb_partial_csum_set() refuses headroom + csum_start == 0xffff too "
    "(csum_start >= U16_MAX; before it > U16_MAX)",
    note="not in any 5.15.y read (to 5.15.215)",
)
VNET_HDR_NH_MIN_LEN = Change(
    key="vnet_hdr_nh_min_len",
    subject="net: add more sanity check in virtio_net_hdr_to_skb()",
    commit="9181d6f8a2bb",
    since=v("6.8"),
    stable=((v("6.6.14"), None),),
    summary="nh_min_len (sizeof(struct iphdr), 40 for GSO_TCPV6): GSO without NEEDS_CSUM pulls "
    "nh_min_len + thlen instead of thlen; with NEEDS_CSUM p_off is "
    "max(nh_min_len, transport offset) + thlen",
    note="never in 5.15.y or 6.1.y as read (to 5.15.215 and 6.1.192)",
)
VNET_HDR_MISSING_CHECK = Change(
    key="vnet_hdr_missing_check",
    subject="net: missing check virtio",
    commit="e269d79c7d35",
    since=None,
    stable=(
        (v("5.15.165"), v("5.15.167")),
        (v("6.1.103"), v("6.1.107")),
        (v("6.6.44"), v("6.6.46")),
    ),
    summary="with NEEDS_CSUM and a gso_size, skb->len / gso_size must be at least 1, gso_size "
    "larger than csum_start + max(thlen, csum_offset + 2), and the remainder 0 or larger than "
    "that, else -EINVAL",
    note="in 6.11-rc1 only: 89add40066f9 removed it before 6.11; the stable series carried it "
    "for two point releases each",
)
VNET_HDR_TCP_CSUM_OFFSET = Change(
    key="vnet_hdr_tcp_csum_offset",
    subject="net: drop bad gso csum_start and offset in virtio_net_hdr",
    commit="89add40066f9",
    since=v("6.11"),
    stable=((v("5.15.167"), None), (v("6.1.107"), None), (v("6.6.46"), None)),
    summary="TCP GSO (TCPV4/TCPV6) needs csum_offset == 16 (tcphdr.check), else -EINVAL: on its "
    "own this drops every TCP GSO frame without NEEDS_CSUM (its csum_offset is 0); it also "
    "reverts 'net: missing check virtio'",
    note="until 'net: tighten bad gso csum offset check' (5.15.168, 6.1.111, 6.6.52) the test "
    "applies to every TCP GSO frame",
)
VNET_HDR_TCP_CSUM_OFFSET_PARTIAL = Change(
    key="vnet_hdr_tcp_csum_offset_partial",
    subject="net: tighten bad gso csum offset check in virtio_net_hdr",
    commit="6513eb3d3191",
    since=v("6.11"),
    stable=((v("5.15.168"), None), (v("6.1.111"), None), (v("6.6.52"), None)),
    summary="the TCP GSO csum_offset == 16 test applies only to CHECKSUM_PARTIAL skbs",
    note="6.11.0 assumed to carry it: Debian's changelog lists it for 6.10.11 and for no "
    "6.11.y release [inf]; 6.11.11 has it",
)
VNET_HDR_TRANSPORT_FLOOR = Change(
    key="vnet_hdr_transport_floor",
    subject="net: test for not too small csum_start in virtio_net_hdr_to_skb()",
    commit="49d14b54a527",
    since=v("6.12"),
    stable=((v("6.6.55"), None),),
    summary="with NEEDS_CSUM, csum_start (the transport offset) below nh_min_len (20; 40 for "
    "GSO_TCPV6) is -EINVAL, and p_off is the transport offset + thlen",
    note="Debian's changelog lists it for stable 6.11.3; never in 5.15.y or 6.1.y as read",
)
VNET_HDR_TCP_MIN_GSO_SIZE = Change(
    key="vnet_hdr_tcp_min_gso_size",
    subject="virtio-net: Ensure that TCP packets don't overflow gso_segs",
    commit="c27c449d455a",
    since=v("7.3"),
    stable=(
        (v("5.15.221"), None),
        (v("6.1.188"), None),
        (v("6.6.157"), None),
        (v("6.12.110"), None),
        (v("6.18.52"), None),
        (v("7.2.7"), None),
    ),
    summary="a TCP gso_size below TCP_MIN_GSO_SIZE (8) is raised to 8 before the GSO_BY_FRAGS "
    "and 'too small' tests (not an error): gso_size 1..7 is stored as 8",
    note="merged for 7.3-rc1 (net-7.3-rc1, 2026-08-28); the code read in Debian 6.1.192 and "
    "6.12.117 only; the first carriers come from the stable pushes (7.2.7: its rc push only); "
    "absent in 6.6.150, 6.18.9-6.18.35 and 7.1.5 as read",
)
UDP_MAX_SEGMENTS_128 = Change(
    key="udp_max_segments_128",
    subject="udp: increase UDP_MAX_SEGMENTS to 128",
    commit="1382e3b6a350",
    since=v("6.9"),
    stable=((v("5.15.167"), None), (v("6.1.107"), None), (v("6.6.29"), None)),
    summary="UDP_MAX_SEGMENTS (include/linux/udp.h) is 128 instead of 64",
    note="64 in 6.8.0, 128 in 6.11.11",
)

GRO_GSO_TCP_AGGREGATED = Change(
    key="gro_gso_tcp_aggregated",
    subject="gro: add support of (hw)gro packets to gro stack",
    commit="5eddb24901ee",
    since=v("6.1"),
    summary="dev_gro_receive counts a GSO skb as NAPI_GRO_CB count = gso_segs and lets TCP GSO "
    "skbs in (before: every GSO skb is flushed, skb_is_gso), SKB_GSO_DODGY ones included; "
    "tcp_gro_receive merges one whose gso_size is the flow's mss and flushes it when len != "
    "count * gso_size (always for virtio_net_hdr_to_skb's gso_segs 0), skb_gro_receive adds "
    "its count, and an aggregate of count 1 leaves with gso_size 0 and no gro_complete",
    note="posted for net-next 2022-09-30 (v2), so 6.1: 6.0.1 and 6.0.19 still flush every GSO "
    "skb (unifreq/linux-6.0.y), and 6.1.0's net/core/gro.c and net/ipv4/tcp_offload.c are "
    "the patch's post-image blobs (bc9451743307, 45dda7889387; unifreq/linux-6.1.y); 6.0.0 "
    "itself not read",
)
GRO_DODGY_FLUSH = Change(
    key="gro_dodgy_flush",
    subject="gro: take care of DODGY packets",
    commit="7871f54e3dee",
    since=v("6.2"),
    summary="dev_gro_receive flushes a GSO skb that is not TCP or carries SKB_GSO_DODGY (every "
    "GSO skb virtio_net_hdr_to_skb builds): it is delivered alone, never merged",
    stable=((v("6.1.7"), None),),
    note="netdev 2023-01-06 (Pulchart's virtio_net regression report), stable '[PATCH 6.1 "
    "133/183]' 2023-01-16; read release by release: 6.1.0-6.1.6 lack it, 6.1.7 has it "
    "(unifreq/linux-6.1.y). 6.0.y never had 5eddb24901ee, so nothing to fix there; 6.2.0 "
    "itself not read",
)

GRO_CWR_COMPARED = Change(
    key="gro_cwr_compared",
    subject="tcp: accecn: ... GRO (CWR no longer masked in tcp_gro_receive's flag comparison)",
    commit="",
    since=v("6.18"),
    summary="tcp_gro_receive compares CWR with the held segment's flags too (only FIN and PSH "
    "are masked): a segment without CWR after one with it flushes, and an aggregate never "
    "starts with CWR (tcp_gro_complete's ECN bit becomes SKB_GSO_TCP_ACCECN)",
    note="part of the AccECN series; observed on 6.18.44 (tests/data/gro: cwr0, cwr3); 6.12.15's "
    "source still masks CWR (../shared/reference/gro-vhost-captures.md §1.2); 6.13-6.17 were "
    "not read: the release is inferred",
)
GRO_FIXEDID_WITHOUT_DF = Change(
    key="gro_fixedid_without_df",
    subject="net: gro: only merge packets with incrementing or fixed outer ids",
    commit="21f7484220ac",
    since=v("6.18"),
    summary="inet_gro_flush: a flow whose second segment repeats the first one's IP ID is a "
    "fixed-ID flow with or without DF (before: only with DF; without it the ID must increment)",
    note="net-next Sep 2025, so 6.18; observed on 6.18.44 (tests/data/gro: ipid-fixed-nodf merges)",
)
GRO_FIXEDID_BIT_30 = Change(
    key="gro_fixedid_bit_30",
    subject="net: gro: ... outer and inner SKB_GSO_TCP_FIXEDID",
    commit="",
    since=v("6.18"),
    summary="SKB_GSO_TCP_FIXEDID is bit 30 (SKB_GSO_TCP_FIXEDID_INNER bit 31); it was bit 3",
    note="bit 30 seen on 6.18.44 (a fixed-ID aggregate's gso_type 0x40000001) and in 6.18.7's "
    "skbuff.h; 6.12.15 has 1 << 3; the commit id was not read",
)

GRO_MAX_SIZE_KNOB = Change(
    key="gro_max_size_knob",
    subject="net: add IFLA_GRO_MAX_SIZE attribute",
    commit="",
    since=v("5.18"),
    summary="skb_gro_receive's limit is dev->gro_max_size (ip link set DEV gro_max_size N, "
    "default 65536) instead of a literal 65536",
    note="5.15.215's source has the literal and 5.18.19's the field "
    "(../shared/reference/gro-vhost-captures.md §1.4); 5.16 and 5.17 were not read",
)
GRO_BIG_TCP_IPV6 = Change(
    key="gro_big_tcp_ipv6",
    subject="ipv6: add support for BIG TCP (gro_max_size above 64 KiB)",
    commit="",
    since=v("5.19"),
    summary="gro_max_size may exceed 65536 (up to 8 * 65535): an IPv6 TCP aggregate grows past "
    "64 KiB and ipv6_gro_complete inserts the 8-byte hop-by-hop jumbo header",
    note="the BIG TCP series (Dumazet, May 2022), believed 5.19; present in 6.1.0",
)
GRO_BIG_TCP_IPV4 = Change(
    key="gro_big_tcp_ipv4",
    subject="net: add gso_ipv4_max_size and gro_ipv4_max_size per device",
    commit="",
    since=v("6.3"),
    summary="IPv4 aggregates are limited by dev->gro_ipv4_max_size (may exceed 65536: the "
    "IPv4 tot_len is then 0); setting gro_max_size to 65536 or less sets it too",
    note="present in 6.6.150, absent in 6.1.166 (../shared/reference/gro-vhost-captures.md "
    "§1.4): 6.3 inferred; observed on 6.18.44 (tests/data/gro: ipv4-big-tcp, gro-max-size32768)",
)

GRO_IPV6_EXTHDR_GRO_PULL = Change(
    key="gro_ipv6_exthdr_gro_pull",
    subject="net: gro: parse ipv6 ext headers without frag0 invalidation",
    commit="dff0b0161ad5",
    since=v("6.9"),
    backports=(v("6.6.31"),),
    summary="ipv6_gro_receive walks the extension headers with ipv6_gro_pull_exthdrs "
    "(skb_gro_header, frag0 kept) and walks only headers whose inet6_offloads entry has "
    "INET6_PROTO_GSO_EXTHDR; before, it pulled the headers into the linear area "
    "(__pskb_pull, skb_gro_frag0_invalidate) and walked them with ipv6_gso_pull_exthdrs, "
    "which takes a hop-by-hop header (NEXTHDR_HOP) without asking inet6_offloads",
    note="net-next Jan 2024 (merged with f2e3fc2158e6, 4e321d590cec), so 6.9; in linux-6.6.y "
    "from 6.6.31 (the unifreq 6.6 tree's 'up to 6.6.31' brings it) as the Stable-dep-of "
    "5ef31ea5d053, without f2e3fc2158e6; 5.15.215 has the old code, and so has 6.1.135 (the "
    "unifreq 6.1 tree with its OpenWrt patches reversed); 6.1.136+ were not read apart from "
    "OpenWrt's patches: modelled without it",
)
GRO_IPV6_HBH_OFFLOAD = Change(
    key="gro_ipv6_hbh_offload",
    subject="net: gso: add HBH extension header offload support",
    commit="f2e3fc2158e6",
    since=v("6.9"),
    summary="IPPROTO_HOPOPTS has an inet6_offloads entry with INET6_PROTO_GSO_EXTHDR "
    "(net/ipv6/exthdrs_offload.c: hbh_offload), so ipv6_gro_pull_exthdrs walks a hop-by-hop "
    "header like routing and destination options; without it (a kernel with dff0b0161ad5 "
    "alone, 6.6.31+) a hop-by-hop header stops the walk and the packet is not merged",
    note="absent in 5.15.215, 6.1.166 (with OpenWrt patches) and every 6.6.y of the unifreq "
    "tree up to 6.6.150; present in 6.12.15 and 6.18.7",
)

VHOST_NET_TX_BATCH = Change(
    key="vhost_net_tx_batch",
    subject="vhost_net: batch submitting XDP buffers to underlayer sockets",
    commit="0a0be13b8fe2",
    since=v("4.20"),
    summary="handle_tx_copy copies each frame a guest transmits, with its vnet header, into a "
    "padded buffer carved from a page frag (vhost_net_build_xdp) and hands up to "
    "VHOST_NET_BATCH (64) of them to the tap in one sendmsg(TUN_MSG_PTR) (vhost_tx_batch → "
    "tun_sendmsg → tun_xdp_one → build_skb); a frame the buffer cannot hold (-ENOSPC), a tap "
    "with a finite sk_sndbuf and zerocopy go through tun_get_user",
    note="the release is inferred from the series' date (September 2018, "
    "../shared/reference/gro-vhost-captures.md §2.3); the same logic in every tree read "
    "(5.12.9 … 7.1.5, docs/kernel/vhost-net.md §2.1)",
)
VHOST_NET_PF_CACHE = Change(
    key="vhost_net_pf_cache",
    subject="vhost/net: remove vhost_net_page_frag_refill()",
    commit="4051bd8129ac",
    since=v("6.9"),
    summary="vhost_net_build_xdp carves its buffers with page_frag_alloc_align(&net->pf_cache, "
    "buflen, GFP_KERNEL, SMP_CACHE_BYTES) instead of vhost's own page_frag, which "
    "vhost_net_page_frag_refill filled with a 32 KiB page whose refcount it raised by "
    "USHRT_MAX once and counted down per buffer (net->refcnt_bias) and carved up from offset 0; "
    "page_frag_alloc_align carves each 32 KiB page from the top down (until "
    "page_frag_zero_offset): measured, a burst of 1472-byte buffers lies at 0, 1472, 2944 ... "
    "on 6.1.192 and at 31296, 29824, 28352 ... on 6.12.117 (tests/data/vhost)",
    note="present @6.12.15, absent @6.6.150 (../shared/reference/gro-vhost-captures.md §2.1); "
    "the series (v6) was posted 2024-03-05, so 6.9 is inferred",
)
PAGE_FRAG_ZERO_OFFSET = Change(
    key="page_frag_zero_offset",
    subject="mm: page_frag: use initial zero offset for page_frag_alloc_align()",
    commit="8218f62c9c9b",
    since=v("6.13"),
    summary="__page_frag_alloc_align carves a page_frag_cache page from offset 0 upward (the "
    "offset aligned up, a new page when offset + fragsz passes its size); before, from the top "
    "down (offset = nc->offset - fragsz, aligned down, a new page below 0)",
    note="patch 3/7 of Yunsheng Lin's page_frag series, v23 applied to net-next in October "
    "2024 (the 6.13 merge window), so 6.13 is inferred; mm/page_frag_cache.c @torvalds HEAD "
    "carves upward, 6.12.117 downward (measured, tests/data/vhost)",
)
VHOST_XDP_HDR_AT_HARD_START = Change(
    key="vhost_xdp_hdr_at_hard_start",
    subject="vhost-net: reduce one userspace copy when building XDP buff",
    commit="",
    since=v("6.17"),
    summary="vhost_net_build_xdp copies the vnet header and the frame with one copy_from_iter "
    "to buf + pad - sock_hlen and memcpy()s the header to buf + 0; struct tun_xdp_hdr (int "
    "buflen at buf + 0, the header at buf + 4) is gone: tun_xdp_one reads the header at "
    "data_hard_start and the buffer's length from xdp->frame_sz",
    note="net-next series of June 2025 (Jason Wang; 'tun: remove unnecessary tun_xdp_hdr "
    "structure' before it); commit ids not seen. Present @6.17.0 and @6.18.9, the tun_xdp_hdr "
    "layout @6.12.117 (docs/kernel/vhost-net.md §2.2); 6.13-6.16 not read",
)
TUN_XDP_ONE_SHORT_FRAME = Change(
    key="tun_xdp_one_short_frame",
    subject="tun: add missing verification for short frame",
    commit="049584807f1d",
    since=v("6.11"),
    backports=(v("5.15.164"), v("6.1.102"), v("6.6.43"), v("6.9.12"), v("6.10.2")),
    summary="tun_xdp_one returns -EINVAL for a frame shorter than ETH_HLEN (14) before any skb "
    "is built (CVE-2024-41091); before it, eth_type_trans read past such a frame",
    note="the fixed stable releases are the CVE record's (osv.dev CVE-2024-41091: also 5.4.281 "
    "and 5.10.223); the 6.1.y git log shows it just before 'Linux 6.1.102'",
)

CHANGES: tuple[Change, ...] = (
    UDP_UFO,
    TX_NEEDED_HEADROOM,
    TX_NEEDED_HEADROOM_HDR_LEN,
    TCP_SENDMSG_FRAGS_ONLY,
    MAX_TCP_HEADER_L1_ALIGNED,
    SMALL_USED_LEN_CHECK,
    PAGE_TO_SKB_BUILD_SKB,
    BIG_BUILD_SKB_GIVE_PAGES,
    PADDED_VNET_HDR_V1_HASH,
    BIG_PACKETS_MTU_SIZED,
    NAPI_SMALL_PAGE_FRAG,
    SKB_SMALL_HEAD_CACHE,
    VIRTNET_RQ_DMA,
    RX_PREMAPPED_BY_DEFAULT,
    RQ_ALLOC_FRESH_PAGE_SHRINK,
    SMALL_HEAD_GRO_SIZED,
    BIG_RECV_LEN_CHECK,
    VIRTNET_RECEIVE_DONE,
    TUN_VNET_HDR_GET,
    VNET_HDR_UDP_TUNNEL,
    TUN_UDP_TUNNEL_GSO,
    VHOST_UDP_TUNNEL_GSO,
    VHOST_IN_ORDER,
    V1_HASH_SPLIT_HASH_VALUE,
    VHOST_NUM_BUFFERS_VERSION_1,
    TUN_USO,
    TUN_BUILD_SKB,
    TUN_XDP,
    TUN_XDP_ACT_STATS,
    GENERIC_XDP_MULTI_BUF,
    VIRTIO_XDP_SHARED_TX_QUEUES,
    VIRTIO_XDP_MTU_FRAGS,
    VIRTIO_XDP_MULTI_BUF,
    MERGEABLE_LEN_CHECK,
    XDP_METADATA_252,
    TUN_XDP_METADATA,
    VIRTIO_RECEIVE_XDP_SPLIT,
    VIRTIO_XDP_NEEDS_CSUM_DROP,
    TUN_BUILD_SKB_OWNER,
    TUN_BUILD_SKB_XDP_HEADROOM_LIMIT,
    TUN_ALLOC_SKB_BIG_PAGED,
    ALLOC_SKB_WITH_FRAGS_HIGH_ORDER,
    SHINFO_XDP_FRAGS_UNION,
    MAX_SKB_FRAGS_CONFIGURABLE,
    VIRTIO_RX_PAGE_POOL,
    SKB_FRAG_NETMEM,
    VNET_HDR_UFO_THLEN,
    VNET_HDR_GSO_BY_FRAGS,
    VNET_HDR_GSO_UDP_L4,
    VNET_HDR_UDP_L4_STRICT,
    PARTIAL_CSUM_SET_MAGIC,
    VNET_HDR_NH_MIN_LEN,
    VNET_HDR_MISSING_CHECK,
    VNET_HDR_TCP_CSUM_OFFSET,
    VNET_HDR_TCP_CSUM_OFFSET_PARTIAL,
    VNET_HDR_TRANSPORT_FLOOR,
    VNET_HDR_TCP_MIN_GSO_SIZE,
    UDP_MAX_SEGMENTS_128,
    GRO_GSO_TCP_AGGREGATED,
    GRO_DODGY_FLUSH,
    GRO_CWR_COMPARED,
    GRO_FIXEDID_WITHOUT_DF,
    GRO_FIXEDID_BIT_30,
    GRO_MAX_SIZE_KNOB,
    GRO_BIG_TCP_IPV6,
    GRO_BIG_TCP_IPV4,
    GRO_IPV6_EXTHDR_GRO_PULL,
    GRO_IPV6_HBH_OFFLOAD,
    VHOST_NET_TX_BATCH,
    VHOST_NET_PF_CACHE,
    PAGE_FRAG_ZERO_OFFSET,
    VHOST_XDP_HDR_AT_HARD_START,
    TUN_XDP_ONE_SHORT_FRAME,
)


def version_order(change: Change) -> tuple[bool, int, int, int, str]:
    """A sort key: the first mainline release with the change, else the first stable release
    with it (changes with neither last)."""
    first = change.since or min((w[0] for w in change.windows()),
                                key=lambda v: (v.major, v.minor, v.patch or 0), default=None)
    if first is None:
        return (True, 0, 0, 0, change.key)
    return (False, first.major, first.minor, first.patch or 0, change.key)
