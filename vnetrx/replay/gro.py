"""GRO over a replayed ring (``replay --gro``): what GRO reads of each frame, kept as the
capture is read (``GroFrames``), and the skbs of each NAPI poll through GRO (``replay_gro``).
Compiled with the rest of vnetrx.replay (vnetrx/compiled.py): both run once per frame. The
GRO decisions are vnetrx.paths.gro's."""

from __future__ import annotations

import mmap
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from vnetrx.errors import InputError
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import GroFlush, Outcome
from vnetrx.paths import virtio_net
from vnetrx.paths.gro import (
    Delivered,
    GroInput,
    GroLimits,
    GroState,
    GroStep,
    Segment,
    TcpHeaders,
    UdpGro,
    read_captured,
    read_frame_headers,
)
from vnetrx.replay.capture import SeeFrame
from vnetrx.replay.state import FrameRecord, RingConfig


class GroFrames(SeeFrame):
    """What GRO reads of each frame (``read``), its writev boundaries (``splits``, with
    ``napi_frags``: --path tap --napi frags) and its capture time (``times``, when kept), by
    frame index, from when the frame is read until GRO takes it. Called as a
    replay.frames.Keep, with the frame's bytes or a view of them (read at once, not kept: of
    a capture's frame only its headers are read, see ``gro.read_frame``), frame by frame in
    order (their indices one after another)."""

    # read frames kept before the ones still unread are dropped (a replay reads its frames
    # a batch ahead of GRO: the list stays short)
    DROP_AFTER: Final = 1024

    def __init__(self, napi_frags: bool = False, timed: bool = False) -> None:
        # frame ``first + i``'s headers at [i] (a list, not a dict by index: a frame's entry
        # is an append and an index, about 0.6k instructions less a frame compiled)
        self.headers: list[GroInput | TcpHeaders] = []
        self.first = 0
        self.splits: dict[int, tuple[int, ...]] = {}
        self.times: dict[int, int | None] = {}
        self.napi_frags = napi_frags
        self.timed = timed

    def __call__(self, index: int, length: int, data: bytes | memoryview, whole: bool,
                 split: tuple[int, ...], time: int | None) -> None:
        if split:
            if not self.napi_frags:
                raise InputError(f"frame {index}: \"split\" (writev boundaries) applies to "
                                 "--path tap --gro --napi frags")
            self.splits[index] = split
        self._keep(index, read_frame_headers(data, length, whole))
        if self.timed:
            self.times[index] = time

    def see(self, index: int, length: int, buf: bytes | bytearray | memoryview | mmap.mmap,
            start: int, end: int) -> None:
        """A capture's frame as its reader reads it (``SeeFrame.see``: ``buf[start:end]``):
        its headers kept (the call a replay reading a capture's lengths in lists makes, for a
        replay that keeps no time stamps)."""
        self._keep(index, read_captured(buf, start, end, length))

    def see_head(self, index: int, length: int, head: bytes,
                 buf: bytes | bytearray | memoryview | mmap.mmap, start: int, end: int) -> None:
        """``see`` with the frame's first bytes read already (``SeeFrame.see_head``)."""
        self._keep(index, read_captured(buf, start, end, length, head))

    def _keep(self, index: int, headers: GroInput | TcpHeaders) -> None:
        if not self.headers:  # (the first frame kept, or every one kept before read)
            self.first = index
        elif index != self.first + len(self.headers):
            raise ValueError(f"frame {index} kept out of order (expected "
                             f"{self.first + len(self.headers)})")
        self.headers.append(headers)

    def read(self, index: int) -> GroInput | TcpHeaders:
        """What GRO reads of frame ``index`` (``gro.read_frame_headers``: a TcpHeaders stands
        for GroInput(tcp)); the frames before it are not asked for again."""
        at = index - self.first
        headers = self.headers
        if not 0 <= at < len(headers):
            raise KeyError(index)
        got = headers[at]
        if at >= self.DROP_AFTER:
            del headers[:at]
            self.first = index
        return got

    def read_input(self, index: int) -> GroInput:
        """``read`` as a GroInput."""
        got = self.read(index)
        return got if isinstance(got, GroInput) else GroInput(got)


