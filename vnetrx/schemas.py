"""JSON Schemas (draft 2020-12) of every ``--json`` output, as Python dicts (the skb fields from
vnetrx.model.SKB_FIELDS, the structured result records' (XDP, vhost, refused_by) from
RESULT_RECORDS, paths and outcomes from its enums).

``vnetrx schema NAME`` prints one; tests/test_schemas.py validates real output against each.
Top-level objects are closed (``additionalProperties: false``): a new key needs a schema edit
here and a line in the producer's schema ledger. Nested objects that carry open-ended data
(``values``, ``input``) stay open.
"""

from __future__ import annotations

from typing import Any

from vnetrx.model import (
    GRO_SCHEMA,
    RESULT_RECORDS,
    RESULT_STRINGS,
    SKB_FIELDS,
    TRACE_SCHEMA,
    GroFlush,
    GroHow,
    GroResult,
    Outcome,
    Path,
    RecordField,
    ResultField,
    ResultRecord,
)

DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE = "https://vnetrx.invalid/schema/"

_INT: dict[str, Any] = {"type": "integer"}
_NAT: dict[str, Any] = {"type": "integer", "minimum": 0}
_STR: dict[str, Any] = {"type": "string"}
_BOOL: dict[str, Any] = {"type": "boolean"}
_SCALAR: dict[str, Any] = {"type": ["integer", "string", "boolean", "null"]}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _obj(
    props: dict[str, Any], *, closed: bool = True, optional: tuple[str, ...] = ()
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": [k for k in props if k not in optional],
    }
    if closed:
        out["additionalProperties"] = False
    return out


