"""A stateful virtio-net receive queue: the buffers posted in the avail ring, the page_frag (or
7.x page_pool) they are carved from, the packet-length EWMA that sizes them, and the NAPI refill
that posts new ones. Pure: a state goes in, a new state (and per-frame traces) come out.

Mirrors, in drivers/net/virtio_net.c (read @6.1.192 and @6.12.117, the same in both):

* ``virtnet_open``: ``try_fill_recv(vi, rq, GFP_KERNEL)`` fills the whole ring before the
  queue is enabled; the EWMA is still 0 (``ewma_pkt_len_init`` in ``virtnet_alloc_queues``), so
  every buffer has ``get_mergeable_buf_len(ewma 0)`` = ALIGN(hdr_len + min_buf_len, L1) bytes.
* ``try_fill_recv``: ``add_recvbuf_*`` again and again ``while (rq->vq->num_free)``: one
  buffer (one descriptor: one sg entry) per descriptor the driver has taken back, all sized with
  the EWMA as it is when the fill runs (buffers the device used but the driver has not yet
  taken back with virtqueue_get_buf_ctx are not free).
* ``virtnet_receive``: takes at most ``budget`` used buffers (NAPI_POLL_WEIGHT = 64) and then,
  only ``if (rq->vq->num_free > min((unsigned int)budget, virtqueue_get_vring_size(rq->vq)) /
  2)``, calls ``try_fill_recv(vi, rq, GFP_ATOMIC)``. That threshold is "virtio-net: lower min
  ring num_free for efficiency" (2019, before 5.12; the same line is in 5.15.100), so every
  profiled kernel refills the same way; 7.x (patch "virtio-net: don't schedule delayed refill worker", 2026) only changes what
  happens when the refill runs out of memory, which vnetrx does not model.
* ``receive_mergeable``: ``ewma_pkt_len_add(&rq->mrg_avg_pkt_len, head_skb->len)`` once per
  skb built (not for drops); DECLARE_EWMA(pkt_len, 0, 64) in every version.
* ``mergeable_rx_buffer_size_show`` (sysfs, mergeable mode only): ``get_mergeable_buf_len``
  with the current EWMA and room 0 (no XDP): the length the next refill posts.
* ``skb_page_frag_refill`` (net/core/sock.c @6.1.192, @6.12.117): keep the page while
  ``offset + sz <= size``, else a new order-3 page at offset 0.

The device side follows QEMU's virtio_net_receive_rcu: buffers are used in the order they were
posted; a mergeable frame takes as many as it needs (``num_buffers``) and waits, unsplit, until
that many are posted; a small-mode frame longer than one buffer is not delivered and uses none.

When the driver polls is timing, not code: ``RingConfig.batch`` (or ``polls``) says how many
frames the device writes before each poll. It only matters once frames reach buffers posted by
a refill: real 6.1.192 and 6.12.117 guests matched frame for frame over 64 jumbo frames (305
buffers) with the grouping they actually had (tests/test_replay.py, tests/data/replay/).

Not modelled (stated in every replay's notes): ``skb_page_frag_refill``'s reuse of the current
page from offset 0 when ``page_ref_count == 1`` (only possible once every buffer carved from it
has been used *and* its skb freed); the order-0 fallback of the page_frag; OOM during a refill.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from vnetrx.engine import trace_virtio
from vnetrx.errors import InputError, UnsupportedError, VnetrxError
from vnetrx.kernel.changes import (
    PADDED_VNET_HDR_V1_HASH,
    RX_PREMAPPED_BY_DEFAULT,
    VIRTIO_RX_PAGE_POOL,
)
from vnetrx.kernel.profile import KernelProfile, align
from vnetrx.model import Step, Trace
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net import MAX_FRAME_LEN, VirtioRxSetup

SRC = "drivers/net/virtio_net.c"
NAPI_POLL_WEIGHT = 64  # include/linux/netdevice.h; virtio_net's napi_weight module parameter
MAX_RING_SIZE = 32768  # virtio: a split ring has at most 32768 entries
MAX_FRAMES = 100_000


@dataclass(frozen=True)
class RingConfig:
    """What the device negotiated and how frames arrive."""

    mergeable: bool
    mtu: int = 1500
    hdr_len: int = 12
    ring_size: int = 256
    batch: int = 1  # frames the device writes before the driver's NAPI poll runs
    # Explicit batch sizes, in order (e.g. what the napi:napi_poll tracepoint's "work" showed);
    # they must add up to the frame count. Empty: ``batch`` every time.
    polls: tuple[int, ...] = ()
    budget: int = NAPI_POLL_WEIGHT

    @property
    def refill_threshold(self) -> int:
        """virtnet_receive: refill when num_free > min(budget, ring size) / 2."""
        return min(self.budget, self.ring_size) // 2


@dataclass(frozen=True)
class Allocator:
    """rq->alloc_frag (struct page_frag), or the 7.x page_pool's current fragment page."""

    page: int = -1  # index of the current page (-1: none allocated yet)
    offset: int = 0  # alloc_frag->offset / pool->frag_offset
    size: int = 0  # alloc_frag->size / PAGE_SIZE
    pages: int = 0  # pages allocated so far: the next one gets this index


