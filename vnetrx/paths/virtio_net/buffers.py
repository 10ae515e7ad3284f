"""drivers/net/virtio_net.c's rx buffer posting: add_recvbuf_small / _big / _mergeable's sizes,
get_mergeable_buf_len and mergeable_min_buf_len, and THE carver: how buffers are cut from
rq->alloc_frag (net/core/sock.c:skb_page_frag_refill) or, from 7.x, the queue's page_pool.

Pure functions of plain numbers: which kernel does what was decided in ``setup.Config`` (the
``RxAllocator`` there), so ``vnetrx trace`` (a fresh page: ``carve_fresh``) and the ring replay
(a page cursor carried between refills: ``carve``) cut buffers with the same code.
Facts: docs/kernel/virtio-net-rx.md §5 (sources @5.15-android, @6.1.192, @6.12.117, @7.3.4).
No XDP program is attached, so virtnet_get_headroom() is 0 and room is 0.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from itertools import islice
from typing import Final

from vnetrx.kernel.constants import ETH_HLEN, VLAN_HLEN
from vnetrx.records import NamedTuple
from vnetrx.values import Value


class PostedBuffer(Value):
    """One posted rx buffer: its backing page, where in it, how long. Immutable (Final: mypy
    refuses an assignment, the compiled class too). A plain ``Value`` class, not a record: a
    replay makes one per buffer it posts (the record idioms: README, "Records")."""

    __slots__ = ("frag_index", "len", "offset")

    def __init__(self, frag_index: int, offset: int, len: int) -> None:
        self.frag_index: Final = frag_index  # which backing page (0 = the first, fresh one)
        self.offset: Final = offset  # start inside that page
        self.len: Final = len  # the buffer length the ctx records (ctx truesize)

    def _values(self) -> tuple[object, ...]:
        return (self.frag_index, self.offset, self.len)

    def __repr__(self) -> str:
        return f"PostedBuffer(frag_index={self.frag_index}, offset={self.offset}, len={self.len})"


class RxAllocator(NamedTuple):
    """Where small and mergeable buffers come from, as the kernel's version decides it."""

    page_pool: bool  # 7.x: page_pool_alloc_va on order-0 pages; else rq->alloc_frag
    page_bytes: int  # a backing page: the page_frag's 32 KiB (or PAGE_SIZE if larger), or PAGE_SIZE
    dma_header: int  # bytes of struct virtnet_rq_dma at the start of a page_frag page (6.13+)
    # 6aacd1484468 (6.13, 6.12.5): a buffer that would overflow a fresh page once the dma
    # header is counted is first shrunk by sizeof(struct virtnet_rq_dma)
    shrink_fresh: int  # sizeof(struct virtnet_rq_dma) when the kernel has that fix, else 0
    pool_align: int  # page_pool fragment alignment (max(dma_get_cache_alignment(), 8))

    def describe(self) -> str:
        if self.page_pool:
            return f"page_pool ({self.page_bytes // 1024} KiB order-0 pages)"
        return f"page_frag ({self.page_bytes // 1024} KiB pages" + (
            f", the first {self.dma_header} bytes of each holding struct virtnet_rq_dma)"
            if self.dma_header
            else ")"
        )

    def label(self, index: int) -> str:
        """Names backing pages: frag<N> (page_frag pages) or pool<N> (page_pool pages)."""
        return f"pool{index}" if self.page_pool else f"frag{index}"


class PageCursor(NamedTuple):
    """rq->alloc_frag (struct page_frag), or the page_pool's current fragment page."""

    page: int = -1  # index of the current page (-1: none allocated yet)
    offset: int = 0  # alloc_frag->offset / pool->frag_offset
    size: int = 0  # alloc_frag->size / PAGE_SIZE (0 before the first page)
    pages: int = 0  # pages allocated so far: the next one gets this index


def carve(
    a: RxAllocator, cursor: PageCursor, length: int, mergeable: bool
) -> tuple[PostedBuffer, PageCursor]:
    """One add_recvbuf_mergeable (``mergeable``) or add_recvbuf_small: the buffer and the cursor
    after it (``carve_many`` of one)."""
    (buf,), cursor = carve_many(a, cursor, length, mergeable, 1)
    return buf, cursor


def carve_many(
    a: RxAllocator, cursor: PageCursor, length: int, mergeable: bool, count: int
) -> tuple[list[PostedBuffer], PageCursor]:
    """``count`` add_recvbuf_mergeable (``mergeable``) or add_recvbuf_small calls in a row, every
    one asking for ``length`` (what try_fill_recv does): the buffers and the cursor after them.
    Assumes every high-order allocation succeeds (no order-0 fallback) and that a page is never
    reused from offset 0 (skb_page_frag_refill's page_ref_count == 1 case)."""
    if a.page_pool:
        out = []
        for _n in range(count):  # (not `_`: mypy types it Any, so compiled it is boxed)
            buf, cursor = _carve_page_pool(a, cursor, length)
            out.append(buf)
        return out, cursor
    return _carve_page_frag(a, cursor, length, mergeable, count)


