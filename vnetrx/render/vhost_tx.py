"""``replay --path vhost-tx``'s output: a JSON row per frame (vnetrx.vhost-tx-row/1), text
rows, and the totals (frames, sendmsg calls, used-ring updates, runs, page frag pages)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from vnetrx.paths.vhost.tx_stream import TxRow

ROW_SCHEMA = "vnetrx.vhost-tx-row/1"


def tx_row_to_dict(r: TxRow, in_order: bool = False) -> dict[str, Any]:
    """One frame; with ``in_order`` (VIRTIO_F_IN_ORDER) also ``used_elem``: whether its used-ring
    update wrote a used element with its head (only the update's last chain)."""
    p = r.plan
    skb = p.skb
    return {
        "schema": ROW_SCHEMA,
        "frame": r.frame,
        "len": r.frame_len,
        "road": str(p.road),
        "reason": str(p.why),
        "run": r.run,
        "call": r.call,
        "batch": r.batch,
        "buflen": None if p.build is None or r.offset is None else p.build.buflen,
        "page": r.page,
        "offset": r.offset,
        "update": r.update,
        "stalled": r.stalled,
        # experimental_zcopytx: the guest's pages pinned as the skb's frags, not copied
        "zcopy_used": p.tap is not None and p.tap.zerocopy is not None and p.tap.zerocopy.used,
        **({"used_elem": r.used_elem} if in_order else {}),
        "outcome": p.outcome,
        "drop": None if p.reason is None else str(p.reason),
        "skb": None if skb is None else {"len": skb.len, "data_len": skb.data_len,
                                         "truesize": skb.truesize, "nr_frags": skb.nr_frags},
    }


class TxTotals:
    """The stream's totals, added row by row."""

    def __init__(self) -> None:
        self.frames = 0
        self.batched = 0
        self.calls: set[int] = set()
        self.updates: set[int] = set()
        self.runs: set[int] = set()
        self.pages: set[int] = set()
        self.skbs = 0
        self.truesize = 0
        self.stalled: int | None = None
        self.used_elems = 0  # used elements written (one per chain; IN_ORDER: per update)

    def add(self, r: TxRow) -> None:
        self.frames += 1
        self.used_elems += r.used_elem
        self.batched += r.batch is not None
        for seen, value in ((self.calls, r.call), (self.updates, r.update),
                            (self.runs, r.run), (self.pages, r.page)):
            if value is not None:
                seen.add(value)
        if r.plan.skb is not None:
            self.skbs += 1
            self.truesize += r.plan.skb.truesize
        if r.stalled:
            self.stalled = r.frame

    def line(self) -> str:
        return (f"totals: {self.frames} frame(s), {self.batched} batched; "
                f"{len(self.calls)} sendmsg call(s), {len(self.updates)} used-ring update(s) "
                f"(signals) writing {self.used_elems} used element(s), {len(self.runs)} handle_tx run(s), {len(self.pages)} page frag "
                f"page(s); {self.skbs} skb(s), truesize {self.truesize}"
                + (f"; the queue stalls at frame {self.stalled}" if self.stalled is not None
                   else ""))


_COLUMNS = (("frame", ">"), ("len", ">"), ("road", "<"), ("reason", "<"), ("run", ">"),
            ("call", ">"), ("batch", ">"), ("buffer", "<"), ("update", ">"), ("outcome", "<"),
            ("truesize", ">"))
_WIDTHS = (6, 6, 13, 8, 4, 5, 5, 20, 6, 12, 8)


def text_rows(rows: Iterable[TxRow], totals: TxTotals, header: bool = True,
              show: bool = True) -> Iterator[str]:
    """Fixed-width rows, one per frame as handle_tx returns it (``show`` False: only count)."""
    if header:
        yield "  ".join(f"{n:{a}{w}}" for (n, a), w in zip(_COLUMNS, _WIDTHS, strict=True))
    for r in rows:
        totals.add(r)
        if not show:
            continue
        d = tx_row_to_dict(r)
        buffer = "-" if r.offset is None else f"page{r.page}+{r.offset} ({d['buflen']})"
        outcome = "stalled" if r.stalled else (d["drop"] or d["outcome"])
        cells = (r.frame, r.frame_len, d["road"], d["reason"], r.run, _dash(r.call),
                 _dash(r.batch), buffer, _dash(r.update), outcome,
                 _dash(None if d["skb"] is None else d["skb"]["truesize"]))
        yield "  ".join(f"{v!s:{a}{w}}" for v, (_, a), w in zip(cells, _COLUMNS, _WIDTHS,
                                                                 strict=True)).rstrip()


def _dash(value: object) -> str:
    return "-" if value is None else str(value)
