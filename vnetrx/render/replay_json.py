"""JSON for ``vnetrx replay``: one object (schema vnetrx.replay/1) or one frame per line (JSONL).
Does not import rich.

vnetrx.replay/1: schema, kernel, input, min_buf_len, initial_fill, frames[], final_ring, notes.
  frames[i]: index, frame_len, poll, buffers[] ({seq, page, offset, len, fill}: the posted buffers
  the device filled; fill 0 = posted by virtnet_open, n = by the n-th refill), ewma_before, ewma_after, trace (a vnetrx.trace/1 object), refill (a fill that
  ended this frame's NAPI poll, or null), ring (the ring after the frame and that refill).
  A fill: when, after_poll, ewma, buf_len, count, buffers[].
  A ring: ewma, mergeable_rx_buffer_size, allocator, page, offset, page_size, posted, num_free,
  posted_lens ([[len, count], ...] by length), next_buffer, polls, fills.
"""

from __future__ import annotations

import json
from typing import Any

from vnetrx.codec import kernel_to_dict, trace_to_dict
from vnetrx.render.json_out import dumps
from vnetrx.replay import Fill, FrameRecord, Posted, Replay, RingView, page_label

REPLAY_SCHEMA = "vnetrx.replay/1"


def _posted(r: Replay, p: Posted) -> dict[str, Any]:
    return {
        "seq": p.seq,
        "page": page_label(r.kernel, r.config, p.buf.frag_index),
        "offset": p.buf.offset,
        "len": p.buf.len,
        "fill": p.fill,
    }


def _fill(r: Replay, f: Fill) -> dict[str, Any]:
    return {
        "when": f.when,
        "after_poll": f.after_poll,
        "ewma": f.ewma,
        "buf_len": f.buf_len,
        "count": len(f.buffers),
        "buffers": [_posted(r, p) for p in f.buffers],
    }


def _ring(r: Replay, v: RingView) -> dict[str, Any]:
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


def frame_to_dict(r: Replay, f: FrameRecord) -> dict[str, Any]:
    return {
        "index": f.index,
        "frame_len": f.frame_len,
        "poll": f.poll,
        "buffers": [_posted(r, p) for p in f.buffers],
        "ewma_before": f.ewma_before,
        "ewma_after": f.ewma_after,
        "trace": trace_to_dict(f.trace),
        "refill": None if f.refill is None else _fill(r, f.refill),
        "ring": _ring(r, f.ring),
    }


def replay_to_dict(r: Replay, source: str) -> dict[str, Any]:
    c = r.config
    return {
        "schema": REPLAY_SCHEMA,
        "kernel": kernel_to_dict(r.kernel),
        "input": {
            "source": source,
            "frames": len(r.frames),
            "mergeable": c.mergeable,
            "guest_gso": c.guest_gso,
            "mtu": c.mtu,
            "hdr_len": c.hdr_len,
            "ring_size": c.ring_size,
            "batch": c.batch,
            "budget": c.budget,
            "refill_threshold": c.refill_threshold,
        },
        "min_buf_len": r.min_buf_len,
        "initial_fill": _fill(r, r.initial_fill),
        "frames": [frame_to_dict(r, f) for f in r.frames],
        "final_ring": _ring(r, r.final),
        "notes": list(r.notes),
    }


def render_replay(r: Replay, source: str) -> str:
    return dumps(replay_to_dict(r, source))


def render_replay_lines(r: Replay) -> str:
    return "".join(json.dumps(frame_to_dict(r, f)) + "\n" for f in r.frames)
