"""The driver side of the ring replay: the try_fill_recv runs that post buffers, on a RingState
(which they change); the buffer sizes and the carving are the receive path's own
(paths/virtio_net/setup.py and buffers.py), through the ring's ``Config``.

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
"""

from __future__ import annotations

from functools import cache

from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths import virtio_net
from vnetrx.paths.virtio_net import buffers as bufs
from vnetrx.paths.virtio_net.setup import Config
from vnetrx.replay.state import Fill, Posted, RingConfig, RingState, RingView


@cache
def ring_config(k: KernelProfile, cfg: RingConfig) -> Config:
    """The receive path's Config for this ring (checked like a trace's setup)."""
    return virtio_net.config(k, virtio_net.check_virtio_setup(k, cfg.device))


def min_buf_len(k: KernelProfile, cfg: RingConfig) -> int:
    """rq->min_buf_len = mergeable_min_buf_len(vi, vq) (virtnet_probe)."""
    return ring_config(k, cfg).min_buf_len


def buffer_len(k: KernelProfile, cfg: RingConfig, ewma: int) -> int:
    """The length add_recvbuf_* asks for: get_mergeable_buf_len(ewma) or the small bufsize;
    with an XDP program the slot: len + room (PAGE_SIZE) or the small slot with headroom."""
    return _buffer_len(ring_config(k, cfg), cfg, ewma)


def _buffer_len(c: Config, cfg: RingConfig, ewma: int) -> int:
    """``buffer_len`` with the ring's Config at hand."""
    if c.xdp is not None:
        return c.xdp.mrg_len + c.xdp.mrg_room if cfg.device.mergeable else c.xdp.small_slot
    if cfg.device.mergeable:
        return bufs.get_mergeable_buf_len(c.mrg_hdr_len, ewma, c.min_buf_len, c.page_size,
                                          c.l1_cache_bytes)
    return c.small_bufsize


def buffer_room(k: KernelProfile, cfg: RingConfig) -> int:
    """Bytes of a posted mergeable slot the device may not write: room with XDP, else 0."""
    c = ring_config(k, cfg)
    return c.xdp.mrg_room if c.xdp is not None and cfg.device.mergeable else 0


def sysfs_buffer_size(k: KernelProfile, cfg: RingConfig, ewma: int) -> int:
    """mergeable_rx_buffer_size: get_mergeable_buf_len with the current EWMA and room (with
    XDP: PAGE_SIZE - room, 3520)."""
    c = ring_config(k, cfg)
    return c.xdp.mrg_len if c.xdp is not None else buffer_len(k, cfg, ewma)


def try_fill_recv(k: KernelProfile, cfg: RingConfig, state: RingState, when: str,
                  c: Config | None = None) -> Fill:
    """try_fill_recv: post buffers ``while (rq->vq->num_free)``, one per free descriptor, every
    one sized with the EWMA as it is now (get_mergeable_buf_len reads it per buffer, and nothing
    updates it during the fill). Changes ``state``; returns what it posted. ``c``: the ring's
    Config, if the caller has it (a replay refills every few dozen frames: ``ring_config``'s
    cache hashes both arguments at every call)."""
    if c is None:
        c = ring_config(k, cfg)
    alloc = c.alloc
    length = _buffer_len(c, cfg, state.ewma)
    # 484beac2ffc1 (6.3): an XDP buffer never absorbs the page's hole
    hole = cfg.device.mergeable and not (c.xdp is not None and c.xdp.multi_buf)
    count = state.num_free  # buffers used but not yet processed are not free yet
    carved, cursor = bufs.carve_many(alloc, state.alloc, length, hole, count)
    seq, fills = state.next_seq, state.fills
    # Fill(...) by tuple.__new__ (the record's __new__ is a Python function; skbuff.new_skb)
    fill = tuple.__new__(Fill, (when, state.polls, state.ewma, length,
                                tuple([Posted(seq + i, buf, fills)
                                       for i, buf in enumerate(carved)])))
    state.post(fill.buffers)
    state.alloc, state.next_seq, state.num_free = cursor, seq + count, 0
    state.fills += 1
    return fill


def open_ring(k: KernelProfile, cfg: RingConfig) -> tuple[RingState, Fill]:
    """virtnet_open: try_fill_recv(GFP_KERNEL) on an empty ring with the EWMA at 0."""
    state = RingState(num_free=cfg.device.ring_size)
    return state, try_fill_recv(k, cfg, state, "virtnet_open")


def page_label(k: KernelProfile, cfg: RingConfig, index: int) -> str:
    """The names the trace uses: frag<N> (page_frag pages) or pool<N> (page_pool pages)."""
    return ring_config(k, cfg).alloc.label(index)


def backing_page_size(k: KernelProfile, cfg: RingConfig) -> int:
    """Bytes of one backing page: the 32 KiB page_frag page, or a 7.x page_pool page."""
    return ring_config(k, cfg).alloc.page_bytes


def view(k: KernelProfile, cfg: RingConfig, state: RingState) -> RingView:
    """The ring now (O(distinct buffer lengths), not O(ring size))."""
    return Viewer(k, cfg)(state)


class Viewer:
    """``view`` for one ring, with what it looks up resolved once (a replay calls it per
    frame)."""

    def __init__(self, k: KernelProfile, cfg: RingConfig) -> None:
        c = ring_config(k, cfg)
        self.mergeable = cfg.device.mergeable
        self.label = c.alloc.label
        self.allocator = "page_pool" if c.alloc.page_pool else "page_frag"
        self.buf_len = cache(lambda ewma: sysfs_buffer_size(k, cfg, ewma))

    def __call__(self, state: RingState) -> RingView:
        cursor, posted = state.alloc, state.posted
        ewma = state.ewma if self.mergeable else None
        return RingView(
            ewma,
            None if ewma is None else self.buf_len(ewma),
            self.allocator,
            None if cursor.page < 0 else self.label(cursor.page),
            cursor.offset,
            cursor.size,
            len(posted),
            state.num_free,
            tuple(sorted(state.posted_lens().items())),
            posted[0] if posted else None,
            state.polls,
            state.fills,
        )
