"""``vnetrx kernels``: the profiles and, with --changes, the behaviour table."""

from __future__ import annotations

import sys
from typing import Any

import click

from vnetrx.cli import cli
from vnetrx.errors import InputError
from vnetrx.kernel.changes import CHANGES, Change
from vnetrx.kernel.registry import SERIES


def _order(change: Change) -> tuple[Any, ...]:
    """Version order: the first mainline release, else the first stable release with it."""
    first = change.since or min((w[0] for w in change.windows()),
                                key=lambda v: (v.major, v.minor, v.patch or 0), default=None)
    if first is None:
        return (True, 0, 0, 0, change.key)
    return (False, first.major, first.minor, first.patch or 0, change.key)


@cli.command()
@click.option("--changes", is_flag=True, help="Also list every behaviour change vnetrx models, "
              "in version order.")
@click.option("--between", metavar="A..B", default=None,
              help="Only the changes kernel B has and kernel A has not (e.g. 5.12..5.13, "
              "6.1.75..6.1.76, 6.6..6.12); implies --changes.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the change table included).")
def kernels(changes: bool, between: str | None, as_json: bool) -> None:
    """List the kernel profiles and, with --changes, the upstream changes vnetrx models.

    \b
    Examples:
      vnetrx kernels --changes
      vnetrx kernels --between 5.12..5.13        # what changed in 5.13
      vnetrx kernels --between 6.1.75..6.1.76    # a stable point release
      vnetrx kernels --json | jq '.changes[] | select(.since == "6.3")'
    """
    selected = sorted(CHANGES, key=_order)
    if between is not None:
        selected = _between(between, selected)
        changes = True
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
        for c in selected
    ]
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(
            dumps(
                {
                    "schema": "vnetrx.kernels/1",
                    "series": series,
                    "changes": table,
                }
            )
        )
        return
    if between is None:
        for s in series:
            click.echo(f"{s['series']:<6} default {s['default']:<10} {s['why']}")
    if changes:
        if between is None:
            click.echo()
        if not selected:
            click.echo("no modelled change between those kernels")
        for change, c in zip(selected, table, strict=True):
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


def _between(text: str, changes: list[Change]) -> list[Change]:
    """The changes in kernel B's profile and not in kernel A's (stable windows included)."""
    from vnetrx.kernel.registry import lookup

    a, sep, b = text.partition("..")
    if not sep or not a.strip() or not b.strip():
        raise InputError(f"--between {text!r} is not A..B (e.g. 5.12..5.13)")
    old, new = lookup(a.strip()), lookup(b.strip())
    return [c for c in changes if c.key in new.change_keys and c.key not in old.change_keys]
