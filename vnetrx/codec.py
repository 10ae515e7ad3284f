"""Trace → plain dict (the JSON schema documented in README). Stdlib only.

Schema ledger:
  vnetrx.trace/1  first version: kernel, input, path, outcome, reason, steps, buffer, buffers,
                  skb, cost, notes; errno (null unless outcome is "error"), added with the
                  tap path; counter (the device counter a drop increments: rx_length_errors,
                  rx_frame_errors, drops), refused_by (the check that refused the
                  virtio_net_hdr) and the skb's offload fields (ip_summed .. l4_hash), added
                  with virtio_net_hdr_to_skb; xdp (an attached program's run: verdict,
                  xdp_buff, result, read-back, counters) and xdp_tx (the frame a read() on
                  the tap fd returns after XDP_TX/REDIRECT), both only when a program is
                  attached, added with XDP on tun.
"""

from __future__ import annotations

from typing import Any

from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import SKB_FIELDS, XDP_FIELDS, Buffer, Frag, Skb, Trace, XdpRun

ERROR_SCHEMA = "vnetrx.error/1"
SKB_FIELD_NAMES = tuple(f.name for f in SKB_FIELDS)
# model.XDP_FIELDS as codec walks them: (attribute, JSON path, kind)
_XDP_PLACES = tuple((f.name, tuple(f.at.split(".")), f.kind) for f in XDP_FIELDS)
# the objects printed only when one of their attributes is set (xdp_tx: read_len)
_XDP_GATES = tuple((f.name, f.at.split(".")[0]) for f in XDP_FIELDS if f.gate)


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


def frag_to_dict(f: Frag) -> dict[str, Any]:
    return {"page": f.page, "offset": f.offset, "size": f.size, "truesize": f.truesize}


def skb_to_dict(s: Skb) -> dict[str, Any]:
    """The skb's output fields (``model.SKB_FIELDS``, in their order), then its frags."""
    out: dict[str, Any] = {name: getattr(s, name) for name in SKB_FIELD_NAMES}
    out["frags"] = [frag_to_dict(f) for f in s.frags]
    out["frag_list"] = [
        {
            "len": fl.len,
            "truesize": fl.truesize,
            "nr_frags": len(fl.frags),
            "frags": [frag_to_dict(f) for f in fl.frags],
        }
        for fl in s.frag_list
    ]
    return out


def xdp_to_dict(x: XdpRun) -> dict[str, Any]:
    """``xdp`` (always, with a program) and ``xdp_tx`` (when a read() returns the frame): each
    field where ``model.XDP_FIELDS`` puts it."""
    skipped = {top for name, top in _XDP_GATES if getattr(x, name) is None}
    out: dict[str, Any] = {}
    for name, (*parents, key), kind in _XDP_PLACES:
        if parents[0] in skipped:
            continue
        node = out
        for parent in parents:
            node = node.setdefault(parent, {})
        value = getattr(x, name)
        node[key] = (dict(value) if value else None) if kind == "counters?" else value
    return out


def trace_to_dict(t: Trace) -> dict[str, Any]:
    return {
        "schema": t.schema,
        "kernel": kernel_to_dict(t.kernel),
        "input": dict(t.input),
        "path": t.path,
        "outcome": t.outcome,
        "reason": None if t.reason is None else str(t.reason),
        "errno": t.errno,
        "counter": t.counter,
        "refused_by": None
        if t.refused_by is None
        else {
            "function": t.refused_by.function,
            "source": t.refused_by.source,
            "test": t.refused_by.test,
            "reason": t.refused_by.reason,
            "because": list(t.refused_by.because),
        },
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
        **({} if t.xdp is None else xdp_to_dict(t.xdp)),
    }


def error_to_dict(message: str, exit_code: int, hint: str | None = None) -> dict[str, Any]:
    return {"schema": ERROR_SCHEMA, "error": message, "hint": hint, "exit_code": exit_code}
