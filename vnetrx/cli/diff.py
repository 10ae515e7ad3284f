"""``vnetrx diff``: run two traces and show where they part."""

from __future__ import annotations

import sys
from typing import Any

import click

from vnetrx.cli import cli
from vnetrx.cli.export_options import export_options, export_pictures
from vnetrx.diff import TraceDiff, diff, diff_to_dict
from vnetrx.errors import InputError


def _split(args: tuple[str, ...]) -> tuple[list[str], list[str]]:
    if "--" in args:
        cut = args.index("--")
        return list(args[:cut]), list(args[cut + 1 :])
    return list(args), list(args)


@cli.command("diff", context_settings={"ignore_unknown_options": True})
@click.option(
    "--kernel",
    "kernels",
    multiple=True,
    metavar="V",
    help="Give twice to compare two kernels on the same options.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object (schema vnetrx.diff/1)."
)
@export_options
@click.argument("trace_args", nargs=-1, type=click.UNPROCESSED)
def diff_command(
    kernels: tuple[str, ...],
    as_json: bool,
    trace_args: tuple[str, ...],
    svg: str | None = None,
    html: str | None = None,
) -> None:
    """Run two traces and show where they part: the first differing step, the result fields
    that differ, and both memory maps side by side.

    Trace options follow `--`. With two --kernel values both sides use the same options; with
    a second `--`, side A takes the options before it and side B those after it.

    \b
    Examples:
      vnetrx diff --kernel 5.12 --kernel 5.13 -- --len 1000 --mergeable
      vnetrx diff --kernel 6.1 -- --len 1514 --mergeable -- --len 1514 --mergeable --buffer-index 20
      vnetrx diff -- --len 1000 --mergeable -- --len 1000 --mergeable --kernel 7.3 --buffer-index 1
    """
    from vnetrx.cli.trace import run_trace_args

    if len(kernels) > 2:
        raise InputError("give --kernel at most twice (one per side)")
    args_a, args_b = _split(trace_args)
    if not args_a or not args_b:
        raise InputError(
            "give the trace options after `--`, e.g. vnetrx diff --kernel 5.12 "
            "--kernel 5.13 -- --len 1000 --mergeable"
        )
    for inner in ("--json", "--svg", "--html"):
        if any(a == inner or a.startswith(inner + "=") for a in (*args_a, *args_b)):
            raise click.UsageError(f"{inner} is diff's own option: give it before `--` "
                                   f"(vnetrx diff {inner} ... -- TRACE OPTIONS)")
    inner_kernel = any(a == "--kernel" or a.startswith("--kernel=") for a in (*args_a, *args_b))
    if kernels and inner_kernel:
        raise click.UsageError("give the kernels either as diff's --kernel or inside the trace "
                               "options after `--`, not both")
    if "--" not in trace_args and len(kernels) < 2:
        run_trace_args(args_a)  # a bad option is reported first
        raise click.UsageError(
            "nothing to compare: both sides would run the same trace; give --kernel twice "
            "(vnetrx diff --kernel 5.12 --kernel 5.13 -- --len 1000) or a second `--` with "
            "side B's options")
    if kernels:
        args_a = [*args_a, "--kernel", kernels[0]]
        args_b = [*args_b, "--kernel", kernels[-1]]
    gro = ["--gro" in args for args in (args_a, args_b)]
    if any(gro):
        if not all(gro):
            raise click.UsageError("give --gro on both sides, or on neither: a GRO flow is "
                                   "compared with another flow")
        _diff_flows(args_a, args_b, as_json, svg, html)
        return
    result = diff(run_trace_args(args_a), run_trace_args(args_b))
    export_pictures(lambda: _picture(result), svg, html, "vnetrx diff")
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps(diff_to_dict(result)))
        return
    from vnetrx.render.diff_text import print_diff
    from vnetrx.render.text import stdout_console

    print_diff(result, stdout_console())


def _diff_flows(args_a: list[str], args_b: list[str], as_json: bool, svg: str | None,
                html: str | None) -> None:
    from vnetrx.cli.trace import run_flow_args
    from vnetrx.diff import diff_flows, flow_diff_to_dict

    if svg or html:
        raise click.UsageError("--svg and --html do not go with --gro flows yet")
    result = diff_flows(run_flow_args(args_a), run_flow_args(args_b))
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps(flow_diff_to_dict(result)))
        return
    from vnetrx.render.diff_text import flow_diff_renderable
    from vnetrx.render.text import stdout_console

    stdout_console().print(flow_diff_renderable(result))


def _picture(result: TraceDiff) -> Any:
    from vnetrx.render.diff_text import diff_renderable

    return diff_renderable(result)
