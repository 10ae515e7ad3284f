"""The device side of the ring replay and the driver's NAPI loop: the device places frames in
the posted buffers, NAPI polls take them back and decide on a refill.

Mirrors, in drivers/net/virtio_net.c (read @6.1.192 and @6.12.117, the same in both):

* ``virtnet_receive``: takes at most ``budget`` used buffers (NAPI_POLL_WEIGHT = 64) and then,
  only ``if (rq->vq->num_free > min((unsigned int)budget, virtqueue_get_vring_size(rq->vq)) /
  2)``, calls ``try_fill_recv(vi, rq, GFP_ATOMIC)``. That threshold is "virtio-net: lower min
  ring num_free for efficiency" (2019, before 5.12; the same line is in 5.15.100), so every
  profiled kernel refills the same way; 7.x (patch "virtio-net: don't schedule delayed refill worker", 2026) only changes what
  happens when the refill runs out of memory, which vnetrx does not model.
* ``receive_mergeable``: ``ewma_pkt_len_add(&rq->mrg_avg_pkt_len, head_skb->len)`` once per
  skb built (not for drops); DECLARE_EWMA(pkt_len, 0, 64) in every version.

The device side follows QEMU's virtio_net_receive_rcu: buffers are used in the order they were
posted; a mergeable frame takes as many as it needs (``num_buffers``) and waits, unsplit, until
that many are posted; a small-mode frame longer than one buffer is not delivered and uses none.

Big mode (no MRG_RXBUF; guest GSO or an MTU above 1500) is ``_BigRun``: each frame in a page
chain of its own (add_recvbuf_big), decided by receive_big's stage alone; the chains' places in
the ring are not followed, so a frame never waits and no refill is shown (the replay's notes say
so); a frame longer than a chain holds is dropped by the device, as in small mode.

When the driver polls is timing, not code: ``RingConfig.batch`` (or ``polls``) says how many
frames the device writes before each poll. It only matters once frames reach buffers posted by
a refill: real 6.1.192 and 6.12.117 guests matched frame for frame over 64 jumbo frames (305
buffers) with the grouping they actually had (tests/replay/test_replay.py, tests/data/replay/).

Each frame is decided by the receive path's plan layer on the buffers it used (what sweeps use:
a few comparisons per frame; with XDP, receive_buf's XDP decisions on a receive path configured
with those buffers), once per geometry: a decision reads the frame's length, its header and the lengths and contiguity of
its buffers, never where they are, so frames alike in those share it (``Decision``, kept in a
bounded dict). The narrated trace, with the ring's own steps ahead of it and the refill check
after the last frame of a poll, is made only for the frames asked for. Records come out in
frame order as soon as their poll is done, so a replay streams in constant memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from vnetrx.engine import trace_virtio
from vnetrx.errors import InputError, VnetrxError
from vnetrx.kernel.changes import RX_PREMAPPED_BY_DEFAULT, VIRTIO_RX_PAGE_POOL
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Frag, Skb, Step, Trace
from vnetrx.paths import virtio_net
from vnetrx.paths.skbuff import new_skb
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net import MAX_FRAME_LEN, RxFrame, big, mergeable, small
from vnetrx.paths.virtio_net.buffers import carved_info, ewma_pkt_len_add
from vnetrx.paths.virtio_net.plan import COUNTER, Drop
from vnetrx.paths.virtio_net.receive_buf import deliver_with, xdp_received
from vnetrx.paths.virtio_net_hdr import VnetHdr
from vnetrx.replay.refill import Viewer, buffer_room, ring_config, try_fill_recv
from vnetrx.replay.state import (
    RUN_COUNT_BITS,
    Decision,
    FrameRecord,
    Posted,
    RingConfig,
    RingState,
    RingView,
    run_length,
)

SRC: Final = "drivers/net/virtio_net.c"
# drops after receive_mergeable returned the skb (receive_buf's own checks): the EWMA moved
RECEIVE_BUF_DROPS: Final = (Drop.BAD_GSO, Drop.BAD_CSUM)
Arrival = tuple[int, int, VnetHdr | None]  # (index, frame length, its virtio_net_hdr)


def every_frame(index: int) -> bool:  # noqa: ARG001
    return True


def no_frame(index: int) -> bool:  # noqa: ARG001
    return False


def buffers_needed(
    k: KernelProfile, cfg: RingConfig, posted: deque[Posted] | tuple[Posted, ...], frame_len: int
) -> int | None:
    """How many posted buffers the device fills with this frame: None if it must wait for more;
    0 if it drops the frame without using any (small or big mode, longer than one buffer
    holds). Big mode's chains are not followed: a frame that fits one takes it (1)."""
    if not cfg.device.mergeable:
        c = ring_config(k, cfg)
        if c.mode == "big":
            return 0 if frame_len > c.big_capacity else 1
        if frame_len > c.good_packet_len:
            return 0
        return 1 if posted else None
    return _mergeable_buffers(posted, cfg.hdr_len + frame_len, buffer_room(k, cfg))


