"""Buffer maps: the named byte ranges every path draws (what the text view shows as a memory map)."""

from __future__ import annotations

from vnetrx.model import Region


def regions(*parts: tuple[str, int, str]) -> tuple[Region, ...]:
    """Lay named sizes end to end from offset 0, dropping empty ones."""
    out, offset = [], 0
    for name, size, note in parts:
        if size > 0:
            out.append(Region(name, offset, size, note))
        offset += max(size, 0)
    return tuple(out)
