"""``vnetrx schema``: the JSON Schema (draft 2020-12) of each command's --json output."""

from __future__ import annotations

import sys

import click

from vnetrx.cli import cli
from vnetrx.schemas import names, schema


@cli.command("schema")
@click.argument("name", required=False, type=click.Choice(names()))
@click.option("--list", "list_", is_flag=True, help="List the schema names.")
def schema_command(name: str | None, list_: bool) -> None:
    """Print the JSON Schema (draft 2020-12) of a --json output.

    Without NAME (or with --list): the names. Validate with any JSON Schema tool, e.g.
    `check-jsonschema --schemafile <(vnetrx schema trace) out.json`.

    \b
    Examples:
      vnetrx schema trace > trace.schema.json
      vnetrx schema --list
    """
    if name is None or list_:
        click.echo("\n".join(names()))
        return
    from vnetrx.render.json_out import dumps

    sys.stdout.write(dumps(schema(name)))