def _mergeable_buffers(posted: deque[Posted] | tuple[Posted, ...], need: int, room: int
                       ) -> int | None:
    """How many of the oldest posted buffers (each ``room`` bytes short) hold ``need`` bytes."""
    if posted and posted[0].buf.len - room >= need:  # most frames: the first is enough
        return 1
    covered = count = 0
    for p in posted:  # (enumerate with a start is a Python call per frame, compiled)
        count += 1  # noqa: SIM113
        covered += p.buf.len - room
        if covered >= need:
            return count
    return None


def _stall(cfg: RingConfig, state: RingState, index: int, frame_len: int) -> VnetrxError:
    posted = sum(length * n for length, n in state.posted_lens().items())
    return VnetrxError(
        f"rx stall at frame {index}: {cfg.hdr_len + frame_len} bytes (header + frame) need more "
        f"than the {len(state.posted)} posted buffer(s) hold ({posted} bytes); "
        f"{state.num_free} descriptor(s) are free and virtnet_receive refills only when more "
        f"than min(budget, ring size) / 2 = {cfg.refill_threshold} are, so the device waits "
        "for buffers that never come",
        hint="a larger --ring-size, or fewer large frames",
    )


class _Run:
    """One replay's device and NAPI loop over ``state`` (which it changes)."""

    def __init__(self, k: KernelProfile, cfg: RingConfig, state: RingState,
                 want_trace: Callable[[int], bool], rings: bool = True,
                 frags: bool = False) -> None:
        self.k, self.cfg, self.state, self.want_trace = k, cfg, state, want_trace
        self.frags = frags  # decisions list the skb's frags by size (GRO over the replay)
        self.c = ring_config(k, cfg)
        viewer = Viewer(k, cfg)
        self.view: Callable[[RingState], RingView] | None = viewer if rings else None
        if not rings:  # no per-frame ring view: the posted lengths are counted when asked
            state.stop_counting()
        # resolved once: a replay asks these per frame
        self.traces = want_trace is not no_frame
        self.mergeable, self.hdr_len = cfg.device.mergeable, self.c.hdr_len
        self.refill_threshold = cfg.refill_threshold
        self.good_packet_len = self.c.good_packet_len
        self.room = buffer_room(k, cfg)  # looked up once: a replay places millions of frames
        # by geometry (``_geometry``'s int), and by header, then geometry: see ``decided``
        self.plain: dict[int, Decision] = {}
        self.by_hdr: dict[VnetHdr, dict[int, Decision]] = {}
        self.kept = 0  # decisions in all those tables
        self.made = 0  # decisions made (each one's ``serial``)
        # the header of the last frame that had one, and its table (--offload's frames share
        # a few header objects: a frame with the last one's is not hashed)
        self.last_hdr: VnetHdr | None = None
        self.last_table: dict[int, Decision] = self.plain
        # the header before the last one, and its table (TCP and UDP frames taking turns)
        self.prev_hdr: VnetHdr | None = None
        self.prev_table: dict[int, Decision] = self.plain
        # the last frame's decision, its geometry and the table it is in
        self.last_decision: Decision | None = None
        self.last_geometry = 0
        self.last_of: dict[int, Decision] = self.plain
        # ``_batched``'s queues: the frames the device has yet to place, and the buffers it
        # used (with their frames) that a poll has yet to receive; both empty between batches.
        # Their methods are bound once: compiled, ``queue.popleft()`` looks the method up by
        # name at each call (four such calls a frame were ~0.9k instructions of a batched
        # replay's ~11k)
        self.arriving: deque[Arrival] = deque()
        self.used: deque[tuple[Arrival, tuple[Posted, ...]]] = deque()
        self.arrive: Callable[[Arrival], None] = self.arriving.append
        self.next_arrival: Callable[[], Arrival] = self.arriving.popleft
        self.use: Callable[[tuple[Arrival, tuple[Posted, ...]]], None] = self.used.append
        self.next_used: Callable[[], tuple[Arrival, tuple[Posted, ...]]] = self.used.popleft

    # --- one frame -------------------------------------------------------------------------
    def decide(self, index: int, frame_len: int, hdr: VnetHdr | None,
               used: tuple[Posted, ...], poll: int | None,
               shown: tuple[Posted, ...]) -> FrameRecord:
        """receive_buf on the buffers the frame used (``shown``: the buffer a device-dropped
        small frame would have had), from the plan layer; the narrated trace when wanted. The
        record's ring (and, for a poll's last frame, its refill) is filled in by the caller."""
        state = self.state
        state.num_free += len(used)
        before = state.ewma
        decision = self.decided(frame_len, hdr, shown)
        if decision.moves_ewma:
            state.ewma = ewma_pkt_len_add(before, frame_len)  # head_skb->len before eth pull
        trace = None
        if self.traces and self.want_trace(index):
            trace = self._trace(frame_len, hdr, used, poll, shown, before)
        # the frame's record; its ring and refill are the poll's to fill in
        if self.mergeable:
            return FrameRecord(index, frame_len, poll, used, decision, before, state.ewma, None,
                               None, trace)
        return FrameRecord(index, frame_len, poll, used, decision, None, None, None, None, trace)

    def decided(self, frame_len: int, hdr: VnetHdr | None, shown: tuple[Posted, ...]
                ) -> Decision:
        """The decision of this geometry: nothing in one depends on where the buffers are, only
        on the frame's length, its header and the buffers' lengths and contiguity, so each
        geometry is decided once. The geometry is one int (``_geometry``; a frame in one
        buffer, the commonest, is made here); frames without a header are kept by it alone,
        the others by header, then geometry."""
        if len(shown) == 1:  # _geometry of one buffer
            geometry = (FIRST_BIT | frame_len) << BUFFER_BITS | shown[0].buf.len << 1
        else:
            geometry = _run_geometry(frame_len, shown)
        table = (self.plain if hdr is None
                 else self.last_table if hdr is self.last_hdr else self._table(hdr))
        last = self.last_decision
        if last is not None and geometry == self.last_geometry and table is self.last_of:
            return last  # (a flow's frames: the frame before's geometry and header)
        decision = table.get(geometry)
        if decision is None:
            if self.kept >= DECISIONS_KEPT:  # a bound on memory, not a cache policy
                self.plain.clear()
                self.by_hdr.clear()
                self.last_hdr, self.last_table, self.kept = None, self.plain, 0
                self.prev_hdr, self.prev_table = None, self.plain
                table = self.plain if hdr is None else self._table(hdr)
            if self.c.xdp is not None:
                decision = self._xdp_decision(frame_len, hdr, shown)
            else:
                decision = self._decision(frame_len, hdr, shown)
            table[geometry] = decision
            self.kept += 1
            self.made += 1
        self.last_decision, self.last_geometry, self.last_of = decision, geometry, table
        return decision

    def _table(self, hdr: VnetHdr) -> dict[int, Decision]:
        """The decisions of frames with this header (equal headers share one), now the last;
        the header before it is found without hashing (a header is a tuple of six ints)."""
        if hdr is self.prev_hdr:
            table = self.prev_table
        else:
            found = self.by_hdr.get(hdr)
            if found is None:
                found = self.by_hdr[hdr] = {}
            table = found
        self.prev_hdr, self.prev_table = self.last_hdr, self.last_table
        self.last_hdr, self.last_table = hdr, table
        return table

    def _decision(self, frame_len: int, hdr: VnetHdr | None, shown: tuple[Posted, ...]
                  ) -> Decision:
        """The plan layer's receive_*() on these buffers, then the rest of receive_buf."""
        c = self.c
        buffers = tuple(p.buf for p in shown)
        if self.mergeable:
            p = mergeable.plan_on(c, frame_len, buffers[0].len, carved_info(buffers),
                                  hdr is not None or self.frags)
        elif c.mode == "big":  # a page chain of its own (_BigRun): no posted buffer to read
            p = big.plan_big(c, frame_len, hdr is not None or self.frags)
        else:
            p = small.plan_on(c, frame_len, buffers[0])
        # a record shows no checks; without a header, the frags are not made (not kept either)
        d = deliver_with(c, p, hdr, narrate=False, with_frags=self.frags)
        skb = _without_frags(d.skb, self.frags)
        return Decision(
            outcome="drop" if skb is None else p.outcome,
            reason=None if d.reason is None else str(d.reason),
            counter=None if d.reason is None else COUNTER[d.reason],
            skb=skb,
            allocations=None if skb is None else p.allocations,
            bytes_copied=None if skb is None else p.copy,
            frag_list=p.frag_list_skbs,
            # receive_mergeable adds every skb it built, receive_buf's own drops included
            moves_ewma=self.mergeable and (skb is not None or d.reason in RECEIVE_BUF_DROPS),
            serial=self.made,
        )

    def _xdp_decision(self, frame_len: int, hdr: VnetHdr | None, shown: tuple[Posted, ...]
                      ) -> Decision:
        """With a program attached: receive_buf's XDP decisions on these buffers (the device,
        resolved once, with the frame landing in them, as the frame's trace would be). The
        EWMA, which does not size XDP buffers, is left out."""
        c = virtio_net.for_frame(self.c, self._frame(frame_len, hdr, shown))
        r = xdp_received(c, frame_len, False)  # a record shows no checks
        return Decision(outcome=r.outcome, reason=None if r.reason is None else str(r.reason),
                        counter=r.counter, skb=_without_frags(r.skb, self.frags),
                        allocations=None if r.cost is None else r.cost.allocations,
                        bytes_copied=None if r.cost is None else r.cost.bytes_copied,
                        frag_list=0, moves_ewma=False, serial=self.made)

    def _frame(self, frame_len: int, hdr: VnetHdr | None, shown: tuple[Posted, ...]
               ) -> RxFrame:
        """The frame, behind its header, on the buffers it used."""
        index = shown[0].seq % self.cfg.device.ring_size if shown else 0
        return RxFrame(frame_len, hdr, index, tuple(p.buf for p in shown))

    def _trace(self, frame_len: int, hdr: VnetHdr | None, used: tuple[Posted, ...],
               poll: int | None, shown: tuple[Posted, ...], ewma: int) -> Trace:
        setup = self.cfg.device._replace(ewma=ewma if self.mergeable else None)
        trace = trace_virtio(self.k, setup, self._frame(frame_len, hdr, shown))
        return trace._replace(steps=self._ring_steps(frame_len, used, poll) + trace.steps)

    def _ring_steps(self, frame_len: int, used: tuple[Posted, ...], poll: int | None
                    ) -> tuple[Step, ...]:
        """Where the frame's buffers came from, as steps ahead of the engine's."""
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
        log = StepLog(self.k)
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
            num_free_before=self.state.num_free - len(used),
        )
        return tuple(log.steps)

    # --- a NAPI poll ------------------------------------------------------------------------
    def refill_check(self, last: FrameRecord) -> None:
        """virtnet_receive, after its loop: refill only past min(budget, ring size) / 2 free;
        the poll's last frame's record gets the refill and the ring after it."""
        state, cfg = self.state, self.cfg
        threshold, free = self.refill_threshold, state.num_free
        fill = None
        if free > threshold:
            fill = try_fill_recv(self.k, cfg, state, "virtnet_receive", self.c)
        if last.trace is not None:
            log, ring_size = StepLog(self.k), cfg.device.ring_size
            if fill is not None:
                log.add(
                    SRC,
                    "virtnet_receive",
                    f"num_free {free} > min(budget {cfg.budget}, ring {ring_size}) / 2 = "
                    f"{threshold}: try_fill_recv posts {len(fill.buffers)} buffer(s) of "
                    f"{fill.buf_len} bytes"
                    + (f" (get_mergeable_buf_len, EWMA {fill.ewma})" if self.mergeable else ""),
                    self.c.cite(RX_PREMAPPED_BY_DEFAULT, VIRTIO_RX_PAGE_POOL),
                    num_free=free,
                    threshold=threshold,
                    posted=len(fill.buffers),
                    len=fill.buf_len,
                )
            else:
                log.add(
                    SRC,
                    "virtnet_receive",
                    f"num_free {free} <= min(budget {cfg.budget}, ring {ring_size}) / 2 = "
                    f"{threshold}: no refill after this poll",
                    num_free=free,
                    threshold=threshold,
                )
            last.trace = last.trace._replace(steps=last.trace.steps + tuple(log.steps))
        last.refill = fill
        if self.view is not None:
            last.ring = self.view(state)

    def poll(self) -> list[FrameRecord]:
        """virtnet_poll → virtnet_receive: up to ``budget`` used buffers, then the refill."""
        self.state.polls += 1
        poll = self.state.polls
        out = []
        # (self.decide called as a method: compiled, a native call; taken into a local it
        # would be a bound method object, called through Python's vectorcall per frame)
        view, state, next_used = self.view, self.state, self.next_used
        count = min(self.cfg.budget, len(self.used))
        for n in range(1, count + 1):
            (index, frame_len, hdr), taken = next_used()
            record = self.decide(index, frame_len, hdr, taken, poll, taken)
            if view is not None and n < count:  # the last one's ring is after the refill
                record.ring = view(state)
            out.append(record)
        self.refill_check(out[-1])
        return out

    def device_writes(self) -> list[FrameRecord]:
        """The device places arriving frames, in order, while the posted buffers hold them;
        the records of the small-mode frames it drops (too long for one buffer)."""
        dropped = []
        state, arriving = self.state, self.arriving
        while arriving:
            arrival = arriving[0]
            if self.mergeable:
                count = _mergeable_buffers(state.posted, self.hdr_len + arrival[1], self.room)
            elif not state.posted:
                count = None
            else:
                count = 0 if arrival[1] > self.good_packet_len else 1
            if count is None:
                break
            self.next_arrival()
            if count == 0:  # small mode, too long: QEMU drops it and uses no buffer
                record = self.decide(arrival[0], arrival[1], arrival[2], (), None,
                                     (state.posted[0],))
                if self.view is not None:
                    record.ring = self.view(state)
                dropped.append(record)
                continue
            self.use((arrival, state.take(count)))
        return dropped


