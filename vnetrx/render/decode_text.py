"""Terminal output for ``vnetrx decode``: header fields, frame headers, the checksum position and
the kernel's verdict with every check it made."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.text import Text

from vnetrx.decode import Decoded
from vnetrx.render.tables import Table


def decode_renderable(d: Decoded) -> RenderableType:
    parts: list[RenderableType] = []
    title = Text()
    title.append("vnetrx decode ", style="bold")
    title.append(f"struct {d.struct}", style="bold cyan")
    title.append(f" ({d.hdr_len} bytes) on Linux {d.kernel.name}", style="bold")
    if d.frame_len is not None:
        title.append(f"  frame {d.frame_len} bytes", style="dim")
    parts += [title, Text()]
    fields = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    fields.add_column("offset", justify="right", no_wrap=True)
    fields.add_column("size", justify="right", no_wrap=True)
    fields.add_column("value", justify="right", no_wrap=True)
    fields.add_column("field: meaning")
    for f in d.fields:
        cell = Text(f.name, style="bold")
        if f.meaning:
            cell.append(f": {f.meaning}")
        fields.add_row(
            str(f.offset), str(f.size), f"{f.value} ({f.value:#0{2 + 2 * f.size}x})", cell
        )
    parts += [Text("Header", style="bold underline"), fields, Text()]
    if d.layers:
        frame = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for column, justify in (
            ("offset", "right"),
            ("length", "right"),
            ("layer", "left"),
            ("summary", "left"),
        ):
            frame.add_column(column, justify=justify)
        for layer in d.layers:
            frame.add_row(
                str(layer.offset), str(layer.length), Text(layer.name, style="bold"), layer.summary
            )
        parts += [Text("Frame", style="bold underline"), frame, Text()]
    if d.csum is not None:
        line = Text("Checksum: ", style="bold")
        line.append(
            f"csum_start {d.csum.start} → {d.csum.start_in}; csum_offset "
            f"{d.csum.offset} → {d.csum.explanation}"
        )
        parts += [line, Text()]
    v = d.verdict
    if v is not None and v.checks:
        checks = Text()
        for c in v.checks:
            checks.append("  ok    " if c.ok else "  FAIL  ", style="green" if c.ok else "bold red")
            checks.append(c.test, style="bold")
            checks.append(f"\n        {c.detail}\n")
            checks.append(f"        {c.source}", style="italic dim")
            if c.because:
                checks.append("  because: " + ", ".join(c.because), style="dim cyan")
            checks.append("\n")
        parts += [Text("Checks on a tap write", style="bold underline"), checks]
    verdict = Text("Verdict: ", style="bold")
    if v is None:
        verdict.append("not validated (no frame bytes and no --len)", style="yellow")
    elif not v.modelled:
        verdict.append(f"not modelled: {v.reason}", style="yellow")
    elif v.accepted:
        verdict.append("write() is accepted", style="bold green")
        verdict.append(
            "; the skb leaves as a GSO skb (SKB_GSO_DODGY: segments counted later)"
            if v.gso
            else "; not a GSO skb"
        )
    else:
        verdict.append(f"write() fails with {v.errno} in {v.function}", style="bold red")
        verdict.append(f": {v.reason}")
    parts.append(verdict)
    parts += [Text(f"note: {note}", style="yellow") for note in d.notes]
    return Group(*parts)
