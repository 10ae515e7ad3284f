"""JSON for ``vnetrx kernels`` (schema vnetrx.kernels/1): the release series vnetrx profiles and
the behaviour changes it models. Stdlib only: does not import rich. The text view
(vnetrx.render.kernels_text) reads the same document."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vnetrx.kernel.changes import Change
from vnetrx.kernel.registry import SERIES

SCHEMA = "vnetrx.kernels/1"


def change_to_dict(c: Change) -> dict[str, Any]:
    return {
        "key": c.key,
        "subject": c.subject,
        "commit": c.commit,
        "since": None if c.since is None else str(c.since),
        "until": None if c.until is None else str(c.until),
        "backports": [str(b) for b in c.backports],
        "stable": [
            {"first": str(first), "until": None if end is None else str(end)}
            for first, end in c.stable
        ],
        "summary": c.summary,
        "note": c.note,
    }


def kernels_to_dict(changes: Iterable[Change]) -> dict[str, Any]:
    """{schema, series: [{series, default, why}], changes: [...]}, the changes in the order
    given."""
    return {
        "schema": SCHEMA,
        "series": [
            {"series": s.name, "default": f"{s.name}.{s.default_patch}", "why": s.why}
            for s in SERIES
        ],
        "changes": [change_to_dict(c) for c in changes],
    }
