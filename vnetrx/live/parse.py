"""Pure parsing for the live checks: length lists and tracefs ``trace_pipe`` lines. No I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vnetrx.errors import InputError

MAX_LENGTHS = 100_000

# One line of trace_pipe for net:netif_receive_skb_entry (print fmt of
# include/trace/events/net.h @6.18; fields after dev= are name=value pairs separated by spaces).
_EVENT = re.compile(r"\bnetif_receive_skb_entry: (?P<fields>dev=.*)$")
_PAIR = re.compile(r"(\w+)=(\S+)")
_MARKER = re.compile(r"\btracing_mark_write: (?P<text>.*?)\s*$")


@dataclass(frozen=True)
class SkbEvent:
    """The net:netif_receive_skb_entry fields a tap write is checked on."""

    dev: str
    len: int
    data_len: int
    truesize: int
    nr_frags: int
    gso_size: int
    gso_type: int


def parse_lengths(text: str, low: int = 0, high: int = 65535) -> tuple[int, ...]:
    """``60,1000,3400-3500:8`` → 60, 1000, 3400, 3408, … 3496, 3500 (a range always ends on its
    upper bound). Order is kept; duplicates are dropped."""
    out: dict[int, None] = {}
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            continue
        match = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part)
        if match is None:
            raise InputError(
                f"cannot read length {part!r}",
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


def parse_event(line: str) -> SkbEvent | None:
    """The event on one trace_pipe line, or None when the line is something else."""
    match = _EVENT.search(line)
    if match is None:
        return None
    pairs = dict(_PAIR.findall(match.group("fields")))
    try:
        return SkbEvent(
            dev=pairs["dev"],
            len=int(pairs["len"]),
            data_len=int(pairs["data_len"]),
            truesize=int(pairs["truesize"]),
            nr_frags=int(pairs["nr_frags"]),
            gso_size=int(pairs["gso_size"], 0),
            gso_type=int(pairs["gso_type"], 0),
        )
    except (KeyError, ValueError):
        return None


def parse_marker(line: str) -> str | None:
    """The text a trace_marker write left on this line, or None."""
    match = _MARKER.search(line)
    return None if match is None else match.group("text")
