"""Terminal output for a trace: the steps, an annotated memory map of the buffer and the skb,
and a summary. Colour comes from rich and follows NO_COLOR and the terminal; the map also
marks regions with distinct characters so it reads without colour."""

from __future__ import annotations

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.text import Text

from vnetrx.model import SKB_FIELDS, Buffer, Skb, Step, Trace, XdpRun
from vnetrx.render.tables import Table

# region name → (map character, style)
_REGION_STYLE: dict[str, tuple[str, str]] = {
    "headroom": (" ", "dim"),
    "vnet_hdr": ("h", "bold magenta"),
    "tun_xdp_hdr": ("b", "magenta"),
    "padding": ("p", "magenta"),
    "frame": ("#", "bold green"),
    "tailroom": (".", "dim"),
    "skb_shared_info": ("s", "bold yellow"),
    "unused": (".", "dim"),
    "rx space": ("~", "dim"),
    "xdp headroom": ("x", "cyan"),
    "frame (cont.)": ("#", "bold green"),
}
BAR_WIDTH = 64
# The skb block's lines of fields, as model.SKB_FIELDS places them.
_TEXT_LINES = tuple(
    tuple(f.name for f in sorted((f for f in SKB_FIELDS if f.text and f.text[0] == line),
                                 key=lambda f: f.text or (0, 0)))
    for line in sorted({f.text[0] for f in SKB_FIELDS if f.text})
)
_LINE_PREFIX = {0: "offsets from head: ", 2: "offload: "}


def _field_text(skb: Skb, name: str) -> str:
    """One field of the skb block: hex and names for the GSO mask, 0/1 for a bool."""
    value = getattr(skb, name)
    if name == "ip_summed":
        return f"{value} ({skb.ip_summed_name})"
    if name == "gso_type":
        names = "|".join(n.removeprefix("SKB_GSO_") for n in skb.gso_type_names)
        return f"{value:#x}" + (f" ({names})" if names else "")
    if name == "hash":
        return f"{value:#010x}"
    if isinstance(value, bool):
        return str(int(value))
    return "-" if value is None else str(value)


def _style(name: str, note: str) -> tuple[str, str]:
    if name == "frame" and "frag" in note:
        return ("f", "bold cyan")
    if name == "frame" and ("copied" in note or "pulled" in note):
        return ("c", "bold blue")
    return _REGION_STYLE.get(name, ("?", ""))


def _kernel_line(trace: Trace) -> Text:
    k = trace.kernel
    b = k.build
    line = Text()
    line.append("vnetrx trace ", style="bold")
    line.append(trace.path, style="bold cyan")
    line.append(f" on Linux {k.name}", style="bold")
    line.append(
        f"  ({b.arch}, {b.page_size // 1024} KiB pages, {b.l1_cache_bytes}-byte cache "
        f"lines, {b.config} config; profile from {k.source})",
        style="dim",
    )
    return line


