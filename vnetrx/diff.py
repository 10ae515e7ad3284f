"""Where two traces part: the first differing step and the result fields that differ. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vnetrx.codec import flow_to_dict, trace_to_dict
from vnetrx.model import (
    RESULT_RECORDS,
    RESULT_STRINGS,
    SKB_FIELDS,
    GroHow,
    RecordField,
    ResultRecord,
    Step,
    Trace,
)

if TYPE_CHECKING:
    from vnetrx.flow import FlowRun

DIFF_SCHEMA = "vnetrx.diff/1"
GRO_DIFF_SCHEMA = "vnetrx.gro-diff/1"


def _record_fields(r: ResultRecord) -> tuple[str, ...]:
    """A structured result field's diff fields (its table's with ``diff``; a counters object by
    counter, a nested record by its own diff fields), object by object, each object's own fields
    before those of the objects nested in it."""
    fields = r.table.fields
    tops = list(dict.fromkeys(f.at.split(".")[0] for f in fields))
    places = [place for f in fields if f.diff for place in _places(f)]
    return tuple(sorted(places, key=lambda p: (tops.index(p.split(".")[0]), p.count("."))))


def _places(f: RecordField) -> tuple[str, ...]:
    if f.kind == "counters?":
        return tuple(f"{f.at}.{name}" for name in f.values)
    if f.table is not None:
        return tuple(f"{f.at}.{place}" for sub in f.table.fields if sub.diff
                     for place in _places(sub))
    return (f.at,)


# Result fields compared, as dotted paths into the JSON form of a trace.
RESULT_FIELDS = (
    *(f.name for f in RESULT_STRINGS if f.diff),
    *(f"skb.{f.name}" for f in SKB_FIELDS if f.diff),
    "cost.allocations",
    "cost.bytes_copied",
    "cost.frags",
    "buffer.size",
    "buffer.page_offset",
    *(place for r in RESULT_RECORDS for place in _record_fields(r)),
)


@dataclass(frozen=True)
class TraceDiff:
    a: Trace
    b: Trace
    first_step: int | None  # index of the first step that differs (None: the steps agree)
    fields: tuple[tuple[str, Any, Any], ...]  # (field, a, b) for every differing result field


def _same(x: Step, y: Step) -> bool:
    """Steps agree when they do the same thing; their sources differ by version only."""
    return (x.function, x.summary, x.values, x.because) == (
        y.function,
        y.summary,
        y.values,
        y.because,
    )


def _get(doc: dict[str, Any], path: str) -> Any:
    value: Any = doc
    for part in path.split("."):
        value = None if value is None else value.get(part)
    return value


def diff(a: Trace, b: Trace) -> TraceDiff:
    first = next(
        (i for i, (x, y) in enumerate(zip(a.steps, b.steps, strict=False)) if not _same(x, y)), None
    )
    if first is None and len(a.steps) != len(b.steps):
        first = min(len(a.steps), len(b.steps))
    da, db = trace_to_dict(a), trace_to_dict(b)
    fields = tuple(
        (f, _get(da, f), _get(db, f)) for f in RESULT_FIELDS if _get(da, f) != _get(db, f)
    )
    return TraceDiff(a, b, first, fields)


def diff_to_dict(d: TraceDiff) -> dict[str, Any]:
    def step(t: Trace) -> dict[str, Any] | None:
        if d.first_step is None or d.first_step >= len(t.steps):
            return None
        s = t.steps[d.first_step]
        return {
            "index": d.first_step,
            "function": s.function,
            "source": s.source,
            "summary": s.summary,
            "values": dict(s.values),
            "because": list(s.because),
        }

    return {
        "schema": DIFF_SCHEMA,
        "same": d.first_step is None and not d.fields,
        # the result fields compared (RESULT_FIELDS) all agree: when "same" is false, only the
        # steps (what each kernel's narration says) differ
        "results_same": not d.fields,
        "first_difference": None if d.first_step is None else {"a": step(d.a), "b": step(d.b)},
        "fields": [{"field": f, "a": x, "b": y} for f, x, y in d.fields],
        "a": trace_to_dict(d.a),
        "b": trace_to_dict(d.b),
    }


# What two GRO flows are compared on: the totals, where segments were chained on frag_list,
# and each skb the stack receives (the n-th with the n-th)
FLOW_TOTALS = ("skbs", "payload", "truesize_before", "truesize", "truesize_per_payload_byte")
FLOW_SKB_FIELDS = ("frames", "len", "data_len", "headlen", "truesize", "nr_frags", "frag_list",
                   "gso_size", "gso_segs", "gso_type", "ip_summed")


@dataclass(frozen=True)
class FlowDiff:
    a: FlowRun
    b: FlowRun
    first_segment: int | None  # the first input the two treat differently (None: alike)
    fields: tuple[tuple[str, Any, Any], ...]  # (field, a, b) for every differing result


def _flow_fields(doc: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {f"totals.{k}": doc["totals"][k] for k in FLOW_TOTALS}
    out["chained_on_frag_list"] = [s["frame"] for s in doc["steps"]
                                   if s["how"] == GroHow.FRAG_LIST.value]
    for n, d in enumerate(doc["delivered"], 1):
        skb = d["skb"]
        for f in FLOW_SKB_FIELDS:
            value = d["frames"] if f == "frames" else (
                len(skb["frag_list"]) if f == "frag_list" else skb[f])
            out[f"skb{n}.{f}"] = value
    return out


def diff_flows(a: FlowRun, b: FlowRun) -> FlowDiff:
    """Where two GRO flows part: the first segment whose driver outcome or GRO result differs,
    and every result that differs."""
    first = next((x.frame for x, y, sx, sy in zip(a.segments, b.segments, a.gro.steps,
                                                  b.gro.steps, strict=False)
                  if (x.outcome, sx.result, sx.how) != (y.outcome, sy.result, sy.how)), None)
    if first is None and len(a.segments) != len(b.segments):
        first = min(len(a.segments), len(b.segments))
    fa, fb = _flow_fields(flow_to_dict(a)), _flow_fields(flow_to_dict(b))
    fields = tuple((k, fa.get(k), fb.get(k)) for k in dict.fromkeys([*fa, *fb])
                   if fa.get(k) != fb.get(k))
    return FlowDiff(a, b, first, fields)


def flow_diff_to_dict(d: FlowDiff) -> dict[str, Any]:
    def segment(run: FlowRun) -> dict[str, Any] | None:
        if d.first_segment is None or d.first_segment >= len(run.segments):
            return None
        seg, step = run.segments[d.first_segment], run.gro.steps[d.first_segment]
        return {"frame": seg.frame, "outcome": seg.outcome, "result": str(step.result),
                "how": str(step.how)}

    return {
        "schema": GRO_DIFF_SCHEMA,
        "same": d.first_segment is None and not d.fields,
        "first_difference": None if d.first_segment is None else {"a": segment(d.a),
                                                                   "b": segment(d.b)},
        "fields": [{"field": f, "a": x, "b": y} for f, x, y in d.fields],
        "a": flow_to_dict(d.a),
        "b": flow_to_dict(d.b),
    }