class _BigRun(_Run):
    """Big mode (no MRG_RXBUF; guest GSO or an MTU above 1500): add_recvbuf_big posts one
    chain of big_packets_num_skbfrags + 1 pages per buffer, taken from rq->pages (get_a_page,
    else alloc_page: never the page_frag or a page_pool in any version read, 5.15 to 7.3.4:
    docs/kernel/virtio-net-rx.md §5.3), and a frame lands in a chain of its own: receive_big
    decides it alone (``_Run._decision`` with ``big.plan_big``, the trace's own stage),
    whatever came before. There is no EWMA and no page_frag, so a record has none (None); the
    chains' occupancy of the ring is not followed (``vnetrx.replay.big_notes``): a frame never
    waits for a chain and no refill is shown. The NAPI polls are the ring's: ``batch`` / ``polls``
    frames written, taken at most ``budget`` a poll."""

    def __init__(self, k: KernelProfile, cfg: RingConfig, state: RingState,
                 want_trace: Callable[[int], bool], rings: bool = True,
                 frags: bool = False) -> None:
        super().__init__(k, cfg, state, want_trace, rings, frags)
        self.view = None  # no ring view: nothing of the page_frag ring exists in big mode

    def _frame(self, frame_len: int, hdr: VnetHdr | None,
               shown: tuple[Posted, ...]) -> RxFrame:  # noqa: ARG002  (no posted buffer)
        """The frame in a page chain of its own (the trace posts it: add_recvbuf_big)."""
        return RxFrame(frame_len, hdr)

    def _ring_steps(self, frame_len: int, used: tuple[Posted, ...],  # noqa: ARG002
                    poll: int | None) -> tuple[Step, ...]:
        """The device's drop (no poll), or the poll that took the frame's chain."""
        if poll is None:
            return (
                Step(
                    function="virtio_net_receive_rcu",
                    source="hw/net/virtio-net.c:virtio_net_receive_rcu (QEMU, the device)",
                    summary=f"a {frame_len}-byte frame does not fit a big-mode page chain "
                    f"({self.c.big_capacity} bytes after the header): the device drops it and "
                    "puts the chain back (virtqueue_unpop); the driver never sees it",
                    values=(("len", frame_len), ("capacity", self.c.big_capacity)),
                ),
            )
        log = StepLog(self.k)
        log.add(
            SRC,
            "virtnet_receive",
            f"NAPI poll {poll}: virtqueue_get_buf returns the next page chain (big mode: the "
            "chains' places in the ring are not followed)",
            poll=poll,
        )
        return tuple(log.steps)

    def refill_check(self, last: FrameRecord) -> None:
        """try_fill_recv in big mode posts chains from rq->pages: not followed (no record)."""

    def device_writes(self) -> list[FrameRecord]:
        """Every arriving frame goes into a chain of its own, unless it is longer than a
        chain holds: QEMU's virtio_net_receive_rcu drops it (without MRG_RXBUF the whole
        frame must fit one buffer) and puts the chain back."""
        dropped = []
        capacity = self.c.big_capacity
        arriving, next_arrival, use = self.arriving, self.next_arrival, self.use
        while arriving:
            arrival = next_arrival()
            if arrival[1] > capacity:
                dropped.append(self.decide(arrival[0], arrival[1], arrival[2], (), None, ()))
                continue
            use((arrival, ()))
        return dropped


