"""Trace ↔ plain dict (the JSON schema documented in README): ``trace_to_dict`` and its
inverse ``from_dict``. Stdlib only.

Schema ledger:
  vnetrx.trace/1  first version: kernel, input, path, outcome, reason, steps, buffer, buffers,
                  skb, cost, notes; errno (null unless outcome is "error"), added with the
                  tap path; counter (the device counter a drop increments: rx_length_errors,
                  rx_frame_errors, drops), refused_by (the check that refused the
                  virtio_net_hdr) and the skb's offload fields (ip_summed .. l4_hash), added
                  with virtio_net_hdr_to_skb; xdp (an attached program's run: verdict,
                  xdp_buff, result, read-back, counters) and xdp_tx (the frame a read() on
                  the tap fd returns after XDP_TX/REDIRECT), both only when a program is
                  attached, added with XDP on tun; vhost (path vhost-tx only: vhost-net's
                  road into the tap, its buffer and limits), added with the vhost-tx path.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from vnetrx.errors import InputError, UnsupportedError, VnetrxError
from vnetrx.files import parse_json
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import (
    IP_SUMMED,
    RESULT_RECORDS,
    RESULT_STRINGS,
    SKB_FIELDS,
    TRACE_SCHEMA,
    Buffer,
    Cost,
    Frag,
    FragListSkb,
    RecordField,
    Region,
    ResultRecord,
    Skb,
    Step,
    Trace,
    Value,
)

if TYPE_CHECKING:
    from vnetrx.flow import FlowRun
    from vnetrx.paths.gro import Delivered

ERROR_SCHEMA = "vnetrx.error/1"
SKB_FIELD_NAMES = tuple(f.name for f in SKB_FIELDS)
_SKB_LISTS = tuple(f.name for f in SKB_FIELDS if f.kind == "strs")  # tuples on Skb


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
    for name in _SKB_LISTS:  # a plain JSON value, as json.loads gives it back
        out[name] = list(out[name])
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


def _tops(fields: tuple[RecordField, ...]) -> tuple[str, ...]:
    """The document keys a record's fields are printed under, in order ("xdp", "xdp_tx")."""
    return tuple(dict.fromkeys(f.at.split(".")[0] for f in fields))


def _gated(fields: tuple[RecordField, ...], record: Any) -> set[str]:
    """The objects not printed because a gate attribute of theirs is None (xdp_tx: read_len)."""
    return {f.at.split(".")[0] for f in fields if f.gate and getattr(record, f.name) is None}


def _json_value(f: RecordField, value: Any) -> Any:
    if f.kind == "counters?":
        return dict(value) if value else None
    if f.kind == "strs":  # a plain JSON value, as json.loads gives it back
        return list(value)
    if f.kind == "record?":
        return None if value is None else fields_to_dict(f, value)
    return value


def fields_to_dict(f: RecordField | ResultRecord, record: Any) -> dict[str, Any]:
    """A structured record's JSON: each field where its table (``model.RESULT_RECORDS``, or a
    nested record's ``RecordField.table``) puts it."""
    assert f.table is not None
    fields = f.table.fields
    skipped = _gated(fields, record)
    out: dict[str, Any] = {}
    for field in fields:
        *parents, key = field.at.split(".")
        if parents and parents[0] in skipped:
            continue
        node = out
        for parent in parents:
            node = node.setdefault(parent, {})
        node[key] = _json_value(field, getattr(record, field.name))
    return out


def record_to_dict(r: ResultRecord, record: Any) -> dict[str, Any]:
    """The trace document's keys for one structured result field: none for an optional one
    that is unset, null for another one that is unset."""
    if record is None:
        return {} if r.optional else dict.fromkeys(_tops(r.table.fields))
    return fields_to_dict(r, record)


def _string(value: object) -> str | None:
    """A string result field's JSON (an enum member as its value)."""
    return None if value is None else str(value)


def trace_to_dict(t: Trace) -> dict[str, Any]:
    return {
        "schema": t.schema,
        "kernel": kernel_to_dict(t.kernel),
        "input": dict(t.input),
        **{f.name: _string(getattr(t, f.name)) for f in RESULT_STRINGS},
        **{key: value for r in RESULT_RECORDS if not r.optional
           for key, value in record_to_dict(r, getattr(t, r.name)).items()},
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
        **{key: value for r in RESULT_RECORDS if r.optional
           for key, value in record_to_dict(r, getattr(t, r.name)).items()},
    }


