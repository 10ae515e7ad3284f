"""``vnetrx sweep``: one summary per frame length, and the ranges where nothing changes.

The virtio path is decided by ``paths.virtio_net``'s plans (configuration computed once, a few
comparisons per length), which is what makes 100,000+ lengths a second possible; the tap path
runs the full engine per length. Pure: no I/O, no click, no rich.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from operator import attrgetter
from typing import Any, Final

from vnetrx.engine import trace_virtio
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Cost, Skb
from vnetrx.paths import tun, virtio_net
from vnetrx.paths.tun import TapSetup
from vnetrx.paths.vhost.tx import VhostTxSetup
from vnetrx.paths.virtio_net.receive_buf import plain_skb, xdp_received
from vnetrx.records import NamedTuple
from vnetrx.replay.summary import Totals
from vnetrx.skb_row import ROW_SKB_FIELDS, row_skb_json
from vnetrx.values import Value

ROW_SCHEMA: Final = "vnetrx.sweep-row/1"
SWEEP_SCHEMA: Final = "vnetrx.sweep/1"


# the skb fields a row carries, read from a record (vnetrx.skb_row: which, and as JSON)
_row_skb = attrgetter(*ROW_SKB_FIELDS)
CSV_FIELDS: Final = ("frame_len", "kernel", "outcome", "reason", *ROW_SKB_FIELDS, "allocations",
              "bytes_copied", "buffers")


class Row(Value):
    """One length's result; skb and cost are None on a drop or an error. Immutable; a plain
    ``Value`` class, not a record: a sweep makes one per length (README, "Records")."""

    __slots__ = ("allocations", "buffers", "bytes_copied", "frag_list", "frame_len", "kernel",
                 "outcome", "reason", "skb")

    def __init__(self, frame_len: int, kernel: str, outcome: str, reason: str | None,
                 skb: Skb | None, allocations: int | None, bytes_copied: int | None,
                 buffers: int, frag_list: int = 0) -> None:
        self.frame_len: Final = frame_len
        self.kernel: Final = kernel
        self.outcome: Final = outcome
        self.reason: Final = reason  # drop reason, or the errno name of a failed tap write
        self.skb: Final = skb  # as the stack sees it (after eth_type_trans)
        self.allocations: Final = allocations  # Cost.allocations
        self.bytes_copied: Final = bytes_copied  # Cost.bytes_copied
        # rx buffers (virtio small/mergeable), chain pages (big), 1 for tap
        self.buffers: Final = buffers
        self.frag_list: Final = frag_list  # skbs chained on the head's frag_list

    def _values(self) -> tuple[object, ...]:
        return (self.frame_len, self.kernel, self.outcome, self.reason, self.skb,
                self.allocations, self.bytes_copied, self.buffers, self.frag_list)

    def __repr__(self) -> str:
        return (f"Row(frame_len={self.frame_len}, kernel={self.kernel!r}, "
                f"outcome={self.outcome!r}, reason={self.reason!r}, skb={self.skb!r}, "
                f"allocations={self.allocations}, bytes_copied={self.bytes_copied}, "
                f"buffers={self.buffers}, frag_list={self.frag_list})")

    @property
    def truesize(self) -> int | None:
        return None if self.skb is None else self.skb.truesize

    @property
    def nr_frags(self) -> int | None:
        return None if self.skb is None else self.skb.nr_frags

    @property
    def cost(self) -> Cost | None:
        if self.skb is None or self.allocations is None or self.bytes_copied is None:
            return None
        return Cost(self.allocations, self.bytes_copied, self.skb.nr_frags)


def virtio_rows(k: KernelProfile, setup: virtio_net.VirtioRxSetup, lengths: Iterable[int],
                like: virtio_net.RxFrame | None = None) -> Iterator[Row]:
    """The virtio receive path of the device ``setup`` for a frame of every length, each like
    ``like`` but for its length (the header in front of it, the buffer it lands in): from
    plans, or with an XDP program from receive_buf's XDP decisions (big mode, where the
    program never runs: from the full engine). Without ``like``: no header, the first buffer
    of a fresh page."""
    like = like or virtio_net.RxFrame(0)
    s = virtio_net.check_virtio_setup(k, setup, like)
    c = virtio_net.for_frame(virtio_net.config(k, s), like)
    name = k.name
    if c.xdp is not None and c.mode != "big":
        yield from _xdp_rows(c, name, lengths)
        return
    if c.xdp is not None:  # big mode: the program never runs; the trace says why
        yield from _traced_rows(k, setup, like, lengths)
        return
    plan, deliver, plain = virtio_net.planner(c), virtio_net.deliver, plain_skb
    # virtio_net_hdr_to_skb pulls from the frags: a header needs the plan's frags listed
    detail = c.hdr is not None
    for frame_len in lengths:
        p = plan(c, frame_len, detail)
        if detail:
            skb, reason, _, _ = deliver(c, p, narrate=False)  # rows show no checks
        else:  # no header: nothing after receive_*() but eth_type_trans
            skb, reason = (None, p.reason) if p.outcome == "drop" else (plain(c, p), None)
        if skb is None:
            yield Row(frame_len, name, "drop", reason, None, None, None, len(p.buffers) or 1)
            continue
        # cost(p) without the Cost record: allocations and bytes copied
        yield Row(frame_len, name, p.outcome, None, skb, p.allocations, p.copy,
                  len(p.buffers) or p.pages_used, p.frag_list_skbs)


def _xdp_rows(c: virtio_net.Config, name: str, lengths: Iterable[int]) -> Iterator[Row]:
    """Small or mergeable mode with an XDP program: receive_buf's XDP decisions."""
    for frame_len in lengths:
        r = xdp_received(c, frame_len, False)  # rows show no checks
        cost = r.cost
        if r.skb is None or cost is None:
            yield Row(frame_len, name, r.outcome, r.errno or r.reason, None, None, None,
                      r.buffers or 1)
            continue
        yield Row(frame_len, name, r.outcome, None, r.skb, cost.allocations, cost.bytes_copied,
                  r.buffers)