# decisions by header and geometry: the frames of a flow share a few, random lengths need one
# each; the bound keeps memory flat whatever a capture holds (65,536 held ~45 MB more on the
# 1,000,000-frame benchmark)
DECISIONS_KEPT: Final = 4096


def _without_frags(skb: Skb | None, sizes: bool = False) -> Skb | None:
    """The skb as a record keeps it: where each frag is (page, offset) is one frame's alone
    (a decision is shared by frames alike in geometry; the narrated trace lists them).
    ``sizes``: the frags stay, by size (the geometry's: GRO over a replay reads them)."""
    if skb is None or not (skb.frags or skb.frag_list):
        return skb
    if not sizes:  # one construction (an XDP_PASS skb keeps its frags: xdp_received)
        return new_skb(skb.head, skb.head_size, skb.data, skb.tail, skb.end, skb.len,
                       skb.data_len, skb.truesize, skb.nr_frags, skb.mac_header, (), (),
                       skb.ip_summed, skb.csum_start, skb.csum_offset, skb.gso_size,
                       skb.gso_type, skb.gso_type_names, skb.gso_segs, skb.hash, skb.l4_hash,
                       skb.meta_len)
    return skb._replace(frags=_sizes(skb.frags), frag_list=tuple(
        member._replace(frags=_sizes(member.frags)) for member in skb.frag_list))


