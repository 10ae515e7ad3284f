"""``vnetrx decode --json``: a Decoded as the vnetrx.decode/1 document (see the schema ledger in
vnetrx/decode.py; the JSON Schema is vnetrx/schemas.py's DECODE)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vnetrx.codec import kernel_to_dict
from vnetrx.paths.tun.vnet_hdr import Verdict
from vnetrx.paths.virtio_net_hdr import GSO_ECN

if TYPE_CHECKING:
    from vnetrx.decode.csum import CsumPlace
    from vnetrx.decode.document import Decoded
    from vnetrx.decode.frame import Layer

DECODE_SCHEMA = "vnetrx.decode/1"


def decoded_to_dict(d: Decoded) -> dict[str, Any]:
    return {
        "schema": DECODE_SCHEMA,
        "kernel": kernel_to_dict(d.kernel),
        "input": {
            "hdr_len": d.hdr_len,
            "header_hex": d.raw_header.hex(),
            "frame_bytes": 0 if d.frame is None else len(d.frame),
            "frame_len": d.frame_len,
        },
        "header": _header(d),
        "frame": None if d.frame is None else _frame(d.frame, d.layers),
        "csum": None if d.csum is None else _csum(d.csum),
        "validation": None if d.verdict is None else _validation(d.verdict),
        "notes": list(d.notes),
    }


def _header(d: Decoded) -> dict[str, Any]:
    return {
        "struct": d.struct,
        "size": d.hdr_len,
        "fields": [
            {
                "name": f.name,
                "offset": f.offset,
                "size": f.size,
                "value": f.value,
                "meaning": f.meaning,
            }
            for f in d.fields
        ],
        "flags": {
            "value": d.hdr.flags,
            "names": list(d.flag_names),
            "unknown": d.flags_unknown,
        },
        "gso_type": {
            "value": d.hdr.gso_type,
            "name": d.gso_name,
            "ecn": bool(d.hdr.gso_type & GSO_ECN),
        },
    }


def _frame(frame: bytes, layers: tuple[Layer, ...]) -> dict[str, Any]:
    return {
        "bytes": len(frame),
        "layers": [
            {
                "name": x.name,
                "offset": x.offset,
                "length": x.length,
                "summary": x.summary,
                "fields": [
                    {"name": f.name, "offset": f.offset, "size": f.size, "value": f.value}
                    for f in x.fields
                ],
            }
            for x in layers
        ],
    }


def _csum(c: CsumPlace) -> dict[str, Any]:
    return {
        "start": c.start,
        "offset": c.offset,
        "start_in": c.start_in,
        "field": c.field,
        "field_at": c.field_at,
        "explanation": c.explanation,
    }


def _validation(v: Verdict) -> dict[str, Any]:
    return {
        "modelled": v.modelled,
        "accepted": v.accepted,
        "errno": v.errno,
        "function": v.function,
        "reason": v.reason,
        "hdr_len": v.hdr_len,
        "gso": v.gso,
        "checks": [
            {
                "source": c.source,
                "function": c.function,
                "test": c.test,
                "ok": c.ok,
                "detail": c.detail,
                "because": list(c.because),
            }
            for c in v.checks
        ],
    }
