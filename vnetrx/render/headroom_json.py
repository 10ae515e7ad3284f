"""JSON for ``vnetrx headroom`` (schema vnetrx.headroom/1). Stdlib only: does not import rich.

Schema ledger:
  vnetrx.headroom/1  first version: schema, kernel, input, device, steps, results (payload,
                     needed_headroom, hh_len, hdr_len, skbs, sg_entries_total, ring_slots_total,
                     steps), notes, compare (the same for the second kernel, or null).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from vnetrx.codec import kernel_to_dict
from vnetrx.model import Step
from vnetrx.paths.tx.headroom import HeadroomReport, PayloadResult, TxSkb, proto_name
from vnetrx.render.json_out import dumps


def _steps(steps: tuple[Step, ...]) -> list[dict[str, Any]]:
    return [
        {
            "function": s.function,
            "source": s.source,
            "summary": s.summary,
            "values": dict(s.values),
            "because": list(s.because),
        }
        for s in steps
    ]


def _skb(s: TxSkb) -> dict[str, Any]:
    return {
        "len": s.len,
        "headroom": s.headroom,
        "can_push": s.can_push,
        "sg_entries": s.sg_entries,
        "ring_slots": s.ring_slots,
        "indirect_bytes": s.indirect_bytes,
        "headlen": s.headlen,
        "nr_frags": s.nr_frags,
        "gso": s.gso,
        "alloc": s.alloc,
        "head": s.head,
        "head_size": s.head_size,
        "truesize": s.truesize,
        "regions": [
            {"name": r.name, "offset": r.offset, "size": r.size, "note": r.note} for r in s.regions
        ],
    }


def _result(r: HeadroomReport, p: PayloadResult) -> dict[str, Any]:
    return {
        "payload": p.payload,
        "needed_headroom": r.device.needed_headroom,
        "hh_len": r.device.hh_len,
        "hdr_len": r.device.hdr_len,
        "skbs": [_skb(s) for s in p.skbs],
        "sg_entries_total": p.sg_entries_total,
        "ring_slots_total": p.ring_slots_total,
        "steps": _steps(p.steps),
    }


def _kernel_part(r: HeadroomReport) -> dict[str, Any]:
    return {
        "kernel": kernel_to_dict(r.kernel),
        "device": asdict(r.device),
        "max_tcp_header": r.max_tcp_header,
        "steps": _steps(r.steps),
        "results": [_result(r, p) for p in r.results],
        "notes": list(r.notes),
    }


def report_to_dict(r: HeadroomReport, compare: HeadroomReport | None = None) -> dict[str, Any]:
    s = r.setup
    out: dict[str, Any] = {
        "schema": r.schema,
        "kernel": kernel_to_dict(r.kernel),
        "input": {
            "proto": "tcp" if s.tcp else "udp",
            "ipv6": s.ipv6,
            "label": proto_name(s),
            "payloads": list(s.payloads),
            "mtu": s.mtu,
            "mergeable": s.mergeable,
            "hdr_len": s.hdr_len,
            "indirect": s.indirect,
            "ufo": s.ufo,
            "any_layout": s.any_layout,
            "config": r.kernel.build.config,
        },
    }
    out.update(_kernel_part(r))  # "kernel" keeps its place; device … notes follow
    out["compare"] = None if compare is None else _kernel_part(compare)
    return out


def render_headroom(r: HeadroomReport, compare: HeadroomReport | None = None) -> str:
    return dumps(report_to_dict(r, compare))
