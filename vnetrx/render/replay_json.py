"""JSON for ``vnetrx replay``: one object (schema vnetrx.replay/1) or one frame per line (JSONL).
Does not import rich.

vnetrx.replay/1: schema, kernel, input, min_buf_len, initial_fill, frames[], final_ring, notes.
  frames[i]: index, frame_len, poll, buffers[] ({seq, page, offset, len, fill}: the posted buffers
  the device filled; fill 0 = posted by virtnet_open, n = by the n-th refill), ewma_before, ewma_after, trace (a vnetrx.trace/1 object), refill (a fill that
  ended this frame's NAPI poll, or null), ring (the ring after the frame and that refill).
  A fill: when, after_poll, ewma, buf_len, count, buffers[].
  A ring: ewma, mergeable_rx_buffer_size, allocator, page, offset, page_size, posted, num_free,
  posted_lens ([[len, count], ...] by length), next_buffer, polls, fills.
  Big mode (no MRG_RXBUF; guest GSO or an MTU above 1500): each frame lands in a page chain of
  its own, from rq->pages, whose places in the ring are not followed: min_buf_len,
  initial_fill, final_ring, every frame's ring, refill and EWMA are null and its buffers [].
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final, TextIO

from vnetrx.codec import kernel_to_dict, trace_to_dict
from vnetrx.paths.virtio_net.buffers import PostedBuffer
from vnetrx.render.int_text import int_head, int_tail, int_text
from vnetrx.render.json_out import dumps
from vnetrx.replay import Fill, FrameRecord, Posted, Replay, RingView, Stream, page_label
from vnetrx.replay.refill import ring_config
from vnetrx.replay.state import RUN_COUNT_BITS, Decision, Ring, RingConfig, run_length
from vnetrx.skb_row import ROW_SKB_FIELDS, row_skb_json

REPLAY_SCHEMA: Final = "vnetrx.replay/1"


def _posted(r: Ring, p: Posted) -> dict[str, Any]:
    return {
        "seq": p.seq,
        "page": page_label(r.kernel, r.config, p.buf.frag_index),
        "offset": p.buf.offset,
        "len": p.buf.len,
        "fill": p.fill,
    }


def _fill(r: Ring, f: Fill) -> dict[str, Any]:
    return {
        "when": f.when,
        "after_poll": f.after_poll,
        "ewma": f.ewma,
        "buf_len": f.buf_len,
        "count": len(f.buffers),
        "buffers": [_posted(r, p) for p in f.buffers],
    }


def _ring(r: Ring, v: RingView) -> dict[str, Any]:
    return {
        "ewma": v.ewma,
        "mergeable_rx_buffer_size": v.mergeable_rx_buffer_size,
        "allocator": v.allocator,
        "page": v.page,
        "offset": v.offset,
        "page_size": v.page_size,
        "posted": v.posted,
        "num_free": v.num_free,
        "posted_lens": [list(pair) for pair in v.posted_lens],
        "next_buffer": None if v.next_buffer is None else _posted(r, v.next_buffer),
        "polls": v.polls,
        "fills": v.fills,
    }


def frame_to_dict(r: Ring, f: FrameRecord) -> dict[str, Any]:
    assert f.trace is not None, "the full replay document keeps every frame's trace"
    return {
        "index": f.index,
        "frame_len": f.frame_len,
        "poll": f.poll,
        "buffers": [_posted(r, p) for p in f.buffers],
        "ewma_before": f.ewma_before,
        "ewma_after": f.ewma_after,
        "trace": trace_to_dict(f.trace),
        "refill": None if f.refill is None else _fill(r, f.refill),
        "ring": None if f.ring is None else _ring(r, f.ring),
    }


def _input(c: RingConfig, source: str, count: int) -> dict[str, Any]:
    """A replay document's ``input``: the frames' source and count, and the ring."""
    return {
        "source": source,
        "frames": count,
        "mergeable": c.device.mergeable,
        "guest_gso": c.device.guest_gso,
        "mtu": c.device.mtu,
        "hdr_len": c.hdr_len,
        "ring_size": c.device.ring_size,
        "batch": c.batch,
        "budget": c.budget,
        "refill_threshold": c.refill_threshold,
    }


def replay_to_dict(r: Replay, source: str) -> dict[str, Any]:
    return {
        "schema": REPLAY_SCHEMA,
        "kernel": kernel_to_dict(r.kernel),
        "input": _input(r.config, source, len(r.frames)),
        "min_buf_len": r.min_buf_len,
        "initial_fill": None if r.initial_fill is None else _fill(r, r.initial_fill),
        "frames": [frame_to_dict(r, f) for f in r.frames],
        "final_ring": None if r.final is None else _ring(r, r.final),
        "notes": list(r.notes),
    }


def write_replay(s: Stream, source: str, count: int, out: TextIO,
                 interrupted: Callable[[], bool]) -> int:
    """The vnetrx.replay/1 document of a replay of ``count`` frames, written as it runs: each
    frame as soon as it is through (memory stays flat: the document of 100,000 frames is
    gigabytes as one dict), the text exactly ``render_replay``'s. ``interrupted()``: the
    frames ended early (a signal); the document then says so. Returns the frames written."""
    head = {
        "schema": REPLAY_SCHEMA,
        "kernel": kernel_to_dict(s.kernel),
        "input": _input(s.config, source, count),
        "min_buf_len": s.min_buf_len,
        "initial_fill": None if s.initial_fill is None else _fill(s, s.initial_fill),
    }
    # at indent 2 a top-level key's text is the same in any top-level object: each part is
    # dumped on its own, less its braces; a frame is a top-level object indented two levels
    out.write(dumps(head)[:-3] + ',\n  "frames": [')
    written = 0
    for f in s.records:
        text = json.dumps(frame_to_dict(s, f), indent=2).replace("\n", "\n    ")
        out.write(("\n    " if not written else ",\n    ") + text)
        written += 1
    final = s.final()
    tail: dict[str, Any] = {"final_ring": None if final is None else _ring(s, final),
                            "notes": list(s.notes)}
    if interrupted():
        tail["interrupted"] = True
    out.write(("\n  ]," if written else "],") + dumps(tail)[1:])
    return written


def render_replay(r: Replay, source: str) -> str:
    return dumps(replay_to_dict(r, source))


def render_replay_lines(r: Replay) -> str:
    """--jsonl --detail of a whole replay: one full frame record per line."""
    return "".join(json.dumps(frame_to_dict(r, f)) + "\n" for f in r.frames)


ROW_SCHEMA: Final = "vnetrx.replay-row/1"
_ROW_SKB: Final = ROW_SKB_FIELDS
_NO_SKB: Final = dict.fromkeys(_ROW_SKB)


def row_to_dict(s: Ring, f: FrameRecord) -> dict[str, Any]:
    """One compact row: the frame, the buffers it used (page, offset, len), what it became (the
    sweep row's skb fields), the cost, the EWMA after it and the refill its poll ended with."""
    label = ring_config(s.kernel, s.config).alloc.label
    d = f.decision
    skb = d.skb
    out: dict[str, Any] = {
        "schema": ROW_SCHEMA,
        "index": f.index,
        "frame_len": f.frame_len,
        "poll": f.poll,
        "buffers": [[label(p.buf.frag_index), p.buf.offset, p.buf.len] for p in f.buffers],
        "outcome": d.outcome,
        "reason": d.reason,
        "counter": d.counter,
    }
    out.update(_NO_SKB if skb is None else {name: getattr(skb, name) for name in _ROW_SKB})
    out["allocations"] = d.allocations
    out["bytes_copied"] = d.bytes_copied
    out["frag_list"] = d.frag_list
    out["ewma"] = f.ewma_after
    out["refill"] = None if f.refill is None else len(f.refill.buffers)
    return out


# row_to_dict's line, formatted directly (what json.dumps(row_to_dict(...)) prints, without
# the dict: a replay writes one per frame)
_NO_SKB_PART: Final = ", ".join(f'"{name}": null' for name in _ROW_SKB)
PARTS_KEPT: Final = 4096  # decision parts a writer keeps (a replay keeps as many decisions)
PARTS_MASK: Final = PARTS_KEPT - 1  # (a power of two)
RUNS_KEPT: Final = 4096  # texts of runs of buffers a writer keeps (``_Rows.run``)
# ``_Rows.run``'s key: a buffer's length is below 2**20 (buffers.carve_key), then the count
BUFFER_LEN_BITS: Final = 20


def decision_part(d: Decision) -> str:
    """The row's fields from the frame's decision: outcome to frag_list (an f-string around
    the skb's fields: compiled, it is joined without parsing a template, which `%` does)."""
    skb = d.skb
    fields = _NO_SKB_PART if skb is None else row_skb_json(skb)
    reason = "null" if d.reason is None else json.dumps(d.reason)
    counter = "null" if d.counter is None else json.dumps(d.counter)
    allocations = "null" if d.allocations is None else str(d.allocations)
    copied = "null" if d.bytes_copied is None else str(d.bytes_copied)
    return (f'"outcome": "{d.outcome}", "reason": {reason}, "counter": {counter}, {fields}, '
            f'"allocations": {allocations}, "bytes_copied": {copied}, '
            f'"frag_list": {d.frag_list}')


def row_line(label: Callable[[int], str], f: FrameRecord,
             parts: list[_Part | None] | None = None) -> str:
    """``json.dumps(row_to_dict(...))`` of one frame, written out directly. ``parts``: the
    decision parts already written (``new_parts()``; frames alike in geometry share one)."""
    rows = _Rows(label)
    if parts is not None:
        rows.parts = parts
    return rows.line(f)


def new_parts() -> list[_Part | None]:
    """A writer's decision parts: a decision's at its serial modulo PARTS_KEPT (a list index:
    no int made and hashed per frame, as a dict by ``id`` needs)."""
    return [None] * PARTS_KEPT


class _Rows:
    """What a replay's rows share: the decision parts already written, by decision (frames
    alike in geometry share one; the last PARTS_KEPT decisions'), and the label of the last
    page a buffer was on (buffers are used in posting order: most are on the page of the one
    before)."""

    def __init__(self, label: Callable[[int], str]) -> None:
        self.label = label
        self.parts = new_parts()
        self.last: _Part | None = None  # the last frame's
        self.page = -1
        self.page_label = ""
        # the texts of runs of buffers (``run``) by first offset, length and count, less the
        # page's label (at most RUNS_KEPT)
        self.runs: dict[int, list[str]] = {}

    def line(self, f: FrameRecord) -> str:
        """One row, an f-string (compiled, it is joined without parsing a template, which `%`
        does on every call)."""
        d = f.decision
        known = self.last
        if known is None or known.decision is not d:  # (a flow's frames share a decision)
            slot = d.serial & PARTS_MASK
            known = self.parts[slot]
            if known is None or known.decision is not d:  # (another decision's, or none yet)
                known = self.parts[slot] = _Part(d, f)
            self.last = known
        used = f.buffers
        # the index and the poll in two kept texts each (all but the last three digits, and
        # those: int_head, int_tail), not a new text each; a buffer's offset, the EWMA, a
        # refill's count repeat from row to row: int_text's
        index = f.index
        at, at_low = int_head(index), int_tail(index)
        if f.poll is None:
            poll, poll_low = "null", ""
        else:
            poll, poll_low = int_head(f.poll), int_tail(f.poll)
        ewma = "null" if f.ewma_after is None else int_text(f.ewma_after)
        refill = "null" if f.refill is None else int_text(len(f.refill.buffers))
        # the decision's frame length and, for one buffer, its buffer's (its geometry: the
        # frames that share a decision share them) are in the decision's texts, written once
        frame = (known.frame if f.frame_len == known.frame_len
                 else f', "frame_len": {int_text(f.frame_len)}, "poll": ')
        if len(used) == 1:  # most frames: the one buffer written into the row's own string
            b = used[0].buf
            if b.frag_index != self.page:
                self.page, self.page_label = b.frag_index, self.label(b.frag_index)
            tail = (known.tail if b.len == known.buf_len
                    else f', {int_text(b.len)}]], {known.text}, "ewma": ')
            return (f'{{"schema": "{ROW_SCHEMA}", "index": {at}{at_low}{frame}{poll}'
                    f'{poll_low}, "buffers": [["{self.page_label}", {int_text(b.offset)}'
                    f'{tail}{ewma}, "refill": {refill}}}')
        buffers = self.run(used)
        if buffers is None:  # on two pages, or of lengths that differ
            buffers = ", ".join([self.buffer(p.buf) for p in used])
        return (f'{{"schema": "{ROW_SCHEMA}", "index": {at}{at_low}{frame}{poll}'
                f'{poll_low}, "buffers": [{buffers}], {known.text}, "ewma": {ewma}, '
                f'"refill": {refill}}}')

    def run(self, used: tuple[Posted, ...]) -> str | None:
        """The text of a frame's buffers when they are a run (``run_length``): the page's label
        joining the texts kept for that first offset, length and count (None when they are
        not; "" for none: a dropped frame's)."""
        if not used:
            return ""
        length = run_length(used)
        if not length:
            return None
        first = used[0].buf
        page, offset = first.frag_index, first.offset
        last = offset + (len(used) - 1) * length
        key = (offset << BUFFER_LEN_BITS | length) << RUN_COUNT_BITS | len(used)
        pieces = self.runs.get(key)
        if pieces is None:
            if len(self.runs) >= RUNS_KEPT:
                self.runs.clear()
            size = int_text(length)
            pieces = ['["'] + [f'", {int_text(at)}, {size}], ["'
                               for at in range(offset, last, length)]
            pieces.append(f'", {int_text(last)}, {size}]')
            self.runs[key] = pieces
        if page != self.page:
            self.page, self.page_label = page, self.label(page)
        return self.page_label.join(pieces)

    def buffer(self, b: PostedBuffer) -> str:
        if b.frag_index != self.page:
            self.page, self.page_label = b.frag_index, self.label(b.frag_index)
        return f'["{self.page_label}", {int_text(b.offset)}, {int_text(b.len)}]'


class _Part:
    """A decision's part of its rows (``decision_part``), and the text around a row's poll and
    buffer offset for frames of the first frame's lengths (the decision's geometry: frames
    that share a decision have them, so their decimal texts are written once)."""

    __slots__ = ("buf_len", "decision", "frame", "frame_len", "tail", "text")

    def __init__(self, d: Decision, f: FrameRecord) -> None:
        self.decision = d
        self.text = decision_part(d)
        self.frame_len = f.frame_len
        self.buf_len = f.buffers[0].buf.len if len(f.buffers) == 1 else -1
        self.frame = f', "frame_len": {f.frame_len}, "poll": '
        self.tail = f', {self.buf_len}]], {self.text}, "ewma": '


def write_rows(s: Stream, out: TextIO, detail: bool = False, live: bool = False) -> None:
    """Stream a replay as JSONL: each line written as soon as its frame is done (a closed pipe
    or Ctrl-C leaves only whole lines behind). ``live`` (a feed read as it arrives): every line
    goes to ``out`` at once, whose buffer the reader flushes before it waits for more input;
    otherwise lines are written 256 at a time."""
    write = out.write
    if detail:
        for f in s.records:
            write(json.dumps(frame_to_dict(s, f)) + "\n")
        return
    rows = _Rows(ring_config(s.kernel, s.config).alloc.label)
    lines: list[str] = []
    for f in s.records:
        # (rows.line called as a method: compiled, a native call; taken into a local it would
        # be a bound method object, called through Python's vectorcall per frame)
        lines.append(rows.line(f))
        if len(lines) == 256 or live:  # a few writes, whole lines only
            lines.append("")  # (the last newline, without copying the joined lines again)
            write("\n".join(lines))
            lines = []
    if lines:
        lines.append("")
        write("\n".join(lines))
