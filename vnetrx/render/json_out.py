"""JSON output: one object per command, stable keys (see README). Does not import rich."""

from __future__ import annotations

import json
from typing import Any

from vnetrx.codec import trace_to_dict
from vnetrx.model import Trace


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2) + "\n"


def render_trace(trace: Trace) -> str:
    return dumps(trace_to_dict(trace))