@dataclass(frozen=True)
class Posted:
    """One buffer in the avail ring."""

    seq: int  # posting order since virtnet_open (0 = first buffer of the initial fill)
    buf: bufs.PostedBuffer  # backing page index, offset in it, length (the ctx truesize)
    fill: int = 0  # the try_fill_recv run that posted it (0 = virtnet_open's)


@dataclass(frozen=True)
class Fill:
    """One try_fill_recv() run."""

    when: str  # "virtnet_open" or "virtnet_receive"
    after_poll: int  # 0 for the initial fill
    ewma: int  # the EWMA the buffers were sized with
    buf_len: int  # get_mergeable_buf_len() / the small-mode bufsize
    buffers: tuple[Posted, ...]


@dataclass(frozen=True)
class RingState:
    posted: tuple[Posted, ...] = ()  # the avail ring, oldest first: the device fills in order
    ewma: int = 0  # rq->mrg_avg_pkt_len (mergeable); stays 0 in small mode
    alloc: Allocator = field(default_factory=Allocator)
    next_seq: int = 0
    num_free: int = 0  # descriptors the driver took back and has not refilled yet
    polls: int = 0
    fills: int = 0  # try_fill_recv runs, the initial one included


@dataclass(frozen=True)
class RingView:
    """The ring as a user would inspect it, after a frame (and its poll's refill)."""

    ewma: int | None
    mergeable_rx_buffer_size: int | None  # /sys/class/net/<dev>/queues/rx-0/...; mergeable only
    allocator: str  # "page_frag" | "page_pool"
    page: str  # label of the current backing page ("frag12")
    offset: int
    page_size: int
    posted: int
    num_free: int
    posted_lens: tuple[tuple[int, int], ...]  # (buffer length, how many are posted), by length
    next_buffer: Posted | None
    polls: int
    fills: int


@dataclass(frozen=True)
class FrameRecord:
    index: int
    frame_len: int
    poll: int | None  # the NAPI poll that received it (None: the device dropped it)
    buffers: tuple[Posted, ...]  # the posted buffers the device filled (num_buffers of them)
    trace: Trace
    ewma_before: int | None
    ewma_after: int | None
    refill: Fill | None  # the refill that ended this frame's poll, if any
    ring: RingView  # after this frame and that refill


@dataclass(frozen=True)
class Replay:
    kernel: KernelProfile
    config: RingConfig
    min_buf_len: int | None
    initial_fill: Fill
    frames: tuple[FrameRecord, ...]
    final: RingView
    notes: tuple[str, ...]


# --- the driver side: sizing and carving ------------------------------------------------------


def min_buf_len(k: KernelProfile, cfg: RingConfig) -> int:
    """rq->min_buf_len = mergeable_min_buf_len(vi, vq) (virtnet_probe). dev->max_mtu is the MTU
    with VIRTIO_NET_F_MTU (assumed negotiated when the MTU is not 1500), else MAX_MTU; an MTU
    above 1500 sets big_packets, which sizes for IP_MAX_MTU."""
    max_mtu = cfg.mtu if cfg.mtu != bufs.ETH_DATA_LEN else bufs.MAX_MTU
    return bufs.mergeable_min_buf_len(
        k, cfg.hdr_len, cfg.mtu > bufs.ETH_DATA_LEN, max_mtu, cfg.ring_size
    )


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


