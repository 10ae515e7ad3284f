"""``vnetrx kernels``: the profiles and, with --changes, the behaviour table."""

from __future__ import annotations

import sys
from typing import Any

import click

from vnetrx.cli import cli
from vnetrx.errors import InputError
from vnetrx.kernel.changes import CHANGES, Change


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
    from vnetrx.render.kernels_json import kernels_to_dict

    doc = kernels_to_dict(selected)
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps(doc))
        return
    from vnetrx.render.kernels_text import kernels_text

    click.echo(kernels_text(doc, series=between is None, changes=changes), nl=False)


def _between(text: str, changes: list[Change]) -> list[Change]:
    """The changes in kernel B's profile and not in kernel A's (stable windows included)."""
    from vnetrx.kernel.registry import lookup

    a, sep, b = text.partition("..")
    if not sep or not a.strip() or not b.strip():
        raise InputError(f"--between {text!r} is not A..B (e.g. 5.12..5.13)")
    old, new = lookup(a.strip()), lookup(b.strip())
    if old.version > new.version:
        raise InputError(
            f"--between {text.strip()} is reversed: {a.strip()} ({old.version}) is newer than "
            f"{b.strip()} ({new.version}); give the older kernel first"
        )
    return [c for c in changes if c.key in new.change_keys and c.key not in old.change_keys]