def _carve_page_frag(
    a: RxAllocator, cursor: PageCursor, length: int, mergeable: bool, count: int
) -> tuple[list[PostedBuffer], PageCursor]:
    """skb_page_frag_refill(len): keep the page while offset + len <= size, else a new one at
    offset 0. Mergeable (6aacd1484468): on a fresh page, len + sizeof(struct virtnet_rq_dma) >
    size shrinks len by that size. virtnet_rq_alloc: a premapped page (6.13+) starts with the
    dma header, so the first buffer is at offset 16. Mergeable: a buffer after which another
    of the same length would not fit absorbs the rest of the page ("hole"). The cursor's fields
    are kept in locals: a refill carves up to a ring's worth in one call."""
    page, offset, size, pages = cursor
    shrink, dma_header, page_bytes = a.shrink_fresh, a.dma_header, a.page_bytes
    out = []
    for _n in range(count):  # (not `_`: mypy types it Any, so compiled it is boxed per buffer)
        want = length
        if page < 0 or offset + want > size:
            page, offset, size, pages = pages, 0, page_bytes, pages + 1
        if mergeable and offset == 0 and shrink and want + shrink > size:
            want -= shrink
        if offset == 0:
            offset = dma_header
        start, offset = offset, offset + want
        if mergeable:
            hole = size - offset
            if hole < want:
                want, offset = want + hole, size
        out.append(PostedBuffer(page, start, want))
    return out, PageCursor(page, offset, size, pages)


