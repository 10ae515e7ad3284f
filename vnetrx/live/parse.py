"""Pure parsing for the live checks: length lists and tracefs ``trace_pipe`` lines. No I/O."""

from __future__ import annotations

import re

from vnetrx.errors import InputError
from vnetrx.observed.rx_event import RxEvent, parse_rx_event

MAX_LENGTHS = 100_000

_MARKER = re.compile(r"\btracing_mark_write: (?P<text>.*?)\s*$")


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def parse_lengths(text: str, low: int = 0, high: int = 65535) -> tuple[int, ...]:
    """``60,1000,3400-3500:8`` → 60, 1000, 3400, 3408, … 3496, 3500 (a range always ends on its
    upper bound). Order is kept; duplicates are dropped."""
    out: dict[int, None] = {}
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            continue
        match = re.fullmatch(r"(\d{1,9})(?:-(\d{1,9})(?::(\d{1,9}))?)?", part)
        if match is None:
            raise InputError(
                f"cannot read length {_short(part)!r}",
                hint="give N, A-B or A-B:STEP, comma-separated, e.g. 60,1000,3400-3500:8",
            )
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        step = int(match.group(3)) if match.group(3) else 1
        if step < 1 or last < first:
            raise InputError(f"bad range {part!r}: need A <= B and STEP >= 1")
        for value in (first, last):
            if not low <= value <= high:
                raise InputError(f"length {value} out of range (valid: {low}..{high})")
        if (last - first) // step + len(out) > MAX_LENGTHS:
            raise InputError(f"more than {MAX_LENGTHS} lengths")
        for value in (*range(first, last + 1, step), last):
            out[value] = None
    if not out:
        raise InputError("empty length list")
    return tuple(out)


def parse_event(line: str) -> RxEvent | None:
    """A net:netif_receive_skb_entry line (a tap write's skb), or None."""
    event = parse_rx_event(line)
    return event if event is not None and event.event == "netif_receive_skb_entry" else None


def parse_marker(line: str) -> str | None:
    """The text a trace_marker write left on this line, or None."""
    match = _MARKER.search(line)
    return None if match is None else match.group("text")
