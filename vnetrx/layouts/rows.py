"""A struct layout as data: rows (pahole's view), BTF's members and structs, the anonymous
groups and holes between them, and an on-disk cache of the rows read from a BTF file.

Only built-in modules here: the fast ``vnetrx layout NAME --btf`` entry (vnetrx/main.py) runs a
warm lookup with this module alone, so it stays clear of dataclasses, json and hashlib, each of
which costs milliseconds to import.
"""

from __future__ import annotations

import os

from vnetrx import cache

_CACHE_FORMAT = "vnetrx-rows 4"  # 4: C declarators for arrays and function pointers

# An anonymous struct or union inside a struct, which pahole shows nested: rows[first:end] are
# its members (flattened in place), ``depth`` 1 is directly inside the named struct.
# (first, end, kind "struct" | "union", offset, size, depth)
Group = tuple[int, int, str, int, int, int]


class StructRows:
    """What a view of one struct needs: "struct" or "union", its size, its members as rows
    (anonymous structs and unions flattened in place) and where those were (groups)."""

    __slots__ = ("groups", "kind", "rows", "size")

    def __init__(self, kind: str, size: int, rows: list[Row], groups: list[Group]) -> None:
        self.kind, self.size, self.rows, self.groups = kind, size, rows, groups


class Row:
    """One member as a pahole-style view shows it."""

    __slots__ = ("bit_offset", "bit_size", "name", "offset", "size", "type_name")

    def __init__(
        self,
        name: str,
        type_name: str,
        offset: int,
        size: int,
        bit_offset: int | None = None,
        bit_size: int | None = None,
    ) -> None:
        self.name, self.type_name, self.offset, self.size = name, type_name, offset, size
        self.bit_offset, self.bit_size = bit_offset, bit_size

    def fields(self) -> tuple[str, str, int, int, int | None, int | None]:
        return (self.name, self.type_name, self.offset, self.size, self.bit_offset, self.bit_size)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Row) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(self.fields())

    def __repr__(self) -> str:
        return "Row" + repr(self.fields())


class Member(Row):
    """One member (a Row, offset in bytes from the outer struct) and its BTF type id, which
    does not take part in comparisons."""

    __slots__ = ("type_id",)

    def __init__(
        self,
        name: str,
        type_name: str,
        offset: int,
        size: int,
        bit_offset: int | None = None,  # bit fields: bit position within the struct
        bit_size: int | None = None,
        type_id: int = 0,
    ) -> None:
        super().__init__(name, type_name, offset, size, bit_offset, bit_size)
        self.type_id = type_id


class StructLayout:
    """A struct's members, anonymous structs and unions flattened in place; ``groups`` says
    where those were (rows.Group), for a view that nests them as pahole does."""

    __slots__ = ("groups", "kind", "members", "name", "size")

    def __init__(
        self,
        name: str,
        kind: str,
        size: int,
        members: tuple[Member, ...],
        groups: tuple[Group, ...] = (),
    ) -> None:
        self.name, self.kind, self.size, self.members = name, kind, size, members
        self.groups = groups

    def _key(self) -> tuple[object, ...]:
        return (self.name, self.kind, self.size, self.members, self.groups)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StructLayout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"StructLayout({self.name!r}, {self.kind!r}, {self.size}, {self.members!r})"


def holes(rows: list[Row], size: int) -> list[tuple[int, int]]:
    """(offset, size) of every gap between members, and of the padding at the end."""
    gaps, covered = [], 0
    for row in rows:
        if row.offset > covered:
            gaps.append((covered, row.offset - covered))
        covered = max(covered, row.offset + row.size)
    if covered < size:
        gaps.append((covered, size - covered))
    return gaps