# --- the device side and the NAPI loop --------------------------------------------------------


def buffers_needed(cfg: RingConfig, posted: Sequence[Posted], frame_len: int) -> int | None:
    """How many posted buffers the device fills with this frame: None if it must wait for more;
    0 if it drops the frame without using any (small mode, longer than one buffer holds)."""
    if not cfg.mergeable:
        if frame_len > bufs.GOOD_PACKET_LEN:
            return 0
        return 1 if posted else None
    need, covered = cfg.hdr_len + frame_len, 0
    for count, p in enumerate(posted, 1):
        covered += p.buf.len
        if covered >= need:
            return count
    return None


def validate(k: KernelProfile, cfg: RingConfig, frames: Sequence[int]) -> None:
    if not frames:
        raise InputError("no frames to replay (give at least one length)")
    if len(frames) > MAX_FRAMES:
        raise InputError(f"{len(frames)} frames is too many (valid: 1..{MAX_FRAMES})")
    for index, length in enumerate(frames):
        if not 1 <= length <= MAX_FRAME_LEN:
            raise InputError(
                f"frame {index}: length {length} out of range (valid: 1..{MAX_FRAME_LEN})"
            )
    if not 1 <= cfg.ring_size <= MAX_RING_SIZE:
        raise InputError(f"ring size {cfg.ring_size} out of range (valid: 1..{MAX_RING_SIZE})")
    if not 1 <= cfg.batch <= MAX_FRAMES:
        raise InputError(f"batch {cfg.batch} out of range (valid: 1..{MAX_FRAMES})")
    if cfg.polls and (min(cfg.polls) < 1 or sum(cfg.polls) != len(frames)):
        raise InputError(
            f"the batches ({', '.join(map(str, cfg.polls))}) must be at least 1 frame each and "
            f"add up to the {len(frames)} frame(s)"
        )
    if not cfg.mergeable and cfg.mtu > bufs.ETH_DATA_LEN:
        raise UnsupportedError(
            "replay models the small and mergeable rings; without --mergeable an MTU above "
            "1500 selects big mode, whose page chains carry no history (use vnetrx trace)"
        )
    if cfg.hdr_len == 20 and not k.has(PADDED_VNET_HDR_V1_HASH):
        raise UnsupportedError(
            f"hdr_len 20 (VIRTIO_NET_F_HASH_REPORT) needs 5.18 or later, not {k.name}"
        )


def _stall(cfg: RingConfig, state: RingState, index: int, frame_len: int) -> VnetrxError:
    posted = sum(p.buf.len for p in state.posted)
    return VnetrxError(
        f"rx stall at frame {index}: {cfg.hdr_len + frame_len} bytes (header + frame) need more "
        f"than the {len(state.posted)} posted buffer(s) hold ({posted} bytes); "
        f"{state.num_free} descriptor(s) are free and virtnet_receive refills only when more "
        f"than min(budget, ring size) / 2 = {cfg.refill_threshold} are, so the device waits "
        "for buffers that never come",
        hint="a larger --ring-size, or fewer large frames",
    )


