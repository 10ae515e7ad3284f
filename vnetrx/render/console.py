"""The rich console every text report prints on: stdout, coloured as ``--color`` says."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from vnetrx.render.color import console_kwargs


class _StdoutConsole(Console):
    """rich ends the process with exit status 1 when the reader closes the pipe (``vnetrx trace
    ... | head``); vnetrx treats a reader that stopped as success, as its JSON output does: the
    BrokenPipeError goes to the CLI's error boundary, which exits 0."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def console_on_stdout(**overrides: Any) -> Console:
    return _StdoutConsole(highlight=False, **{**console_kwargs(), **overrides})