def tap_rows(k: KernelProfile, setup: TapSetup, lengths: Iterable[int],
             like: tun.TapFrame | None = None) -> Iterator[Row]:
    """The tap write path of the device ``setup`` for a write of every length, each like
    ``like`` but for its length (its vnet header; without ``like``: zeros), from
    tun_get_user's plans."""
    like = like or tun.TapFrame(0)
    c = tun.for_write(tun.tap_config(k, setup, like), like)
    name, plan = k.name, tun.tap_plan
    for frame_len in lengths:
        p = plan(c, frame_len, False)  # rows show no checks
        skb, cost = p.skb, p.cost
        if skb is None or cost is None:
            yield Row(frame_len, name, p.outcome, p.errno, None, None, None, p.buffers or 1)
            continue
        yield Row(frame_len, name, p.outcome, None, skb, cost.allocations, cost.bytes_copied,
                  p.buffers)


def vhost_tx_rows(k: KernelProfile, setup: VhostTxSetup, lengths: Iterable[int],
                  like: tun.TapFrame | None = None) -> Iterator[Row]:
    """A guest's transmitted frame on the host (vhost-net → tap) for every length, each like
    ``like`` but for its length (its vnet header; without ``like``: zeros), from handle_tx's
    plans (paths/vhost/tx.py)."""
    from vnetrx.paths import vhost

    c = vhost.for_tx_frame(vhost.vhost_tx_config(k, setup), like or tun.TapFrame(0))
    name, plan = k.name, vhost.vhost_tx_plan
    for frame_len in lengths:
        p = plan(c, frame_len, False)  # rows show no checks
        skb, cost = p.skb, p.cost
        if skb is None or cost is None:
            reason = p.errno or (None if p.reason is None else str(p.reason))
            yield Row(frame_len, name, p.outcome, reason, None, None, None, p.buffers or 1)
            continue
        yield Row(frame_len, name, p.outcome, None, skb, cost.allocations, cost.bytes_copied,
                  p.buffers)