def steps_table(steps: tuple[Step, ...]) -> Table:
    """The cited steps: kernel function, what happened and why, the deciding values, the source
    and the upstream changes that chose the branch (shared by every command that narrates)."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("kernel function", style="bold")
    table.add_column("what happened and why")
    for index, step in enumerate(steps, 1):
        detail = Text(step.summary)
        if step.values:
            detail.append("\n" + "  ".join(f"{k}={v}" for k, v in step.values), style="dim")
        detail.append(f"\n{step.source}", style="italic dim")
        if step.because:
            detail.append("  because: " + ", ".join(step.because), style="dim cyan")
        table.add_row(str(index), step.function, detail)
    return table


class Bar:
    """A memory bar: ``[`` + one run of cells per part, proportional to its bytes, + ``]``; at
    most BAR_WIDTH cells, fewer when the space it is printed in is narrower."""

    def __init__(self, parts: list[tuple[int, str, str]], total: int) -> None:
        self.parts = parts  # (bytes, char, style)
        self.total = max(total, 1)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(10, min(BAR_WIDTH + 2, max(10, options.max_width)))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(8, min(BAR_WIDTH, options.max_width - 2))
        bar = Text("[")
        for size, char, style in self.parts:
            cells = max(1, round(size * width / self.total))
            bar.append(char * cells, style=style if char == " " else style + " reverse")
        bar.append("]")
        yield bar


def _bar(buffer: Buffer) -> Bar:
    parts = []
    for region in buffer.regions:
        char, style = _style(region.name, region.note)
        parts.append((region.size, char, style))
    return Bar(parts, buffer.size)


def buffer_map(title: str, buffer: Buffer) -> RenderableType:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("offset", justify="right")
    table.add_column("size", justify="right")
    table.add_column("", justify="center")
    table.add_column("region", style="bold")
    table.add_column("note", style="dim")
    for region in buffer.regions:
        char, style = _style(region.name, region.note)
        table.add_row(
            str(region.offset), str(region.size), Text(char, style=style), region.name, region.note
        )
    table.add_row(
        str(buffer.size),
        "",
        "",
        Text("next buffer", style="dim"),
        f"{buffer.page} + {buffer.page_offset + buffer.size}",
    )
    header = Text(
        f"{title}: {buffer.size} bytes at {buffer.page} + {buffer.page_offset}",
        style="bold underline",
    )
    return Group(header, _bar(buffer), table)


def _head_map(skb: Skb) -> RenderableType:
    """The linear area from skb->head: headroom, pulled MAC header, data, tailroom, shinfo."""
    mac = skb.data if skb.mac_header is None else skb.mac_header
    rows = [
        ("headroom" + (" (the virtio-net header lies here)" if "build_skb" in skb.head else ""),
         0, mac, " ", "dim"),
        ("mac header (pulled)", mac, skb.data, "m", "bold magenta"),
        ("linear data", skb.data, skb.tail, "#", "bold green"),
        ("tailroom", skb.tail, skb.end, ".", "dim"),
        ("skb_shared_info", skb.end, skb.head_size, "s", "bold yellow"),
    ]
    parts: list[tuple[int, str, str]] = []
    table = Table(box=None, show_header=False, pad_edge=False)
    for column in ("from", "to", "size", "", "part"):
        table.add_column(column, justify="right" if column in ("from", "to", "size") else "left")
    for name, start, stop, char, style in rows:
        if stop <= start:
            continue
        parts.append((stop - start, char, style))
        table.add_row(str(start), str(stop), str(stop - start), Text(char, style=style), name)
    return Group(Bar(parts, skb.head_size), table)


def skb_map(skb: Skb, title: str = "skb as the stack sees it (after eth_type_trans)"
            ) -> RenderableType:
    header = Text(title, style="bold underline")
    lines = Text()
    lines.append(f"head   {skb.head}, {skb.head_size} bytes\n")
    for number, line in enumerate(_TEXT_LINES):
        if number:
            lines.append("\n")
        lines.append(_LINE_PREFIX.get(number, ""))
        for position, name in enumerate(line):
            lines.append("  " if position else "")
            lines.append(f"{name} {_field_text(skb, name)}",
                         style="bold" if name == "truesize" else "")
        if number == 0:
            lines.append(f"  (skb_shared_info {skb.end}..{skb.head_size})")
    parts: list[RenderableType] = [header, lines, _head_map(skb)]
    if skb.frags:
        frags = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for column in ("frag", "page", "offset", "size", "truesize"):
            frags.add_column(column, justify="right" if column != "page" else "left")
        for index, frag in enumerate(skb.frags):
            frags.add_row(
                str(index), frag.page, str(frag.offset), str(frag.size), str(frag.truesize)
            )
        parts.append(frags)
    return Group(*parts)


def _summary(trace: Trace) -> Text:
    text = Text()
    text.append("Summary: ", style="bold")
    if trace.vhost is not None:
        v = trace.vhost
        text.append(f"vhost-net: {v.path} ({v.reason})", style="bold")
        if v.stalled:
            text.append(" · the TX queue stalls on this descriptor", style="bold red")
        text.append(" · ")
    if trace.outcome == "error":
        what = {"tap": "write()", "vhost-tx": "vhost_net_build_xdp" if trace.vhost is not None
                and trace.vhost.path == "batch" else "sendmsg()"}.get(
                    trace.path, "attaching the XDP program")
        text.append(f"{what} fails with {trace.errno} ({trace.reason})", style="bold red")
        if trace.counter is not None:  # a tap write's "drops" is the netdev's rx_dropped
            text.append(f"; {'rx_dropped' if trace.counter == 'drops' else trace.counter}++")
        return text
    if trace.xdp is not None and trace.skb is None:
        text.append_text(xdp_summary(trace.xdp))
        return text
    if trace.skb is None or trace.cost is None:
        text.append(f"dropped ({trace.reason})", style="bold red")
        if trace.refused_by is not None:
            text.append(f": {trace.refused_by.reason}, in {trace.refused_by.source}")
        if trace.counter is not None:
            text.append(f"; {trace.counter}++")
        return text
    text.append(trace.outcome, style="bold green" if trace.outcome == "build_skb" else "bold blue")
    text.append(
        f" · truesize {trace.skb.truesize} · {trace.cost.bytes_copied} bytes copied · "
        f"{trace.cost.frags} frag(s) · {trace.cost.allocations} allocation(s) · "
        f"{len(trace.buffers)} buffer(s)"
    )
    if trace.xdp is not None:
        text.append(f" · {trace.xdp.mode} XDP_PASS"
                    + (f" (copied {trace.xdp.copied} bytes first)" if trace.xdp.copied else ""))
    if trace.skb.meta_len:
        text.append(f" · {trace.skb.meta_len} bytes of XDP metadata")
    return text


def xdp_summary(x: XdpRun) -> Text:
    """A frame the program kept: where it went and what the counters say."""
    text = Text()
    tap = x.function in ("tun_build_skb", "do_xdp_generic")
    device = "tap" if tap else "device"
    where = {
        "drop": "dropped by the program",
        "redirect_failed": f"redirect failed ({x.errno}), dropped",
        "tx": f"sent back out of the {device} (XDP_TX)",
        "redirect": f"redirected back to the {device}",
        "tx_failed": f"XDP_TX could not send it ({x.errno}), freed",
    }[x.result]
    if not x.ran:
        where = f"dropped by {x.function} before the program ran ({x.refused})"
    text.append(f"{x.action} ({x.mode}): {where}", style="bold yellow")
    if x.read_len is not None:
        text.append(f" · {'read() returns' if tap else 'the device reads'} {x.read_len} bytes")
    counters = [f"{name} +{value}" for name, value in (
        ("rx_packets", x.rx_packets), ("rx_dropped", x.rx_dropped), ("tx_packets", x.tx_packets),
        *((name, value) for name, value in x.driver if name != "rx_drops")) if value]
    text.append(" · " + (", ".join(counters) if counters else "no counter moves"))
    text.append(" · no skb")
    return text


def _header_line(trace: Trace) -> Text | None:
    """The virtio_net_hdr the trace ran with (given as --hdr or built by --csum/--gso)."""
    raw = dict(trace.input).get("hdr")
    if not isinstance(raw, str):
        return None
    from vnetrx.decode.header import flag_names, gso_name
    from vnetrx.paths.virtio_net_hdr import VnetHdr

    h = VnetHdr.from_bytes(bytes.fromhex(raw))
    flags = "|".join(flag_names(h.flags)[0]) or "0"
    line = Text("virtio_net_hdr: ", style="bold")
    line.append(f"flags {flags}  gso_type {gso_name(h.gso_type)}  hdr_len {h.hdr_len}  "
                f"gso_size {h.gso_size}  csum_start {h.csum_start}  csum_offset {h.csum_offset}")
    line.append(f"  ({raw})", style="dim")
    return line


def trace_renderable(trace: Trace) -> RenderableType:
    header = _header_line(trace)
    parts: list[RenderableType] = [_kernel_line(trace), *([header] if header else []), Text(),
                                   steps_table(trace.steps), Text()]
    if trace.buffer is not None:
        title = {"tap": "Buffer the write is copied into",
                 "vhost-tx": "Buffer the frame is copied into"}.get(trace.path, "Receive buffer")
        parts += [buffer_map(title, trace.buffer), Text()]
    if trace.skb is not None:
        parts += [skb_map(trace.skb), Text()]
    parts.append(_summary(trace))
    for note in trace.notes:
        parts.append(Text(f"note: {note}", style="yellow"))
    return Group(*parts)


def print_trace(trace: Trace, console: Console) -> None:
    console.print(trace_renderable(trace))


def stdout_console() -> Console:
    """A console on stdout: colour as --color says (auto: a terminal without NO_COLOR)."""
    from vnetrx.render.console import console_on_stdout

    return console_on_stdout(soft_wrap=True)
