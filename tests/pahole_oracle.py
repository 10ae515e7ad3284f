"""pahole (Debian's dwarves) as the oracle for struct layouts: its members' offsets and sizes."""

from __future__ import annotations

import re
import subprocess

PAHOLE_MEMBER = re.compile(
    r"^\s+(?P<type>.+?)\s+\*?(?P<name>\w+)(?:\[\d+\])*(?::\d+)?;\s+/\*\s+(?P<offset>\d+)(?::\s*\d+)?"
    r"\s+(?P<size>\d+)\s+\*/")


def pahole(name: str, btf: str, base: str | None = None) -> tuple[int, dict[str, tuple[int, int]]]:
    """(sizeof, {member: (offset, size)}) as ``pahole -C name`` prints them (split BTF on
    ``base`` with --btf_base)."""
    cmd = ["pahole", "-C", name, btf] if base is None else [
        "pahole", "--btf_base", base, "-C", name, btf]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    members = {}
    for line in out.splitlines():
        match = PAHOLE_MEMBER.match(line)
        if match and not line.strip().startswith(("}", "union", "struct {")):
            members[match["name"]] = (int(match["offset"]), int(match["size"]))
    size = int(re.search(r"/\* size: (\d+)", out).group(1))  # type: ignore[union-attr]
    return size, members


_NAME = re.compile(r"\(\*(\w+)\)|(\w+)(?:\[\d*\])*(?::\s*\d+)?;")
_UNNAMED_BITFIELD = re.compile(r"\s:\d+;$")  # unsigned int :0; (vnetrx lists it nameless)


def skeleton(text: str) -> list[str]:
    """A pahole-style listing reduced to its shape: "union {", "struct {", "}" and member names
    in order (comments, types and columns dropped). A named member of an anonymous type, which
    pahole expands (``struct { ... } headers;``), counts as its name alone, as vnetrx shows it."""
    out: list[str] = []
    opened: list[int] = []
    for line in text.splitlines()[1:-1]:
        code = line.split("/*")[0].strip()
        if " __attribute__" in code:  # struct hlist_head x __attribute__((__aligned__(64)));
            code = code.split(" __attribute__")[0] + (";" if code.endswith(";") else "")
        if not code or _UNNAMED_BITFIELD.search(code):
            continue
        if code.endswith("{"):
            opened.append(len(out))
            out.append(code)
        elif code.startswith("}"):
            start = opened.pop()
            named = code.strip("};( ").split(")")[0].strip()
            if named:
                del out[start:]
                out.append(named.split("[")[0])
            else:
                out.append("}")
        else:
            matches = list(_NAME.finditer(code))
            if matches:  # the last name on the line is the member's
                out.append(matches[-1].group(1) or matches[-1].group(2))
    return out


def pahole_text(name: str, btf: str, base: str | None = None) -> str:
    cmd = ["pahole", "-C", name, btf] if base is None else [
        "pahole", "--btf_base", base, "-C", name, btf]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
