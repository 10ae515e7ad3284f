"""Terminal output for ``vnetrx replay``: one row per frame, the ring after it, and on request
(``--show N``) where frame N's buffers sit inside their backing pages."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from rich import box
from rich.console import Console, Group, RenderableType
from rich.text import Text

from vnetrx.model import Frag
from vnetrx.render.tables import Table
from vnetrx.render.text import buffer_map, skb_map
from vnetrx.render.totals_text import LABEL
from vnetrx.replay import (
    Fill,
    FrameRecord,
    Posted,
    Replay,
    RingView,
    Stream,
    backing_page_size,
    new_totals,
    page_label,
)
from vnetrx.replay.refill import ring_config
from vnetrx.replay.state import Ring
from vnetrx.replay.summary import Totals

BAR_WIDTH = 64
_BUFFER_MARKS = "123456789abcdefghijklmnopqrstuvwxyz"


def _sizes(buffers: tuple[Posted, ...]) -> str:
    """Run-length buffer sizes: "3×1536 2048 2×1536"."""
    runs: list[tuple[int, int]] = []
    for p in buffers:
        if runs and runs[-1][0] == p.buf.len:
            runs[-1] = (p.buf.len, runs[-1][1] + 1)
        else:
            runs.append((p.buf.len, 1))
    return " ".join(f"{n}×{size}" if n > 1 else str(size) for size, n in runs)


def _outcome(f: FrameRecord) -> Text:
    d = f.decision
    if d.skb is None:
        return Text(f"drop: {d.reason}", style="bold red")
    return Text(d.outcome, style="bold green" if d.outcome == "build_skb" else "bold blue")


def _fill_text(fill: Fill) -> str:
    return f"+{len(fill.buffers)}×{fill.buf_len}"


def _chain(r: Ring) -> int | None:
    """Big mode: the pages of one chain (big_packets_num_skbfrags + 1); None otherwise."""
    c = ring_config(r.kernel, r.config)
    return c.big_num_skbfrags + 1 if c.mode == "big" else None


def _header(r: Ring) -> Text:
    k, c = r.kernel, r.config
    d = c.device
    chain = _chain(r)
    line = Text()
    line.append("vnetrx replay ", style="bold")
    line.append("virtio-mergeable" if d.mergeable else "virtio-big" if chain
                else "virtio-small", style="bold cyan")
    line.append(f" on Linux {k.name}", style="bold")
    per_poll = f"{c.batch} frame(s) per poll" if not c.polls else "polls as given"
    if chain is not None or r.initial_fill is None:
        line.append(
            f"  ({'guest GSO, ' if d.guest_gso else ''}MTU {d.mtu}, NAPI budget {c.budget}, "
            f"{per_poll}; {k.build.arch}, {k.build.page_size // 1024} KiB pages)\n",
            style="dim",
        )
        line.append(f"add_recvbuf_big: every buffer is a chain of {chain} pages from rq->pages; "
                    "each frame lands in one of its own (no EWMA, no page_frag)")
        return line
    first = r.initial_fill.buffers
    pages = sorted({p.buf.frag_index for p in first})
    line.append(
        f"  ({'guest GSO, ' if d.guest_gso else ''}ring {d.ring_size}, NAPI budget {c.budget}, "
        f"{c.batch} frame(s) per poll, refill "
        f"when more than {c.refill_threshold} are free; {k.build.arch}, "
        f"{k.build.page_size // 1024} KiB pages)\n",
        style="dim",
    )
    line.append(
        f"virtnet_open: try_fill_recv posts {len(first)} buffers of {r.initial_fill.buf_len} "
        f"bytes"
        + (" (an XDP program is attached: len + room, whatever the EWMA)" if d.xdp and d.mergeable
           else f" (EWMA 0 → min_buf_len {r.min_buf_len})" if d.mergeable else "")
        + f" on {page_label(k, c, pages[0])}..{page_label(k, c, pages[-1])}",
    )
    return line


_COLUMNS = (
    ("#", ">"),
    ("len", ">"),
    ("poll", ">"),
    ("bufs", ">"),
    ("first buffer", "<"),
    ("buffer sizes", "<"),
    ("outcome", "<"),
    ("truesize", ">"),
    ("frags", ">"),
    ("EWMA", ">"),
    ("next len", ">"),
    ("refill", "<"),
)


# the columns' widths when rows are printed one at a time (a live feed, -l): wide enough for
# most values, so that the rows line up under one header
_LIVE_WIDTHS = (6, 5, 5, 4, 14, 24, 22, 8, 5, 5, 8, 0)


def _table(r: Ring, frames: Iterable[FrameRecord], widths: Sequence[int] | None = None,
           header: bool = True) -> Text:
    """Fixed-width columns (never squeezed: a row may run past a narrow terminal): as wide as
    the block's values, or ``widths``; ``header`` False: the rows only."""
    rows: list[list[tuple[str, str]]] = []
    chain = _chain(r)
    page = r.kernel.build.page_size
    for f in frames:
        first = f.buffers[0] if f.buffers else None
        received = f.poll is not None
        outcome = _outcome(f) if received else Text("device drop: too long", style="bold red")
        if chain is not None:  # big mode: a page chain of its own, not followed in the ring
            where = ("1", "page chain") if received else ("0", "-")
            sizes = f"{chain}×{page}" if received else "(none used)"
        else:
            where = (str(len(f.buffers)), "-" if first is None else
                     f"{page_label(r.kernel, r.config, first.buf.frag_index)}+{first.buf.offset}")
            sizes = _sizes(f.buffers) or "(none used)"
        rows.append(
            [
                (str(f.index), ""),
                (str(f.frame_len), ""),
                ("-" if f.poll is None else str(f.poll), ""),
                (where[0], ""),
                (where[1], ""),
                (sizes, ""),
                (outcome.plain, str(outcome.style)),
                ("-" if f.decision.skb is None else str(f.decision.skb.truesize), ""),
                ("-" if f.decision.skb is None else str(f.decision.skb.nr_frags), ""),
                ("-" if f.ewma_after is None else str(f.ewma_after), ""),
                (str((f.ring and f.ring.mergeable_rx_buffer_size) or "-"), ""),
                ("" if f.refill is None else _fill_text(f.refill), "yellow"),
            ]
        )
    if widths is None:
        widths = [max([len(name)] + [len(row[i][0]) for row in rows])
                  for i, (name, _) in enumerate(_COLUMNS)]
    else:
        widths = [max(width, len(name)) for width, (name, _) in zip(widths, _COLUMNS, strict=True)]
    text = Text()
    names = "  ".join(
        f"{name:{align}{width}}" for (name, align), width in zip(_COLUMNS, widths, strict=True)
    )
    if header:
        text.append(names.rstrip() + "\n", style="bold")
        text.append("─" * len(names.rstrip()) + "\n", style="dim")  # as rich's SIMPLE_HEAD
    for row in rows:
        cells = [
            (f"{value:{align}{width}}", style)
            for (value, style), (_, align), width in zip(row, _COLUMNS, widths, strict=True)
        ]
        line = Text()
        for index, (cell, style) in enumerate(cells):
            line.append(("  " if index else "") + cell, style=style or None)
        line.rstrip()
        text.append_text(line)
        text.append("\n")
    text.rstrip()
    return text


