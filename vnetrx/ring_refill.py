"""The driver side of the ring replay: how long each rx buffer is, how it is carved from the
page_frag (or 7.x page_pool), and the try_fill_recv runs that post them. Pure functions of a
RingState.

Mirrors, in drivers/net/virtio_net.c (read @6.1.192 and @6.12.117, the same in both):

* ``virtnet_open``: ``try_fill_recv(vi, rq, GFP_KERNEL)`` fills the whole ring before the
  queue is enabled; the EWMA is still 0 (``ewma_pkt_len_init`` in ``virtnet_alloc_queues``), so
  every buffer has ``get_mergeable_buf_len(ewma 0)`` = ALIGN(hdr_len + min_buf_len, L1) bytes.
* ``try_fill_recv``: ``add_recvbuf_*`` again and again ``while (rq->vq->num_free)``: one
  buffer (one descriptor: one sg entry) per descriptor the driver has taken back, all sized with
  the EWMA as it is when the fill runs (buffers the device used but the driver has not yet
  taken back with virtqueue_get_buf_ctx are not free).
* ``mergeable_rx_buffer_size_show`` (sysfs, mergeable mode only): ``get_mergeable_buf_len``
  with the current EWMA and room 0 (no XDP): the length the next refill posts.
* ``skb_page_frag_refill`` (net/core/sock.c @6.1.192, @6.12.117): keep the page while
  ``offset + sz <= size``, else a new order-3 page at offset 0.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from vnetrx.kernel.changes import VIRTIO_RX_PAGE_POOL
from vnetrx.kernel.profile import KernelProfile, align
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.ring_types import Allocator, Fill, Posted, RingConfig, RingState, RingView


def min_buf_len(k: KernelProfile, cfg: RingConfig) -> int:
    """rq->min_buf_len = mergeable_min_buf_len(vi, vq) (virtnet_probe). dev->max_mtu is the MTU
    with VIRTIO_NET_F_MTU (assumed negotiated when the MTU is not 1500), else MAX_MTU; guest GSO
    or an MTU above 1500 sets big_packets, which sizes for IP_MAX_MTU."""
    max_mtu = cfg.mtu if cfg.mtu != bufs.ETH_DATA_LEN else bufs.MAX_MTU
    big_packets = cfg.guest_gso or cfg.mtu > bufs.ETH_DATA_LEN
    return bufs.mergeable_min_buf_len(k, cfg.hdr_len, big_packets, max_mtu, cfg.ring_size)


def buffer_len(k: KernelProfile, cfg: RingConfig, ewma: int) -> int:
    """The length add_recvbuf_* asks for: get_mergeable_buf_len(ewma) or the small bufsize."""
    if cfg.mergeable:
        return bufs.get_mergeable_buf_len(k, cfg.hdr_len, ewma, min_buf_len(k, cfg))
    return bufs.small_bufsize(k, cfg.hdr_len)


def _new_page(a: Allocator, size: int) -> Allocator:
    return Allocator(page=a.pages, offset=0, size=size, pages=a.pages + 1)


def carve_page_frag(
    k: KernelProfile, a: Allocator, length: int, mergeable: bool
) -> tuple[bufs.PostedBuffer, Allocator]:
    """One add_recvbuf_mergeable/_small on rq->alloc_frag (no XDP: room 0, headroom 0).

    skb_page_frag_refill(len) keeps the page while offset + len fits, else takes a new 32 KiB
    page (offset 0). From 6.13 virtnet_rq_alloc() starts a new page with the 16-byte struct
    virtnet_rq_dma (add_recvbuf_mergeable @6.12.117 first shrinks a buffer that would then
    overflow a fresh page by those 16 bytes). Mergeable: a buffer after which another of the
    same length would not fit absorbs the rest of the page ("hole").
    """
    size = bufs.page_frag_size(k)
    if a.page < 0 or a.offset + length > a.size:
        a = _new_page(a, size)
    offset = a.offset
    if offset == 0:
        offset = bufs.page_frag_start(k)  # virtnet_rq_alloc: offset = sizeof(*dma) (6.13+)
        if mergeable and offset + length > size:
            length = size - offset
    start, offset = offset, offset + length
    if mergeable:
        hole = size - offset
        if hole < length:
            length, offset = length + hole, size
    return bufs.PostedBuffer(a.page, start, length), replace(a, offset=offset)


def carve_page_pool(
    k: KernelProfile, a: Allocator, length: int
) -> tuple[bufs.PostedBuffer, Allocator]:
    """One page_pool_alloc_va(pool, &len) (7.x; page_pool_alloc_netmem in
    include/net/page_pool/helpers.h, page_pool_alloc_frag_netmem in net/core/page_pool.c
    @7.3.4, fact sheet §5.1): a length whose double does not fit a page gets a whole page of its
    own (the fragment page is kept); otherwise the aligned length is carved from the fragment
    page (a new one when it does not fit), and a fragment after which another of the same length
    would not fit absorbs the rest of the page."""
    page_size = k.build.page_size
    if 2 * length > page_size:
        return bufs.PostedBuffer(a.pages, 0, page_size), replace(a, pages=a.pages + 1)
    aligned = align(length, k.build.page_pool_frag_align)
    if a.page < 0 or a.offset + aligned > page_size:
        a = _new_page(a, page_size)
    start, offset = a.offset, a.offset + aligned
    if offset + length > page_size:
        length, offset = page_size - start, page_size
    return bufs.PostedBuffer(a.page, start, length), replace(a, offset=offset)


def carve(
    k: KernelProfile, a: Allocator, length: int, mergeable: bool
) -> tuple[bufs.PostedBuffer, Allocator]:
    if k.has(VIRTIO_RX_PAGE_POOL):
        return carve_page_pool(k, a, length)
    return carve_page_frag(k, a, length, mergeable)


def try_fill_recv(
    k: KernelProfile, cfg: RingConfig, state: RingState, when: str
) -> tuple[RingState, Fill]:
    """try_fill_recv: post buffers ``while (rq->vq->num_free)``, one per free descriptor, every
    one sized with the EWMA as it is now (get_mergeable_buf_len reads it per buffer, and nothing
    updates it during the fill)."""
    length = buffer_len(k, cfg, state.ewma)
    count = state.num_free  # buffers used but not yet processed are not free yet
    alloc, seq, new = state.alloc, state.next_seq, []
    for _ in range(count):
        buf, alloc = carve(k, alloc, length, cfg.mergeable)
        new.append(Posted(seq, buf, state.fills))
        seq += 1
    fill = Fill(when, state.polls, state.ewma, length, tuple(new))
    return (
        replace(
            state,
            posted=state.posted + fill.buffers,
            alloc=alloc,
            next_seq=seq,
            num_free=0,
            fills=state.fills + 1,
        ),
        fill,
    )


def open_ring(k: KernelProfile, cfg: RingConfig) -> tuple[RingState, Fill]:
    """virtnet_open: try_fill_recv(GFP_KERNEL) on an empty ring with the EWMA at 0."""
    return try_fill_recv(k, cfg, RingState(num_free=cfg.ring_size), "virtnet_open")


def page_label(k: KernelProfile, index: int) -> str:
    """The names the trace uses: frag<N> (page_frag pages) or pool<N> (page_pool pages)."""
    return f"pool{index}" if k.has(VIRTIO_RX_PAGE_POOL) else f"frag{index}"


def backing_page_size(k: KernelProfile) -> int:
    """Bytes of one backing page: the 32 KiB page_frag page, or a 7.x page_pool page."""
    return k.build.page_size if k.has(VIRTIO_RX_PAGE_POOL) else bufs.page_frag_size(k)


def view(k: KernelProfile, cfg: RingConfig, state: RingState) -> RingView:
    lens = Counter(p.buf.len for p in state.posted)
    return RingView(
        ewma=state.ewma if cfg.mergeable else None,
        mergeable_rx_buffer_size=buffer_len(k, cfg, state.ewma) if cfg.mergeable else None,
        allocator="page_pool" if k.has(VIRTIO_RX_PAGE_POOL) else "page_frag",
        page=page_label(k, state.alloc.page),
        offset=state.alloc.offset,
        page_size=state.alloc.size,
        posted=len(state.posted),
        num_free=state.num_free,
        posted_lens=tuple(sorted(lens.items())),
        next_buffer=state.posted[0] if state.posted else None,
        polls=state.polls,
        fills=state.fills,
    )