def _carve_page_pool(
    a: RxAllocator, cursor: PageCursor, length: int
) -> tuple[PostedBuffer, PageCursor]:
    """page_pool_alloc_va(pool, &len) (include/net/page_pool/helpers.h:page_pool_alloc_netmem,
    net/core/page_pool.c:page_pool_alloc_frag_netmem @7.3.4): a length whose double does not fit
    a page gets a whole page of its own (the fragment page is kept); otherwise the aligned
    length is carved from the fragment page (a new one when it does not fit), and a fragment
    after which another of the same length would not fit absorbs the rest of the page."""
    page = a.page_bytes
    if 2 * length > page:
        return PostedBuffer(cursor.pages, 0, page), cursor._replace(pages=cursor.pages + 1)
    aligned = -(-length // a.pool_align) * a.pool_align
    if cursor.page < 0 or cursor.offset + aligned > page:
        cursor = PageCursor(cursor.pages, 0, page, cursor.pages + 1)
    start, offset = cursor.offset, cursor.offset + aligned
    if offset + length > page:
        length, offset = page - start, page
    return PostedBuffer(cursor.page, start, length), cursor._replace(offset=offset)


def carve_fresh(a: RxAllocator, length: int, mergeable: bool) -> Iterator[PostedBuffer]:
    """add_recvbuf_* again and again from a fresh page, every buffer asked for ``length``."""
    cursor = PageCursor()
    while True:
        buf, cursor = carve(a, cursor, length, mergeable)
        yield buf


class Carved(Value):
    """Posted buffers with what lets a plan skip walking them: prefix sums of their lengths and
    runs of buffers that follow each other in the same page (which skb_coalesce_rx_frag merges).
    Immutable; a plain class (vnetrx/values.py): a replay makes one per geometry it decides."""

    __slots__ = ("buffers", "prefix", "run")
    _names = ("buffers", "prefix", "run")

    def __init__(self, buffers: tuple[PostedBuffer, ...], prefix: tuple[int, ...],
                 run: tuple[int, ...]) -> None:
        self.buffers: Final = buffers
        self.prefix: Final = prefix  # prefix[i] = total length of buffers[:i]
        self.run: Final = run  # run[i] = how many times contiguity breaks among buffers[0..i]

    def _values(self) -> tuple[object, ...]:
        return (self.buffers, self.prefix, self.run)


class CarvedMemo(dict[int, Carved]):
    """``carve_key(buffer_index, buf_len)`` → the ``Carved`` buffers ``carved`` made: a memo,
    not state (a sweep asks for the same buffers at every length). Every memo equals every
    other, so two ``Config``s are equal when their settings are, whatever each has memoised;
    one a ``_replace`` shares is still right, the buffer index being part of the key."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CarvedMemo)

    def __ne__(self, other: object) -> bool:
        return not isinstance(other, CarvedMemo)

    def __repr__(self) -> str:
        return f"CarvedMemo({len(self)} carves)"


def carve_key(buffer_index: int, buf_len: int) -> int:
    """One int for (buffer_index, buf_len): buffer lengths are below 2**20."""
    return buffer_index << 20 | buf_len


def carved(alloc: RxAllocator, buffer_index: int, buf_len: int, need: int) -> Carved:
    """Posted buffers of ``buf_len`` from a fresh page, skipping ``buffer_index`` of them, until
    they hold ``need`` bytes."""
    out: list[PostedBuffer] = []
    for buf in islice(carve_fresh(alloc, buf_len, True), buffer_index, None):
        out.append(buf)
        need -= buf.len
        if need <= 0:
            break
    return carved_info(tuple(out))


def carved_info(buffers: tuple[PostedBuffer, ...]) -> Carved:
    if len(buffers) == 1:  # most frames of a replay
        return Carved(buffers=buffers, prefix=(0, buffers[0].len), run=(0,))
    prefix, run = [0], [0]
    for i, buf in enumerate(buffers):
        prefix.append(prefix[-1] + buf.len)
        if i:
            prev = buffers[i - 1]
            contiguous = prev.frag_index == buf.frag_index and prev.offset + prev.len == buf.offset
            run.append(run[-1] + (0 if contiguous else 1))
    return Carved(buffers=buffers, prefix=tuple(prefix), run=tuple(run))


def num_buffers(prefix: tuple[int, ...], total: int) -> int | None:
    """How many posted buffers the device fills with ``total`` bytes (header and frame), given
    the prefix sums of their lengths: the fewest that hold it (QEMU's virtio_net_receive_rcu
    fills buffers in posting order and reports num_buffers). None: they do not hold it."""
    count = bisect_left(prefix, total)
    return count if count < len(prefix) else None


def used_lengths(info: Carved, count: int, total: int) -> tuple[int, ...]:
    """Bytes the device wrote into each of the first ``count`` buffers with ``total`` bytes:
    all full but the last."""
    return (*[b.len for b in info.buffers[: count - 1]], total - info.prefix[count - 1])


# --- sizes ------------------------------------------------------------------------------


def small_bufsize(skb_data_align: int, hdr_len: int, rx_pad: int, good_packet_len: int,
                  shinfo_size: int) -> int:
    """add_recvbuf_small: SKB_DATA_ALIGN(hdr_len + VIRTNET_RX_PAD + GOOD_PACKET_LEN) + shinfo
    (``skb_data_align``: SMP_CACHE_BYTES)."""
    return -(-(hdr_len + rx_pad + good_packet_len) // skb_data_align) * skb_data_align + shinfo_size


def mergeable_min_buf_len(hdr_len: int, packet_len: int, ring_size: int,
                          good_packet_len: int) -> int:
    """rq->min_buf_len = mergeable_min_buf_len(vi, vq):
    max(max(DIV_ROUND_UP(hdr_len + ETH_HLEN + VLAN_HLEN + packet_len, ring), hdr_len) - hdr_len,
    GOOD_PACKET_LEN), where packet_len is IP_MAX_MTU with big_packets, else dev->max_mtu."""
    min_buf_len = -(-(hdr_len + ETH_HLEN + VLAN_HLEN + packet_len) // ring_size)
    return max(max(min_buf_len, hdr_len) - hdr_len, good_packet_len)


def get_mergeable_buf_len(hdr_len: int, ewma: int, min_buf_len: int, page_size: int,
                          l1_cache_bytes: int) -> int:
    """ALIGN(hdr_len + clamp(ewma, min_buf_len, PAGE_SIZE - hdr_len), L1_CACHE_BYTES) (room 0:
    no XDP)."""
    clamped = min(max(ewma, min_buf_len), page_size - hdr_len)
    return -(-(hdr_len + clamped) // l1_cache_bytes) * l1_cache_bytes


def ewma_pkt_len_add(ewma: int, value: int) -> int:
    """DECLARE_EWMA(pkt_len, 0, 64) (include/linux/average.h): with precision 0 and weight
    reciprocal 64, ewma_pkt_len_add sets e = v when e == 0, else e = (e * 63 + v) >> 6."""
    return value if ewma == 0 else (ewma * 63 + value) >> 6


def lengths(posted: tuple[PostedBuffer, ...]) -> str:
    """``3×1536 2048 2×1536``: buffer lengths, runs folded."""
    parts: list[list[int]] = []
    for buf in posted:
        if parts and parts[-1][0] == buf.len:
            parts[-1][1] += 1
        else:
            parts.append([buf.len, 1])
    return " ".join(f"{n}×{length}" if n > 1 else str(length) for length, n in parts)