def flow_to_dict(run: FlowRun) -> dict[str, Any]:
    """``vnetrx trace --gro``: the segments the driver made, what GRO did with each, the skbs
    the stack receives (``len`` from the IP header, as net:netif_receive_skb reports it)."""
    gro = run.gro
    charged = run.truesize_after
    return {
        "schema": run.schema,
        "kernel": kernel_to_dict(run.kernel),
        "input": dict(run.input),
        "path": run.path,
        "limits": {"max_skb_frags": gro.max_skb_frags, "gro_max_size": gro.gro_max_size},
        "segments": [
            {
                "frame": s.frame,
                "outcome": s.outcome,
                "head_frag": s.head_frag,
                "len": s.skb.len,
                "data_len": s.skb.data_len,
                "headlen": s.skb.headlen,
                "truesize": s.skb.truesize,
                "nr_frags": s.skb.nr_frags,
            }
            for s in run.segments
        ],
        "steps": [
            {
                "frame": st.frame,
                "result": str(st.result),
                "how": str(st.how),
                "payload": st.payload,
                "delta_truesize": st.delta_truesize,
                "len": st.len,
                "truesize": st.truesize,
                "nr_frags": st.nr_frags,
                "frag_list": st.frag_list,
            }
            for st in gro.steps
        ],
        "delivered": [
            {"frames": list(d.frames), "flush": str(d.flush), "segs": d.segs,
             "skb": skb_to_dict(d.skb)}
            for d in gro.delivered
        ],
        "totals": {
            "segments": len(run.segments),
            "skbs": len(gro.delivered),
            "payload": run.payload,
            "truesize_before": run.truesize_before,
            "truesize": charged,
            "truesize_per_payload_byte": round(charged / run.payload, 4) if run.payload else None,
        },
        "notes": list(run.notes),
    }


REPLAY_GRO_ROW_SCHEMA = "vnetrx.replay-gro-row/1"


def delivered_row(poll: int, d: Delivered) -> dict[str, Any]:
    """``replay --gro --jsonl``: one skb the stack receives (``len`` from the IP header, as
    net:netif_receive_skb reports it), the NAPI poll it left GRO in and the frames it carries."""
    s = d.skb
    return {
        "schema": REPLAY_GRO_ROW_SCHEMA,
        "poll": poll,
        "frames": list(d.frames),
        "segs": d.segs,
        "flush": str(d.flush),
        "len": s.len,
        "data_len": s.data_len,
        "headlen": s.headlen,
        "truesize": s.truesize,
        "nr_frags": s.nr_frags,
        "frags": [f.size for f in s.frags],
        "frag_list": {"count": len(s.frag_list), "bytes": sum(m.len for m in s.frag_list),
                      "members": [{"len": m.len, "truesize": m.truesize,
                                   "nr_frags": len(m.frags)} for m in s.frag_list]},
        "gso_size": s.gso_size,
        "gso_segs": s.gso_segs,
        "gso_type": s.gso_type,
        "ip_summed": s.ip_summed,
        "csum_start": s.csum_start,
        "csum_offset": s.csum_offset,
    }


def error_to_dict(message: str, exit_code: int, hint: str | None = None) -> dict[str, Any]:
    return {"schema": ERROR_SCHEMA, "error": message, "hint": hint, "exit_code": exit_code}


# --- reading a document back: from_dict ----------------------------------------------------

_WHAT = {
    "nat": "a whole number (0 or more)",
    "str": "a string",
    "bool": "true or false",
    "strs": "a list of strings",
    "scalar": "a whole number, a string, true, false or null",
    "object": "an object",
    "list": "a list",
    "counters": "an object of whole numbers",
}


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _fits(value: object, kind: str) -> bool:
    """Whether a JSON value is of ``kind`` (model's field kinds; "?": or null)."""
    if value is None:
        return kind.endswith("?") or kind == "scalar"
    base = kind.rstrip("?")
    if base == "nat":
        return type(value) is int and value >= 0
    if base == "str":
        return isinstance(value, str)
    if base == "bool":
        return isinstance(value, bool)
    if base == "strs":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if base == "scalar":
        return type(value) in (int, str, bool)
    if base == "object":
        return isinstance(value, dict)
    if base == "list":
        return isinstance(value, list)
    if base == "counters":
        return isinstance(value, dict) and all(type(v) is int and v >= 0 for v in value.values())
    raise AssertionError(f"unknown field kind {kind!r}")


