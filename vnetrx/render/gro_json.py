"""``replay --gro --jsonl``'s rows (vnetrx.replay-gro-row/1) written out directly: one line per
skb GRO delivers, ``json.dumps(codec.delivered_row(poll, d))`` to the byte, built as an f-string
(compiled with the per-frame modules: vnetrx/compiled.py), as render/replay_json.py's
``row_line`` writes the replay's own rows."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final, TextIO

from vnetrx.codec import REPLAY_GRO_ROW_SCHEMA
from vnetrx.model import Frag, GroFlush
from vnetrx.paths.gro import Delivered
from vnetrx.render.int_text import int_text

# each flush reason as its JSON string
_QUOTED: Final[dict[str, str]] = {f: json.dumps(str(f)) for f in GroFlush}


def delivered_line(poll: int, d: Delivered, tails: Tails | None = None) -> str:
    """``json.dumps(delivered_row(poll, d))``. The poll and the frame indices are each
    written once; the rest is the skb's (``skb_text``), kept by ``tails`` while skbs repeat."""
    frames = ", ".join([str(i) for i in d.frames])
    tail = skb_text(d) if tails is None else tails.text(d)
    return f'{{"schema": "{REPLAY_GRO_ROW_SCHEMA}", "poll": {poll}, "frames": [{frames}], {tail}'


def skb_text(d: Delivered) -> str:
    """A row from its "segs" on: the skb's numbers, which repeat from row to row (a flow's
    merged skbs alike): their texts are int_text's, kept."""
    s = d.skb
    quoted = _QUOTED[d.flush]
    frags = ", ".join(_sizes(s.frags))
    members = ", ".join([f'{{"len": {int_text(m.len)}, "truesize": {int_text(m.truesize)}, '
                         f'"nr_frags": {int_text(len(m.frags))}}}' for m in s.frag_list])
    listed = 0
    for m in s.frag_list:
        listed += m.len
    start = "null" if s.csum_start is None else int_text(s.csum_start)
    offset = "null" if s.csum_offset is None else int_text(s.csum_offset)
    return (f'"segs": {int_text(d.segs)}, "flush": {quoted}, "len": {int_text(s.len)}, '
            f'"data_len": {int_text(s.data_len)}, "headlen": {int_text(s.len - s.data_len)}, '
            f'"truesize": {int_text(s.truesize)}, "nr_frags": {int_text(s.nr_frags)}, '
            f'"frags": [{frags}], "frag_list": {{"count": {int_text(len(s.frag_list))}, '
            f'"bytes": {int_text(listed)}, "members": [{members}]}}, '
            f'"gso_size": {int_text(s.gso_size)}, "gso_segs": {int_text(s.gso_segs)}, '
            f'"gso_type": {int_text(s.gso_type)}, "ip_summed": {int_text(s.ip_summed)}, '
            f'"csum_start": {start}, "csum_offset": {offset}}}')


class Tails:
    """The last row's ``skb_text``, with what it was made of: a delivered skb that is the same
    object as the last one's (GRO shares the completed skb of lone frames alike in geometry:
    ``GroState.complete``), with the same flush reason and count, has the same text (~3k
    instructions a row less, compiled, where frames seldom merge)."""

    def __init__(self) -> None:
        self.skb: object = None
        self.flush = ""
        self.segs = -1
        self.tail = ""

    def text(self, d: Delivered) -> str:
        if d.skb is not self.skb or d.flush != self.flush or d.segs != self.segs:
            self.skb, self.flush, self.segs = d.skb, d.flush, d.segs
            self.tail = skb_text(d)
        return self.tail


def _sizes(frags: tuple[Frag, ...]) -> list[str]:
    """Each frag's size as text (int_text's)."""
    return [int_text(f.size) for f in frags]


def write_delivered(delivered: Iterable[tuple[int, Delivered]], out: TextIO,
                    live: bool = False) -> int:
    """Each skb's row, written as it comes (as replay_json.write_rows writes a replay's rows:
    whole lines only, 256 to a write; ``live``, a feed read as it arrives, each at once, to a
    buffer the reader flushes before it waits for more input); returns the frames they carry."""
    write = out.write
    count = 0
    lines: list[str] = []
    tails = Tails()
    for poll, d in delivered:
        lines.append(delivered_line(poll, d, tails))
        count += len(d.frames)
        if len(lines) == 256 or live:
            lines.append("")  # (the last newline, without copying the joined lines again)
            write("\n".join(lines))
            lines = []
    if lines:
        lines.append("")
        write("\n".join(lines))
    return count
