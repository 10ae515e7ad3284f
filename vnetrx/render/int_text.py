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