class _In:
    """A JSON object of the document being read, and where it is in the document (for the
    messages: ``skb.frags[0].size``)."""

    def __init__(self, obj: dict[str, Any], where: str) -> None:
        self.obj = obj
        self.where = where

    def place(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key: str, kind: str, values: tuple[str, ...] = ()) -> Any:
        """The value at ``key``, which must be of ``kind`` (and one of ``values``, if given)."""
        if key not in self.obj:
            raise InputError(f"{self.place(key)} is missing")
        value = self.obj[key]
        if not _fits(value, kind):
            what = _WHAT[kind.rstrip("?")] + (" or null" if kind.endswith("?") else "")
            raise InputError(f"{self.place(key)} is {_shown(value)}, not {what}")
        if values and kind.startswith("counters") and value is not None:
            if set(value) != set(values):
                raise InputError(f"{self.place(key)} has the counters {', '.join(value)}, not "
                                 f"{', '.join(values)}")
        elif values and value is not None and value not in values:
            raise InputError(f"{self.place(key)} is {_shown(value)}, not one of "
                             f"{', '.join(values)}")
        return value

    def sub(self, key: str) -> _In:
        return _In(self.get(key, "object"), self.place(key))

    def sub_or_none(self, key: str) -> _In | None:
        value = self.get(key, "object?")
        return None if value is None else _In(value, self.place(key))

    def subs(self, key: str) -> list[_In]:
        """The objects of the list at ``key``."""
        items = self.get(key, "list")
        where = self.place(key)
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise InputError(f"{where}[{i}] is {_shown(item)}, not an object")
        return [_In(item, f"{where}[{i}]") for i, item in enumerate(items)]

    def scalars(self, key: str) -> tuple[tuple[str, Value], ...]:
        """An object of scalars (``input``, a step's ``values``), as ordered pairs."""
        obj = self.sub(key)
        return tuple((name, obj.get(name, "scalar")) for name in obj.obj)


def _kernel_from(d: _In) -> KernelProfile:
    """The profile a trace's ``kernel`` object names, rebuilt as vnetrx makes it: the build from
    the object's build fields (the others from the arch and config presets, as --arch and
    --config make them) and the version as its ``source`` chose it, so that the version's notes
    come back too; it must then print as that object, or the document was not written by this
    vnetrx's profiles."""
    from vnetrx.kernel.build import ARCHES, MAX_HEADER_BY_CONFIG, PAGE_SIZES, build_config
    from vnetrx.kernel.registry import lookup, newest

    name, source = d.get("name", "str"), d.get("source", "str")
    arch = d.get("arch", "str", tuple(ARCHES))
    page_size = d.get("page_size", "nat")
    l1_cache_bytes, max_skb_frags = d.get("l1_cache_bytes", "nat"), d.get("max_skb_frags", "nat")
    config = d.get("config", "str")
    d.get("changes", "strs")
    if config == "running":
        raise UnsupportedError(
            f"kernel {name} was profiled on the machine that wrote the trace (--kernel running): "
            "its MAX_HEADER and skbuff_small_head and sk_buff sizes are not in the document, so "
            "the profile cannot be rebuilt",
            hint=f"a trace made with --kernel {name} can be loaded")
    d.get("config", "str", tuple(MAX_HEADER_BY_CONFIG))
    if page_size not in PAGE_SIZES.values():
        raise InputError(f"kernel.page_size is {page_size}, not one of "
                         f"{', '.join(map(str, PAGE_SIZES.values()))}")
    build = build_config(arch, page_size, l1_cache_bytes, max_skb_frags, config)
    default = newest(build)
    try:
        profile = default if source == default.source else lookup(source, build)
    except VnetrxError as exc:
        raise InputError(f"kernel.source {_shown(source)} names no kernel profile: "
                         f"{exc.message}") from None
    if profile.name != name:
        raise InputError(f"kernel.name is {_shown(name)}, but kernel.source {_shown(source)} "
                         f"is {profile.name} to this vnetrx")
    again = kernel_to_dict(profile)
    if again["changes"] != d.obj["changes"]:
        have, want = set(d.obj["changes"]), set(again["changes"])
        parts = ([f"lacks {', '.join(sorted(want - have))}"] if want - have else []) + (
            [f"lists {', '.join(sorted(have - want))}, which this vnetrx's profile does not"]
            if have - want else [])
        raise InputError(
            f"kernel.changes are not this vnetrx's for {name}: the document "
            + ("; ".join(parts) or "lists them in another order"),
            hint="a trace from another vnetrx version: load it with that version")
    problem = _difference(d.obj, again, d.where)
    if problem:
        raise InputError(problem)
    return profile


