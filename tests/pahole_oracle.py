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
