"""Trace → plain dict (the JSON schema documented in README). Stdlib only.

Schema ledger:
  vnetrx.trace/1  first version: kernel, input, path, outcome, reason, steps, buffer, buffers,
                  skb, cost, notes; errno (null unless outcome is "error"), added with the
                  tap path.
"""

from __future__ import annotations

from typing import Any

from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer, Skb, Trace

ERROR_SCHEMA = "vnetrx.error/1"


def kernel_to_dict(k: KernelProfile) -> dict[str, Any]:
    b = k.build
    return {
        "name": k.name,
        "source": k.source,
        "arch": b.arch,
        "page_size": b.page_size,
        "l1_cache_bytes": b.l1_cache_bytes,
        "max_skb_frags": b.max_skb_frags,
        "config": b.config,
        "changes": [c.key for c in k.changes()],
    }


def buffer_to_dict(b: Buffer, regions: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "size": b.size,
        "page": b.page,
        "page_offset": b.page_offset,
        "used": b.used,
    }
    if regions:
        out["regions"] = [
            {"name": r.name, "offset": r.offset, "size": r.size, "note": r.note} for r in b.regions
        ]
    return out


def skb_to_dict(s: Skb) -> dict[str, Any]:
    return {
        "len": s.len,
        "data_len": s.data_len,
        "truesize": s.truesize,
        "nr_frags": s.nr_frags,
        "mac_header": s.mac_header,
        "end": s.end,
        "data": s.data,
        "tail": s.tail,
        "headlen": s.headlen,
        "head": s.head,
        "head_size": s.head_size,
        "frags": [
            {"page": f.page, "offset": f.offset, "size": f.size, "truesize": f.truesize}
            for f in s.frags
        ],
        "frag_list": [
            {
                "len": fl.len,
                "truesize": fl.truesize,
                "nr_frags": len(fl.frags),
                "frags": [
                    {"page": f.page, "offset": f.offset, "size": f.size, "truesize": f.truesize}
                    for f in fl.frags
                ],
            }
            for fl in s.frag_list
        ],
    }


def trace_to_dict(t: Trace) -> dict[str, Any]:
    return {
        "schema": t.schema,
        "kernel": kernel_to_dict(t.kernel),
        "input": dict(t.input),
        "path": t.path,
        "outcome": t.outcome,
        "reason": t.reason,
        "errno": t.errno,
        "steps": [
            {
                "function": s.function,
                "source": s.source,
                "summary": s.summary,
                "values": dict(s.values),
                "because": list(s.because),
            }
            for s in t.steps
        ],
        "buffer": None if t.buffer is None else buffer_to_dict(t.buffer),
        "buffers": [buffer_to_dict(b, regions=False) for b in t.buffers],
        "skb": None if t.skb is None else skb_to_dict(t.skb),
        "cost": None
        if t.cost is None
        else {
            "allocations": t.cost.allocations,
            "bytes_copied": t.cost.bytes_copied,
            "frags": t.cost.frags,
        },
        "notes": list(t.notes),
    }


def error_to_dict(message: str, exit_code: int, hint: str | None = None) -> dict[str, Any]:
    return {"schema": ERROR_SCHEMA, "error": message, "hint": hint, "exit_code": exit_code}