@dataclass
class _Run:
    """Mutable bookkeeping of one replay (kept inside ``replay``)."""

    k: KernelProfile
    cfg: RingConfig
    state: RingState
    records: dict[int, FrameRecord] = field(default_factory=dict)

    def trace(
        self,
        index: int,
        frame_len: int,
        used: tuple[Posted, ...],
        poll: int | None,
        shown: tuple[Posted, ...],
    ) -> None:
        setup = VirtioRxSetup(
            frame_len=frame_len,
            mergeable=self.cfg.mergeable,
            mtu=self.cfg.mtu,
            hdr_len=self.cfg.hdr_len,
            ewma=self.state.ewma if self.cfg.mergeable else None,
            ring_size=self.cfg.ring_size,
            buffer_index=shown[0].seq % self.cfg.ring_size if shown else 0,
            buffers=tuple(p.buf for p in shown),
        )
        trace = trace_virtio(self.k, setup)
        trace = replace(trace, steps=self._ring_steps(frame_len, used, poll) + trace.steps)
        before = self.state.ewma
        after = before
        if self.cfg.mergeable and trace.skb is not None:
            after = bufs.ewma_pkt_len_add(before, frame_len)  # head_skb->len before eth pull
        self.state = replace(self.state, ewma=after, num_free=self.state.num_free + len(used))
        self.records[index] = FrameRecord(
            index=index,
            frame_len=frame_len,
            poll=poll,
            buffers=used,
            trace=trace,
            ewma_before=before if self.cfg.mergeable else None,
            ewma_after=after if self.cfg.mergeable else None,
            refill=None,
            ring=view(self.k, self.cfg, self.state),
        )

    def _ring_steps(
        self, frame_len: int, used: tuple[Posted, ...], poll: int | None
    ) -> tuple[Step, ...]:
        """Where the frame's buffers came from, as steps ahead of the engine's."""
        log = StepLog(self.k)
        if not used:
            return (
                Step(
                    function="virtio_net_receive_rcu",
                    source="hw/net/virtio-net.c:virtio_net_receive_rcu (QEMU, the device)",
                    summary=f"a {frame_len}-byte frame does not fit one small-mode buffer: the "
                    "device drops it and puts the buffer back (virtqueue_unpop); the driver "
                    "never sees it",
                    values=(("len", frame_len),),
                ),
            )
        fills = sorted({p.fill for p in used})
        log.add(
            SRC,
            "virtnet_receive",
            f"NAPI poll {poll}: virtqueue_get_buf_ctx returns buffer(s) #{used[0].seq}"
            + (f"..#{used[-1].seq}" if len(used) > 1 else "")
            + " in posting order, posted by "
            + ", ".join("virtnet_open" if f == 0 else f"refill {f}" for f in fills),
            poll=poll,
            first_seq=used[0].seq,
            num_buffers=len(used),
            num_free_before=self.state.num_free,
        )
        return tuple(log.steps)

    def refill_check(self, last: int) -> None:
        """virtnet_receive, after its loop: refill only past min(budget, ring size) / 2 free."""
        record = self.records[last]
        log = StepLog(self.k)
        threshold, free = self.cfg.refill_threshold, self.state.num_free
        fill: Fill | None = None
        if free > threshold:
            self.state, fill = try_fill_recv(self.k, self.cfg, self.state, "virtnet_receive")
            log.add(
                SRC,
                "virtnet_receive",
                f"num_free {free} > min(budget {self.cfg.budget}, ring {self.cfg.ring_size}) / 2 "
                f"= {threshold}: try_fill_recv posts {len(fill.buffers)} buffer(s) of "
                f"{fill.buf_len} bytes"
                + (f" (get_mergeable_buf_len, EWMA {fill.ewma})" if self.cfg.mergeable else ""),
                self.k.present(RX_PREMAPPED_BY_DEFAULT, VIRTIO_RX_PAGE_POOL),
                num_free=free,
                threshold=threshold,
                posted=len(fill.buffers),
                len=fill.buf_len,
            )
        else:
            log.add(
                SRC,
                "virtnet_receive",
                f"num_free {free} <= min(budget {self.cfg.budget}, ring {self.cfg.ring_size}) / 2 "
                f"= {threshold}: no refill after this poll",
                num_free=free,
                threshold=threshold,
            )
        trace = replace(record.trace, steps=record.trace.steps + tuple(log.steps))
        self.records[last] = replace(
            record, trace=trace, refill=fill, ring=view(self.k, self.cfg, self.state)
        )


