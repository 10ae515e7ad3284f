"""``vnetrx trace --gro`` as text: each segment as the driver built it and what GRO did with it,
then each skb the stack receives, with its frags and frag_list. Reads the records only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich import box
from rich.console import Console, Group, RenderableType
from rich.text import Text

from vnetrx.flow import FlowRun
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import IP_SUMMED
from vnetrx.model import GroFlush as Flush
from vnetrx.model import GroHow as How
from vnetrx.paths.gro import Delivered
from vnetrx.render.tables import Table
from vnetrx.render.totals_text import COUNT_ONE, gro_totals_lines
from vnetrx.replay import Stream
from vnetrx.replay.gro import GroTotals

HOW = {
    How.FIRST: "the first of the flow, held (gso_size = its payload: the mss)",
    How.FRAGS: "its frags moved to the held skb's last (NAPI_GRO_FREE)",
    How.HEAD_FRAG: "its page-fragment head became a frag, then its frags (NAPI_GRO_FREE_STOLEN_HEAD)",
    How.FRAG_LIST: "chained whole on frag_list (no room left in MAX_SKB_FRAGS, or linear payload "
    "in a kmalloc'd head)",
    How.AFTER_E2BIG: "held in place of the held skb, which it would have taken past "
    "gro_max_size (-E2BIG)",
    How.AFTER_LONGER: "held in place of the held skb: longer than the flow's mss",
    How.AFTER_MISMATCH: "held in place of the held skb of its flow, whose headers differ (flags, "
    "window, ack, options, TTL/TOS/DF, IP ID or sequence)",
    How.GSO: "to the stack alone: dev_gro_receive flushes a GSO skb that is not TCP, or carries "
    "SKB_GSO_DODGY (7871f54e3dee: 6.1.7+, 6.2+; before 6.1 every GSO skb)",
    How.GSO_SEGS: "to the stack alone: a GSO skb GRO let in (6.1.0-6.1.6: SKB_GSO_DODGY too) "
    "whose len is not gso_segs × gso_size; virtio_net_hdr_to_skb leaves gso_segs 0, so "
    "tcp_gro_receive's out_check_final always flushes it",
    How.FLAGS: "to the stack alone: URG, PSH, RST, SYN or FIN and nothing it could join",
    How.BAD_CHECKSUM: "to the stack alone: CHECKSUM_NONE and its TCP checksum is wrong",
    How.NOT_TCP: "to the stack alone: not TCP (UDP merges only for a UDP_GRO socket, "
    "rx-udp-gro-forwarding or rx-gro-list)",
    How.NO_PAYLOAD: "to the stack alone: a segment without payload (a pure ACK) never merges",
    How.HAS_FRAG_LIST: "to the stack alone: it already has a frag_list (dev_gro_receive)",
    How.UDP_UNMERGEABLE: "to the stack alone: a UDP datagram with a zero checksum or a length "
    "field that is not its own (udp_gro_receive_segment)",
    How.NOT_PARSED: "to the stack alone: a VLAN tag this kernel's GRO has no handler for "
    "(CONFIG_VLAN_8021Q not set), or an IPv6 hop-by-hop header its extension header walk "
    "does not take",
    How.GRO_OFF: "to the stack as it is: GRO is off on the device (netif_elide_gro)",
    How.BAD_NETWORK: "to the stack alone: IPv4 options, a fragment, or a wrong IP header "
    "checksum or length",
}
FLUSH = {
    Flush.SHORT: "a segment shorter than the mss ended it (tcp_gro_receive)",
    Flush.E2BIG: "the next segment would reach gro_max_size (skb_gro_receive: -E2BIG)",
    Flush.LONGER: "the next segment was longer than the mss (tcp_gro_receive)",
    Flush.GSO: "a GSO skb of the flow arrived (dev_gro_receive sets flush)",
    Flush.GSO_SIZE: "a GSO skb of the flow whose gso_size is not the flow's mss arrived "
    "(tcp_gro_receive)",
    Flush.GSO_SEGS: "a GSO skb merged into it whose len is not gso_segs × gso_size "
    "(virtio_net_hdr_to_skb leaves gso_segs 0): tcp_gro_receive's out_check_final",
    Flush.POLL_END: "the poll ended below its budget (napi_complete_done flushes everything)",
    Flush.BUDGET: "the poll used its whole budget (__napi_poll flushes everything, HZ < 1000)",
    Flush.NOT_HELD: "never held (GRO_NORMAL)",
    Flush.MISMATCH: "a segment of its flow with other headers arrived (tcp_gro_receive)",
    Flush.FLAGS: "a merged segment with PSH or FIN ended it (tcp_gro_receive)",
    Flush.EVICTED: "a ninth flow was held (MAX_GRO_SKBS 8): gro_flush_oldest",
    Flush.TIMER: "the gro_flush_timeout timer's poll flushed it",
    Flush.MAX_COUNT: "a UDP aggregate reached UDP_GRO_CNT_MAX (64 segments)",
    Flush.OLD: "a poll in a later jiffy than the one it was held in (napi_complete_done with "
    "gro_flush_timeout completes the skbs held in an earlier jiffy)",
    Flush.UNMERGEABLE: "a segment of its flow GRO never merges arrived (a pure ACK, or an skb "
    "with a frag_list)",
}


def flow_renderable(run: FlowRun) -> RenderableType:
    frame_len = dict(run.input)["frame_len"]
    what = "writes" if run.path == "tap" else "segments"
    title = Text()
    title.append(f"{run.path}", style="bold cyan")
    title.append(f" on Linux {run.kernel.name}", style="bold")
    title.append(f": {len(run.segments)} {what} of a {frame_len}-byte TCP frame, then GRO "
                 f"(MAX_SKB_FRAGS {run.gro.max_skb_frags}, gro_max_size {run.gro.gro_max_size})")
    parts: list[RenderableType] = [title, Text(), _steps(run)]
    hows = {step.how for step in run.gro.steps}
    parts.extend(Text(f"  {how}: {HOW[how]}", style="dim") for how in How if how in hows)
    parts.append(Text())
    parts.append(Text("What the stack receives (napi_gro_complete, then netif_receive_skb; len "
                      "from the IP header)", style="bold"))
    for n, d in enumerate(run.gro.delivered, 1):
        parts.append(_delivered(n, d))
    parts.append(_totals(run))
    parts.extend(Text(f"note: {note}", style="yellow") for note in run.notes)
    return Group(*parts)


def _steps(run: FlowRun) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name in ("#", "driver", "len", "headlen", "truesize", "head_frag", "GRO", "how",
                 "payload", "+truesize", "p len", "p truesize", "frags", "frag_list"):
        table.add_column(name, justify="left" if name in ("driver", "GRO", "how") else "right",
                         no_wrap=True)
    for seg, step in zip(run.segments, run.gro.steps, strict=True):
        table.add_row(
            str(seg.frame), seg.outcome, str(seg.skb.len), str(seg.skb.headlen),
            str(seg.skb.truesize), "yes" if seg.head_frag else "no",
            str(step.result), str(step.how), str(step.payload),
            str(step.delta_truesize) if step.delta_truesize else "-", str(step.len),
            str(step.truesize), str(step.nr_frags), str(step.frag_list),
        )
    return table


def _delivered(n: int, d: Delivered) -> RenderableType:
    """A lone skb in three lines; an aggregate with its memory map (head, frags) too."""
    summary = _summary(n, d)
    if len(d.frames) < 2:
        return summary
    from vnetrx.render.text import skb_map

    return Group(summary, skb_map(d.skb, title=f"skb {n} as it leaves GRO (data from the IP "
                                                "header; the frags in order)"), Text())


def _summary(n: int, d: Delivered) -> Text:
    s = d.skb
    first, last = d.frames[0], d.frames[-1]
    frames = f"frame {first}" if first == last else f"frames {first}-{last}"
    text = Text()
    merged = len(d.frames)
    counted = (f"{d.segs} segment{'s' if d.segs != 1 else ''}" if merged == d.segs
               else f"{merged} skbs counted as {d.segs} segment{'s' if d.segs != 1 else ''}: "
               "a GSO skb counts its gso_segs")
    text.append(f"skb {n}: {frames} ({counted}); ", style="bold")
    text.append(f"completed: {FLUSH[d.flush]}\n")
    text.append(f"  len {s.len}  data_len {s.data_len}  headlen {s.headlen}  truesize "
                f"{s.truesize}  nr_frags {s.nr_frags}  frag_list {len(s.frag_list)}\n")
    gso = " | ".join(s.gso_type_names) or "0"
    text.append(f"  gso_size {s.gso_size}  gso_segs {s.gso_segs}  gso_type {gso}  ip_summed "
                f"{s.ip_summed} ({IP_SUMMED[s.ip_summed]})")
    if s.csum_start is not None:
        text.append(f"  csum_start {s.csum_start}  csum_offset {s.csum_offset}")
    text.append("\n")
    if merged > 1 and d.segs == 1:
        text.append(f"  {COUNT_ONE}\n", style="yellow")
    for i, member in enumerate(s.frag_list):
        text.append(f"  frag_list[{i}]: len {member.len}  truesize {member.truesize}  nr_frags "
                    f"{len(member.frags)}\n", style="dim")
    return text


def _totals(run: FlowRun) -> Text:
    before, after = run.truesize_before, run.truesize_after
    per = f", {after / run.payload:.3f} per payload byte" if run.payload else ""
    return Text(f"totals: {len(run.segments)} segments → {len(run.gro.delivered)} skb(s); "
                f"{run.payload} payload bytes; truesize {before} before GRO, {after} after{per}")


BLOCK = 1000  # rows per table when a replay's GRO output is printed as it runs


def virtio_gro_heading(stream: Stream, source: str) -> str:
    k, c = stream.kernel, stream.config
    return (f"vnetrx replay --gro {source} on Linux {k.name}: the skbs the stack receives, NAPI "
            f"poll by poll ({c.batch if not c.polls else 'given'} frame(s) per poll, budget "
            f"{c.budget})")


def tap_gro_heading(k: KernelProfile, napi: str, source: str) -> str:
    return (f"vnetrx replay --path tap --gro {source} on Linux {k.name}: the skbs the stack "
            f"receives from an IFF_NAPI tap, one write(2) per frame (--napi {napi})")


def print_replay_gro(heading: str, notes: Sequence[str],
                     delivered: Iterable[tuple[int, Delivered]], console: Console,
                     summary_only: bool) -> int:
    """``replay --gro`` as text: a table of the skbs GRO delivers (in blocks of BLOCK rows,
    printed as they come), then the totals; returns the frames they carry."""
    if not summary_only:
        console.print(Text(heading, style="bold"))
    totals = GroTotals()
    if summary_only:
        totals.add_all(delivered)
    else:
        block: list[tuple[int, Delivered]] = []
        for poll, d in delivered:
            totals.add(d)
            block.append((poll, d))
            if len(block) == BLOCK:
                console.print(_delivered_table(block))
                block = []
        if block:
            console.print(_delivered_table(block))
    for text, style in gro_totals_lines(totals, notes):
        console.print(Text(text, style=style) if style else Text(text))
    return totals.frames


def _delivered_table(rows: list[tuple[int, Delivered]]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name in ("poll", "frames", "segs", "len", "headlen", "truesize", "nr_frags",
                 "frag_list", "gso_size", "ip_summed", "completed"):
        table.add_column(name, justify="left" if name in ("frames", "completed") else "right",
                         no_wrap=True)
    for poll, d in rows:
        s = d.skb
        first, last = d.frames[0], d.frames[-1]
        table.add_row(str(poll), str(first) if first == last else f"{first}-{last}",
                      str(d.segs), str(s.len), str(s.headlen), str(s.truesize), str(s.nr_frags),
                      str(len(s.frag_list)), str(s.gso_size), str(s.ip_summed), str(d.flush))
    return table