def _sizes(frags: tuple[Frag, ...]) -> tuple[Frag, ...]:
    return tuple(Frag("", 0, f.size, f.truesize) for f in frags)


# _geometry's fields: a frame is at most MAX_FRAME_LEN (65535 < 2**17) bytes, a buffer's length
# below 2**20 (buffers.carve_key); the leading bit keeps keys of different buffer counts apart
# (Final: compiled, each is a constant, not a lookup in the module's dict per frame)
FRAME_BITS: Final = 17
BUFFER_BITS: Final = 21
FIRST_BIT: Final = 1 << FRAME_BITS


def _run_geometry(frame_len: int, shown: tuple[Posted, ...]) -> int:
    """``_geometry`` of buffers that follow one another in one page, all of one length
    (``run_length``), as a negative int that fits a machine word (no arbitrary-precision int to
    make, hash and compare: the general key of six buffers is 143 bits): -1 less the frame's
    length, the buffers' length and their count (fewer than 2**16: a frame of at most 65535
    bytes); ``_geometry`` for any other buffers (or none: big mode's)."""
    length = run_length(shown)
    if not length:
        return _geometry(frame_len, shown)
    return -1 - ((frame_len << BUFFER_BITS | length) << RUN_COUNT_BITS | len(shown))


def _geometry(frame_len: int, shown: tuple[Posted, ...]) -> int:
    """The frame's length, each buffer's length and whether it follows the one before in the
    same page (skb_coalesce_rx_frag merges those): all a decision reads but the header, as one
    int (hashed and compared as one number: a tuple is hashed anew at every lookup): a 1 bit,
    the frame's length in FRAME_BITS, then per buffer its length and that bit in BUFFER_BITS."""
    key = FIRST_BIT | frame_len
    prev = None
    for p in shown:
        b = p.buf
        follows = (prev is not None and prev.frag_index == b.frag_index
                   and prev.offset + prev.len == b.offset)
        key = key << BUFFER_BITS | b.len << 1 | follows
        prev = b
    return key


