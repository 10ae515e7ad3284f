"""The command line: thin wrappers that parse options, call the core, and pick a renderer.

Every error leaves through ``VnetrxGroup.main``: one line on stderr (and a JSON object on stdout
when ``--json`` was given), exit 2 for usage errors and 1 for runtime failures, never a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence
from typing import Any

import click

from vnetrx import __version__
from vnetrx.errors import VnetrxError
from vnetrx.main import modules_loaded
from vnetrx.report import output_failed, quiet_stdout, report, write_quietly

# Command name → the module that defines it. A module is imported only when its command runs
# (or help lists it), so start-up stays small; each module registers itself with @cli.command.
COMMANDS = {
    "decode": "vnetrx.cli.decode",
    "diff": "vnetrx.cli.diff",
    "headroom": "vnetrx.cli.headroom",
    "kernels": "vnetrx.cli.kernels",
    "lab": "vnetrx.cli.lab",
    "layout": "vnetrx.cli.layout",
    "observe": "vnetrx.cli.observe",
    "replay": "vnetrx.cli.replay",
    "schema": "vnetrx.cli.schema",
    "sweep": "vnetrx.cli.sweep",
    "trace": "vnetrx.cli.trace",
    "verify": "vnetrx.cli.verify",
    "xdp": "vnetrx.cli.xdp",
}


class VnetrxGroup(click.Group):
    """A click group whose ``main`` is the single error boundary, with lazily loaded commands."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        present = {name for name, module in COMMANDS.items() if importlib.util.find_spec(module)}
        return sorted(set(super().list_commands(ctx)) | present)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if cmd_name not in self.commands and module and importlib.util.find_spec(module):
            importlib.import_module(module)
            modules_loaded()
        return super().get_command(ctx, cmd_name)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # bare "vnetrx": show help
            try:
                click.echo(exc.ctx.get_help())
            except BrokenPipeError:
                quiet_stdout()
            except OSError as error:
                output_failed(error, argv)
            sys.exit(0)
        except click.UsageError as exc:
            message = exc.format_message().rstrip(".")
            report(message, 2, None, argv)
            sys.exit(2)
        except click.ClickException as exc:
            report(exc.format_message(), exc.exit_code, None, argv)
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            from vnetrx.main import interrupted_json

            write_quietly(sys.stderr, "vnetrx: interrupted")
            interrupted_json(argv)
            sys.exit(130)
        except VnetrxError as exc:
            report(exc.message, exc.exit_code, exc.hint, argv)
            sys.exit(exc.exit_code)
        except BrokenPipeError:  # `vnetrx ... | head`
            sys.stderr.close()
            sys.exit(0)
        except OSError as exc:  # writing the output or reading an input failed (ENOSPC, EIO)
            output_failed(exc, argv)
        except SystemExit as exc:
            # click turns a closed pipe (`vnetrx ... | head`) into exit 1 behind a wrapper that
            # keeps the rest of stdout quiet: the reader stopping is not a failure
            if exc.code == 1 and type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):
                sys.exit(0)
            raise
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(
    cls=VnetrxGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    expose_value=False,
    is_eager=True,
    callback=lambda _ctx, _param, value: _set_color(value),
    help="Colour text output: auto (a terminal, unless NO_COLOR is set), always (ANSI even "
    "into a pipe), never.",
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, value: _print_version(ctx, value),
    help="Show the version and the kernel profiles, then exit.",
)
def cli() -> None:
    """Walk one packet through the Linux virtio-net (and tun/tap) receive path, byte for byte.

    vnetrx answers "what does kernel X build from this frame, and why": which function runs,
    whether the skb is built around the rx buffer (build_skb) or copied, what truesize it
    costs, where every byte sits. Each step cites the kernel source it mirrors.

    \b
    Examples:
      vnetrx trace --len 1000 --mergeable
      vnetrx trace --len 1000 --mergeable --kernel 5.12
      vnetrx trace --len 1000 --json | jq .skb
      vnetrx kernels --changes
      vnetrx decode 0100 0000 0000 2200 0600 --len 1000   # a tap write's header

    \b
    Shell completion (bash; zsh and fish: zsh_source, fish_source):
      eval "$(_VNETRX_COMPLETE=bash_source vnetrx)"
    """


def _set_color(value: str | None) -> None:
    from vnetrx.render.color import set_mode

    set_mode(value or "auto")


def _print_version(ctx: click.Context, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from vnetrx.compiled import build_line
    from vnetrx.kernel.registry import SERIES

    click.echo(f"vnetrx {__version__}: {build_line()}")
    click.echo("kernel profiles (a bare X.Y means the point release shown):")
    for s in SERIES:
        point = f"{s.name}.{s.default_patch}"
        click.echo(f"  {s.name:<5} {point:<9} {', '.join(sorted(s.paths))}")
    ctx.exit(0)


def main() -> None:
    cli.main()
