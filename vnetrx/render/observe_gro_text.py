"""Terminal output of ``vnetrx observe --gro``: the device's NAPI facts, one row per skb that
left GRO (✓ the model predicted it, ✗ it differs: the fields that differ are marked), the polls
that could not be predicted with the reason, and notes."""

from __future__ import annotations

from collections import Counter

from rich import box
from rich.console import Group, RenderableType
from rich.text import Text

from vnetrx.live.observe_gro import GroReport
from vnetrx.render.tables import Table

SHOWN = ("len", "data_len", "headlen", "truesize", "nr_frags", "frag_list", "gso_size",
         "gso_segs", "gso_type", "ip_summed")


def _frames(frames: tuple[int, ...]) -> str:
    if len(frames) > 2 and list(frames) == list(range(frames[0], frames[-1] + 1)):
        return f"{frames[0]}-{frames[-1]}"
    return ",".join(str(f) for f in frames)


def observe_gro_renderable(report: GroReport) -> RenderableType:
    f = report.facts
    parts: list[RenderableType] = [Text(
        f"vnetrx observe {f.device} --gro: model {report.kernel}; gro_flush_timeout "
        f"{f.gro_flush_timeout}, napi_defer_hard_irqs {f.napi_defer_hard_irqs}, HZ {f.hz}, "
        f"GRO {'on' if f.gro else 'off' if f.gro is False else 'unknown'}", style="bold")]
    table = Table(box=box.SIMPLE_HEAD)
    for name in ("", "poll", "inputs", *SHOWN, "flush"):
        table.add_column(name, justify="right" if name not in ("", "flush") else "left")
    for c in report.compared:
        row = c.observed if c.observed is not None else c.predicted or {}
        cells = []
        for name in SHOWN:
            value = str(row.get(name, "-"))
            if name in c.differ and c.predicted is not None and c.observed is not None:
                value = f"{c.observed[name]} (model {c.predicted[name]})"
            cells.append(Text(value, style="bold red" if name in c.differ else ""))
        mark = Text("✓", style="green") if c.match else Text("✗", style="bold red")
        table.add_row(mark, str(c.poll), _frames(c.frames), *cells, c.flush or "-")
    if report.compared:
        parts.append(table)
    else:
        parts.append(Text("nothing to compare: no whole poll with inputs in the window"))
    for reason, n in Counter(s.reason for s in report.skipped).most_common():
        inputs = sum(s.inputs for s in report.skipped if s.reason == reason)
        parts.append(Text(f"not predicted: {n} poll(s), {inputs} input(s): {reason}",
                          style="yellow"))
    parts.append(Text(
        f"{report.inputs} skbs entered GRO, {report.outputs} left it in {report.polls} polls; "
        f"{len(report.compared)} compared: {report.matches} ✓, {report.mismatches} ✗",
        style="bold"))
    for i, note in enumerate(report.notes, 1):
        parts.append(Text(f"{i}. {note}", style="dim"))
    return Group(*parts)
