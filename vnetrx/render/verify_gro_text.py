"""Terminal output of ``vnetrx verify gro``: one row per case (the skbs the kernel and the model
delivered, the inputs' gro_results, agreement), then each disagreement's first difference."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.text import Text

from vnetrx.live.verify_gro import GroCheck
from vnetrx.render.tables import Table

WIDTH = 100
_LETTERS = {"MERGED": "m", "MERGED_FREE": "f", "HELD": "h", "NORMAL": "n", "CONSUMED": "c"}


SHOWN = 6  # skbs listed per case; the rest counted


def _skbs(skbs: Sequence[dict[str, object]]) -> str:
    """Each skb as len/segments, e.g. 11624/8 (the first SHOWN of them)."""
    shown = " ".join(f"{s['len']}/{len(s['frames']) if isinstance(s['frames'], list) else '?'}"
                     for s in skbs[:SHOWN]) or "-"
    return shown + (f" +{len(skbs) - SHOWN} more" if len(skbs) > SHOWN else "")


def verify_gro_renderable(kernel: str, source: str, checks: Sequence[GroCheck]
                          ) -> RenderableType:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name in ("case", "kernel: skbs (len/segments)", "model", "gro_result", "match"):
        table.add_column(name, no_wrap=name != "kernel: skbs (len/segments)")
    for c in checks:
        verdicts = "".join(_LETTERS.get(v, "?") for v in c.kernel_verdicts)
        table.add_row(c.name, _skbs(c.kernel_skbs),
                      "same" if c.kernel_skbs == c.model_skbs else _skbs(c.model_skbs),
                      verdicts, Text("yes", style="green") if c.match
                      else Text("NO", style="bold red"))
    matched = sum(c.match for c in checks)
    parts: list[RenderableType] = [
        Text(f"vnetrx verify gro: TCP bursts written into IFF_NAPI taps on Linux {kernel}, "
             "every skb that left GRO against the model", style="bold"),
        Text(f"model: --kernel running ({source})", style="dim"),
        table,
        Text(f"{matched} of {len(checks)} case(s) match"
             + ("" if matched == len(checks) else ":"),
             style="bold green" if matched == len(checks) else "bold red"),
    ]
    parts += [Text(f"  {c.name}: {c.difference}") for c in checks if not c.match]
    retried = sum(c.retries for c in checks)
    if retried:
        parts.append(Text(f"note: {retried} burst(s) written again: a jiffy tick or a NAPI poll "
                          "split them (the kernel's timing, not the frames)", style="yellow"))
    unstable = [c.name for c in checks if not c.deterministic]
    if unstable:
        parts.append(Text(f"note: the repeats of {', '.join(unstable)} differed",
                          style="yellow"))
    parts.append(Text("gro_result per input: h held, m merged, f merged_free, n normal",
                      style="dim"))
    return Group(*parts)