def feed(
    k: KernelProfile,
    cfg: RingConfig,
    state: RingState,
    frames: Iterable[int | tuple[int, VnetHdr | None]],
    first_index: int = 0,
    want_trace: Callable[[int], bool] = no_frame,
    rings: bool = True,
    frags: bool = False,
) -> Iterator[FrameRecord]:
    """Frames (lengths, or (length, header) pairs) through the ring, one record per frame in
    frame order, each as soon as the NAPI poll that received it (and its refill check) is done.
    ``state`` changes as they go. ``want_trace(index)``: make that frame's narrated trace.

    Frames arrive ``cfg.batch`` at a time (or ``cfg.polls``' sizes, in order): the device writes
    a batch into the posted buffers (in order, each frame whole), then NAPI polls (at most
    ``budget`` frames each, the refill check after each) until the batch is received."""
    if ring_config(k, cfg).mode == "big":
        return _batched(_BigRun(k, cfg, state, want_trace, rings, frags), frames, first_index)
    run = _Run(k, cfg, state, want_trace, rings, frags)
    if cfg.batch == 1 and not cfg.polls:
        return _one_by_one(run, iter(frames), first_index)
    return _batched(run, frames, first_index)


def _one_by_one(run: _Run, source: Iterator[int | tuple[int, VnetHdr | None]],
                first_index: int) -> Iterator[FrameRecord]:
    """``feed`` with batches of one frame (the default): the device writes a frame, a NAPI poll
    receives it and checks for a refill, then the next frame comes; the same steps as
    ``_batched``'s, without its queues (a replay's per-frame cost)."""
    state, cfg = run.state, run.cfg
    mergeable, hdr_len, room = run.mergeable, run.hdr_len, run.room
    good_packet_len, view = run.good_packet_len, run.view
    index = first_index
    for item in source:
        if isinstance(item, int):
            length, hdr = item, None
        else:
            length, hdr = item
        if not 0 <= length <= MAX_FRAME_LEN:  # 0: a header-only write (a short packet)
            raise InputError(f"frame {index - first_index}: length {length} out of range "
                             f"(valid: 0..{MAX_FRAME_LEN})")
        posted = state.posted
        if mergeable:
            count = _mergeable_buffers(posted, hdr_len + length, room)
        elif not posted:
            count = None
        else:
            count = 0 if length > good_packet_len else 1
        if count is None:
            raise _stall(cfg, state, index, length)
        if count == 0:  # small mode, too long: QEMU drops it and uses no buffer
            record = run.decide(index, length, hdr, (), None, (posted[0],))
            if view is not None:
                record.ring = view(state)
        else:
            taken = state.take(count)
            state.polls += 1  # virtnet_poll → virtnet_receive: this frame, then the refill
            record = run.decide(index, length, hdr, taken, state.polls, taken)
            run.refill_check(record)
        yield record
        index += 1


