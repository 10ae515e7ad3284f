"""The one table class vnetrx prints with: a rich Table whose cells fold onto the next line
instead of being cut with "…" when the terminal is narrow, so no number or source path is ever
shown truncated (a ``no_wrap`` column still keeps its cells whole). And the console the check
reports (``lab``, ``observe``, ``verify``, ``xdp check``) print their tables on."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table as _RichTable

from vnetrx.render.console import console_on_stdout


class Table(_RichTable):
    def add_column(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("overflow", "fold")
        super().add_column(*args, **kwargs)


def report_console(min_width: int = 0) -> Console:
    """A console on stdout, coloured as --color says, at least ``min_width`` columns wide (a
    report's table of predicted≠observed cells is laid out whole, never squeezed)."""
    console = console_on_stdout()
    if console.width < min_width:
        console = console_on_stdout(width=min_width)
    return console


def cell(value: object) -> str:
    """A value as a report's cell shows it: "-" for none (never Python's ``None``)."""
    return "-" if value is None else str(value)


def mismatch(predicted: object, observed: object) -> str:
    """A cell where the prediction and the real kernel differ: ``predicted≠observed``."""
    return f"{cell(predicted)}≠{cell(observed)}"