def _buffer(d: _In, regions: bool) -> Buffer:
    return Buffer(
        d.get("size", "nat"), d.get("page", "str"), d.get("page_offset", "nat"),
        d.get("used", "nat"),
        tuple(Region(r.get("name", "str"), r.get("offset", "nat"), r.get("size", "nat"),
                     r.get("note", "str")) for r in d.subs("regions")) if regions else ())


def _frags(d: _In) -> tuple[Frag, ...]:
    return tuple(Frag(f.get("page", "str"), f.get("offset", "nat"), f.get("size", "nat"),
                      f.get("truesize", "nat")) for f in d.subs("frags"))


def _skb(d: _In) -> Skb:
    """An skb from its output fields (``model.SKB_FIELDS``; those Skb computes are checked when
    the trace is printed again) and its frags."""
    fields = {f.name: d.get(f.name, f.kind) for f in SKB_FIELDS}
    if fields["ip_summed"] >= len(IP_SUMMED):
        raise InputError(f"{d.place('ip_summed')} is {fields['ip_summed']}, not one of 0 .. "
                         f"{len(IP_SUMMED) - 1} ({IP_SUMMED[0]} .. {IP_SUMMED[-1]})")
    chained = []
    for fl in d.subs("frag_list"):
        fl.get("nr_frags", "nat")
        chained.append(FragListSkb(fl.get("len", "nat"), fl.get("truesize", "nat"), _frags(fl)))
    kept: dict[str, Any] = {name: tuple(value) if isinstance(value, list) else value
                            for name, value in fields.items() if name in Skb._fields}
    return Skb(**kept, frags=_frags(d), frag_list=tuple(chained))


def _fields_from(d: _In, f: RecordField | ResultRecord) -> Any:
    """The record a table's fields make, each read where the table puts it (``fields_to_dict``'s
    inverse); a gated object that is absent gives None for its fields."""
    assert f.table is not None
    absent = {top for top in _gated_tops(f.table.fields) if top not in d.obj}
    values: dict[str, Any] = {}
    for field in f.table.fields:
        *parents, key = field.at.split(".")
        if parents and parents[0] in absent:
            values[field.name] = None
            continue
        node = d
        for parent in parents:
            node = node.sub(parent)
        if field.kind == "record?":
            nested = node.sub_or_none(key)
            values[field.name] = None if nested is None else _fields_from(nested, field)
            continue
        value = node.get(key, field.kind, field.values)
        if field.kind == "counters?":
            value = tuple(value.items()) if value else ()
        elif field.kind == "strs":
            value = tuple(value)
        values[field.name] = value
    return f.table.record(**values)


def _gated_tops(fields: tuple[RecordField, ...]) -> tuple[str, ...]:
    return tuple(f.at.split(".")[0] for f in fields if f.gate)


def _record_from(doc: _In, r: ResultRecord) -> Any:
    """A structured result field of a trace document (None: unset)."""
    top = _tops(r.table.fields)[0]
    if r.optional and top not in doc.obj:
        return None
    if not r.optional and doc.sub_or_none(top) is None:
        return None
    return _fields_from(doc, r)


def _difference(doc: Any, again: Any, where: str) -> str | None:
    """Where a document and the one its Trace prints part (None: nowhere), as a message."""
    if isinstance(doc, dict) and isinstance(again, dict):
        def place(key: str) -> str:
            return f"{where}.{key}" if where else key

        for key in doc:
            if key not in again:
                return f"{place(key)} is not a key of a {TRACE_SCHEMA} document there"
        for key in again:
            if key not in doc:
                return f"{place(key)} is missing"
        return next((p for key in doc if (p := _difference(doc[key], again[key], place(key)))),
                    None)
    if isinstance(doc, list) and isinstance(again, list) and len(doc) == len(again):
        return next((p for i, (x, y) in enumerate(zip(doc, again, strict=True))
                     if (p := _difference(x, y, f"{where}[{i}]"))), None)
    if type(doc) is type(again) and doc == again:
        return None
    return f"{where} is {_shown(doc)}, but the rest of the document makes it {_shown(again)}"


