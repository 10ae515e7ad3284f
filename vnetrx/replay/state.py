"""The values the ring replay passes around: the negotiated ring (RingConfig), its state between
NAPI polls (RingState: mutable, with the page cursor the buffers are carved from and the Posted
buffers),
one try_fill_recv run (Fill), and what a replay reports (RingView, FrameRecord, Replay).
vnetrx/replay/__init__.py maps which module mirrors which part of drivers/net/virtio_net.c."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from vnetrx.kernel.constants import NAPI_POLL_WEIGHT
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Skb, Trace
from vnetrx.paths.virtio_net.buffers import PageCursor, PostedBuffer
from vnetrx.paths.virtio_net.setup import VirtioRxSetup, vnet_hdr_len
from vnetrx.records import NamedTuple
from vnetrx.values import Value


@dataclass(frozen=True)
class RingConfig:
    """The device and how frames arrive."""

    # What the device negotiated, its ring size and an XDP program attached before
    # virtnet_open (every buffer is posted with the XDP geometry). Guest GSO sets
    # vi->big_packets (virtnet_probe), which with MRG_RXBUF sizes rq->min_buf_len for
    # IP_MAX_MTU (mergeable_min_buf_len @6.1/@6.12). Its EWMA is the ring's own.
    device: VirtioRxSetup
    batch: int = 1  # frames the device writes before the driver's NAPI poll runs
    # Explicit batch sizes, in order (e.g. what the napi:napi_poll tracepoint's "work" showed);
    # they must add up to the frame count. Empty: ``batch`` every time.
    polls: tuple[int, ...] = ()
    budget: int = NAPI_POLL_WEIGHT.default  # virtio_net's napi_weight module parameter

    @property
    def hdr_len(self) -> int:
        """vi->hdr_len."""
        return vnet_hdr_len(self.device)

    @property
    def refill_threshold(self) -> int:
        """virtnet_receive: refill when num_free > min(budget, ring size) / 2."""
        return min(self.budget, self.device.ring_size) // 2


class Posted(Value):
    """One buffer in the avail ring. Immutable, and a plain class for PostedBuffer's reason (a
    replay makes one per buffer it posts)."""

    __slots__ = ("buf", "fill", "seq")

    def __init__(self, seq: int, buf: PostedBuffer, fill: int = 0) -> None:
        self.seq: Final = seq  # posting order since virtnet_open (0 = the initial fill's first)
        self.buf: Final = buf  # backing page index, offset in it, length (the ctx truesize)
        self.fill: Final = fill  # the try_fill_recv run that posted it (0 = virtnet_open's)

    def _values(self) -> tuple[object, ...]:
        return (self.seq, self.buf, self.fill)

    def __repr__(self) -> str:
        return f"Posted(seq={self.seq}, buf={self.buf!r}, fill={self.fill})"


# the bits of a run's buffer count in the keys that hold one (napi._run_geometry,
# replay_json._Rows.run): a frame of at most 65535 bytes fills fewer than 2**16 buffers
RUN_COUNT_BITS: Final = 16


def run_length(buffers: tuple[Posted, ...]) -> int:
    """The length of each of ``buffers`` when they follow one another on one page, all of one
    length (a long frame's, mostly: skb_coalesce_rx_frag merges such neighbours), else 0 (and
    0 for none). One buffer is such a run."""
    if not buffers:
        return 0
    first = buffers[0].buf
    page, length = first.frag_index, first.len
    end = first.offset + length
    for p in buffers[1:]:
        b = p.buf
        if b.frag_index != page or b.offset != end or b.len != length:
            return 0
        end += length
    return length


class Fill(NamedTuple):
    """One try_fill_recv() run."""

    when: str  # "virtnet_open" or "virtnet_receive"
    after_poll: int  # 0 for the initial fill
    ewma: int  # the EWMA the buffers were sized with
    buf_len: int  # get_mergeable_buf_len() / the small-mode bufsize
    buffers: tuple[Posted, ...]


class RingState:
    """The ring between NAPI polls: the avail ring (a deque, oldest first: the device fills in
    order), the page cursor buffers are carved from, the EWMA and the counters. Mutable, and
    every operation on it is O(1) per buffer: a replay of 10^7 frames never scans the ring."""

    __slots__ = ("_popleft", "alloc", "counting", "ewma", "fills", "lens", "next_seq",
                 "num_free", "polls", "posted")

    def __init__(self, num_free: int = 0) -> None:
        self.posted: deque[Posted] = deque()
        # the deque's popleft, bound once: compiled, ``posted.popleft()`` looks the method up by
        # name at every call (a replay takes a buffer or more per frame)
        self._popleft: Callable[[], Posted] = self.posted.popleft
        # posted buffers by length (a dict, not a Counter: compiled, a dict's item access is
        # direct, a Counter's goes through its Python methods), kept as buffers come and go
        # while ``counting``; otherwise ``posted_lens`` counts them when asked (a replay that
        # shows no per-frame ring asks once, at its end)
        self.lens: dict[int, int] = {}
        self.counting = True
        self.ewma = 0  # rq->mrg_avg_pkt_len (mergeable); stays 0 in small mode
        self.alloc = PageCursor()  # rq->alloc_frag / the page_pool
        self.next_seq = 0
        self.num_free = num_free  # descriptors the driver took back and has not refilled yet
        self.polls = 0
        self.fills = 0  # try_fill_recv runs, the initial one included

    def post(self, buffers: tuple[Posted, ...]) -> None:
        self.posted.extend(buffers)
        if self.counting:
            lens = self.lens
            for p in buffers:
                lens[p.buf.len] = lens.get(p.buf.len, 0) + 1

    def take(self, count: int) -> tuple[Posted, ...]:
        """The device uses the ``count`` oldest posted buffers."""
        popleft = self._popleft
        taken = (popleft(),) if count == 1 else tuple([popleft() for _n in range(count)])
        if self.counting:
            lens = self.lens
            for p in taken:
                left = lens[p.buf.len] - 1
                if left:
                    lens[p.buf.len] = left
                else:
                    del lens[p.buf.len]
        return taken

    def stop_counting(self) -> None:
        """From now on ``posted_lens`` counts the posted buffers only when asked."""
        self.counting = False
        self.lens = {}

    def posted_lens(self) -> dict[int, int]:
        """The posted buffers by length."""
        if self.counting:
            return self.lens
        lens: dict[int, int] = {}
        for p in self.posted:
            lens[p.buf.len] = lens.get(p.buf.len, 0) + 1
        return lens


class RingView(NamedTuple):
    """The ring as a user would inspect it, after a frame (and its poll's refill)."""

    ewma: int | None
    mergeable_rx_buffer_size: int | None  # /sys/class/net/<dev>/queues/rx-0/...; mergeable only
    allocator: str  # "page_frag" | "page_pool"
    page: str | None  # the current backing page ("frag12"); None: none held (page_pool,
    # every buffer a whole page of its own)
    offset: int
    page_size: int
    posted: int
    num_free: int
    posted_lens: tuple[tuple[int, int], ...]  # (buffer length, how many are posted), by length
    next_buffer: Posted | None
    polls: int
    fills: int


class Decision(Value):
    """What receive_buf made of a frame: nothing that depends on where its buffers are (the
    skb without its frags' pages and offsets), so frames alike in length, header and buffer
    lengths share one (vnetrx/replay/napi.py decides each such geometry once). Immutable; a
    plain class (vnetrx/values.py): a replay of random lengths makes one every few frames."""

    __slots__ = ("allocations", "bytes_copied", "counter", "frag_list", "moves_ewma",
                 "outcome", "reason", "serial", "skb")
    _names = ("outcome", "reason", "counter", "skb", "allocations", "bytes_copied",
              "frag_list", "moves_ewma")

    def __init__(self, outcome: str, reason: str | None, counter: str | None, skb: Skb | None,
                 allocations: int | None, bytes_copied: int | None, frag_list: int,
                 moves_ewma: bool, serial: int = -1) -> None:
        self.outcome: Final = outcome  # "build_skb" | "copy" | "drop"
        self.reason: Final = reason  # why it was dropped
        self.counter: Final = counter  # the device counter the drop moved
        # as napi_gro_receive sees it, without its frags (a trace lists them; by size only for
        # GRO over the replay: feed(frags=True))
        self.skb: Final = skb
        # Cost.allocations, bytes_copied (None on a drop)
        self.allocations: Final = allocations
        self.bytes_copied: Final = bytes_copied
        self.frag_list: Final = frag_list  # skbs chained on the head's frag_list
        self.moves_ewma: Final = moves_ewma  # ewma_pkt_len_add ran (mergeable: an skb was built)
        # which decision of its replay this is (0: the first made; -1: not a replay's): a
        # number to find what a writer made of it by, not part of its value (equal decisions
        # may have two)
        self.serial: Final = serial

    def _values(self) -> tuple[object, ...]:
        return (self.outcome, self.reason, self.counter, self.skb, self.allocations,
                self.bytes_copied, self.frag_list, self.moves_ewma)


class FrameRecord:
    """One frame of a replay: the buffers it used, its ``decision`` (shared with the frames
    alike in geometry), ``trace`` (the narrated trace, with the ring steps) only for the frames
    asked for; ``ring`` unless the replay was asked not to keep it (the compact rows and the
    totals do not show it). Mutable (its poll fills in ``refill`` and ``ring``), and a plain
    class, equal by its fields: compiled, mypyc makes it a native class, made in tens of ns (a
    dataclass's generated ``__init__`` runs as Python, ~0.5 us a frame)."""

    __slots__ = ("buffers", "decision", "ewma_after", "ewma_before", "frame_len", "index",
                 "poll", "refill", "ring", "trace")

    def __init__(self, index: int, frame_len: int, poll: int | None,
                 buffers: tuple[Posted, ...], decision: Decision, ewma_before: int | None,
                 ewma_after: int | None, refill: Fill | None, ring: RingView | None,
                 trace: Trace | None = None) -> None:
        self.index = index
        self.frame_len = frame_len
        self.poll = poll  # the NAPI poll that received it (None: the device dropped it)
        self.buffers = buffers  # the posted buffers the device filled (num_buffers of them)
        self.decision = decision
        self.ewma_before = ewma_before
        self.ewma_after = ewma_after
        self.refill = refill  # the refill that ended this frame's poll, if any
        self.ring = ring  # after this frame and that refill
        self.trace = trace

    def _values(self) -> tuple[object, ...]:
        return (self.index, self.frame_len, self.poll, self.buffers, self.decision,
                self.ewma_before, self.ewma_after, self.refill, self.ring, self.trace)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, FrameRecord)
        return self._values() == other._values()

    def __repr__(self) -> str:
        names = ("index", "frame_len", "poll", "buffers", "decision", "ewma_before",
                 "ewma_after", "refill", "ring", "trace")
        fields = ", ".join(f"{n}={v!r}" for n, v in zip(names, self._values(), strict=True))
        return f"FrameRecord({fields})"


@dataclass(frozen=True)
class Replay:
    kernel: KernelProfile
    config: RingConfig
    min_buf_len: int | None
    initial_fill: Fill | None  # None in big mode (its page chains are not followed)
    frames: tuple[FrameRecord, ...]
    final: RingView | None  # None in big mode
    notes: tuple[str, ...]


class Ring(Protocol):
    """What a renderer needs of a replay: a Replay, or a Stream while it runs."""

    @property
    def kernel(self) -> KernelProfile: ...
    @property
    def config(self) -> RingConfig: ...
    @property
    def initial_fill(self) -> Fill | None: ...
    @property
    def min_buf_len(self) -> int | None: ...
