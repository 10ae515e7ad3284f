"""Totals over a replay's frames (``vnetrx replay --summary``, and the last line of its text)
or over a sweep's rows weighted by a length distribution (``vnetrx sweep --weights``): what the
skbs cost in all, in constant memory whatever the number of frames. Pure."""

from __future__ import annotations

from collections import Counter
from typing import Any

from vnetrx.replay.state import FrameRecord

SUMMARY_SCHEMA = "vnetrx.replay-summary/1"


class Totals:
    """Sums and counts, updated one frame at a time."""

    def __init__(self) -> None:
        self.frames = 0
        self.frame_bytes = 0
        self.delivered = 0
        self.delivered_bytes = 0  # frame bytes of the frames that became skbs
        self.outcomes: Counter[str] = Counter()  # build_skb / copy
        self.drops: Counter[str] = Counter()  # by reason ("device" for the device's own)
        self.counters: Counter[str] = Counter()
        self.bytes_copied = 0
        self.allocations = 0
        self.buffers = 0
        self.pages = 0  # backing pages touched: buffers are used in posting order, and their
        self._last_page = -1  # pages only grow, so a new page is one above the last
        self.truesizes: Counter[int] = Counter()  # skb->truesize → frames (few distinct values)
        self.frag_list = 0  # skbs chained on a frag_list

    def add(self, f: FrameRecord) -> None:
        """One replayed frame."""
        for p in f.buffers:
            if p.buf.frag_index > self._last_page:
                self.pages += 1
                self._last_page = p.buf.frag_index
        # a small-mode frame longer than a buffer never reaches the driver (QEMU drops it)
        d = f.decision
        reason = (d.reason or "drop") if f.buffers else "device_too_long"
        self.add_frames(f.frame_len, d.outcome, reason, d.counter if f.buffers else None,
                        None if d.skb is None else d.skb.truesize, d.allocations,
                        d.bytes_copied, len(f.buffers), d.frag_list)

    def add_frames(self, frame_len: int, outcome: str, reason: str | None, counter: str | None,
                   truesize: int | None, allocations: int | None, bytes_copied: int | None,
                   buffers: int, frag_list: int, count: int = 1) -> None:
        """``count`` frames of one length and one fate (a sweep row, weighted)."""
        self.frames += count
        self.frame_bytes += frame_len * count
        self.buffers += buffers * count
        if truesize is None:
            self.drops[reason or "drop"] += count
            if counter:
                self.counters[counter] += count
            return
        self.delivered += count
        self.delivered_bytes += frame_len * count
        self.outcomes[outcome] += count
        self.bytes_copied += (bytes_copied or 0) * count
        self.allocations += (allocations or 0) * count
        self.truesizes[truesize] += count
        self.frag_list += frag_list * count

    def truesize(self) -> dict[str, Any]:
        """Sum and distribution of skb->truesize (exact: the values are few)."""
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
            "pages": self.pages,
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
        share = "-" if d["build_skb_share"] is None else f"{100 * d['build_skb_share']:.1f}%"
        return (
            f"{d['frames']} frames, {d['frame_bytes']} bytes; {d['skbs']} skbs ({share} "
            f"build_skb), drops: {drops}; {d['bytes_copied']} bytes copied, "
            f"{d['allocations']} allocations, {d['buffers']} buffers"
            + (f" on {d['pages']} page(s)" if pages else "") + "; "
            + (f"truesize sum {t['sum']} (min {t['min']}, median {t['median']}, p99 "
               f"{t['p99']}, max {t['max']}), {d['truesize_per_byte']} per frame byte; "
               if self.delivered else "no skb, so no truesize; ")
            + f"{d['frag_list_skbs']} frag_list skb(s)"
        )