def feed(
    k: KernelProfile,
    cfg: RingConfig,
    state: RingState,
    frames: Sequence[int],
    first_index: int = 0,
) -> tuple[RingState, tuple[FrameRecord, ...]]:
    """The pure step: a ring state and frames in, the new state and one record per frame out.

    Frames arrive ``cfg.batch`` at a time: the device writes a batch into the posted buffers
    (in order, each frame whole), then NAPI polls (at most ``budget`` frames each, the refill
    check after each) until the batch is received. ``first_index`` numbers the records."""
    run = _Run(k, cfg, state)
    for first, size in _batches(cfg, len(frames)):
        arriving = deque(enumerate(frames[first : first + size], first_index + first))
        used: deque[tuple[int, int, tuple[Posted, ...]]] = deque()
        while arriving or used:
            _device_writes(run, arriving, used)
            if not used:
                if not arriving:  # the rest were dropped by the device
                    break
                index, frame_len = arriving[0]
                raise _stall(cfg, run.state, index, frame_len)
            _napi_poll(run, used)
    records = tuple(run.records[first_index + i] for i in range(len(frames)))
    return run.state, records


def _batches(cfg: RingConfig, count: int) -> list[tuple[int, int]]:
    """(first frame, size) of each device batch."""
    sizes = list(cfg.polls) if cfg.polls else [cfg.batch] * -(-count // cfg.batch)
    out, first = [], 0
    for size in sizes:
        if first >= count:
            break
        out.append((first, min(size, count - first)))
        first += size
    return out


def replay(k: KernelProfile, cfg: RingConfig, frames: Sequence[int]) -> Replay:
    """virtnet_open, then ``frames`` (lengths after the virtio-net header) through the ring."""
    validate(k, cfg, frames)
    state, initial = open_ring(k, cfg)
    state, records = feed(k, cfg, state, frames)
    return Replay(
        kernel=k,
        config=cfg,
        min_buf_len=min_buf_len(k, cfg) if cfg.mergeable else None,
        initial_fill=initial,
        frames=records,
        final=view(k, cfg, state),
        notes=replay_notes(k, cfg),
    )


def _device_writes(
    run: _Run, arriving: deque[tuple[int, int]], used: deque[tuple[int, int, tuple[Posted, ...]]]
) -> None:
    """The device places arriving frames, in order, while the posted buffers hold them."""
    while arriving:
        index, frame_len = arriving[0]
        count = buffers_needed(run.cfg, run.state.posted, frame_len)
        if count is None:
            return
        arriving.popleft()
        if count == 0:  # small mode, too long: QEMU drops it and uses no buffer
            run.trace(index, frame_len, (), None, run.state.posted[:1])
            continue
        taken = run.state.posted[:count]
        run.state = replace(run.state, posted=run.state.posted[count:])
        used.append((index, frame_len, taken))


def _napi_poll(run: _Run, used: deque[tuple[int, int, tuple[Posted, ...]]]) -> None:
    """virtnet_poll → virtnet_receive: up to ``budget`` used buffers, then the refill check."""
    run.state = replace(run.state, polls=run.state.polls + 1)
    poll, last = run.state.polls, -1
    for _ in range(min(run.cfg.budget, len(used))):
        index, frame_len, taken = used.popleft()
        run.trace(index, frame_len, taken, poll, taken)
        last = index
    run.refill_check(last)


def replay_notes(k: KernelProfile, cfg: RingConfig) -> tuple[str, ...]:
    notes = [
        f"the ring is filled at virtnet_open with the EWMA at 0 and refilled after a NAPI poll "
        f"(budget {cfg.budget}) only when more than {cfg.refill_threshold} descriptors are free; "
        + (
            f"the device writes batches of {', '.join(map(str, cfg.polls))} frame(s), each "
            "received before the next (--polls)"
            if cfg.polls
            else f"the device writes {cfg.batch} frame(s) before each poll (--batch)"
        ),
    ]
    if k.has(VIRTIO_RX_PAGE_POOL):
        notes.append(
            "page_pool recycling is not modelled: every page gets a new label (which physical "
            "page comes back does not change any offset)"
        )
    else:
        notes.append(
            "skb_page_frag_refill's reuse of a page whose every buffer was used and freed "
            "(page_ref_count == 1) is not modelled: vnetrx assumes the skbs still hold it"
        )
    if k.has(RX_PREMAPPED_BY_DEFAULT) and not k.has(VIRTIO_RX_PAGE_POOL):
        notes.append("every page_frag page starts with the 16-byte struct virtnet_rq_dma")
    return tuple(notes)
