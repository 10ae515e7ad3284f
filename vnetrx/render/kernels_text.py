"""Text of ``vnetrx kernels``: one line per release series, then each change with the releases
that carry it, its commit, subject, summary and note. Plain text (no rich): it reads the
``--json`` document (vnetrx.render.kernels_json)."""

from __future__ import annotations

from typing import Any


def _span(c: dict[str, Any]) -> str:
    """Mainline: "6.3+" or "5.13 until 5.14"; "stable only" when no mainline release has it."""
    if c["since"] is None:
        return "stable only"
    return f"{c['since']}" + (f" until {c['until']}" if c["until"] else "+")


def kernels_text(doc: dict[str, Any], series: bool = True, changes: bool = False) -> str:
    """``series``: the series lines; ``changes``: the change table (a blank line between)."""
    lines = []
    if series:
        lines += [f"{s['series']:<6} default {s['default']:<10} {s['why']}" for s in doc["series"]]
    if changes:
        if series:
            lines.append("")
        if not doc["changes"]:
            lines.append("no modelled change between those kernels")
        for c in doc["changes"]:
            windows = list(c["backports"]) + [
                f"{w['first']} until {w['until']}" if w["until"] else f"{w['first']}+"
                for w in c["stable"]
            ]
            backports = f" (stable: {', '.join(windows)})" if windows else ""
            commit = c["commit"] or "id not seen"
            lines.append(f"{_span(c):<16} {c['key']}  [{commit}]{backports}")
            lines.append(f"{'':<16} {c['subject']}")
            lines.append(f"{'':<16} {c['summary']}")
            if c["note"]:
                lines.append(f"{'':<16} note: {c['note']}")
    return "".join(line + "\n" for line in lines)
