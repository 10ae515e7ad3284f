"""The device side of the ring replay and the driver's NAPI loop: the device places frames in
the posted buffers, NAPI polls take them back (one trace per frame) and decide on a refill.

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

When the driver polls is timing, not code: ``RingConfig.batch`` (or ``polls``) says how many
frames the device writes before each poll. It only matters once frames reach buffers posted by
a refill: real 6.1.192 and 6.12.117 guests matched frame for frame over 64 jumbo frames (305
buffers) with the grouping they actually had (tests/test_replay.py, tests/data/replay/).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from vnetrx.engine import trace_virtio
from vnetrx.errors import VnetrxError
from vnetrx.kernel.changes import RX_PREMAPPED_BY_DEFAULT, VIRTIO_RX_PAGE_POOL
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Step
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net.buffers import ewma_pkt_len_add
from vnetrx.paths.virtio_net.plan import Drop
from vnetrx.paths.virtio_net_hdr import VnetHdr
from vnetrx.replay.refill import ring_config, try_fill_recv, view
from vnetrx.replay.state import Fill, FrameRecord, Posted, RingConfig, RingState

SRC = "drivers/net/virtio_net.c"


def buffers_needed(
    k: KernelProfile, cfg: RingConfig, posted: Sequence[Posted], frame_len: int
) -> int | None:
    """How many posted buffers the device fills with this frame: None if it must wait for more;
    0 if it drops the frame without using any (small mode, longer than one buffer holds)."""
    if not cfg.mergeable:
        if frame_len > ring_config(k, cfg).good_packet_len:
            return 0
        return 1 if posted else None
    need, covered = cfg.hdr_len + frame_len, 0
    for count, p in enumerate(posted, 1):
        covered += p.buf.len
        if covered >= need:
            return count
    return None


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


# drops after receive_mergeable returned the skb (receive_buf's own checks)
RECEIVE_BUF_DROPS = (Drop.BAD_GSO.value, Drop.BAD_CSUM.value)


@dataclass
class _Run:
    """Mutable bookkeeping of one replay (kept inside ``replay``)."""

    k: KernelProfile
    cfg: RingConfig
    state: RingState
    records: dict[int, FrameRecord] = field(default_factory=dict)
    hdrs: Sequence[VnetHdr | None] | None = None  # per frame, from ``first_index`` on
    first_index: int = 0

    def trace(
        self,
        index: int,
        frame_len: int,
        used: tuple[Posted, ...],
        poll: int | None,
        shown: tuple[Posted, ...],
    ) -> None:
        setup = replace(
            self.cfg.setup(),
            frame_len=frame_len,
            ewma=self.state.ewma if self.cfg.mergeable else None,
            buffer_index=shown[0].seq % self.cfg.ring_size if shown else 0,
            buffers=tuple(p.buf for p in shown),
            hdr=None if self.hdrs is None else self.hdrs[index - self.first_index],
        )
        trace = trace_virtio(self.k, setup)
        trace = replace(trace, steps=self._ring_steps(frame_len, used, poll) + trace.steps)
        before = self.state.ewma
        after = before
        # receive_mergeable updates the EWMA once it has built the skb, before receive_buf's
        # virtio_net_hdr_to_skb (whose refusal drops it later)
        if self.cfg.mergeable and (trace.skb is not None or trace.reason in RECEIVE_BUF_DROPS):
            after = ewma_pkt_len_add(before, frame_len)  # head_skb->len before eth pull
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
                ring_config(self.k, self.cfg).cite(RX_PREMAPPED_BY_DEFAULT, VIRTIO_RX_PAGE_POOL),
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
    hdrs: Sequence[VnetHdr | None] | None = None,
) -> tuple[RingState, tuple[FrameRecord, ...]]:
    """The pure step: a ring state and frames in, the new state and one record per frame out.

    Frames arrive ``cfg.batch`` at a time: the device writes a batch into the posted buffers
    (in order, each frame whole), then NAPI polls (at most ``budget`` frames each, the refill
    check after each) until the batch is received. ``first_index`` numbers the records."""
    run = _Run(k, cfg, state, hdrs=hdrs, first_index=first_index)
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


def _device_writes(
    run: _Run, arriving: deque[tuple[int, int]], used: deque[tuple[int, int, tuple[Posted, ...]]]
) -> None:
    """The device places arriving frames, in order, while the posted buffers hold them."""
    while arriving:
        index, frame_len = arriving[0]
        count = buffers_needed(run.k, run.cfg, run.state.posted, frame_len)
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
