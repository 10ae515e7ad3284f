"""The root ``--color auto|always|never`` choice, read by every console vnetrx makes.

Imports nothing heavy (no rich): the CLI sets ``MODE`` before any command runs, and
``console_kwargs()`` turns it into rich.Console arguments when a text renderer starts.
auto: colour on a terminal unless NO_COLOR is set (rich's own detection); always: ANSI even
into a pipe, and even with NO_COLOR (an explicit flag wins, as no-color.org asks); never: none.
"""

from __future__ import annotations

from typing import Any

MODES = ("auto", "always", "never")
MODE = "auto"


def set_mode(mode: str) -> None:
    global MODE
    if mode not in MODES:
        raise ValueError(mode)
    MODE = mode


def console_kwargs() -> dict[str, Any]:
    if MODE == "always":
        return {"force_terminal": True, "no_color": False, "color_system": "standard"}
    if MODE == "never":
        return {"color_system": None, "no_color": True}
    return {}
