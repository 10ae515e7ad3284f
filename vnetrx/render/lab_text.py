"""Terminal output of ``vnetrx lab virtio``: the guest and what it negotiated, one row per frame
with each field the guest's skb showed against the prediction (✓, or predicted≠observed), the
counters, the XDP attach and the notes."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.text import Text

from vnetrx.lab.compare import FrameResult, LabReport
from vnetrx.render.tables import Table, mismatch

COLUMNS = ("len", "data_len", "truesize", "nr_frags", "data", "tail", "end", "mac_header")
WIDTH = 120  # the console's least width (vnetrx.render.tables.report_console)


def _cell(frame: FrameResult, name: str) -> Text:
    check = next((c for c in frame.checks if c.name == name), None)
    predicted = frame.predicted.get(name)
    if check is None:
        return Text("-" if predicted is None else str(predicted), style="dim")
    if check.ok:
        return Text(f"{check.observed} ✓", style="green")
    return Text(f"{mismatch(check.predicted, check.observed)} ✗", style="bold red")


def _verdict(text: str, ok: bool) -> Text:
    return Text(f"{text} {'✓' if ok else '✗'}", style="green" if ok else "bold red")


def lab_renderable(report: LabReport, boot_s: float | None = None,
                   total_s: float | None = None) -> RenderableType:
    """The report; ``boot_s``/``total_s``: the boot's times (None: read from a saved log)."""
    parts: list[RenderableType] = [
        Text(
            f"vnetrx lab virtio: Linux {report.release} (model {report.kernel}), "
            f"{report.mode} mode, MTU {report.mtu}, hdr_len {report.hdr_len}",
            style="bold",
        )
    ]
    extra = (
        f", mergeable_rx_buffer_size {report.mergeable_rx_buffer_size}"
        if report.mergeable_rx_buffer_size
        else ""
    )
    timing = (
        f"; boot {boot_s:.1f} s, total {total_s:.1f} s"
        if boot_s is not None and total_s is not None
        else " (from a saved log)"
    )
    parts.append(Text(f"features: {' '.join(report.features)}{extra}{timing}", style="dim"))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("frame", justify="right", no_wrap=True)
    mergeable = report.mode.startswith("mergeable")
    if mergeable:
        table.add_column("buf", justify="right", no_wrap=True)
    table.add_column("predicted", no_wrap=True)
    table.add_column("observed", no_wrap=True)
    for name in COLUMNS:
        table.add_column(
            name.replace("_", " ") if name != "nr_frags" else "frags", justify="right", no_wrap=True
        )
    for frame in report.frames:
        row: list[Any] = [str(frame.frame_len)]
        if mergeable:
            row.append(str(frame.buffer_index))
        row.append(str(frame.predicted["outcome"]))
        row.append(_verdict(str(frame.observed["outcome"]), frame.checks[0].ok))
        row += [_cell(frame, name) for name in COLUMNS]
        table.add_row(*row)
    parts.append(table)
    predicted_short, observed_short = report.rx_length_errors
    if observed_short is not None:
        parts.append(_verdict(f"rx_length_errors: predicted {predicted_short}, observed "
                              f"{observed_short}", report.counters_match))
    if report.xdp is not None:
        x, p = report.xdp, report.xdp.predicted
        seen = "attached" if x.observed_errno is None else \
            f"{x.observed_errno} \"{x.observed_message}\""
        said = "attached" if p.attach else f"{p.errno} \"{p.message}\""
        parts.append(_verdict(f"XDP attach: predicted {said}, observed {seen}", x.match))
    for name, predicted, observed in report.xdp_counters:
        parts.append(_verdict(f"{name}: predicted {predicted}, observed "
                              f"{'-' if observed is None else observed}",
                              observed is not None and predicted == observed))
    sent, seen_tx = report.transmitted
    if seen_tx is not None and (sent or seen_tx):
        parts.append(_verdict(f"transmitted by XDP (bytes per chain, header included): "
                              f"predicted {list(sent)}, the backend took {list(seen_tx)}",
                              sent == seen_tx))
    parts += [Text(f"note: {note}", style="dim") for note in report.notes]
    matched = sum(frame.match for frame in report.frames)
    parts.append(
        Text(
            f"{matched}/{len(report.frames)} frames match (a cell shows predicted≠observed "
            "where they differ)" + ("" if report.counters_match else "; counters differ"),
            style="bold green" if report.match else "bold red",
        )
    )
    return Group(*parts)