def _arr(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


KERNEL = _obj(
    {
        "name": _STR,
        "source": _STR,
        "arch": {"enum": ["x86_64", "arm64"]},
        "page_size": _NAT,
        "l1_cache_bytes": _NAT,
        "max_skb_frags": _NAT,
        "config": _STR,
        "changes": _arr(_STR),
    }
)
STEP = _obj(
    {
        "function": _STR,
        "source": _STR,
        "summary": _STR,
        "values": {"type": "object", "additionalProperties": _SCALAR},
        "because": _arr(_STR),
    }
)
REGION = _obj({"name": _STR, "offset": _NAT, "size": _NAT, "note": _STR})
BUFFER = _obj(
    {"size": _NAT, "page": _STR, "page_offset": _NAT, "used": _NAT, "regions": _arr(REGION)},
    optional=("regions",),
)
FRAG = _obj({"page": _STR, "offset": _NAT, "size": _NAT, "truesize": _NAT})
_KINDS: dict[str, dict[str, Any]] = {
    "nat": _NAT, "nat?": _nullable(_NAT), "str": _STR, "str?": _nullable(_STR), "strs": _arr(_STR),
    "bool": _BOOL,
}


def _field(kind: str, values: tuple[str, ...]) -> dict[str, Any]:
    """The schema of a model field of ``kind`` (model.RecordField: ``values`` name an enum's
    members, or a "counters?" object's keys)."""
    if kind == "counters?":
        return _nullable(_obj(dict.fromkeys(values, _NAT)))
    if values:
        enum = {"enum": list(values)}
        return _nullable(enum) if kind.endswith("?") else enum
    return _KINDS[kind]


def _nested(fields: list[tuple[list[str], dict[str, Any]]]) -> dict[str, Any]:
    """Objects nested as the fields' dotted places say, in the order they come: {key: schema}."""
    out: dict[str, Any] = {}
    groups: dict[str, list[tuple[list[str], dict[str, Any]]]] = {}
    for (key, *rest), body in fields:
        if rest:
            out.setdefault(key, None)
            groups.setdefault(key, []).append((rest, body))
        else:
            out[key] = body
    for key, inner in groups.items():
        out[key] = _obj(_nested(inner))
    return out


SKB = _obj(
    {
        **{f.name: _KINDS[f.kind] for f in SKB_FIELDS},
        "frags": _arr(FRAG),
        # skbs chained on skb_shinfo(head)->frag_list (receive_mergeable past MAX_SKB_FRAGS)
        "frag_list": _arr(
            _obj({"len": _NAT, "truesize": _NAT, "nr_frags": _NAT, "frags": _arr(FRAG)})
        ),
    },
)
COST = _obj({"allocations": _NAT, "bytes_copied": _NAT, "frags": _NAT})

def _record_parts(fields: tuple[RecordField, ...]) -> dict[str, Any]:
    """A structured record's objects (model.RESULT_RECORDS' tables), nested as the fields'
    places say: {key: schema}."""
    return _nested([(f.at.split("."), _nullable(_obj(_record_parts(f.table.fields)))
                     if f.table is not None else _field(f.kind, f.values)) for f in fields])


def _result_parts(r: ResultRecord) -> dict[str, Any]:
    """The trace document's keys of one structured result field (null allowed unless it is
    optional: an optional one is absent when unset)."""
    parts = _record_parts(r.table.fields)
    return parts if r.optional else {key: _nullable(body) for key, body in parts.items()}


_RECORD_PARTS = {r.name: _result_parts(r) for r in RESULT_RECORDS}
# ``xdp`` and ``xdp_tx``, present only when a program is attached
XDP_RUN = _RECORD_PARTS["xdp"]["xdp"]
# ``vhost``, present only on path vhost-tx
VHOST_TX = _RECORD_PARTS["vhost"]["vhost"]
_OUTCOMES = [o.value for o in Outcome]


def _result_string(f: ResultField) -> dict[str, Any]:
    """A string result field (model.RESULT_STRINGS): one of its values, or any string."""
    one = {"enum": list(f.values)} if f.values else _STR
    return _nullable(one) if f.kind.endswith("?") else one


_OPTIONAL_PARTS = {key: body for r in RESULT_RECORDS if r.optional
                   for key, body in _RECORD_PARTS[r.name].items()}
_COUNTER = _result_string(next(f for f in RESULT_STRINGS if f.name == "counter"))
TRACE = _obj(
    {
        "schema": {"const": TRACE_SCHEMA},
        "kernel": KERNEL,
        "input": {"type": "object", "additionalProperties": _SCALAR},
        **{f.name: _result_string(f) for f in RESULT_STRINGS},
        **{key: body for r in RESULT_RECORDS if not r.optional
           for key, body in _RECORD_PARTS[r.name].items()},
        "steps": _arr(STEP),
        "buffer": _nullable(BUFFER),
        "buffers": _arr(BUFFER),
        "skb": _nullable(SKB),
        "cost": _nullable(COST),
        "notes": _arr(_STR),
        **_OPTIONAL_PARTS,
    },
    optional=tuple(_OPTIONAL_PARTS),
)

_DIFF_STEP = _obj(
    {
        "index": _NAT,
        "function": _STR,
        "source": _STR,
        "summary": _STR,
        "values": {"type": "object", "additionalProperties": _SCALAR},
        "because": _arr(_STR),
    }
)
DIFF = _obj(
    {
        "schema": {"const": "vnetrx.diff/1"},
        "same": _BOOL,
        "results_same": _BOOL,
        "first_difference": _nullable(
            _obj({"a": _nullable(_DIFF_STEP), "b": _nullable(_DIFF_STEP)})
        ),
        "fields": _arr(_obj({"field": _STR, "a": {}, "b": {}})),
        "a": TRACE,
        "b": TRACE,
    }
)

_TX_SKB = _obj(
    {
        "len": _NAT,
        "headroom": _INT,
        "can_push": _BOOL,
        "sg_entries": _NAT,
        "ring_slots": _NAT,
        "indirect_bytes": _NAT,
        "headlen": _NAT,
        "nr_frags": _NAT,
        "gso": _nullable(_STR),
        "alloc": _NAT,
        "head": _STR,
        "head_size": _NAT,
        "truesize": _NAT,
        "regions": _arr(REGION),
    },
    closed=False,
)
_HEADROOM_PART = {
    "kernel": KERNEL,
    "device": _obj(
        {
            "hdr_len": _NAT,
            "header": _STR,
            "any_header_sg": _BOOL,
            "needed_headroom": _NAT,
            "hard_header_len": _NAT,
            "hh_len": _NAT,
            "ufo": _BOOL,
        },
        closed=False,
    ),
    "max_tcp_header": _nullable(_NAT),
    "steps": _arr(STEP),
    "results": _arr(
        _obj(
            {
                "payload": _NAT,
                "needed_headroom": _NAT,
                "hh_len": _NAT,
                "hdr_len": _NAT,
                "skbs": _arr(_TX_SKB),
                "sg_entries_total": _NAT,
                "ring_slots_total": _NAT,
                "steps": _arr(STEP),
            }
        )
    ),
    "notes": _arr(_STR),
}
HEADROOM = _obj(
    {
        "schema": {"const": "vnetrx.headroom/1"},
        "input": _obj(
            {
                "proto": {"enum": ["udp", "tcp"]},
                "ipv6": _BOOL,
                "label": _STR,
                "payloads": _arr(_NAT),
                "mtu": _NAT,
                "mergeable": _BOOL,
                "hdr_len": _nullable(_NAT),
                "indirect": _BOOL,
                "ufo": _BOOL,
                "any_layout": _BOOL,
                "config": _STR,
            }
        ),
        **_HEADROOM_PART,
        "compare": _nullable(_obj(_HEADROOM_PART)),
    }
)

LAYOUT = _obj(
    {
        "schema": {"const": "vnetrx.layout/1"},
        "name": _STR,
        "size": _NAT,
        "members": _arr(
            _obj(
                {
                    "name": _STR,
                    "type": _STR,
                    "offset": _NAT,
                    "size": _NAT,
                    "bit_offset": _NAT,
                    "bit_size": _NAT,
                },
                optional=("bit_offset", "bit_size"),
            )
        ),
        "holes": _arr(_obj({"offset": _NAT, "size": _NAT})),
    }
)
LAYOUT_CHECK = _obj(
    {
        "schema": {"const": "vnetrx.layout-check/1"},
        "btf": _STR,
        "structs": {
            "type": "object",
            "additionalProperties": _arr(_obj({"member": _STR, "ours": _STR, "kernel": _STR})),
        },
    }
)

LAYOUT_LIST = _obj(
    {
        "schema": {"const": "vnetrx.layout-list/1"},
        "source": _STR,  # "vnetrx", or the BTF file read
        "structs": _arr(
            _obj(
                {
                    "name": _STR,
                    "kind": {"enum": ["struct", "union"]},
                    "size": _NAT,
                    "source": _STR,  # vnetrx's own: the kernel file that defines it
                },
                optional=("source",),
            )
        ),
    }
)

KERNELS = _obj(
    {
        "schema": {"const": "vnetrx.kernels/1"},
        "series": _arr(_obj({"series": _STR, "default": _STR, "why": _STR})),
        "changes": _nullable(
            _arr(
                _obj(
                    {
                        "key": _STR,
                        "subject": _STR,
                        "commit": {"type": "string", "pattern": "^([0-9a-f]{12})?$"},
                        "since": _nullable(_STR),
                        "until": _nullable(_STR),
                        "backports": _arr(_STR),
                        # stable windows read release by release: first..until (until excluded)
                        "stable": _arr(_obj({"first": _STR, "until": _nullable(_STR)})),
                        "summary": _STR,
                        "note": _STR,
                    }
                )
            )
        ),
    }
)

VERIFY = _obj(
    {
        "schema": {"const": "vnetrx.verify/1"},
        "kernel": KERNEL,
        "frames": _arr(
            _obj(
                {
                    "frame_len": _NAT,
                    "options": {"type": "object", "additionalProperties": _SCALAR},
                    "match": _BOOL,
                    "predicted": {"type": "object", "additionalProperties": _SCALAR},
                    "observed": _nullable({"type": "object", "additionalProperties": _SCALAR}),
                    "fields": {"type": "object", "additionalProperties": _BOOL},
                }
            )
        ),
        "matched": _NAT,
        "total": _NAT,
        "interrupted": {"const": True},  # only when Ctrl-C/SIGTERM stopped the run
        "planned": _NAT,  # ... after "total" of this many writes
    },
    optional=("interrupted", "planned"),
)

_CHECK = _obj(
    {
        "source": _STR,
        "function": _STR,
        "test": _STR,
        "ok": _BOOL,
        "detail": _STR,
        "because": _arr(_STR),
    }
)
DECODE = _obj(
    {
        "schema": {"const": "vnetrx.decode/1"},
        "kernel": KERNEL,
        "input": _obj(
            {
                "hdr_len": {"enum": [10, 12, 20, 24]},
                "header_hex": {"type": "string", "pattern": "^([0-9a-f]{2})+$"},
                "frame_bytes": _NAT,
                "frame_len": _nullable(_NAT),
            }
        ),
        "header": _obj(
            {
                "struct": _STR,
                "size": {"enum": [10, 12, 20, 24]},
                "fields": _arr(
                    _obj(
                        {
                            "name": _STR,
                            "offset": _NAT,
                            "size": _NAT,
                            "value": _NAT,
                            "meaning": _STR,
                        }
                    )
                ),
                "flags": _obj({"value": _NAT, "names": _arr(_STR), "unknown": _NAT}),
                "gso_type": _obj({"value": _NAT, "name": _STR, "ecn": _BOOL}),
            }
        ),
        "frame": _nullable(
            _obj(
                {
                    "bytes": _NAT,
                    "layers": _arr(
                        _obj(
                            {
                                "name": {
                                    "enum": [
                                        "ethernet",
                                        "vlan",
                                        "ipv4",
                                        "ipv6",
                                        "ipv6-ext",
                                        "tcp",
                                        "udp",
                                        "payload",
                                    ]
                                },
                                "offset": _NAT,
                                "length": _NAT,
                                "summary": _STR,
                                "fields": _arr(
                                    _obj(
                                        {
                                            "name": _STR,
                                            "offset": _NAT,
                                            "size": _NAT,
                                            "value": {"type": ["integer", "string"]},
                                        }
                                    )
                                ),
                            }
                        )
                    ),
                }
            )
        ),
        "csum": _nullable(
            _obj(
                {
                    "start": _NAT,
                    "offset": _NAT,
                    "start_in": _STR,
                    "field": _nullable(_STR),
                    "field_at": _NAT,
                    "explanation": _STR,
                }
            )
        ),
        "validation": _nullable(
            _obj(
                {
                    "modelled": _BOOL,
                    "accepted": _nullable(_BOOL),
                    "errno": _nullable({"const": "EINVAL"}),
                    "function": _nullable(_STR),
                    "reason": _nullable(_STR),
                    "hdr_len": _nullable(_NAT),
                    "gso": _nullable(_BOOL),
                    "checks": _arr(_CHECK),
                }
            )
        ),
        "notes": _arr(_STR),
    }
)

ERROR = _obj(
    {
        "schema": {"const": "vnetrx.error/1"},
        "error": _STR,
        "hint": _nullable(_STR),
        "exit_code": {"enum": [1, 2, 130]},  # 130: Ctrl-C/SIGTERM before there was a result
        "interrupted": {"const": True},  # only then
    },
    optional=("interrupted",),
)

SWEEP_ROW = _obj(
    {
        "schema": {"const": "vnetrx.sweep-row/1"},
        "frame_len": _NAT,
        "kernel": _STR,
        "outcome": {"enum": _OUTCOMES},
        "reason": _nullable(_STR),  # a drop reason, or the errno of a failed tap write
        # the skb fields sweep rows carry (model.SKB_FIELDS): null on a drop or a failed write
        **{f.name: _nullable(_KINDS[f.kind]) for f in SKB_FIELDS if f.row},
        "buffers": _NAT,
        "cost": _nullable(COST),
    }
)
SWEEP = _obj(
    {
        "schema": {"const": "vnetrx.sweep/1"},
        "path": {"enum": ["virtio", "tap", "vhost-tx"]},
        "lengths": _NAT,
        "kernels": _arr(_STR),
        "ranges": _arr(
            _obj(
                {
                    "kernel": _STR,
                    "first": _NAT,
                    "last": _NAT,
                    "count": _NAT,
                    "outcome": {"enum": _OUTCOMES},
                    "reason": _nullable(_STR),
                    "what": _STR,
                    "truesize": _nullable(_NAT),
                    "nr_frags": _nullable(_NAT),
                    "allocations": _nullable(_NAT),
                    "buffers": _NAT,
                }
            )
        ),
        "interrupted": {"const": True},  # only when Ctrl-C/SIGTERM stopped the run early
    },
    optional=("interrupted",),
)

_POSTED = _obj({"seq": _NAT, "page": _STR, "offset": _NAT, "len": _NAT, "fill": _NAT})
_FILL = _obj(
    {
        "when": _STR,
        "after_poll": _NAT,
        "ewma": _nullable(_NAT),
        "buf_len": _NAT,
        "count": _NAT,
        "buffers": _arr(_POSTED),
    }
)
_RING = _obj(
    {
        "ewma": _nullable(_NAT),
        "mergeable_rx_buffer_size": _nullable(_NAT),
        "allocator": _STR,
        "page": _nullable(_STR),
        "offset": _NAT,
        "page_size": _NAT,
        "posted": _NAT,
        "num_free": _NAT,
        "posted_lens": _arr({"type": "array", "items": _NAT, "minItems": 2, "maxItems": 2}),
        "next_buffer": _nullable(_POSTED),
        "polls": _NAT,
        "fills": _NAT,
    }
)
# One frame of vnetrx replay: an element of "frames", and each line of --jsonl.
REPLAY_FRAME = _obj(
    {
        "index": _NAT,
        "frame_len": _NAT,
        "poll": _nullable(_NAT),
        "buffers": _arr(_POSTED),
        "ewma_before": _nullable(_NAT),
        "ewma_after": _nullable(_NAT),
        "trace": TRACE,
        "refill": _nullable(_FILL),
        # null in big mode (page chains from rq->pages: no page_frag ring is followed)
        "ring": _nullable(_RING),
    }
)
# Each --jsonl line of vnetrx replay (without --detail): one compact row per frame. Big mode
# (no MRG_RXBUF; guest GSO or an MTU above 1500): "buffers" is [] (each frame's buffer is a page
# chain of its own from rq->pages, no page_frag page and offset), "ewma" and "refill" null.
REPLAY_ROW = _obj(
    {
        "schema": {"const": "vnetrx.replay-row/1"},
        "index": _NAT,
        "frame_len": _NAT,
        "poll": _nullable(_NAT),
        "buffers": _arr({"type": "array", "prefixItems": [_STR, _NAT, _NAT], "minItems": 3,
                         "maxItems": 3}),
        # a replayed frame: virtio-net's outcomes (no alloc_skb), the program attached before
        # the first frame (no error)
        "outcome": {"enum": [o for o in _OUTCOMES if o not in (Outcome.ALLOC_SKB,
                                                                Outcome.ERROR)]},
        "reason": _nullable(_STR),
        "counter": _COUNTER,
        # the skb fields sweep rows carry (model.SKB_FIELDS): null on a drop
        **{f.name: _nullable(_KINDS[f.kind]) for f in SKB_FIELDS if f.row},
        "allocations": _nullable(_NAT),
        "bytes_copied": _nullable(_NAT),
        "frag_list": _NAT,
        "ewma": _nullable(_NAT),
        "refill": _nullable(_NAT),
    }
)
REPLAY_SUMMARY = _obj(
    {
        "schema": {"const": "vnetrx.replay-summary/1"},
        "frames": _NAT,
        "frame_bytes": _NAT,
        "skbs": _NAT,
        "drops": {"type": "object", "additionalProperties": _NAT},
        "counters": {"type": "object", "additionalProperties": _NAT},
        "build_skb": _NAT,
        "copy": _NAT,
        "build_skb_share": _nullable({"type": "number", "minimum": 0, "maximum": 1}),
        "bytes_copied": _NAT,
        "allocations": _NAT,
        "buffers": _NAT,  # big mode: the pages of each received frame's chain
        "pages": _nullable(_NAT),  # null in big mode: which rq->pages pages is not followed
        "truesize": _obj({"sum": _NAT, "min": _nullable(_NAT), "median": _nullable(_NAT),
                          "p99": _nullable(_NAT), "max": _nullable(_NAT)}),
        "truesize_per_byte": _nullable({"type": "number", "minimum": 0}),
        "frag_list_skbs": _NAT,
        "interrupted": {"const": True},  # only when Ctrl-C/SIGTERM stopped the run early
    },
    optional=("interrupted",),
)
SWEEP_SUMMARY = _obj(
    {
        "schema": {"const": "vnetrx.sweep-summary/1"},
        "path": {"enum": ["virtio", "tap", "vhost-tx"]},
        "lengths": _NAT,
        "kernels": {"type": "object", "additionalProperties": REPLAY_SUMMARY},
        "interrupted": {"const": True},  # only when Ctrl-C/SIGTERM stopped the run early
    },
    optional=("interrupted",),
)
REPLAY = _obj(
    {
        "schema": {"const": "vnetrx.replay/1"},
        "kernel": KERNEL,
        "input": _obj(
            {
                "source": _STR,
                "frames": _NAT,
                "mergeable": _BOOL,
                "guest_gso": _BOOL,
                "mtu": _NAT,
                "hdr_len": _NAT,
                "ring_size": _NAT,
                "batch": _NAT,
                "budget": _NAT,
                "refill_threshold": _NAT,
            }
        ),
        "min_buf_len": _nullable(_NAT),
        # big mode (no MRG_RXBUF; guest GSO or an MTU above 1500): null, as each frame's ring,
        # refill and EWMA (its page chains come from rq->pages and are not followed)
        "initial_fill": _nullable(_FILL),
        "frames": _arr(REPLAY_FRAME),
        "final_ring": _nullable(_RING),
        "notes": _arr(_STR),
        "interrupted": {"const": True},  # only when Ctrl-C/SIGTERM stopped the run early
    },
    optional=("interrupted",),
)

_OBSERVED_FIELDS = {"type": "object", "additionalProperties": _SCALAR}
OBSERVE = _obj(
    {
        "schema": {"const": "vnetrx.observe/1"},
        "device": _STR,
        "driver": {"enum": ["virtio_net", "tun"]},
        "mode": {"enum": ["small", "big", "mergeable", "tap"]},
        "features": _arr(_STR),
        "mtu": _NAT,
        "hdr_len": _nullable(_NAT),
        "mergeable_rx_buffer_size": _nullable(_NAT),
        "source": {"enum": ["device", "lab log", "options"]},
        "release": _nullable(_STR),
        "kernel": _STR,
        # a saved trace: its format (detected), the probe point read and what that point sees
        "capture": _nullable(_obj({
            "format": {"enum": ["tracefs", "perf-script", "perf-json", "pwru", "pwru-json",
                                "retis", "bpftrace", "lab"]},
            "probe": _nullable(_STR),
            "stage": _nullable({"enum": ["pre-gro", "no-gro", "post-gro"]}),
        })),
        "match": _BOOL,
        "counts": _obj(
            {"exact": _NAT, "consistent": _NAT, "mismatch": _NAT, "unmodelled": _NAT,
             "unchecked": _NAT}
        ),
        "frames": _arr(
            _obj(
                {
                    "frame_len": _NAT,
                    "path": _STR,
                    "match": _nullable(_BOOL),
                    # unchecked: nothing the capture records could be compared (only len, or
                    # an skb caught after GRO that may be an aggregate): never agreement
                    "agreement": {"enum": ["exact", "consistent", "mismatch", "unmodelled",
                                           "unchecked"]},
                    "predicted": _OBSERVED_FIELDS,
                    "observed": _OBSERVED_FIELDS,
                    "note": _nullable(_STR),
                    "not_in_capture": _arr(_STR),  # fields the capture's tool does not record
                    "not_compared": _arr(_STR),  # recorded, but changed before the probe point
                }
            )
        ),
        "notes": _arr(_STR),
        "interrupted": {"const": True},  # only when Ctrl-C/SIGTERM ended a live run
    },
    optional=("interrupted",),
)

_GRO_SKB = _obj({"len": _NAT, "data_len": _NAT, "headlen": _NAT, "truesize": _NAT,
                 "nr_frags": _NAT, "frag_list": _NAT, "gso_size": _NAT, "gso_segs": _NAT,
                 "gso_type": _NAT, "ip_summed": _NAT, "frames": _arr(_NAT)})
OBSERVE_GRO = _obj(
    {
        "schema": {"const": "vnetrx.observe-gro/1"},
        "device": _STR,
        "kernel": _STR,
        "napi": _obj({
            "gro_flush_timeout": _nullable(_NAT), "napi_defer_hard_irqs": _nullable(_NAT),
            "threaded": _nullable(_NAT), "hz": _nullable(_NAT), "busy_read": _nullable(_NAT),
            "busy_poll": _nullable(_NAT), "gro": _nullable(_BOOL), "rps": _nullable(_BOOL),
        }),
        "match": _BOOL,
        "counts": _obj({
            "inputs": _NAT, "outputs": _NAT, "polls": _NAT, "compared": _NAT, "matches": _NAT,
            "mismatches": _NAT, "skipped_polls": _NAT, "skipped_inputs": _NAT,
            "lost_records": _NAT,
        }),
        "skbs": _arr(_obj({
            "poll": _NAT,
            "frames": _arr(_NAT),
            "match": _BOOL,
            "flush": _nullable(_STR),
            "predicted": _nullable(_GRO_SKB),
            "observed": _nullable(_GRO_SKB),
            "differ": _arr({"enum": ["len", "data_len", "headlen", "truesize", "nr_frags",
                                     "frag_list", "gso_size", "gso_segs", "gso_type",
                                     "ip_summed", "frames", "order", "observed",
                                     "predicted"]}),
        })),
        "skipped": _arr(_obj({"poll": _NAT, "inputs": _NAT, "reason": _STR})),
        "notes": _arr(_STR),
        "interrupted": {"const": True},  # only when Ctrl-C/SIGTERM ended the recording
    },
    optional=("interrupted",),
)

_LAB_MODES = ["small", "big", "mergeable", "big-gso", "mergeable-gso"]
LAB = _obj(
    {
        "schema": {"const": "vnetrx.lab/1"},
        "kernel": _STR,
        "release": _STR,
        "mode": {"enum": _LAB_MODES},
        "features": _arr(_STR),
        "mtu": _NAT,
        "hdr_len": _NAT,
        "mergeable_rx_buffer_size": _nullable(_NAT),
        "kprobe": _BOOL,
        "match": _BOOL,
        "rx_length_errors": _obj({"predicted": _NAT, "observed": _nullable(_NAT)}),
        "rx_frame_errors": _obj({"predicted": _NAT, "observed": _nullable(_NAT)}),
        "boot_seconds": _nullable({"type": "number", "minimum": 0}),
        "total_seconds": _nullable({"type": "number", "minimum": 0}),
        "frames": _arr(
            _obj(
                {
                    "frame_len": _NAT,
                    "buffer_index": _nullable(_NAT),
                    "match": _BOOL,
                    "predicted": _OBSERVED_FIELDS,
                    "observed": _nullable(_OBSERVED_FIELDS),
                    "mismatched": _arr(_STR),
                }
            )
        ),
        "notes": _arr(_STR),
        "xdp_attach": _obj({
            "match": _BOOL,
            "observed": _obj({"attach": _BOOL, "errno": _nullable(_STR),
                              "message": _nullable(_STR), "dmesg": _nullable(_STR)}),
            "predicted": _obj({"attach": _BOOL, "errno": _nullable(_STR),
                               "message": _nullable(_STR), "warnings": _arr(_STR)}),
            "device": {"type": "object", "additionalProperties": _SCALAR},
        }),
        "xdp": _obj({
            "action": {"enum": ["pass", "drop", "aborted", "tx", "redirect"]},
            "counters": _arr(_obj({"name": _STR, "predicted": _NAT,
                                   "observed": _nullable(_NAT)})),
            "transmitted": _obj({"predicted": _arr(_NAT), "observed": _nullable(_arr(_NAT))}),
        }),
    },
    optional=("xdp_attach", "xdp"),
)

# name → (schema id printed in the document's "schema" key, or None, schema body)
XDP_CHECK = _obj(
    {
        "schema": {"const": "vnetrx.xdp-check/1"},
        "kernel": KERNEL,
        "path": {"enum": ["virtio", "tap"]},
        "device": {"type": "object", "additionalProperties": _SCALAR},
        "attach": _BOOL,
        "errno": _nullable({"enum": ["EOPNOTSUPP", "EINVAL", "ENOMEM"]}),
        "message": _nullable(_STR),
        "warnings": _arr(_STR),
        "checks": _arr(_obj({"check": _STR, "source": _STR, "passed": _BOOL, "detail": _STR,
                             "because": _arr(_STR)})),
        "runs": _BOOL,
        "mtu_limit": _nullable(_NAT),
        "xdp_queue_pairs": _NAT,
        "effects": _arr(_obj({"what": _STR, "how": _STR})),
        "notes": _arr(_STR),
    }
)

# vnetrx trace --gro (vnetrx.flow, vnetrx.paths.gro)
_GRO_STEP = _obj({"frame": _NAT, "result": {"enum": [r.value for r in GroResult]},
                  "how": {"enum": [h.value for h in GroHow]}, "payload": _NAT,
                  "delta_truesize": _NAT, "len": _NAT, "truesize": _NAT, "nr_frags": _NAT,
                  "frag_list": _NAT})
GRO = _obj(
    {
        "schema": {"const": GRO_SCHEMA},
        "kernel": KERNEL,
        "input": {"type": "object", "additionalProperties": _SCALAR},
        "path": {"enum": [p.value for p in Path]},
        "limits": _obj({"max_skb_frags": _NAT, "gro_max_size": _NAT}),
        "segments": _arr(_obj({"frame": _NAT, "outcome": {"enum": _OUTCOMES},
                               "head_frag": _BOOL, "len": _NAT, "data_len": _NAT,
                               "headlen": _NAT, "truesize": _NAT, "nr_frags": _NAT})),
        "steps": _arr(_GRO_STEP),
        "delivered": _arr(_obj({"frames": _arr(_NAT),
                                "flush": {"enum": [f.value for f in GroFlush]},
                                "segs": _NAT, "skb": SKB})),
        "totals": _obj({"segments": _NAT, "skbs": _NAT, "payload": _NAT,
                        "truesize_before": _NAT, "truesize": _NAT,
                        "truesize_per_payload_byte": _nullable({"type": "number"})}),
        "notes": _arr(_STR),
    }
)

# vnetrx diff of two --gro flows (vnetrx.diff.diff_flows)
_FLOW_SEGMENT = _nullable(_obj({"frame": _NAT, "outcome": {"enum": _OUTCOMES},
                                "result": {"enum": [r.value for r in GroResult]},
                                "how": {"enum": [h.value for h in GroHow]}}))
GRO_DIFF = _obj(
    {
        "schema": {"const": "vnetrx.gro-diff/1"},
        "same": _BOOL,
        "first_difference": _nullable(_obj({"a": _FLOW_SEGMENT, "b": _FLOW_SEGMENT})),
        "fields": _arr(_obj({"field": _STR, "a": {}, "b": {}})),
        "a": GRO,
        "b": GRO,
    }
)

# an skb that left GRO in a lab guest, observed or predicted (vnetrx.lab.gro.FIELDS)
_LAB_GRO_SKB = _obj({
    **dict.fromkeys(("len", "data_len", "headlen", "truesize", "nr_frags", "frag_list",
                     "gso_size", "gso_segs", "gso_type", "ip_summed"), _NAT),
    "frames": _arr(_NAT),
    "poll": _nullable(_NAT),
})
LAB_GRO = _obj(
    {
        "schema": {"const": "vnetrx.lab-gro/1"},
        "kernel": _STR,
        "release": _STR,
        "mode": {"enum": ["mergeable", "mergeable-gso", "small", "big-gso", "big"]},
        "mtu": _nullable(_NAT),  # host_mtu offered (big mode), null: not offered
        "polls": _arr(_NAT),
        "match": _BOOL,
        "notes": _arr(_STR),
        "verdicts_differ": _arr(_obj({"input": _NAT, "observed": _nullable(_STR),
                                      "predicted": _nullable(_STR)})),
        "bursts": _arr(_obj({
            "name": _STR,
            "first": _NAT,
            "count": _NAT,
            "polls": _arr(_NAT),
            "match": _BOOL,
            "skbs": _arr(_obj({
                "index": _NAT,
                "match": _BOOL,
                "differ": _arr({"enum": ["len", "data_len", "headlen", "truesize", "nr_frags",
                                         "frag_list", "gso_size", "gso_segs", "gso_type",
                                         "ip_summed", "frames"]}),
                "observed": _nullable(_LAB_GRO_SKB),
                "predicted": _nullable(_LAB_GRO_SKB),
            })),
        })),
        "boot_s": {"type": "number", "minimum": 0},
        "total_s": {"type": "number", "minimum": 0},
    },
    optional=("boot_s", "total_s"),
)
# each --jsonl line of vnetrx replay --gro (codec.delivered_row)
REPLAY_GRO_ROW = _obj(
    {
        "schema": {"const": "vnetrx.replay-gro-row/1"},
        "poll": _NAT,
        "frames": _arr(_NAT),
        "segs": _NAT,
        "flush": {"enum": [f.value for f in GroFlush]},
        "len": _NAT,
        "data_len": _NAT,
        "headlen": _NAT,
        "truesize": _NAT,
        "nr_frags": _NAT,
        "frags": _arr(_NAT),
        "frag_list": _obj({"count": _NAT, "bytes": _NAT, "members": _arr(
            _obj({"len": _NAT, "truesize": _NAT, "nr_frags": _NAT}))}),
        "gso_size": _NAT,
        "gso_segs": _NAT,
        "gso_type": _NAT,
        "ip_summed": _NAT,
        "csum_start": _nullable(_NAT),
        "csum_offset": _nullable(_NAT),
    }
)

# vhost-net receive (paths/vhost/rx.py, render/vhost_rx.py): a row per packet handle_rx takes
# off the tap's ring; the lab's guest probe reads used / hdr / discarded
_HEX = {"type": "string", "pattern": "^([0-9a-f]{2})*$"}
_VHOST_GUEST = _obj(
    {
        "frame_len": _NAT,
        "outcome": {"enum": ["build_skb", "copy", "drop"]},
        "reason": _nullable(_STR),
        "buffers": _arr(_obj({"page": _STR, "offset": _NAT, "len": _NAT})),
        "skb": _nullable(_obj({
            "len": _NAT, "data_len": _NAT, "truesize": _NAT, "nr_frags": _NAT,
            "frag_list": _NAT, "ip_summed": _NAT, "csum_start": _nullable(_NAT),
            "csum_offset": _nullable(_NAT), "gso_size": _NAT, "gso_type": _NAT,
        })),
    }
)
VHOST_RX_ROW = _obj(
    {
        "schema": {"const": "vnetrx.vhost-rx-row/1"},
        "index": _NAT,
        "frame": _NAT,
        "segment": _nullable(_NAT),
        "segmented": _nullable({"enum": ["tap_no_tso", "tap_no_uso"]}),
        "len": _NAT,
        "vlan": _BOOL,
        "batch": _NAT,
        "run": _NAT,
        "sock_len": _NAT,
        "headcount": _NAT,
        "chains": _arr(_NAT),
        "used": _arr(_NAT),
        "used_elems": _arr(_NAT),
        "discarded": _BOOL,
        "reason": _nullable({"enum": ["overrun"]}),
        "hdr": _nullable(_HEX),
        "hdr_untouched": _NAT,
        "num_buffers": _nullable(_NAT),
        "done_idx": _NAT,
        "signal": _nullable({"enum": ["done_idx", "weight", "ring_empty"]}),
        "guest": _nullable(_VHOST_GUEST),
    },
    optional=("used_elems",),
)
VHOST_RX = _obj(
    {
        "schema": {"const": "vnetrx.vhost-rx/1"},
        "kernel": KERNEL,
        "input": {"type": "object"},
        "vhost": _obj({
            "mode": {"enum": ["small", "big", "mergeable"]},
            "hdr_len": {"enum": [10, 12]},
            "mtu": _NAT,
            "buf_len": _nullable(_NAT),
            "uniform_buffers": _BOOL,
            "tap_offload": _BOOL,
            "sock_hlen": {"enum": [10, 12]},
            "quota": _NAT,
            "chain_len": _nullable(_NAT),
            "set_num_buffers": _BOOL,
            "tap": _obj({"csum": _BOOL, "tso": _BOOL, "uso": _BOOL}),
        }),
        "packets": _arr(VHOST_RX_ROW),
        "delivered": _NAT,
        "discarded": _NAT,
        "signals": _NAT,
        "steps": _arr(STEP),
        "notes": _arr(_STR),
    }
)

SWEEP_GRO_ROW = _obj(
    {
        "schema": {"const": "vnetrx.sweep-gro-row/1"},
        "frame_len": _NAT,
        "kernel": {"type": "string"},
        "segments": _NAT,
        "skbs": _NAT,
        "aggregates": _NAT,
        "first_segs": _NAT,
        "first_len": _NAT,
        "first_nr_frags": _NAT,
        "first_frag_list": _NAT,
        "first_truesize": _NAT,
        "first_flush": {"enum": [f.value for f in GroFlush]},
        "payload": _NAT,
        "truesize_before": _NAT,
        "truesize_after": _NAT,
        "truesize_per_payload_byte": {"type": ["number", "null"], "minimum": 0},
    }
)

# verify gro's skb: vnetrx.live.verify_gro.FIELDS and the frames it carries
_GRO_SKB = _obj({**dict.fromkeys(("len", "data_len", "headlen", "truesize", "nr_frags",
                                  "gso_size", "gso_segs", "gso_type", "ip_summed", "csum_start",
                                  "csum_offset"), _NAT),
                 "frames": {"type": ["array", "null"], "items": _NAT}})
_GRO_SIDE = _obj({"skbs": _arr(_GRO_SKB), "verdicts": _arr({"type": "string"})})
VERIFY_GRO = _obj(
    {
        "schema": {"const": "vnetrx.verify-gro/1"},
        "kernel": {"type": "string"},
        "source": {"type": "string"},
        "cases": _arr(_obj({
            "name": {"type": "string"},
            "match": {"type": "boolean"},
            "difference": {"type": ["string", "null"]},
            "retries": _NAT,
            "deterministic": {"type": "boolean"},
            "kernel": _GRO_SIDE,
            "model": _GRO_SIDE,
        })),
        "summary": _obj({"cases": _NAT, "matched": _NAT, "planned": _NAT},
                        optional=("planned",)),
        "interrupted": {"const": True},
    },
    optional=("interrupted",),
)

_NUM: dict[str, Any] = {"type": "number"}
_ANY: dict[str, Any] = {}
_COUNTS = {"type": "object", "additionalProperties": _INT}
LAB_VHOST_TX = _obj({
    "case": _STR, "index": _NAT, "what": _STR, "len": _NAT, "l4": _nullable(_STR), "hdr": _STR,
    "sndbuf": _nullable(_NAT), "xdp": _nullable({"enum": ["pass"]}),
    "xdp_attach": _nullable(_STR),
    "path": _nullable({"enum": ["batch", "tun_get_user"]}), "call": _nullable(_NAT),
    "batch": _nullable(_NAT), "buflen": _nullable(_NAT),
    "buf_offset": _nullable(_NAT), "ret": _nullable(_INT), "outcome": {"enum": ["skb", "dropped", "error", "stall"]},
    "skb": _nullable(_obj(dict.fromkeys(("len", "data_len", "truesize", "nr_frags", "ip_summed",
                                         "gso_size", "gso_type", "protocol"), _NAT))),
    "freed": _arr(_STR), "stats": _COUNTS, "traced": _BOOL, "signals": _nullable(_NAT),
    # a boot with experimental_zcopytx=1 (lab vhost --zcopy): the chain's page offset, whether
    # zerocopy_sg_from_iter pinned the guest's pages, the ubuf completions (1 success, 0 the
    # frags were copied) and the used ring's descriptor ids in the order vhost added them
    "offset": _NAT, "zerocopy": _nullable(_BOOL), "completions": _arr(_NAT),
    "used_order": _arr(_NAT),
}, optional=("offset", "zerocopy", "completions", "used_order"))
LAB_VHOST_RX = _obj({
    "case": _STR, "what": _STR, "features": {"enum": ["mrg", "v1", "legacy"]},
    "mode": {"enum": ["mergeable", "neither"]}, "hdr_size": _NAT, "buf_len": _NAT,
    "nbufs": _NAT, "tap_offload": _BOOL, "late": _BOOL,
    "frames": _arr(_obj({"len": _NAT, "l4": _nullable(_STR), "hdr": _STR})),
    "sent": _arr(_INT),
    "packets": _arr(_obj({"used": _arr(_NAT), "hdr": _STR, "num_buffers": _nullable(_NAT),
                          "ids": _arr(_NAT)})),
    # in the order of the frames sent: what replay --path vhost-rx --jsonl prints, plus the
    # frame each packet belongs to (None: a packet no frame explains)
    "lines": _arr(_obj({"frame": _nullable(_NAT), "used": _arr(_NAT), "hdr": _STR,
                        "discarded": {"const": True}, "unexpected": {"const": True}},
                       optional=("used", "hdr", "discarded", "unexpected"))),
    "discarded_kmsg": _arr(_STR), "stats": _COUNTS, "signals": _nullable(_NAT),
})
LAB_VHOST_COMPARISON = _obj({
    "kernel": _STR, "compared": _NAT, "mismatches": _NAT,
    "results": _arr(_obj({
        "kind": {"enum": ["tx", "rx"]}, "case": _STR, "index": _nullable(_NAT), "match": _BOOL,
        "missing": _nullable(_STR),
        "checks": _arr(_obj({"name": _STR, "predicted": _ANY, "observed": _ANY, "ok": _BOOL})),
    })),
})
LAB_VHOST_KERNEL = _obj({
    "schema": {"const": "vnetrx.lab-vhost/1"},
    "kernel": _obj({"release": _STR, "version": _STR}),
    # lab vhost --zcopy: vhost_net's module parameter, and the guest's THP setting
    "experimental_zcopytx": {"const": 1}, "thp": _STR,
    "kvm": _BOOL, "vhost_net_loaded": _BOOL, "vhost_net_dev": _STR, "features_offered": _STR,
    "kprobes": {"type": "object", "additionalProperties": _BOOL}, "errors": _arr(_STR),
    "complete": _BOOL, "tx": _arr(LAB_VHOST_TX), "rx": _arr(LAB_VHOST_RX),
    "boot_s": _nullable(_NUM), "total_s": _nullable(_NUM),
    "comparison": _nullable(LAB_VHOST_COMPARISON),
}, optional=("experimental_zcopytx", "thp"))
LAB_VHOST = _obj({
    "schema": {"const": "vnetrx.lab-vhost-run/1"},
    "predictions": _BOOL,
    "notes": _arr(_STR),
    "kernels": _arr(LAB_VHOST_KERNEL),
})
VHOST_TX_ROW = _obj(
    {
        "schema": {"const": "vnetrx.vhost-tx-row/1"},
        "frame": _NAT,
        "len": _NAT,
        "road": {"enum": ["batch", "tun_get_user"]},
        "reason": {"enum": ["batched", "enospc", "sndbuf", "zerocopy", "einval"]},
        "run": _NAT,
        "call": _nullable(_NAT),
        "batch": _nullable(_NAT),
        "buflen": _nullable(_NAT),
        "page": _nullable(_NAT),
        "offset": _nullable(_NAT),
        "update": _nullable(_NAT),
        "stalled": {"type": "boolean"},
        "zcopy_used": {"type": "boolean"},
        "used_elem": {"type": "boolean"},
        "outcome": _STR,
        "drop": _nullable(_STR),
        "skb": _nullable(_obj({"len": _NAT, "data_len": _NAT, "truesize": _NAT,
                               "nr_frags": _NAT})),
    },
    optional=("used_elem",),
)

_BODIES: dict[str, tuple[str | None, dict[str, Any]]] = {
    "trace": (TRACE_SCHEMA, TRACE),
    "gro": (GRO_SCHEMA, GRO),
    "gro-diff": ("vnetrx.gro-diff/1", GRO_DIFF),
    "diff": ("vnetrx.diff/1", DIFF),
    "headroom": ("vnetrx.headroom/1", HEADROOM),
    "layout": ("vnetrx.layout/1", LAYOUT),
    "layout-check": ("vnetrx.layout-check/1", LAYOUT_CHECK),
    "layout-list": ("vnetrx.layout-list/1", LAYOUT_LIST),
    "kernels": ("vnetrx.kernels/1", KERNELS),
    "verify": ("vnetrx.verify/1", VERIFY),
    "decode": ("vnetrx.decode/1", DECODE),
    "error": ("vnetrx.error/1", ERROR),
    "sweep": ("vnetrx.sweep/1", SWEEP),
    "sweep-row": ("vnetrx.sweep-row/1", SWEEP_ROW),  # each --jsonl line of vnetrx sweep
    "observe": ("vnetrx.observe/1", OBSERVE),
    "observe-gro": ("vnetrx.observe-gro/1", OBSERVE_GRO),
    "replay": ("vnetrx.replay/1", REPLAY),
    "replay-frame": (None, REPLAY_FRAME),  # each --jsonl --detail line of vnetrx replay
    "replay-row": ("vnetrx.replay-row/1", REPLAY_ROW),
    "verify-gro": ("vnetrx.verify-gro/1", VERIFY_GRO),  # verify gro --json
    "vhost-tx-row": ("vnetrx.vhost-tx-row/1", VHOST_TX_ROW),  # replay --path vhost-tx
    "sweep-gro-row": ("vnetrx.sweep-gro-row/1", SWEEP_GRO_ROW),  # sweep --gro --jsonl
    "replay-gro-row": ("vnetrx.replay-gro-row/1", REPLAY_GRO_ROW),  # replay --gro --jsonl  # each --jsonl line of vnetrx replay
    "replay-summary": ("vnetrx.replay-summary/1", REPLAY_SUMMARY),
    "sweep-summary": ("vnetrx.sweep-summary/1", SWEEP_SUMMARY),
    "lab": ("vnetrx.lab/1", LAB),
    "lab-gro": ("vnetrx.lab-gro/1", LAB_GRO),  # lab virtio --gro --json
    "lab-vhost": ("vnetrx.lab-vhost-run/1", LAB_VHOST),
    "xdp-check": ("vnetrx.xdp-check/1", XDP_CHECK),
    "vhost-rx": ("vnetrx.vhost-rx/1", VHOST_RX),  # trace --path vhost-rx --json
    "vhost-rx-row": ("vnetrx.vhost-rx-row/1", VHOST_RX_ROW),  # replay --path vhost-rx --jsonl
}


def register(name: str, schema_id: str | None, body: dict[str, Any]) -> None:
    """Add an output's schema (e.g. the sweep's JSON lines) from its own module."""
    _BODIES[name] = (schema_id, body)


def names() -> list[str]:
    return sorted(_BODIES)


def schema(name: str) -> dict[str, Any]:
    """The complete JSON Schema document for output ``name`` (KeyError when unknown)."""
    schema_id, body = _BODIES[name]
    title = f"vnetrx {name} --json" if name != "error" else "vnetrx error object (--json)"
    return {
        "$schema": DRAFT,
        "$id": f"{BASE}{name}.json",
        "title": title,
        "description": (
            f'the document whose "schema" key is "{schema_id}"'
            if schema_id
            else "the document printed by this command's --json"
        ),
        **body,
    }
