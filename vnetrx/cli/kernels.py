"""``vnetrx kernels``: the profiles and, with --changes, the behaviour table."""

from __future__ import annotations

import sys

import click

from vnetrx.cli import cli
from vnetrx.kernel.changes import CHANGES
from vnetrx.kernel.registry import SERIES


@cli.command()
@click.option("--changes", is_flag=True, help="Also list every behaviour change vnetrx models.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def kernels(changes: bool, as_json: bool) -> None:
    """List the kernel profiles (and the upstream changes between them)."""
    series = [
        {"series": s.name, "default": f"{s.name}.{s.default_patch}", "why": s.why} for s in SERIES
    ]
    table = [
        {
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
        for c in CHANGES
    ]
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(
            dumps(
                {
                    "schema": "vnetrx.kernels/1",
                    "series": series,
                    "changes": table if changes else None,
                }
            )
        )
        return
    for s in series:
        click.echo(f"{s['series']:<6} default {s['default']:<10} {s['why']}")
    if changes:
        click.echo()
        for change, c in zip(CHANGES, table, strict=True):
            span = (
                "stable only"
                if change.since is None
                else f"{change.since}" + (f" until {change.until}" if change.until else "+")
            )
            windows = [str(b) for b in change.backports] + [
                f"{first} until {end}" if end else f"{first}+" for first, end in change.stable
            ]
            backports = f" (stable: {', '.join(windows)})" if windows else ""
            commit = change.commit or "id not seen"
            click.echo(f"{span:<16} {change.key}  [{commit}]{backports}")
            click.echo(f"{'':<16} {c['subject']}")
            click.echo(f"{'':<16} {c['summary']}")
            if c["note"]:
                click.echo(f"{'':<16} note: {c['note']}")
