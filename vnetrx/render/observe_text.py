"""Terminal output of ``vnetrx observe``: the device and where its facts came from, one row per
skb with the fields the tracepoint showed, its agreement with the model (✓ exact, ≈ consistent
with an assumption vnetrx cannot check, ✗ mismatch, ? outside the model, · not compared: the
capture records nothing comparable) and numbered notes. A field the capture does not record
shows as "-", one recorded but not compared at its probe point in dim."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.text import Text

from vnetrx.live.observe import FIELDS, KPROBE_FIELDS, ObserveReport
from vnetrx.render.tables import Table, mismatch

WIDTH = 120  # the console's least width (vnetrx.render.tables.report_console)
MARK = {"exact": "✓", "consistent": "≈", "mismatch": "✗", "unmodelled": "?", "unchecked": "·"}
STYLE = {"exact": "green", "consistent": "yellow", "mismatch": "bold red", "unmodelled": "dim",
         "unchecked": "dim"}
SOURCE = {
    "device": "read from the device (ioctls, sysfs)",
    "lab log": "from a vnetrx lab log",
    "options": "from the command line",
}
CORE = ("len", "data_len", "truesize", "nr_frags")  # the fields every skb has


def observe_renderable(report: ObserveReport) -> RenderableType:
    s = report.setup
    head = f"vnetrx observe {s.device}: {s.driver}, {s.mode} mode, MTU {s.mtu}"
    if s.rx is not None:
        head += f", hdr_len {s.rx.hdr_len}"
        if s.rx.buf_len:
            head += f", mergeable_rx_buffer_size {s.rx.buf_len}"
    parts: list[RenderableType] = [Text(head + f"; model {report.kernel}", style="bold")]
    source = SOURCE.get(s.source, s.source) + (f" (guest {s.release})" if s.release else "")
    if s.features:
        source += f"; features: {' '.join(s.features)}"
    parts.append(Text(source, style="dim"))
    # the four every skb has, then any other field some skb sets (offload fields stay out of a
    # table of plain frames)
    shown = [
        n
        for n in (*FIELDS, *KPROBE_FIELDS)
        if any(n in v.observed for v in report.frames)
        and (n in CORE or n in KPROBE_FIELDS or any(v.observed.get(n) for v in report.frames))
    ]
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("frame", justify="right", no_wrap=True)
    table.add_column("path", no_wrap=True)
    for name in shown:
        table.add_column("frags" if name == "nr_frags" else name, justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("note", no_wrap=True)
    footnotes: dict[str, int] = {}  # long notes go under the table, numbered
    for v in report.frames:
        cells: list[Text | str] = [str(v.frame_len), v.path]
        for name in shown:
            observed, predicted = v.observed.get(name), v.predicted.get(name)
            if observed is None:
                cells.append(Text("-", style="dim"))
            elif name in v.not_compared or v.agreement == "unchecked":
                cells.append(Text(str(observed), style="dim"))
            elif v.agreement == "mismatch" and predicted != observed:
                cells.append(Text(mismatch(predicted, observed), style="bold red"))
            else:
                cells.append(str(observed))
        cells.append(Text(MARK[v.agreement], style=STYLE[v.agreement]))
        mark = ""
        if v.note:
            mark = f"[{footnotes.setdefault(v.note, len(footnotes) + 1)}]"
        cells.append(Text(mark, style="dim"))
        table.add_row(*cells)
    parts.append(table)
    parts += [Text(f"[{number}] {note}", style="dim") for note, number in footnotes.items()]
    parts += [Text(f"note: {note}", style="dim") for note in report.notes]
    counts = {k: sum(v.agreement == k for v in report.frames) for k in MARK}
    checked = len(report.frames) - counts["unchecked"]
    summary = f"{counts['exact'] + counts['consistent']}/{checked} skbs compared agree"
    if not counts["unchecked"]:
        summary = f"{counts['exact'] + counts['consistent']}/{len(report.frames)} skbs agree"
    elif not checked:
        summary = "no skb compared"
    if counts["consistent"]:
        summary += f" ({counts['consistent']} consistent with an assumption vnetrx cannot check)"
    if counts["unmodelled"]:
        summary += f"; {counts['unmodelled']} outside the model"
    if counts["unchecked"]:
        summary += f"; {counts['unchecked']} not compared (nothing comparable in the capture)"
    parts.append(Text(summary, style="bold green" if report.match else "bold red"))
    return Group(*parts)
