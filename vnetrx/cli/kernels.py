"""``vnetrx kernels``: the profiles and, with --changes, the behaviour table."""

from __future__ import annotations

import sys

import click

from vnetrx.cli import cli
from vnetrx.errors import InputError
from vnetrx.kernel.changes import CHANGES, version_order


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
    if between is not None:
        older, sep, newer = between.partition("..")
        if not sep or not older.strip() or not newer.strip():
            raise InputError(f"--between {between!r} is not A..B (e.g. 5.12..5.13)")
        from vnetrx.kernel.registry import changes_between

        selected = changes_between(older.strip(), newer.strip(), between.strip())
        changes = True
    else:
        selected = sorted(CHANGES, key=version_order)
    from vnetrx.render.kernels_json import kernels_to_dict

    doc = kernels_to_dict(selected)
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps(doc))
        return
    from vnetrx.render.kernels_text import kernels_text

    click.echo(kernels_text(doc, series=between is None, changes=changes), nl=False)
