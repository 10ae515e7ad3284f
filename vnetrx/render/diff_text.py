"""Terminal output of ``vnetrx diff``: where two traces part, what differs, both maps side by side."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich import box
from rich.columns import Columns
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from vnetrx.diff import FlowDiff, TraceDiff
from vnetrx.flow import FlowRun
from vnetrx.model import Trace
from vnetrx.render.tables import Table
from vnetrx.render.text import buffer_map, skb_map, xdp_summary


def _label(t: Trace) -> str:
    inputs = dict(t.input)
    return f"{t.path} on {t.kernel.name}, frame {inputs.get('frame_len')} B"


def _side(t: Trace) -> RenderableType:
    parts: list[RenderableType] = [Text(_label(t), style="bold cyan")]
    if t.buffer is not None:
        parts.append(buffer_map("Receive buffer", t.buffer))
    if t.skb is not None:
        parts.append(skb_map(t.skb))
    elif t.xdp is not None:
        parts.append(xdp_summary(t.xdp))
    else:
        parts.append(Text(f"dropped: {t.reason}", style="bold red"))
    return Group(*parts)


def diff_renderable(d: TraceDiff) -> RenderableType:
    parts: list[RenderableType] = [
        Text(f"A: {_label(d.a)}\nB: {_label(d.b)}", style="bold"),
        Text(),
    ]
    if d.first_step is None and not d.fields:
        parts.append(Text("The two traces are the same.", style="bold green"))
        return Group(*parts)
    if not d.fields:
        parts += [Text("The results are the same (every result field agrees); only the steps "
                       "differ.", style="bold green"), Text()]
    if d.first_step is not None:
        parts.append(Text(f"First differing step: #{d.first_step + 1}", style="bold underline"))
        for name, t in (("A", d.a), ("B", d.b)):
            if d.first_step < len(t.steps):
                step = t.steps[d.first_step]
                values = "  ".join(f"{k}={v}" for k, v in step.values)
                parts.append(
                    Text(f"{name}  {step.function}: {step.summary}\n   {values}\n   {step.source}")
                )
            else:
                parts.append(Text(f"{name}  (no step: the trace ended)"))
        parts.append(Text())
    if d.fields:
        parts += [*_differences("field", d.fields, _cell), Text()]
    parts.append(SideBySide(_side(d.a), _side(d.b)))
    return Group(*parts)


class SideBySide:
    """A and B in two columns where both fit (a console of SIDE_BY_SIDE columns or more),
    else one after the other: nothing is cut to make them fit."""

    def __init__(self, a: RenderableType, b: RenderableType) -> None:
        self.a, self.b = a, b

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width >= SIDE_BY_SIDE:
            yield Columns([self.a, self.b], equal=True)
        else:
            yield self.a
            yield Text()
            yield self.b


SIDE_BY_SIDE = 140  # two memory maps (bar, offset, size, region, note) of ~68 columns


def print_diff(d: TraceDiff, console: Console) -> None:
    console.print(diff_renderable(d))


def flow_diff_renderable(d: FlowDiff) -> RenderableType:
    """Two GRO flows: the first segment they treat differently, every result that differs."""
    def label(run: FlowRun) -> str:
        inputs = dict(run.input)
        return (f"{run.path} on {run.kernel.name}, {inputs.get('segments')} segments of "
                f"{inputs.get('frame_len')} B, then GRO")

    parts: list[RenderableType] = [Text(f"A: {label(d.a)}\nB: {label(d.b)}", style="bold"),
                                   Text()]
    if d.first_segment is None and not d.fields:
        parts.append(Text("The two flows are the same.", style="bold green"))
        return Group(*parts)
    if d.first_segment is not None:
        parts.append(Text(f"First segment treated differently: #{d.first_segment}",
                          style="bold underline"))
        for name, run in (("A", d.a), ("B", d.b)):
            if d.first_segment < len(run.segments):
                seg, step = run.segments[d.first_segment], run.gro.steps[d.first_segment]
                parts.append(Text(f"{name}  driver: {seg.outcome}, truesize {seg.skb.truesize}, "
                                  f"headlen {seg.skb.headlen}; GRO: {step.result} ({step.how})"))
            else:
                parts.append(Text(f"{name}  (no such segment)"))
        parts.append(Text())
    if d.fields:
        parts += _differences("result", d.fields, _flow_cell)
    return Group(*parts)


def _differences(name: str, fields: tuple[tuple[str, Any, Any], ...],
                 cell: Callable[[object], str]) -> list[RenderableType]:
    """"Results that differ": one row a field, A's value and B's."""
    table = Table(box=box.SIMPLE_HEAD, title=None, show_edge=False)
    table.add_column(name, style="bold")
    table.add_column("A", justify="right")
    table.add_column("B", justify="right")
    for field, a, b in fields:
        table.add_row(field, cell(a), cell(b))
    return [Text("Results that differ", style="bold underline"), table]


def _flow_cell(value: object) -> str:
    """Frame lists as ranges (0-44), the rest as _cell writes them."""
    if isinstance(value, list):
        if value and value == list(range(value[0], value[0] + len(value))) and len(value) > 2:
            return f"{value[0]}-{value[-1]}"
        return ", ".join(str(v) for v in value) or "-"
    return _cell(value)


def _cell(value: object) -> str:
    """A result value as the rest of the text output writes it: "-" where a side has none (no
    skb, no XDP program), 0/1 for a flag (as the skb line prints l4_hash)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(int(value))
    return str(value)
