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

# each flush reason as its JSON string
_QUOTED: Final[dict[str, str]] = {f: json.dumps(str(f)) for f in GroFlush}


def delivered_line(poll: int, d: Delivered) -> str:
    """``json.dumps(delivered_row(poll, d))``."""
    s = d.skb
    quoted = _QUOTED[d.flush]
    frames = ", ".join([str(i) for i in d.frames])
    frags = ", ".join(_sizes(s.frags))
    members = ", ".join([f'{{"len": {m.len}, "truesize": {m.truesize}, '
                         f'"nr_frags": {len(m.frags)}}}' for m in s.frag_list])
    listed = 0
    for m in s.frag_list:
        listed += m.len
    start = "null" if s.csum_start is None else str(s.csum_start)
    offset = "null" if s.csum_offset is None else str(s.csum_offset)
    return (f'{{"schema": "{REPLAY_GRO_ROW_SCHEMA}", "poll": {poll}, "frames": [{frames}], '
            f'"segs": {d.segs}, "flush": {quoted}, "len": {s.len}, "data_len": {s.data_len}, '
            f'"headlen": {s.len - s.data_len}, "truesize": {s.truesize}, '
            f'"nr_frags": {s.nr_frags}, "frags": [{frags}], "frag_list": {{"count": '
            f'{len(s.frag_list)}, "bytes": {listed}, "members": [{members}]}}, '
            f'"gso_size": {s.gso_size}, "gso_segs": {s.gso_segs}, "gso_type": {s.gso_type}, '
            f'"ip_summed": {s.ip_summed}, "csum_start": {start}, "csum_offset": {offset}}}')


def _sizes(frags: tuple[Frag, ...]) -> list[str]:
    """Each frag's size as text: a run of frags of one size (a flow's segments) shares the
    first one's text (str() of an int once per run, not per frag)."""
    out: list[str] = []
    last = -1
    text = ""
    for f in frags:
        size = f.size
        if size != last:
            text = str(size)
            last = size
        out.append(text)
    return out


def write_delivered(delivered: Iterable[tuple[int, Delivered]], out: TextIO,
                    live: bool = False) -> int:
    """Each skb's row, written as it comes (as replay_json.write_rows writes a replay's rows:
    whole lines only, 256 to a write; ``live``, a feed read as it arrives, each at once, to a
    buffer the reader flushes before it waits for more input); returns the frames they carry."""
    write = out.write
    count = 0
    lines: list[str] = []
    for poll, d in delivered:
        lines.append(delivered_line(poll, d))
        count += len(d.frames)
        if len(lines) == 256 or live:
            lines.append("")  # (the last newline, without copying the joined lines again)
            write("\n".join(lines))
            lines = []
    if lines:
        lines.append("")
        write("\n".join(lines))
    return count