def _ring_line(r: Ring, v: RingView, title: str) -> Text:
    text = Text()
    text.append(f"{title}: ", style="bold")
    if v.ewma is not None:
        text.append(f"EWMA {v.ewma} · mergeable_rx_buffer_size {v.mergeable_rx_buffer_size} · ")
    held = f"at {v.page}+{v.offset}" if v.page is not None else "holds no fragment page"
    text.append(
        f"{v.allocator} {held} · {v.posted} posted ("
        + ", ".join(f"{n}×{size}" for size, n in v.posted_lens)
        + f"), {v.num_free} free · "
        f"{v.polls} poll(s), {v.fills} fill(s)"
    )
    if v.next_buffer is not None:
        b = v.next_buffer.buf
        text.append(
            f" · next buffer #{v.next_buffer.seq}: {b.len} B at "
            f"{page_label(r.kernel, r.config, b.frag_index)}+{b.offset}"
        )
    return text


def _role(r: Ring, f: FrameRecord, i: int, p: Posted) -> str:
    t = f.trace
    assert t is not None
    label = page_label(r.kernel, r.config, p.buf.frag_index)
    if i == 0:
        if t.skb is None:
            return "dropped"
        if t.outcome == "build_skb":
            return "skb head (build_skb)"
        frag = _frag_at(t.skb.frags, label, p.buf.offset, p.buf.offset + p.buf.len)
        return (
            "copied, then released"
            if frag is None
            else f"copied {t.cost.bytes_copied if t.cost else 0} B; the rest is frag {frag}"
        )
    if t.skb is None:
        return "dropped"
    frag = _frag_at(t.skb.frags, label, p.buf.offset, p.buf.offset + 1)
    if frag is None:
        return "?"
    start = t.skb.frags[frag].offset
    return f"frag {frag}" if start == p.buf.offset else f"coalesced into frag {frag}"


def _frag_at(frags: tuple[Frag, ...], page: str, start: int, stop: int) -> int | None:
    for index, frag in enumerate(frags):
        if frag.page == page and frag.offset < stop and start < frag.offset + frag.size:
            return index
    return None


