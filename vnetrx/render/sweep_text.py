"""Terminal output of ``vnetrx sweep``: the ranges where nothing changes, and a chart of truesize
and of bytes copied against frame length."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.text import Text

from vnetrx.render.tables import Table
from vnetrx.sweep import Row, Span
from vnetrx.sweep_gro import GroRow

LEVELS = " ▁▂▃▄▅▆▇█"
CHART_HEIGHT = 8
CHART_WIDTH = 72


def ranges_table(spans: Sequence[Span], several_kernels: bool) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    if several_kernels:
        table.add_column("kernel", style="bold")
    for name, justify in (("frame lengths", "right"), ("count", "right"), ("what happens", "left"),
                          ("truesize", "right"), ("frags", "right"), ("allocs", "right"),
                          ("buffers", "right")):
        table.add_column(name, justify=justify)
    for span in spans:
        lengths = str(span.first) if span.first == span.last else f"{span.first}–{span.last}"
        style = ("green" if span.outcome == "build_skb" else "red" if span.outcome in
                 ("drop", "error") else "blue")
        cells: list[str | Text] = [lengths, str(span.lengths), Text(span.what, style=style),
                 "-" if span.truesize is None else str(span.truesize),
                 "-" if span.nr_frags is None else str(span.nr_frags),
                 "-" if span.allocations is None else str(span.allocations), str(span.buffers)]
        table.add_row(*([span.kernel] if several_kernels else []), *cells)
    return table


def _columns(rows: Sequence[Row], width: int) -> list[list[Row]]:
    per = max(1, -(-len(rows) // width))
    return [list(rows[i:i + per]) for i in range(0, len(rows), per)]


def chart(rows: Sequence[Row], width: int = CHART_WIDTH) -> RenderableType:
    """truesize as bars (CHART_HEIGHT rows of eighths), bytes copied as one sparkline."""
    columns = _columns(rows, width)
    tops = [max((r.truesize or 0) for r in col) for col in columns]
    copied = [max((r.bytes_copied or 0) for r in col) for col in columns]
    peak = max(tops) or 1
    lines = []
    for level in range(CHART_HEIGHT, 0, -1):
        label = peak if level == CHART_HEIGHT else 0 if level == 1 else None
        line = Text("        │" if label is None else f"{label:>7} │", style="dim")
        for top in tops:
            eighths = top * CHART_HEIGHT * 8 // peak - (level - 1) * 8
            line.append(LEVELS[max(0, min(8, eighths))], style="cyan")
        lines.append(line)
    axis = Text(f"        └{'─' * len(columns)}\n", style="dim")
    axis.append(f"         {rows[0].frame_len:<{max(1, len(columns) - 8)}}{rows[-1].frame_len:>8}",
                style="dim")
    copy_peak = max(copied) or 1
    spark = Text("copied  │", style="dim")
    for value in copied:
        # any copy shows: at least the lowest block
        spark.append(LEVELS[max(1, min(8, value * 8 // copy_peak))] if value else " ",
                     style="magenta")
    spark.append(f"  (max {max(copied)} B)", style="dim")
    title = Text(f"truesize per packet (max {max(tops)}) against frame length", style="bold")
    return Group(title, *lines, axis, spark)


def sweep_renderable(spans_by_kernel: dict[str, list[Span]],
                     rows_by_kernel: dict[str, list[Row]]) -> RenderableType:
    several = len(spans_by_kernel) > 1
    spans = [span for group in spans_by_kernel.values() for span in group]
    parts: list[RenderableType] = [ranges_table(spans, several), Text()]
    for kernel, rows in rows_by_kernel.items():
        if rows and any(r.truesize for r in rows):
            if several:
                parts.append(Text(f"Linux {kernel}", style="bold underline"))
            parts += [chart(rows), Text()]
    return Group(*parts)


def gro_sweep_table(rows: Sequence[GroRow], segments: int, path: str) -> RenderableType:
    """``sweep --gro``: a row per length (and kernel): what the stack receives of the flow."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    several = len({r.kernel for r in rows}) > 1
    names = (("kernel",) if several else ()) + (
        "len", "skbs", "first skb: segs", "len", "frags", "frag_list", "truesize", "completed",
        "truesize before", "after", "per payload byte")
    for name in names:
        table.add_column(name, justify="left" if name in ("kernel", "completed") else "right",
                         no_wrap=True)
    for r in rows:
        per_byte = r.per_payload_byte
        table.add_row(*((r.kernel,) if several else ()), str(r.frame_len), str(r.skbs),
                      str(r.first_segs), str(r.first_len), str(r.first_nr_frags),
                      str(r.first_frag_list), str(r.first_truesize), r.first_flush,
                      str(r.truesize_before), str(r.truesize_after),
                      "-" if per_byte is None else f"{per_byte:.4f}")
    title = Text(f"vnetrx sweep --gro: a TCP flow of {segments} segment(s) of each length "
                 f"({path}), as the stack receives it after GRO", style="bold")
    return Group(title, table)
