"""``vnetrx lab vhost``'s text report: per kernel, what its vhost-net did with each TX frame
and RX case, and the comparison with vnetrx's predictions when there is one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.text import Text

from vnetrx.lab.vhost_compare import Comparison
from vnetrx.render.tables import Table, mismatch

WIDTH = 120


def _hdr_words(hdr: str) -> str:
    return hdr if any(c != "0" for c in hdr) else "-"


def _lengths(used: list[int]) -> str:
    """1536,1536,1536,500 → 1536×3,500."""
    runs: list[list[int]] = []
    for length in used:
        if runs and runs[-1][0] == length:
            runs[-1][1] += 1
        else:
            runs.append([length, 1])
    return ",".join(f"{n}×{c}" if c > 1 else str(n) for n, c in runs)


def _skb(record: Mapping[str, Any]) -> list[str]:
    skb = record["skb"]
    if skb is None:
        return ["", "", "", "", ""]
    return [str(skb["len"]), str(skb["data_len"]), str(skb["truesize"]), str(skb["nr_frags"]),
            f"{skb['ip_summed']}/{skb['gso_size']}/{skb['gso_type']:#x}"]


def _verdicts(comparison: Comparison | None) -> dict[tuple[str, str, int | None], Text]:
    out: dict[tuple[str, str, int | None], Text] = {}
    if comparison is None:
        return out
    for r in comparison.results:
        if r.missing is not None:
            continue
        bad = [f"{c.name} {mismatch(c.predicted, c.observed)}" for c in r.checks if not c.ok]
        out[(r.kind, r.case, r.index)] = (Text("✓", style="green") if not bad
                                          else Text("✗ " + "; ".join(bad), style="bold red"))
    return out


def vhost_renderable(document: Mapping[str, Any], comparison: Comparison | None,
                     notes: list[str], boot_s: float | None = None,
                     total_s: float | None = None) -> RenderableType:
    kernel = document["kernel"]
    timing = (f"; boot {boot_s:.1f} s, total {total_s:.1f} s"
              if boot_s is not None and total_s is not None else "")
    parts: list[RenderableType] = [
        Text(f"vnetrx lab vhost: Linux {kernel['release']} ({kernel['version']}), "
             f"/dev/vhost-net {document['vhost_net_dev'] or 'missing'}, "
             f"KVM {'yes' if document['kvm'] else 'no'}{timing}", style="bold"),
        Text("kprobes: " + " ".join(f"{k}{'' if on else ' (off)'}"
                                    for k, on in document["kprobes"].items()), style="dim"),
    ]
    verdicts = _verdicts(comparison)
    tx = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
               title="TX: the guest's frame → vhost → the tap (netif_receive_skb_entry)")
    for name in ("case", "#", "len", "hdr", "sndbuf", "road", "buflen", "ret", "outcome",
                 "skb len", "data_len", "truesize", "frags", "csum/gso"):
        tx.add_column(name, justify="left" if name in ("case", "hdr", "road", "outcome")
                      else "right", no_wrap=name != "hdr")
    if comparison is not None:
        tx.add_column("predicted")
    for r in document["tx"]:
        row: list[Any] = [r["case"], str(r["index"]), str(r["len"]), _hdr_words(r["hdr"]),
                          str(r["sndbuf"] or "INT_MAX"), r["path"] or "-",
                          "" if r["buflen"] is None else str(r["buflen"]),
                          "" if r["ret"] is None else str(r["ret"]), r["outcome"], *_skb(r)]
        if comparison is not None:
            row.append(verdicts.get(("tx", r["case"], r["index"]), Text("-", style="dim")))
        tx.add_row(*row)
    parts.append(tx)
    rx = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
               title="RX: a frame sent on the tap → vhost → the used ring")
    for name in ("case", "buffers", "frame", "used", "hdr (12 B: num_buffers last)"):
        rx.add_column(name, no_wrap=name != "used")
    if comparison is not None:
        rx.add_column("predicted")
    for r in document["rx"]:
        buffers = (f"{r['features']} {r['nbufs']}×{r['buf_len']}"
                   f"{'' if r['tap_offload'] else ', no tap offload'}")
        first = True
        for line in r["lines"]:
            frame = "" if line["frame"] is None else str(r["frames"][line["frame"]]["len"])
            used = ("discarded" if line.get("discarded")
                    else _lengths(line["used"]))
            row = [r["case"] if first else "", buffers if first else "", frame, used,
                   line.get("hdr", "")]
            if comparison is not None:
                row.append(verdicts.get(("rx", r["case"], None), Text("-", style="dim"))
                           if first else "")
            rx.add_row(*row)
            first = False
    parts.append(rx)
    if comparison is None:
        parts.append(Text("predictions: not available (observed only)", style="yellow"))
    else:
        bad = len(comparison.mismatches)
        parts.append(Text(f"predictions: {comparison.compared} compared, {bad} differ",
                          style="green" if not bad else "bold red"))
    parts += [Text(note, style="dim") for note in notes]
    if document["errors"]:
        parts.append(Text("guest errors: " + "; ".join(document["errors"]), style="bold red"))
    return Group(*parts)
