"""Terminal output of ``vnetrx verify tap``: one row per write with its options and predicted
path, then write(2)'s result and each tracepoint field the kernel showed against the model (with
``--xdp``: the reads and the device's counters too)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.text import Text

from vnetrx.live.verify import FrameCheck
from vnetrx.render.tables import Table

WIDTH = 110  # the console's least width (vnetrx.render.tables.report_console)
COLUMNS = (  # (header, fields shown in it)
    ("ret", ("ret", "errno")),
    ("len", ("len",)),
    ("data_len", ("data_len",)),
    ("truesize", ("truesize",)),
    ("frags", ("nr_frags",)),
    ("csum", ("ip_summed",)),
    ("gso", ("gso_size", "gso_type")),
)
XDP_COLUMNS = (  # with --xdp: read() results, then rx_packets/rx_dropped/tx_packets deltas
    ("read", ("reads",)),
    ("rx/drop/tx", ("rx_packets", "rx_dropped", "tx_packets")),
)
# with --tunnels: what TUNSETOFFLOAD answered (- : it succeeded; blank: not called)
OFFLOAD_COLUMNS = (("offload", ("offload_errno",)),)


def _show(values: dict[str, Any] | None, names: tuple[str, ...]) -> str:
    if values is None:
        return "-"
    if names == ("ret", "errno"):
        return str(values.get("errno") or values.get("ret") or "-")
    shown = [values.get(n) for n in names]
    return "/".join("-" if v is None else str(v) for v in shown)


def _cell(check: FrameCheck, names: tuple[str, ...]) -> Text:
    if names == ("offload_errno",) and "offload_errno" not in check.predicted:
        return Text("")  # no TUNSETOFFLOAD before this write
    ok = all(check.fields.get(n, n == "rx_dropped") for n in names)
    shown = names
    if "rx_dropped" in names and check.predicted.get("rx_dropped") is None:
        shown = tuple(n for n in names if n != "rx_dropped")  # left to the stack: not compared
    predicted, observed = _show(check.predicted, shown), _show(check.observed, shown)
    text = Text(predicted if predicted == observed else f"{predicted}≠{observed}")
    text.append(" ✓" if ok else " ✗", style="green" if ok else "bold red")
    return text


def _options(options: dict[str, Any]) -> str:
    parts = []
    if options.get("blocking"):
        parts.append("blocking")
    if options.get("sndbuf") is not None:
        parts.append(f"sndbuf {options['sndbuf']}")
    if not options.get("vnet_hdr"):
        parts.append("no vnet_hdr")
    elif options.get("vnet_hdr_sz") is not None:
        parts.append(f"hdr_sz {options['vnet_hdr_sz']}")
    if options.get("offload") is not None:
        parts.append(f"TUNSETOFFLOAD {int(options['offload']):#x}")
    if options.get("l4"):
        parts.append(str(options["l4"]) + (f"+{options['tcp_options']}"
                                           if options.get("tcp_options") else ""))
    if options.get("tunnel"):
        parts.append(f"vxlan over {options['tunnel']}")
    if options.get("hdr"):
        parts.append(f"hdr {options['hdr']}")
    if options.get("xdp"):
        parts.append(f"xdp {options['xdp']}")
        parts.extend(f"{name} {options[f'xdp_adjust_{name}']:+d}" for name in ("head", "tail")
                     if options.get(f"xdp_adjust_{name}"))
    return ", ".join(parts) or "default"


def verify_renderable(kernel: str, source: str, checks: list[FrameCheck]) -> RenderableType:
    """The checks of one run on the profile ``kernel`` (read as ``source`` says)."""
    parts: list[RenderableType] = [Text(f"vnetrx verify tap on Linux {kernel}", style="bold"),
                                   Text(f"profile: {source}", style="dim")]
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("frame", justify="right", no_wrap=True)
    table.add_column("options", no_wrap=True)
    table.add_column("predicted path", no_wrap=True)
    columns = (COLUMNS + (XDP_COLUMNS if any("reads" in c.predicted for c in checks) else ())
               + (OFFLOAD_COLUMNS if any("offload_errno" in c.predicted for c in checks)
                  else ()))
    for header, _ in columns:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    for check in checks:
        table.add_row(
            str(check.frame_len),
            _options(check.options),
            str(check.predicted.get("outcome")),
            *(_cell(check, names) for _, names in columns),
            ""
            if check.fields.get("events", False)
            else f"{(check.observed or {}).get('events')} events",
        )
    parts.append(table)
    matched = sum(c.match for c in checks)
    parts.append(
        Text(
            f"{matched}/{len(checks)} frames match (a cell shows predicted≠observed where they differ)",
            style="bold green" if matched == len(checks) else "bold red",
        )
    )
    return Group(*parts)