def _traced_rows(k: KernelProfile, setup: virtio_net.VirtioRxSetup, like: virtio_net.RxFrame,
                 lengths: Iterable[int]) -> Iterator[Row]:
    """One row per full trace: outcome, skb and costs as the narrated path decided them. The
    lengths are taken one at a time: their iterator carries Ctrl-C and progress."""
    for frame_len in lengths:
        t = trace_virtio(k, setup, like._replace(len=frame_len))
        if t.skb is None or t.cost is None:
            yield Row(frame_len, k.name, t.outcome, t.errno or t.reason, None, None, None,
                      len(t.buffers) or 1)
            continue
        yield Row(frame_len, k.name, t.outcome, None, t.skb, t.cost.allocations,
                  t.cost.bytes_copied, len(t.buffers) or 1)


def weighted_totals(rows: Iterable[Row], weights: dict[int, int]) -> Totals:
    """The totals of a length distribution: each row counted as often as its length occurs."""
    totals = Totals()
    for row in rows:
        skb = row.skb
        totals.add_frames(row.frame_len, row.outcome, None if row.reason is None else
                          str(row.reason), None, None if skb is None else skb.truesize,
                          row.allocations, row.bytes_copied, row.buffers, row.frag_list,
                          weights.get(row.frame_len, 0))
    return totals


def row_values(row: Row) -> tuple[object, ...]:
    """The row in CSV_FIELDS order (None where there is no skb)."""
    skb = _row_skb(row.skb) if row.skb is not None else (None,) * len(ROW_SKB_FIELDS)
    return (row.frame_len, row.kernel, row.outcome, row.reason, *skb, row.allocations,
            row.bytes_copied, row.buffers)


# row_to_dict's JSON, formatted directly (a sweep writes one per length)
_NO_SKB_PART: Final = ", ".join(f'"{name}": null' for name in ROW_SKB_FIELDS)


# a row with an skb, formatted in one call (%-formatting: str.format parses its template's field
# numbers on every call, a sixth of a sweep's time): frame_len, kernel (JSON), outcome, the row
# fields, buffers, allocations, bytes_copied, frags
_SKB_ROW: Final = (
    '{"schema": "' + ROW_SCHEMA + '", "frame_len": %s, "kernel": %s, "outcome": "%s", '
    '"reason": null, %s, "buffers": %s, "cost": {"allocations": %s, "bytes_copied": %s, '
    '"frags": %s}}'
)
_KERNEL_JSON: Final[dict[str, str]] = {}


def row_line(row: Row) -> str:
    """``json.dumps(row_to_dict(row))``, written out directly (the row fields are plain ints)."""
    skb = row.skb
    kernel = _KERNEL_JSON.get(row.kernel)
    if kernel is None:
        kernel = _KERNEL_JSON[row.kernel] = json.dumps(row.kernel)
    if skb is None:
        reason = "null" if row.reason is None else json.dumps(str(row.reason))
        return (f'{{"schema": "{ROW_SCHEMA}", "frame_len": {row.frame_len}, "kernel": {kernel}, '
                f'"outcome": "{row.outcome}", "reason": {reason}, {_NO_SKB_PART}, '
                f'"buffers": {row.buffers}, "cost": null}}')
    return _SKB_ROW % (row.frame_len, kernel, row.outcome, row_skb_json(skb), row.buffers,
                       row.allocations, row.bytes_copied, skb.nr_frags)


def row_to_dict(row: Row) -> dict[str, Any]:
    out: dict[str, Any] = {"schema": ROW_SCHEMA, "frame_len": row.frame_len, "kernel": row.kernel,
                           "outcome": row.outcome,
                           "reason": None if row.reason is None else str(row.reason)}
    skb = row.skb
    out.update(zip(ROW_SKB_FIELDS, _row_skb(skb) if skb is not None
                   else (None,) * len(ROW_SKB_FIELDS), strict=True))
    out["buffers"] = row.buffers
    out["cost"] = None if skb is None else {
        "allocations": row.allocations, "bytes_copied": row.bytes_copied, "frags": skb.nr_frags,
    }
    return out


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
    if row.outcome in ("drop", "error") or (row.outcome == "xdp_drop" and row.reason):
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
