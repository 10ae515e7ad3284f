"""Totals over a replay's frames (``vnetrx replay --summary``, and the last line of its text)
or over a sweep's rows weighted by a length distribution (``vnetrx sweep --weights``): what the
skbs cost in all, in constant memory whatever the number of frames. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from vnetrx.replay.state import Decision, FrameRecord

SUMMARY_SCHEMA: Final = "vnetrx.replay-summary/1"
# decisions Totals counts frames by before it folds them into its counts (each holds its skb;
# a power of two: a decision's slot is its serial's low bits)
SEEN_KEPT: Final = 4096
SEEN_MASK: Final = SEEN_KEPT - 1


class Totals:
    """Sums and counts, updated one frame at a time."""

    def __init__(self, chain_pages: int | None = None) -> None:
        # big mode: the pages of each frame's chain (big_packets_num_skbfrags + 1, counted as
        # its buffers, as vnetrx sweep counts them); which pages (rq->pages) is not followed
        self.chain_pages = chain_pages
        self.frames = 0
        self.frame_bytes = 0
        self.delivered = 0
        self.delivered_bytes = 0  # frame bytes of the frames that became skbs
        # counts in dicts, not Counters: compiled, a dict's item access is direct, a Counter's
        # goes through its Python methods
        self.outcomes: dict[str, int] = {}  # build_skb / copy
        self.drops: dict[str, int] = {}  # by reason ("device" for the device's own)
        self.counters: dict[str, int] = {}
        self.bytes_copied = 0
        self.allocations = 0
        self.buffers = 0
        self.pages = 0  # backing pages touched: buffers are used in posting order, and their
        self._last_page = -1  # pages only grow, so a new page is one above the last
        self.truesizes: dict[int, int] = {}  # skb->truesize → frames (few distinct values)
        self.frag_list = 0  # skbs chained on a frag_list
        self.polls = 0  # the last NAPI poll a frame was received in (add() only)
        # received frames counted by their decision (shared by the frames alike in geometry:
        # one count per frame instead of four dict updates), each at its serial's slot (a list
        # index: a dict by id makes and hashes an int per frame; a decision hashes by value,
        # its skb included). A decision met in a slot another holds folds that one's count
        # into the dicts above, as ``_settle`` folds them all before any of them is read.
        self._seen: list[_Seen | None] = [None] * SEEN_KEPT
        self._last: _Seen | None = None  # the last frame's (a flow's frames share one)

    def add(self, f: FrameRecord) -> None:
        """One replayed frame."""
        buffers = f.buffers
        for p in buffers:
            if p.buf.frag_index > self._last_page:
                self.pages += 1
                self._last_page = p.buf.frag_index
        d = f.decision
        poll = f.poll
        if poll is None:
            # a small- or big-mode frame longer than a buffer never reaches the driver (QEMU
            # drops it): it has no poll
            self.add_frames(f.frame_len, d.outcome, "device_too_long", None,
                            None if d.skb is None else d.skb.truesize, d.allocations,
                            d.bytes_copied, len(buffers), d.frag_list)
            return
        if poll > self.polls:
            self.polls = poll
        frame_len = f.frame_len
        self.frames += 1
        self.frame_bytes += frame_len
        self.buffers += len(buffers) if self.chain_pages is None else self.chain_pages
        if d.skb is not None:
            self.delivered_bytes += frame_len
        seen = self._last
        if seen is None or seen.decision is not d:
            slot = d.serial & SEEN_MASK
            seen = self._seen[slot]
            if seen is None or seen.decision is not d:
                if seen is not None:  # another decision's: counted, and the slot is d's
                    self._fold(seen)
                seen = self._seen[slot] = _Seen(d)
                self._last = seen
                return
            self._last = seen
        seen.count += 1

    def _settle(self) -> None:
        """The received frames counted by decision, into the counts by outcome, reason,
        counter and truesize (``add_frames`` per decision, its bytes already counted)."""
        seen, self._seen, self._last = self._seen, [None] * SEEN_KEPT, None
        for s in seen:
            if s is not None:
                self._fold(s)

    def _fold(self, s: _Seen) -> None:
        """One decision's received frames into the counts (``_settle``)."""
        d, count = s.decision, s.count
        truesize = None if d.skb is None else d.skb.truesize
        self._fates(d.outcome, d.reason or "drop", d.counter, truesize, d.allocations,
                    d.bytes_copied, d.frag_list, count)

    def add_all(self, records: Iterable[FrameRecord]) -> None:
        """Every frame of a replay, as it runs (a loop compiled with the rest of replay/)."""
        for f in records:
            self.add(f)

    def add_frames(self, frame_len: int, outcome: str, reason: str | None, counter: str | None,
                   truesize: int | None, allocations: int | None, bytes_copied: int | None,
                   buffers: int, frag_list: int, count: int = 1) -> None:
        """``count`` frames of one length and one fate (a sweep row, weighted)."""
        self.frames += count
        self.frame_bytes += frame_len * count
        self.buffers += buffers * count
        if truesize is not None:
            self.delivered_bytes += frame_len * count
        self._fates(outcome, reason, counter, truesize, allocations, bytes_copied, frag_list,
                    count)

    def _fates(self, outcome: str, reason: str | None, counter: str | None,
               truesize: int | None, allocations: int | None, bytes_copied: int | None,
               frag_list: int, count: int) -> None:
        """``count`` frames of one fate: the drops by reason and counter, or the skbs."""
        if truesize is None:
            why = reason or "drop"
            self.drops[why] = self.drops.get(why, 0) + count
            if counter:
                self.counters[counter] = self.counters.get(counter, 0) + count
            return
        self.delivered += count
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + count
        self.bytes_copied += (bytes_copied or 0) * count
        self.allocations += (allocations or 0) * count
        self.truesizes[truesize] = self.truesizes.get(truesize, 0) + count
        self.frag_list += frag_list * count

    def truesize(self) -> dict[str, Any]:
        """Sum and distribution of skb->truesize (exact: the values are few)."""
        self._settle()
        if not self.truesizes:
            return {"sum": 0, "min": None, "median": None, "p99": None, "max": None}
        values = sorted(self.truesizes.items())

        def quantile(num: int, den: int) -> int:
            # the smallest value with at least num/den of the skbs at or below it
            rank, seen = max(1, -(-num * self.delivered // den)), 0
            for value, count in values:
                seen += count
                if seen >= rank:
                    return value
            return values[-1][0]

        return {
            "sum": sum(v * n for v, n in values),
            "min": values[0][0],
            "median": quantile(1, 2),
            "p99": quantile(99, 100),
            "max": values[-1][0],
        }

    def to_dict(self) -> dict[str, Any]:
        self._settle()
        truesize = self.truesize()
        built = self.outcomes.get("build_skb", 0)
        return {
            "schema": SUMMARY_SCHEMA,
            "frames": self.frames,
            "frame_bytes": self.frame_bytes,
            "skbs": self.delivered,
            "drops": dict(sorted(self.drops.items())),
            "counters": dict(sorted(self.counters.items())),
            "build_skb": built,
            "copy": self.outcomes.get("copy", 0),
            "build_skb_share": None if not self.delivered else round(built / self.delivered, 4),
            "bytes_copied": self.bytes_copied,
            "allocations": self.allocations,
            "buffers": self.buffers,
            # big mode: null (chains come from rq->pages, which pages is not followed)
            "pages": None if self.chain_pages is not None else self.pages,
            "truesize": truesize,
            # what the socket is charged per byte it receives
            "truesize_per_byte": None if not self.delivered_bytes
            else round(truesize["sum"] / self.delivered_bytes, 4),
            "frag_list_skbs": self.frag_list,
        }

    def line(self, pages: bool = True) -> str:
        """One line for the text output (``pages``: say how many pages the buffers were on)."""
        d = self.to_dict()
        t = d["truesize"]
        drops = ", ".join(f"{n} {reason}" for reason, n in d["drops"].items()) or "none"
        skbs = f"{d['skbs']} skbs"
        if d["build_skb_share"] is not None:  # None: no skb was made (every frame dropped)
            skbs += f" ({100 * d['build_skb_share']:.1f}% build_skb)"
        truesize = f"truesize sum {t['sum']}"
        if t["min"] is not None:
            truesize += (f" (min {t['min']}, median {t['median']}, p99 {t['p99']}, "
                         f"max {t['max']})")
        if d["truesize_per_byte"] is not None:
            truesize += f", {d['truesize_per_byte']} per frame byte"
        return (
            f"{d['frames']} frames, {d['frame_bytes']} bytes; {skbs}, drops: {drops}; "
            f"{d['bytes_copied']} bytes copied, {d['allocations']} allocations, "
            + (f"{d['buffers']} chain pages" if self.chain_pages is not None
               else f"{d['buffers']} buffers" + (f" on {d['pages']} page(s)" if pages else ""))
            + f"; {truesize}; "
            f"{d['frag_list_skbs']} frag_list skb(s)"
        )


class _Seen:
    """A decision and how many received frames had it (``Totals.add``)."""

    __slots__ = ("count", "decision")

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.count = 1