def _batched(run: _Run, frames: Iterable[int | tuple[int, VnetHdr | None]],
             first_index: int) -> Iterator[FrameRecord]:
    """``feed`` with batches of more than one frame, --polls' sizes, or big mode's chains."""
    state, cfg = run.state, run.cfg
    pending: dict[int, FrameRecord] = {}
    next_out = first_index
    source = iter(frames)
    index = first_index
    sizes = iter(cfg.polls) if cfg.polls else None
    # (the run's queues: both are empty again when a batch is done)
    arriving, used, arrive = run.arriving, run.used, run.arrive
    while True:
        size = cfg.batch if sizes is None else next(sizes, None)
        if size is None:  # every batch --polls gives is done: the frames must be too
            if next(source, None) is not None:
                raise InputError(_polls_message(cfg, index - first_index + 1, more=True))
            break
        for item in source:
            length, hdr = (item, None) if isinstance(item, int) else item
            if not 0 <= length <= MAX_FRAME_LEN:  # 0: a header-only write (a short packet)
                raise InputError(
                    f"frame {index - first_index}: length {length} out of range "
                    f"(valid: 0..{MAX_FRAME_LEN})"
                )
            arrive((index, length, hdr))
            index += 1
            if len(arriving) == size:
                break
        got = len(arriving)
        if sizes is not None and got < size:
            raise InputError(_polls_message(cfg, index - first_index, more=False))
        if not got:
            break
        while arriving or used:
            for record in run.device_writes():
                pending[record.index] = record
            if not used:
                if not arriving:
                    break
                raise _stall(cfg, state, arriving[0][0], arriving[0][1])
            for record in run.poll():
                if record.index != next_out:  # a frame the device dropped is still ahead
                    pending[record.index] = record
                    continue
                yield record
                next_out += 1
                while next_out in pending:
                    yield pending.pop(next_out)
                    next_out += 1
            while next_out in pending:
                yield pending.pop(next_out)
                next_out += 1
        while next_out in pending:  # device drops after the last poll
            yield pending.pop(next_out)
            next_out += 1
        if got < size:  # the source ran dry inside this batch
            break


def _polls_message(cfg: RingConfig, count: int, more: bool) -> str:
    batches = ", ".join(map(str, cfg.polls))
    if more:
        return (f"the batches ({batches}) add up to {sum(cfg.polls)} frame(s), but there are "
                f"at least {count}")
    return f"the batches ({batches}) add up to {sum(cfg.polls)} frame(s), but there are {count}"
