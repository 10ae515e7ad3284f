"""JSON output: one object per command, stable keys (see README). Does not import rich.

Light on purpose: the fast ``vnetrx layout`` entry (vnetrx/main.py) prints JSON through
``dumps`` without loading the trace model."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads it the same)
if TYPE_CHECKING:
    from vnetrx.model import Trace


def dumps(obj: object) -> str:
    return json.dumps(obj, indent=2) + "\n"


def render_trace(trace: Trace) -> str:
    from vnetrx.codec import trace_to_dict

    return dumps(trace_to_dict(trace))