def replay_gro(k: KernelProfile, cfg: RingConfig, records: Iterable[FrameRecord],
               read: GroFrames | Callable[[int], GroInput | TcpHeaders], gro: bool = True,
               limits: GroLimits | None = None, steps: list[GroStep] | None = None,
               udp_gro: UdpGro | None = None) -> Iterator[tuple[int, Delivered]]:
    """GRO over a replay (``replay --gro``): the skbs of each NAPI poll (the records' ``poll``)
    go through GRO together, and a poll ends with napi_complete_done (or, at a whole budget,
    __napi_poll's flush): every skb the stack receives, with its poll, in delivery order.
    ``read(index)``: what GRO reads of the frame's headers (``gro.read_frame``; a TcpHeaders:
    GroInput of it, nothing else set, see ``gro.read_frame_headers``), or the GroFrames that
    kept them (its ``read``, called natively when compiled); ``gro`` False:
    the device's GRO is off; ``limits``: its gro_max_size / gro_ipv4_max_size; ``steps``: gets
    what GRO did with each input (its gro_result), poll by poll."""
    c = virtio_net.config(k, virtio_net.check_virtio_setup(k, cfg.device))
    # a poll's skbs go to GRO as they are received; one state serves every poll, as each
    # poll ends with everything flushed (what a state of its own per poll would hold)
    state = GroState(k, limits, gro, steps is not None, udp_gro)
    budget = cfg.budget
    build_skb: str = Outcome.BUILD_SKB  # (a str: compared as strings, compiled)
    napi_frag = c.napi_head.frag
    current = 0
    in_poll = 0
    # (a Callable is called through a vectorcall per frame, compiled; a GroFrames' method not)
    kept = read if isinstance(read, GroFrames) else None
    call = read.read if isinstance(read, GroFrames) else read
    # batches of one frame (the default): each poll takes one frame, and its record comes
    # once the poll is done, so the poll ends with it, not when the next frame's record comes
    # (a live feed's skb delivered before the next frame arrives)
    one_a_poll = cfg.batch == 1 and not cfg.polls
    whole_budget = budget <= 1
    for record in records:
        decision = record.decision
        skb = decision.skb
        gro_input = kept.read(record.index) if kept is not None else call(record.index)
        poll = record.poll
        if poll is None or skb is None:  # dropped by the device or the driver
            continue
        if poll != current and in_poll:
            yield from _end_poll(state, current, in_poll >= budget, steps)
            in_poll = 0
        current = poll
        # build_skb wraps the rx buffer (a page fragment); a copy's head is napi_alloc_skb's
        head_frag = decision.outcome == build_skb or napi_frag
        if isinstance(gro_input, TcpHeaders):
            state.receive(Segment(record.index, skb, head_frag, gro_input))
        else:
            state.receive(Segment(record.index, skb, head_frag, gro_input.tcp, "", 0,
                                  gro_input.udp_validated, gro_input.pull, gro_input.needs,
                                  gro_input.hbh_at))
        if one_a_poll:
            yield from _end_poll(state, poll, whole_budget, steps)
            continue
        in_poll += 1
    if in_poll:
        yield from _end_poll(state, current, in_poll >= budget, steps)


# (looked up once: compiled, an enum class's attribute is a generic lookup)
_BUDGET: Final = GroFlush.BUDGET
_POLL_END: Final = GroFlush.POLL_END


def _end_poll(state: GroState, poll: int, whole_budget: bool,
              steps: list[GroStep] | None) -> list[tuple[int, Delivered]]:
    """The end of a poll: after a whole budget __napi_poll flushes everything, then
    napi_complete_done (what is left); every skb delivered in the poll, with its number."""
    if whole_budget:
        state.flush_all(_BUDGET)
    state.flush_all(_POLL_END)
    if steps is not None:
        steps.extend(state.steps)
        state.steps.clear()
    return [(poll, d) for d in state.take()]


class GroTotals:
    """What ``replay --gro``'s totals line counts of the skbs GRO delivers (compiled: with
    --summary every delivered skb passes here and nothing else is printed of it)."""

    def __init__(self) -> None:
        self.frames = 0  # the frames they carry
        self.skbs = 0
        self.merged = 0  # skbs of more than one frame
        self.most = 0  # the most frames one carries
        self.truesize = 0
        self.counted_one = False  # an skb that merged others but counts 1 (segs 1)

    def add(self, d: Delivered) -> None:
        n = len(d.frames)
        self.frames += n
        self.counted_one = self.counted_one or (n > 1 and d.segs == 1)
        self.skbs += 1
        if n > 1:
            self.merged += 1
        if n > self.most:
            self.most = n
        self.truesize += d.skb.truesize

    def add_all(self, delivered: Iterable[tuple[int, Delivered]]) -> None:
        for _, d in delivered:
            self.add(d)
