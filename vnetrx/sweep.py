"""``vnetrx sweep``: one summary per frame length, and the ranges where nothing changes.

The virtio path is decided by ``virtio_rx_plan`` (configuration computed once, a few
comparisons per length), which is what makes 100,000+ lengths a second possible; the tap path
runs the full engine per length. Pure: no I/O, no click, no rich.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any, NamedTuple

from vnetrx.engine import trace_tap
from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths import virtio_rx_plan as plans
from vnetrx.paths.skbuff import ETH_HLEN
from vnetrx.paths.tun import TapSetup

ROW_SCHEMA = "vnetrx.sweep-row/1"
SWEEP_SCHEMA = "vnetrx.sweep/1"


class Row(NamedTuple):
    """One length's result; skb fields are None on a drop or an error (as the stack sees them)."""

    frame_len: int
    kernel: str
    outcome: str
    reason: str | None  # drop reason, or the errno name of a failed tap write
    len: int | None
    data_len: int | None
    truesize: int | None
    nr_frags: int | None
    allocations: int | None
    bytes_copied: int | None
    buffers: int  # rx buffers (virtio small/mergeable), chain pages (big), 1 for tap


def virtio_rows(k: KernelProfile, setup: plans.VirtioRxSetup,
                lengths: Iterable[int]) -> Iterator[Row]:
    """The virtio receive path for every length, from plans (setup.frame_len is ignored)."""
    config = plans.config(k, plans.resolve(k, replace(setup, frame_len=1)))
    name = k.name
    for frame_len in lengths:
        p = plans.plan(k, config, frame_len, detail=False)
        if p.outcome == "drop":
            yield Row(frame_len, name, "drop", p.reason, None, None, None, None, None, None,
                      len(p.buffers) or 1)
            continue
        yield Row(frame_len, name, p.outcome, None, p.len - ETH_HLEN, p.data_len, p.truesize,
                  p.nr_frags, 1 if p.outcome == "build_skb" else 2, p.copy,
                  len(p.buffers) or p.pages_used)


def tap_rows(k: KernelProfile, setup: TapSetup, lengths: Iterable[int]) -> Iterator[Row]:
    """The tap write path for every length (the full engine: slower than virtio_rows)."""
    for frame_len in lengths:
        t = trace_tap(k, replace(setup, frame_len=frame_len))
        skb, cost = t.skb, t.cost
        if skb is None or cost is None:
            yield Row(frame_len, k.name, t.outcome, t.errno or t.reason, None, None, None, None,
                      None, None, 1)
            continue
        yield Row(frame_len, k.name, t.outcome, None, skb.len, skb.data_len, skb.truesize,
                  skb.nr_frags, cost.allocations, cost.bytes_copied, 1)


def row_to_dict(row: Row) -> dict[str, Any]:
    cost = None if row.allocations is None else {
        "allocations": row.allocations, "bytes_copied": row.bytes_copied, "frags": row.nr_frags,
    }
    return {"schema": ROW_SCHEMA, "frame_len": row.frame_len, "kernel": row.kernel,
            "outcome": row.outcome, "reason": row.reason, "len": row.len,
            "data_len": row.data_len, "truesize": row.truesize, "nr_frags": row.nr_frags,
            "buffers": row.buffers, "cost": cost}


class Span(NamedTuple):
    """Consecutive lengths (of the sweep's list) with the same outcome and the same costs."""

    kernel: str
    first: int
    last: int
    lengths: int  # how many lengths of the sweep's list it covers
    outcome: str
    reason: str | None
    what: str  # "build_skb", "copy all", "copy 14 B + 1 frag", "drop (short_packet)", ...
    truesize: int | None
    nr_frags: int | None
    allocations: int | None
    buffers: int


def _what(row: Row) -> str:
    if row.outcome in ("drop", "error"):
        return f"{row.outcome} ({row.reason})"
    if row.outcome == "copy":
        if row.bytes_copied == row.frame_len:
            return "copy all"
        return f"copy {row.bytes_copied} B + {row.nr_frags} frag(s)"
    frags = f" + {row.nr_frags} frag(s)" if row.nr_frags else ""
    return f"{row.outcome}{frags}"


def collapse(rows: Iterable[Row]) -> list[Span]:
    """Merge neighbouring rows whose outcome, truesize, frags, allocations and buffers agree."""
    spans: list[Span] = []
    for row in rows:
        what = _what(row)
        key = (row.kernel, row.outcome, row.reason, what, row.truesize, row.nr_frags,
               row.allocations, row.buffers)
        if spans:
            last = spans[-1]
            if key == (last.kernel, last.outcome, last.reason, last.what, last.truesize,
                       last.nr_frags, last.allocations, last.buffers):
                spans[-1] = last._replace(last=row.frame_len, lengths=last.lengths + 1)
                continue
        spans.append(Span(row.kernel, row.frame_len, row.frame_len, 1, row.outcome, row.reason,
                          what, row.truesize, row.nr_frags, row.allocations, row.buffers))
    return spans


def span_to_dict(span: Span) -> dict[str, Any]:
    return {"kernel": span.kernel, "first": span.first, "last": span.last, "count": span.lengths,
            "outcome": span.outcome, "reason": span.reason, "what": span.what,
            "truesize": span.truesize, "nr_frags": span.nr_frags,
            "allocations": span.allocations, "buffers": span.buffers}
