"""An int's decimal text, as ``str(v)``, the texts of small values kept once made: the JSONL rows a
replay writes repeat a few lengths, offsets and counts on every line (compiled with the row
writers, vnetrx/compiled.py: a kept text is a list index, ~0.08k instructions, where ``str`` of
an int is ~0.36k)."""

from __future__ import annotations

from typing import Final

# values below this have their text kept (a list of that many entries: 512 KiB of pointers,
# filled as values come; an skb's len and truesize are mostly below 64 KiB)
KEPT: Final = 1 << 16
_TEXTS: Final[list[str]] = [""] * KEPT


def int_text(v: int) -> str:
    """``str(v)``."""
    if 0 <= v < KEPT:
        text = _TEXTS[v]
        if not text:
            text = _TEXTS[v] = str(v)
        return text
    return str(v)


# "000" to "999", each made when first asked for
_LOW: Final[list[str]] = [""] * 1000


def int_head(v: int) -> str:
    """The text of ``v`` but its last three digits ("" below 1000): ``int_head(v) +
    int_tail(v)`` is ``str(v)``. For a number that differs on every row (a replay's frame
    index and poll), two kept texts where ``str`` makes a new one (~0.24k instructions)."""
    if v < 1000:
        return "" if v >= 0 else str(v)
    return int_text(v // 1000)


def int_tail(v: int) -> str:
    """The last three digits of ``v``'s text, zero-filled (all of it below 1000; "" below 0):
    see ``int_head``."""
    if v < 1000:
        return int_text(v) if v >= 0 else ""
    low = v % 1000
    text = _LOW[low]
    if not text:
        text = _LOW[low] = f"{low:03d}"
    return text