def btf_key(path: str) -> str | None:
    """Identifies a file: a checksum of its real path, then its device, inode, size and
    modification time (None: unreadable). /sys/kernel/btf/* get a new mtime at every boot."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return None
    from zlib import crc32

    where = crc32(os.path.realpath(path).encode())
    return f"{where:08x}-{st.st_dev:x}-{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}"


def prune_stale(key: str) -> None:
    """Remove cache files of the same path under an older key (the kernel booted since, the file
    changed): without this, every boot would leave a record table behind. Best effort."""
    own = key.split("-on-", 1)[0]  # a split BTF's rows key is "<module key>-on-<base key>"
    prefix = "btf-" + own.split("-", 1)[0] + "-"
    for entry in cache.names():
        if entry.startswith(prefix) and not entry.startswith(f"btf-{own}"):
            cache.remove(entry)


def _rows_file(key: str, name: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch == "_" else "-" for ch in name)
    return f"btf-{key}-{safe}.rows"


def load_rows(key: str, name: str) -> StructRows | None:
    """The cached rows and groups of ``name``, or None (absent, damaged or an older format)."""
    raw = cache.read(_rows_file(key, name))
    if raw is None:
        return None
    try:
        head, *lines = raw.decode("utf-8").split("\n")
        fmt, size, kind = head.split("\t")
        if fmt != _CACHE_FORMAT or lines.pop() != "":
            return None
        rows, groups = [], []
        for line in lines:
            tag, *fields = line.split("\t")
            if tag == "G":
                first, end, group_kind, offset, size_, depth = fields
                groups.append(
                    (int(first), int(end), group_kind, int(offset), int(size_), int(depth))
                )
                continue
            name_, type_name, offset, size_, bit_offset, bit_size = fields
            rows.append(
                Row(
                    name_,
                    type_name,
                    int(offset),
                    int(size_),
                    int(bit_offset) if bit_offset else None,
                    int(bit_size) if bit_size else None,
                )
            )
        return StructRows(kind, int(size), rows, groups)
    except (UnicodeDecodeError, ValueError, IndexError):
        return None


def save_rows(key: str, name: str, view: StructRows) -> None:
    """Best effort: an unwritable cache, or names a line-based file cannot hold, are skipped."""
    lines = [f"{_CACHE_FORMAT}\t{view.size}\t{view.kind}"]
    for row in view.rows:
        text = [str(v) if v is not None else "" for v in row.fields()]
        if any("\t" in t or "\n" in t for t in text):
            return
        lines.append("\t".join(["M", *text]))
    lines += ["\t".join(["G", *map(str, group)]) for group in view.groups]
    prune_stale(key)
    cache.write(_rows_file(key, name), ("\n".join(lines) + "\n").encode("utf-8"))


RUNNING_BTF = "/sys/kernel/btf/vmlinux"


def btf_path(given: str) -> str:
    """--btf / --btf-base: "running" is the running kernel's BTF."""
    return RUNNING_BTF if given == "running" else given


def default_base(path: str) -> str | None:
    """The base a split BTF needs when none is given: a module's /sys/kernel/btf/<module> sits
    on the running kernel's vmlinux."""
    directory, name = os.path.split(os.path.abspath(path))
    if directory == os.path.dirname(RUNNING_BTF) and name != "vmlinux":
        return RUNNING_BTF
    return None


def btf_rows(path: str, name: str, base_path: str | None = None) -> StructRows:
    """Struct ``name`` in the BTF at ``path`` (split BTF on ``base_path``, which defaults as
    ``default_base`` says), from the rows cache when this exact file (and base) was read
    before."""
    base_path = base_path or default_base(path)
    key = btf_key(path)
    if key is not None and base_path is not None:
        base_key = btf_key(base_path)
        key = None if base_key is None else f"{key}-on-{base_key}"
    cached = None if key is None else load_rows(key, name)
    if cached is not None:
        return cached
    from vnetrx.layouts.btf import load_btf

    struct = load_btf(path, base_path).struct(name)
    rows = [
        Row(m.name, m.type_name, m.offset, m.size, m.bit_offset, m.bit_size) for m in struct.members
    ]
    view = StructRows(struct.kind, struct.size, rows, list(struct.groups))
    if key is not None:
        save_rows(key, name, view)
    return view
