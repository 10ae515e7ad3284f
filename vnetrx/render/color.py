"""The root ``--color auto|always|never`` choice, read by every console vnetrx makes.

Imports nothing heavy (no rich): the CLI sets ``MODE`` before any command runs, and
``console_kwargs()`` turns it into rich.Console arguments when a text renderer starts.
auto: colour on a terminal unless NO_COLOR is set (rich's own detection); always: ANSI even
into a pipe, and even with NO_COLOR (an explicit flag wins, as no-color.org asks); never: none.
"""

from __future__ import annotations

import os
import sys
from typing import Any

MODES = ("auto", "always", "never")
MODE = "auto"
# Output that is not a terminal (a file, a pipe) and no $COLUMNS: tables take their natural
# width up to this many columns instead of being squeezed into rich's default 80.
FILE_WIDTH = 240


def set_mode(mode: str) -> None:
    global MODE
    if mode not in MODES:
        raise ValueError(mode)
    MODE = mode


def console_kwargs() -> dict[str, Any]:
    out: dict[str, Any] = {}
    if MODE == "always":
        out = {"force_terminal": True, "no_color": False, "color_system": "standard"}
    elif MODE == "never":
        out = {"color_system": None, "no_color": True}
    if not is_terminal(sys.stdout):
        out["file"] = _TrimmedLines(sys.stdout)
        if not os.environ.get("COLUMNS"):
            out["width"] = FILE_WIDTH
    return out


class _TrimmedLines:
    """A text stream that drops the spaces rich pads table rows with at the end of each line
    (a file or pipe gets no trailing whitespace from the wide FILE_WIDTH layout)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.pending = ""

    def write(self, text: str) -> int:
        lines = (self.pending + text).split("\n")
        self.pending = lines.pop()
        if lines:
            self.stream.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.stream.write(self.pending)
            self.pending = ""
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return int(self.stream.fileno())

def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced or closed streams
        return False