def _page_bars(r: Ring, f: FrameRecord) -> RenderableType:
    """Each backing page the frame touches, 64 cells wide, its buffers marked 1, 2, 3..."""
    rows: list[RenderableType] = []
    pages = sorted({p.buf.frag_index for p in f.buffers})
    for page in pages:
        size = backing_page_size(r.kernel, r.config)
        cell = size / BAR_WIDTH
        cells = ["."] * BAR_WIDTH
        for i, p in enumerate(f.buffers):
            if p.buf.frag_index != page:
                continue
            lo = int(p.buf.offset // cell)
            hi = max(lo + 1, round((p.buf.offset + p.buf.len) / cell))
            for c in range(lo, min(hi, BAR_WIDTH)):
                cells[c] = _BUFFER_MARKS[i % len(_BUFFER_MARKS)]
        bar = Text(f"{page_label(r.kernel, r.config, page):>8} [")
        for char in cells:
            bar.append(char, style="dim" if char == "." else "bold cyan reverse")
        bar.append(f"] {size} bytes, one cell = {int(cell)} bytes")
        rows.append(bar)
    return Group(*rows)


def _show(r: Ring, f: FrameRecord) -> RenderableType:
    assert f.trace is not None, "replay --show N keeps frame N's trace"
    parts: list[RenderableType] = [
        Text(
            f"Frame {f.index}: {f.frame_len} bytes in "
            + (f"{len(f.buffers)} buffer(s)" if f.buffers or f.poll is None
               else "a page chain")
            + ("" if f.poll is None else f", NAPI poll {f.poll}"),
            style="bold underline",
        )
    ]
    if not f.buffers and f.poll is not None:  # big mode: the chain, as the trace maps it
        reached = [b for b in f.trace.buffers[1:] if b.used]
        parts.append(Text(
            f"a page chain of its own (add_recvbuf_big): {len(f.trace.buffers)} page(s); page 0 "
            "is the first buffer below" + ("; the device wrote on into " + ", ".join(
                f"{b.page} ({b.used} B)" for b in reached) if reached else "")))
    elif f.buffers:
        parts.append(_page_bars(r, f))
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for name in (
            "mark",
            "buffer #",
            "page",
            "offset",
            "end",
            "len (truesize)",
            "used",
            "becomes",
        ):
            table.add_column(name, justify="left" if name in ("page", "becomes") else "right")
        for i, (p, b) in enumerate(zip(f.buffers, f.trace.buffers, strict=False)):
            table.add_row(
                _BUFFER_MARKS[i % len(_BUFFER_MARKS)],
                str(p.seq),
                page_label(r.kernel, r.config, p.buf.frag_index),
                str(p.buf.offset),
                str(p.buf.offset + p.buf.len),
                str(p.buf.len),
                str(b.used),
                _role(r, f, i, p),
            )
        parts.append(table)
    else:
        parts.append(Text("the device used no buffer for it", style="yellow"))
    if f.trace.buffer is not None:
        parts += [buffer_map("First buffer", f.trace.buffer), Text()]
    if f.trace.skb is not None:
        parts += [skb_map(f.trace.skb), Text()]
    if f.ring is not None:
        parts.append(_ring_line(r, f.ring, "ring after it"))
    return Group(*parts)


def replay_renderable(r: Replay, show: int | None = None) -> RenderableType:
    totals = new_totals(r.kernel, r.config)
    for f in r.frames:
        totals.add(f)
    parts: list[RenderableType] = [
        _header(r),
        Text(),
        _table(r, r.frames),
        _final_line(r, r.final, totals),
        _totals_line(totals),
    ]
    parts.extend(Text(f"note: {note}", style="yellow") for note in r.notes)
    if show is not None:
        parts += [Text(), _show(r, r.frames[show])]
    return Group(*parts)


def _final_line(r: Ring, final: RingView | None, totals: Totals) -> Text:
    """The ring after the last frame; big mode: the polls only (its chains are not followed)."""
    if final is not None:
        return _ring_line(r, final, "final ring")
    return Text("final: ", style="bold") + Text(
        f"{totals.polls} NAPI poll(s); the page chains' places in the ring are not followed")


def _totals_line(totals: Totals) -> Text:
    return Text(LABEL, style="bold") + Text(totals.line())


BLOCK = 1000  # rows per table block when a replay is printed as it runs


def print_replay(r: Replay, console: Console, show: int | None = None) -> None:
    console.print(replay_renderable(r, show))


def print_stream(s: Stream, console: Console, show: int | None = None,
                 summary_only: bool = False, live: bool = False) -> Totals:
    """Print a replay as it runs: the header, the rows in blocks of BLOCK frames (each block
    with its own column widths; ``live``: each row as soon as it is computed, under one header
    with fixed widths), then the final ring, the totals and the notes; ``show``: that frame's
    buffers and skb. Memory stays flat whatever the number of frames."""
    totals = new_totals(s.kernel, s.config)
    if summary_only and show is None:  # the totals alone: no row to print
        totals.add_all(s.records)
        console.print(_totals_line(totals))
        return totals
    if not summary_only:
        console.print(_header(s))
        console.print()
    shown: FrameRecord | None = None
    block: list[FrameRecord] = []
    records = iter(s.records)
    first = next(records, None)
    for f in itertools.chain((first,) if first is not None else (), records):
        totals.add(f)
        if f.index == show:
            shown = f
        if summary_only:
            continue
        if live:
            console.print(_table(s, (f,), _LIVE_WIDTHS, header=f is first))
            continue
        block.append(f)
        if len(block) == BLOCK:
            console.print(_table(s, block))
            block = []
    if block:
        console.print(_table(s, block))
    if not summary_only:
        console.print(_final_line(s, s.final(), totals))
    console.print(_totals_line(totals))
    if not summary_only:
        for note in s.notes:
            console.print(Text(f"note: {note}", style="yellow"))
    if shown is not None:
        console.print()
        console.print(_show(s, shown))
    return totals
