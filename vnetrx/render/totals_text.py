"""The totals line of a replay's text (``vnetrx replay --summary``), without rich: printed
plain when the output takes no colour (a pipe, a file, ``--color never``), so that a summary
does not load rich for one line (~0.15-0.2 s of a replay's start-up); replay_text.py styles
the same words for a terminal."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from vnetrx.render import color
from vnetrx.replay.summary import Totals

if TYPE_CHECKING:
    from vnetrx.replay.gro import GroTotals

LABEL = "totals: "


def plain_stdout() -> bool:
    """Text written to stdout now takes no colour and no layout from rich: ``--color never``,
    or ``auto`` into something that is not a terminal (what console_kwargs gives rich)."""
    return color.MODE == "never" or (color.MODE == "auto" and not color.is_terminal(sys.stdout))


def totals_line(totals: Totals) -> str:
    return LABEL + totals.line()


# an skb that merged others and still counts 1 (6.1.0-6.1.6: a GSO skb merged counts its
# gso_segs, 0) [net/core/gro.c:napi_gro_complete, net/ipv4/ip_input.c:ip_rcv_core,
# net/ipv6/ip6_input.c:ip6_rcv_core @ 6.1.0]
COUNT_ONE = ("count 1: napi_gro_complete only cleared gso_size (no inet_gro_complete): the IP "
             "header keeps the first skb's length, and ip_rcv_core / ip6_rcv_core trim the skb "
             "to it (pskb_trim_rcsum): the merged payload is lost after GRO")


def gro_totals_lines(t: GroTotals, notes: Sequence[str]) -> list[tuple[str, str | None]]:
    """``replay --gro``'s closing lines, each with its style on a terminal: the totals, then
    the notes (render/gro_text.py prints them with rich; with --summary into a pipe or a file
    they are written plain, rich not loaded)."""
    lines: list[tuple[str, str | None]] = [
        (f"totals: {t.frames} frames in {t.skbs} skb(s) ({t.merged} aggregate(s), up to "
         f"{t.most} segments each); truesize {t.truesize}", None)]
    if t.counted_one:
        lines.append((f"note: an skb of several frames with segs 1: {COUNT_ONE}", "yellow"))
    lines.extend((f"note: {note}", "yellow") for note in notes)
    return lines


def write_plain(lines: list[tuple[str, str | None]]) -> None:
    """``lines`` as rich writes them to a pipe or a file from stdout_console (soft wrap: no
    line is broken; trailing spaces dropped, as color._TrimmedLines drops them)."""
    sys.stdout.write("".join(line.rstrip(" ") + "\n" for text, _ in lines
                             for line in text.split("\n")))
