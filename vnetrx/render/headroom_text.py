"""Terminal output for ``vnetrx headroom``: the per-payload table (shaped like the table in
"virtio-net: Set needed_headroom …"), the steps for one payload, and a picture of that payload's
skb head at xmit_skb(): headroom, where the virtio-net header goes, headers, tailroom."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.text import Text

from vnetrx.model import Step
from vnetrx.paths.tx.headroom import HeadroomReport, PayloadResult, TxSkb, proto_name
from vnetrx.render.tables import Table
from vnetrx.render.text import steps_table

# region name → (map character, style); unknown names (payload, headers) fall back below
_STYLE: dict[str, tuple[str, str]] = {
    "headroom": (" ", "dim"),
    "vnet_hdr": ("h", "bold magenta"),
    "Ethernet header": ("e", "bold blue"),
    "IPv4 header": ("i", "bold cyan"),
    "IPv6 header": ("i", "bold cyan"),
    "fragment header": ("f", "cyan"),
    "UDP header": ("u", "bold yellow"),
    "TCP header": ("t", "bold yellow"),
    "payload": ("#", "bold green"),
    "tailroom": (".", "dim"),
    "skb_shared_info": ("s", "yellow"),
}
BAR_WIDTH = 64


def _header(r: HeadroomReport, compare: HeadroomReport | None) -> Text:
    s, d = r.setup, r.device
    text = Text()
    text.append("vnetrx headroom ", style="bold")
    text.append(proto_name(s), style="bold cyan")
    text.append(
        f", MTU {s.mtu}, hdr_len {d.hdr_len}, "
        f"{'indirect descriptors' if s.indirect else 'no indirect descriptors'}"
        + (", UFO offered" if s.ufo else "")
        + f", {r.kernel.build.config} config\n"
    )
    for k in (r, compare):
        if k is not None:
            text.append(f"Linux {k.kernel.name}: ", style="bold")
            text.append(
                f"needed_headroom {k.device.needed_headroom} → hh_len (LL_RESERVED_SPACE) "
                f"{k.device.hh_len}"
                + ("" if k.max_tcp_header is None else f"; MAX_TCP_HEADER {k.max_tcp_header}")
                + "\n"
            )
    text.rstrip()
    return text


def _joined(skbs: tuple[TxSkb, ...], attr: str) -> str:
    values = [str(getattr(s, attr)) for s in skbs]
    return values[0] if len(set(values)) == 1 else "/".join(values)


def _push(skbs: tuple[TxSkb, ...]) -> Text:
    if all(s.can_push for s in skbs):
        return Text("yes", style="green")
    if not any(s.can_push for s in skbs):
        return Text("no", style="red")
    return Text("mixed", style="yellow")


def _lens(p: PayloadResult) -> str:
    """``106``, ``4138 UFO``, ``3: 2×1514 1178`` (runs of equal lengths folded)."""
    if len(p.skbs) == 1:
        skb = p.skbs[0]
        return f"{skb.len} {skb.gso}" if skb.gso else str(skb.len)
    runs: list[list[int]] = []
    for skb in p.skbs:
        if runs and runs[-1][0] == skb.len:
            runs[-1][1] += 1
        else:
            runs.append([skb.len, 1])
    return f"{len(p.skbs)}: " + " ".join(
        f"{n}×{length}" if n > 1 else str(length) for length, n in runs
    )


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def payload_table(reports: list[HeadroomReport]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("payload", justify="right")
    table.add_column("skbs: len at xmit", justify="left")
    for r in reports:
        table.add_column(f"{r.kernel.name}\nheadroom", justify="right")
        for name in ("can_push", "sg", "slots"):
            table.add_column(f"\n{name}", justify="right")
    for rows in zip(*(r.results for r in reports), strict=True):
        lens = [_lens(p) for p in rows]  # differ when only one kernel has UFO
        cells: list[str | Text] = [str(rows[0].payload), " / ".join(dict.fromkeys(lens))]
        for p in rows:
            cells += [
                _joined(p.skbs, "headroom"),
                _push(p.skbs),
                str(p.sg_entries_total),
                str(p.ring_slots_total),
            ]
        table.add_row(*cells)
    return table


def _steps(title: str, steps: tuple[Step, ...]) -> RenderableType:
    return Group(Text(title, style="bold underline"), steps_table(steps))


def _bar(skb: TxSkb) -> Text:
    bar = Text("[")
    for region in skb.regions:
        char, style = _STYLE.get(region.name, ("?", ""))
        cells = max(1, round(region.size * BAR_WIDTH / skb.head_size)) if region.size else 0
        bar.append(char * cells, style=style + " reverse" if char != " " else style)
    return bar + Text("]")


def head_picture(r: HeadroomReport, p: PayloadResult) -> RenderableType:
    skb = p.skbs[0]
    which = "" if len(p.skbs) == 1 else f" (first of {len(p.skbs)})"
    title = Text(
        f"skb head at xmit_skb, {p.payload}-byte payload{which}, Linux {r.kernel.name}: "
        f"{skb.head}, {skb.head_size} bytes",
        style="bold underline",
    )
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name, justify in (("offset", "right"), ("size", "right"), ("", "center")):
        table.add_column(name, justify=justify)
    table.add_column("region", style="bold")
    table.add_column("note", style="dim")
    for region in skb.regions:
        char, style = _STYLE.get(region.name, ("?", ""))
        table.add_row(
            str(region.offset), str(region.size), Text(char, style=style), region.name, region.note
        )
    verdict = Text()
    if skb.nr_frags:
        verdict.append(
            f"+ {skb.len - skb.headlen} payload bytes in "
            f"{_plural(skb.nr_frags, 'page frag', 'page frags')} outside the head\n"
        )
    if skb.can_push:
        verdict.append("fits: ", style="bold green")
        verdict.append(f"the {r.device.hdr_len}-byte header is written inline, ")
    else:
        verdict.append("does not fit: ", style="bold red")
        verdict.append(f"{skb.headroom} bytes of headroom < hdr_len {r.device.hdr_len}, ")
    verdict.append(
        f"{_plural(skb.sg_entries, 'sg entry', 'sg entries')}, "
        f"{_plural(skb.ring_slots, 'ring slot', 'ring slots')}, truesize {skb.truesize}"
    )
    return Group(title, _bar(skb), table, verdict)


def headroom_renderable(r: HeadroomReport, compare: HeadroomReport | None = None) -> RenderableType:
    reports = [r] if compare is None else [r, compare]
    parts: list[RenderableType] = [_header(r, compare), Text(), payload_table(reports)]
    for k in reports:
        shown = k.results[0]
        parts += [
            Text(),
            _steps(
                f"Steps on Linux {k.kernel.name} for the {shown.payload}-byte payload",
                k.steps + shown.steps,
            ),
            Text(),
            head_picture(k, shown),
        ]
    for k in reports:
        for note in k.notes:
            parts.append(Text(f"note ({k.kernel.name}): {note}", style="yellow"))
    return Group(*parts)