def from_dict(doc: object) -> Trace:
    """The Trace a ``vnetrx.trace/1`` document describes: ``trace_to_dict``'s inverse, so that
    ``trace_to_dict(from_dict(doc)) == doc``. The kernel profile is rebuilt by its name and
    build (see ``_kernel_from``); ``buffers`` come back without regions, which the document
    does not carry. Raises InputError naming the first thing that is not as vnetrx writes it."""
    if not isinstance(doc, dict):
        raise InputError(f"the document is {_shown(doc)}, not a JSON object (a trace: "
                         f"{{\"schema\": \"{TRACE_SCHEMA}\", ...}})")
    top = _In(doc, "")
    if "schema" not in doc:
        raise InputError(f"not a vnetrx trace: no \"schema\" key (a trace has \"schema\": "
                         f"\"{TRACE_SCHEMA}\")")
    schema = top.get("schema", "str")
    family = TRACE_SCHEMA.rsplit("/", 1)[0]
    if schema != TRACE_SCHEMA:
        if schema.rsplit("/", 1)[0] == family:
            raise InputError(f"schema {schema} is another version of the trace document: this "
                             f"vnetrx reads {TRACE_SCHEMA}")
        raise InputError(f"a {schema} document, not a trace ({TRACE_SCHEMA})",
                         hint="a diff's traces are its a and b: jq .a FILE | vnetrx trace "
                         "--load -" if schema == "vnetrx.diff/1" else None)
    kernel = _kernel_from(top.sub("kernel"))
    inputs = top.scalars("input")
    if not _fits(dict(inputs).get("frame_len"), "nat"):
        raise InputError("input.frame_len is missing or not a whole number (every trace has it)")
    hdr = dict(inputs).get("hdr")
    if hdr is not None and not (isinstance(hdr, str) and _is_hex(hdr)):
        raise InputError(f"input.hdr is {_shown(hdr)}, not the header's bytes in hex or null")
    buffer = top.sub_or_none("buffer")
    skb = top.sub_or_none("skb")
    cost = top.sub_or_none("cost")
    trace = Trace(
        schema=schema,
        kernel=kernel,
        input=inputs,
        # a null-or-string field is read as any string (the schema holds its closed set)
        **{f.name: top.get(f.name, f.kind, () if f.kind.endswith("?") else f.values)
           for f in RESULT_STRINGS},
        steps=tuple(Step(s.get("function", "str"), s.get("source", "str"),
                         s.get("summary", "str"), s.scalars("values"),
                         tuple(s.get("because", "strs"))) for s in top.subs("steps")),
        buffer=None if buffer is None else _buffer(buffer, regions=True),
        buffers=tuple(_buffer(b, regions=False) for b in top.subs("buffers")),
        skb=None if skb is None else _skb(skb),
        cost=None if cost is None else Cost(cost.get("allocations", "nat"),
                                            cost.get("bytes_copied", "nat"),
                                            cost.get("frags", "nat")),
        notes=tuple(top.get("notes", "strs")),
        **{r.name: _record_from(top, r) for r in RESULT_RECORDS},
    )
    again = trace_to_dict(trace)
    if again != doc:
        raise InputError(_difference(doc, again, "") or "the document is not one vnetrx writes")
    from vnetrx.invariants import trace_problems

    broken = trace_problems(trace, kernel.sk_buff_aligned)
    if broken:
        raise InputError(f"the trace breaks what every vnetrx trace keeps: {broken[0]}")
    return trace


def _is_hex(text: str) -> bool:
    try:
        bytes.fromhex(text)
    except ValueError:
        return False
    return True


def load_trace(data: bytes, label: str) -> Trace:
    """The Trace of a saved ``vnetrx trace --json`` document (``data``, read from ``label``)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{label}: not a JSON document (not UTF-8 text)") from None
    if not text.strip():
        raise InputError(f"{label} is empty (give what vnetrx trace --json printed)")
    doc = parse_json(text, label, "a JSON document")
    try:
        return from_dict(doc)
    except InputError as exc:
        raise type(exc)(f"{label}: {exc.message}", hint=exc.hint) from None
