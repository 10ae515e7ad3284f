"""Mirrors drivers/net/virtio_net.c's rx buffer posting: add_recvbuf_small/big/mergeable,
get_mergeable_buf_len, mergeable_min_buf_len, and the page_frag carving of net/core/sock.c.

Facts: virtio-rx.md §5 (sources @5.15-android, @6.1.192, @6.12.117, @7.3.4). No XDP program is
attached in anything modelled here, so virtnet_get_headroom() is 0 and room is 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

from vnetrx.kernel.changes import (
    BIG_PACKETS_MTU_SIZED,
    PADDED_VNET_HDR_V1_HASH,
    RX_PREMAPPED_BY_DEFAULT,
    VIRTIO_RX_PAGE_POOL,
)
from vnetrx.kernel.profile import KernelProfile, align
from vnetrx.layouts.virtio_net import padded_vnet_hdr, virtio_net_hdr_mrg_rxbuf, virtnet_rq_dma
from vnetrx.paths.skbuff import ETH_HLEN, shinfo_size

GOOD_PACKET_LEN = 1518  # ETH_HLEN + VLAN_HLEN + ETH_DATA_LEN
GOOD_COPY_LEN = 128
VLAN_HLEN = 4
ETH_DATA_LEN = 1500
IP_MAX_MTU = 65535
MAX_MTU = 65535  # dev->max_mtu when VIRTIO_NET_F_MTU is not negotiated
SKB_FRAG_SIZE = 32768  # SKB_FRAG_PAGE_ORDER = get_order(32768) (include/net/sock.h)


def virtnet_rx_pad(k: KernelProfile) -> int:
    """VIRTNET_RX_PAD = NET_IP_ALIGN + NET_SKB_PAD."""
    return k.build.net_ip_align + k.net_skb_pad


def padded_hdr_size(k: KernelProfile) -> int:
    """sizeof(struct padded_vnet_hdr): 16 up to 5.17, 32 from 5.18."""
    return padded_vnet_hdr(k.has(PADDED_VNET_HDR_V1_HASH)).size


def mergeable_hdr_len(k: KernelProfile, hdr_len: int) -> int:
    """The header length mergeable sizing uses: sizeof(mrg_rxbuf) (12) up to 5.17, vi->hdr_len after."""
    return hdr_len if k.has(PADDED_VNET_HDR_V1_HASH) else virtio_net_hdr_mrg_rxbuf().size


def page_frag_size(k: KernelProfile) -> int:
    """PAGE_SIZE << SKB_FRAG_PAGE_ORDER: 32 KiB on 4 KiB pages; one page when pages are bigger."""
    return max(SKB_FRAG_SIZE, k.build.page_size)


def page_frag_start(k: KernelProfile) -> int:
    """Offset of the first buffer in a fresh page_frag page: sizeof(virtnet_rq_dma) from 6.13."""
    return virtnet_rq_dma().size if k.has(RX_PREMAPPED_BY_DEFAULT) else 0


def small_bufsize(k: KernelProfile, hdr_len: int) -> int:
    """add_recvbuf_small: SKB_DATA_ALIGN(hdr + VIRTNET_RX_PAD + GOOD_PACKET_LEN) + shinfo."""
    return k.skb_data_align(hdr_len + virtnet_rx_pad(k) + GOOD_PACKET_LEN) + shinfo_size(k)


def mergeable_min_buf_len(
    k: KernelProfile, hdr_len: int, big_packets: bool, max_mtu: int, ring_size: int
) -> int:
    """rq->min_buf_len: max(max(ceil((h + 14 + 4 + pkt) / ring), h) - h, GOOD_PACKET_LEN)."""
    h = mergeable_hdr_len(k, hdr_len)
    packet_len = IP_MAX_MTU if big_packets else max_mtu
    min_buf_len = -(-(h + ETH_HLEN + VLAN_HLEN + packet_len) // ring_size)
    return max(max(min_buf_len, h) - h, GOOD_PACKET_LEN)


def get_mergeable_buf_len(k: KernelProfile, hdr_len: int, ewma: int, min_buf_len: int) -> int:
    """ALIGN(h + clamp(ewma, min_buf_len, PAGE_SIZE - h), L1_CACHE_BYTES) (room == 0: no XDP)."""
    h = mergeable_hdr_len(k, hdr_len)
    clamped = min(max(ewma, min_buf_len), k.build.page_size - h)
    return align(h + clamped, k.build.l1_cache_bytes)


def ewma_pkt_len_add(ewma: int, value: int) -> int:
    """DECLARE_EWMA(pkt_len, 0, 64): e = v if e == 0 else (63 e + v) >> 6 (include/linux/average.h)."""
    return value if ewma == 0 else (ewma * 63 + value) >> 6


@dataclass(frozen=True)
class PostedBuffer:
    frag_index: int  # which page_frag page (0 = the first, fresh one)
    offset: int  # start inside that page
    len: int  # the buffer length the ctx records (ctx truesize)


def iter_mergeable(k: KernelProfile, buf_len: int) -> Iterator[PostedBuffer]:
    """add_recvbuf_mergeable, again and again, from a fresh page_frag page.

    skb_page_frag_refill() starts a new page when ``offset + len`` does not fit; after carving,
    ``hole = size - offset``: if another buffer would not fit, this one absorbs the hole
    ("len += hole") so the page is used up. Assumes the order-3 allocation succeeds.
    """
    size, start = page_frag_size(k), page_frag_start(k)
    frag_index, offset = 0, start
    while True:
        if offset + buf_len > size:
            frag_index, offset = frag_index + 1, start
        length, buf_offset = buf_len, offset
        offset += length
        hole = size - offset
        if hole < buf_len:
            length += hole
            offset += hole
        yield PostedBuffer(frag_index, buf_offset, length)


def carve_mergeable(k: KernelProfile, buf_len: int, count: int) -> list[PostedBuffer]:
    return list(islice(iter_mergeable(k, buf_len), count))


def iter_page_pool(k: KernelProfile, size: int) -> Iterator[PostedBuffer]:
    """page_pool_alloc_va(pool, &size) again and again on order-0 pages (7.x).

    include/net/page_pool/helpers.h:page_pool_alloc_netmem and net/core/page_pool.c:
    page_pool_alloc_frag_netmem @7.3.4: if twice the size does not fit a page the buffer is a
    whole page; else the size is aligned, a new page starts when it does not fit, and a buffer
    after which another of the same size would not fit absorbs the rest of the page.
    """
    page_size = k.build.page_size
    page, offset = -1, page_size
    while True:
        if 2 * size > page_size:
            page += 1
            yield PostedBuffer(page, 0, page_size)
            continue
        aligned = align(size, k.build.page_pool_frag_align)
        if offset + aligned > page_size:
            page, offset = page + 1, 0
        buf_offset, length = offset, size
        offset += aligned
        if offset + size > page_size:
            length, offset = page_size - buf_offset, page_size
        yield PostedBuffer(page, buf_offset, length)


def iter_small(k: KernelProfile, bufsize: int) -> Iterator[PostedBuffer]:
    """add_recvbuf_small, again and again: page_frag carving without hole absorption, or the
    page_pool from 7.x."""
    if k.has(VIRTIO_RX_PAGE_POOL):
        yield from iter_page_pool(k, bufsize)
        return
    size, start = page_frag_size(k), page_frag_start(k)
    frag_index, offset = 0, start
    while True:
        if offset + bufsize > size:
            frag_index, offset = frag_index + 1, start
        yield PostedBuffer(frag_index, offset, bufsize)
        offset += bufsize


def iter_posted_mergeable(k: KernelProfile, buf_len: int) -> Iterator[PostedBuffer]:
    """The mergeable buffers as posted: page_frag carving, or the page_pool from 7.x (where the
    buffer length absorbs any growth of the allocation because headroom is 0)."""
    if k.has(VIRTIO_RX_PAGE_POOL):
        yield from iter_page_pool(k, buf_len)
    else:
        yield from iter_mergeable(k, buf_len)


def big_num_skbfrags(k: KernelProfile, guest_gso: bool, mtu: int, max_skb_frags: int) -> int:
    """Pages after the first one in a big-mode buffer: MAX_SKB_FRAGS, or ceil(mtu / PAGE_SIZE)
    without guest GSO from 6.1 (virtnet_set_big_packets)."""
    if k.has(BIG_PACKETS_MTU_SIZED) and not guest_gso:
        return -(-mtu // k.build.page_size)
    return max_skb_frags


def big_capacity(k: KernelProfile, num_skbfrags: int) -> int:
    """Frame bytes a big-mode buffer holds: (n + 1) pages minus the padded header slot."""
    return (num_skbfrags + 1) * k.build.page_size - padded_hdr_size(k)
