"""The totals line of a replay's text (``vnetrx replay --summary``), without rich: printed
plain when the output takes no colour (a pipe, a file, ``--color never``), so that a summary
does not load rich for one line (~0.15-0.2 s of a replay's start-up); replay_text.py styles
the same words for a terminal."""

from __future__ import annotations

import sys

from vnetrx.render import color
from vnetrx.replay.summary import Totals

LABEL = "totals: "


def plain_stdout() -> bool:
    """Text written to stdout now takes no colour and no layout from rich: ``--color never``,
    or ``auto`` into something that is not a terminal (what console_kwargs gives rich)."""
    return color.MODE == "never" or (color.MODE == "auto" and not color.is_terminal(sys.stdout))


def totals_line(totals: Totals) -> str:
    return LABEL + totals.line()
