"""Terminal output of ``vnetrx xdp check``: each check the kernel makes (✓/✗), whether the
attach succeeds (the kernel's errno and message when not), the dmesg warnings, the MTU limit and
what attaching changes. Reads the ``--json`` document (vnetrx.render.xdp_json)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text


def xdp_check_renderable(doc: dict[str, Any]) -> RenderableType:
    kernel = doc["kernel"]["name"]
    where = ("a tun/tap device" if doc["path"] == "tap"
             else f"virtio-net ({doc['device']['mode']} mode)")
    parts: list[RenderableType] = [Text(f"XDP on {where}, Linux {kernel}", style="bold")]
    for c in doc["checks"]:
        mark = Text(" ✓ " if c["passed"] else " ✗ ", style="green" if c["passed"] else "bold red")
        parts.append(Text.assemble(mark, (c["check"], "bold"), f": {c['detail']}"))
    if doc["attach"]:
        line = Text("attach succeeds", style="bold green")
        if not doc["runs"]:
            line.append(" — but the program never runs in this mode", style="bold yellow")
        parts.append(line)
    else:
        parts.append(Text(f"attach fails: {doc['errno']}: \"{doc['message']}\"",
                          style="bold red"))
    parts += [Text(f"dmesg: {warning}", style="yellow") for warning in doc["warnings"]]
    if doc["mtu_limit"] is not None:
        parts.append(Text(f"MTU limit for this program: {doc['mtu_limit']}"))
    for effect in doc["effects"]:
        parts.append(Text.assemble(("• " + effect["what"] + ": ", "bold"), effect["how"]))
    parts += [Text(f"note: {note}", style="dim") for note in doc["notes"]]
    return Group(*parts)
