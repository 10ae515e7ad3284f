"""A reader for BTF, the kernel's own type information (include/uapi/linux/btf.h), as in
/sys/kernel/btf/vmlinux. Record formats are Construct definitions; the scan that indexes ~100k
type records uses Construct's compiled parsers on one record header at a time and materialises
only the types a lookup needs.

Corrupt or truncated input raises LayoutError naming the file and byte offset.
"""

from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import construct
from construct import Const, Int8ul, Int16ul, Int32sl, Int32ul, Struct

from vnetrx.errors import LayoutError
from vnetrx.layouts.rows import btf_key, cache_dir

BTF_MAGIC = 0xEB9F
KINDS = {
    0: "UNKN",
    1: "INT",
    2: "PTR",
    3: "ARRAY",
    4: "STRUCT",
    5: "UNION",
    6: "ENUM",
    7: "FWD",
    8: "TYPEDEF",
    9: "VOLATILE",
    10: "CONST",
    11: "RESTRICT",
    12: "FUNC",
    13: "FUNC_PROTO",
    14: "VAR",
    15: "DATASEC",
    16: "FLOAT",
    17: "DECL_TAG",
    18: "TYPE_TAG",
    19: "ENUM64",
}

btf_header = Struct(
    "magic" / Const(BTF_MAGIC, Int16ul),
    "version" / Const(1, Int8ul),
    "flags" / Int8ul,
    "hdr_len" / Int32ul,
    "type_off" / Int32ul,
    "type_len" / Int32ul,
    "str_off" / Int32ul,
    "str_len" / Int32ul,
)
btf_type = Struct("name_off" / Int32ul, "info" / Int32ul, "size_or_type" / Int32ul).compile()
btf_array = Struct("type" / Int32ul, "index_type" / Int32ul, "nelems" / Int32ul).compile()
btf_member = Struct("name_off" / Int32ul, "type" / Int32ul, "offset" / Int32ul).compile()
btf_enum = Struct("name_off" / Int32ul, "val" / Int32sl)
# Bytes that follow a btf_type, per kind: (fixed, per vlen entry).
_TRAILER = {
    1: (4, 0),
    3: (12, 0),
    4: (0, 12),
    5: (0, 12),
    6: (0, 8),
    13: (0, 8),
    14: (4, 0),
    15: (0, 12),
    17: (4, 0),
    19: (0, 12),
}
POINTER_SIZE = 8  # every profiled architecture is 64-bit


@dataclass(frozen=True)
class Member:
    name: str
    type_name: str
    offset: int  # bytes from the start of the struct
    size: int
    bit_offset: int | None = None  # for bit fields: bit position within the struct
    bit_size: int | None = None
    type_id: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True)
class StructLayout:
    name: str
    kind: str  # "struct" | "union"
    size: int
    members: tuple[Member, ...]


class Btf:
    """An indexed BTF blob. ``path`` is only used in error messages."""

    def __init__(self, data: bytes, path: str) -> None:
        self.data, self.path = data, path
        try:
            header = btf_header.parse(data)
        except construct.ConstructError as exc:
            raise LayoutError(f"{path}: not BTF at byte 0 ({_why(exc)})") from None
        base = header.hdr_len
        self.types_start = base + header.type_off
        self.types_end = self.types_start + header.type_len
        self.str_start = base + header.str_off
        self.str_end = self.str_start + header.str_len
        if header.hdr_len < 24 or self.types_end > len(data) or self.str_end > len(data):
            raise LayoutError(
                f"{path}: section lengths run past the end of the file "
                f"({len(data)} bytes) at byte 4"
            )

    @classmethod
    def load(cls, path: str | Path, cache: bool = True) -> Btf:
        """Read a BTF file; with ``cache``, reuse the type index saved for this file's size and
        modification time under the user cache directory (vnetrx/btf-*.idx)."""
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise LayoutError(f"cannot read BTF from {path}: {exc.strerror}") from None
        btf = cls(data, str(path))
        if cache:
            btf._cache_file = _cache_path(str(path))
            btf._load_index()
        return btf

    _cache_file: Path | None = None

    def _load_index(self) -> None:
        if self._cache_file is None:
            return
        try:
            blob = self._cache_file.read_bytes()
            count = int.from_bytes(blob[:4], "little")
            offsets = array("I")
            offsets.frombytes(blob[4 : 4 + 4 * count])
            names = json.loads(blob[4 + 4 * count :])
        except (OSError, ValueError):
            return  # no cache yet, or a damaged one: index from scratch
        if len(offsets) == count and isinstance(names, dict):
            self.__dict__["offsets"] = list(offsets)
            self.__dict__["struct_index"] = names
            self._cache_file = None  # loaded: nothing to save

    def save_index(self) -> None:
        """Write the index for the next run (best effort: an unwritable cache is skipped)."""
        if self._cache_file is None:
            return
        offsets = array("I", self.offsets)
        blob = len(offsets).to_bytes(4, "little") + offsets.tobytes()
        blob += json.dumps(self.struct_index).encode()
        try:
            self._cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._cache_file.with_suffix(".tmp")
            tmp.write_bytes(blob)
            tmp.replace(self._cache_file)
        except OSError:
            pass

    def string(self, offset: int) -> str:
        start = self.str_start + offset
        end = self.data.find(b"\0", start, self.str_end)
        if offset < 0 or start >= self.str_end or end < 0:
            raise LayoutError(
                f"{self.path}: string offset {offset} outside the string section at byte {start}"
            )
        return self.data[start:end].decode("utf-8", "replace")

    @cached_property
    def offsets(self) -> list[int]:
        """Byte offset of each type record; index = type id (0 is void)."""
        offsets, pos, data = [0], self.types_start, self.data
        while pos < self.types_end:
            if pos + 12 > self.types_end:
                raise LayoutError(f"{self.path}: truncated type record at byte {pos}")
            info = int.from_bytes(data[pos + 4 : pos + 8], "little")
            kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
            if kind not in KINDS or kind == 0:
                raise LayoutError(f"{self.path}: unknown type kind {kind} at byte {pos}")
            fixed, each = _TRAILER.get(kind, (0, 0))
            offsets.append(pos)
            pos += 12 + fixed + each * vlen
        if pos != self.types_end:
            raise LayoutError(f"{self.path}: type section ends inside a record at byte {pos}")
        return offsets

    @cached_property
    def struct_index(self) -> dict[str, int]:
        """Struct and union names → type id (the first one with members wins)."""
        index: dict[str, int] = {}
        data = self.data
        for type_id, pos in enumerate(self.offsets[1:], 1):
            info = int.from_bytes(data[pos + 4 : pos + 8], "little")
            if (info >> 24) & 0x1F in (4, 5):
                name = self.string(int.from_bytes(data[pos : pos + 4], "little"))
                if name and (name not in index or (info & 0xFFFF and not self._vlen(index[name]))):
                    index[name] = type_id
        return index

    def _record(self, type_id: int) -> tuple[int, int, int, int, int, int]:
        """(pos, kind, vlen, kind_flag, name_off, size_or_type) of a type id."""
        if not 0 < type_id < len(self.offsets):
            raise LayoutError(
                f"{self.path}: type id {type_id} out of range (1..{len(self.offsets) - 1})"
            )
        pos = self.offsets[type_id]
        rec = btf_type.parse(self.data[pos : pos + 12])
        return (
            pos,
            (rec.info >> 24) & 0x1F,
            rec.info & 0xFFFF,
            rec.info >> 31,
            rec.name_off,
            rec.size_or_type,
        )

    def _vlen(self, type_id: int) -> int:
        return self._record(type_id)[2]

    def size_of(self, type_id: int, depth: int = 0) -> int:
        if type_id == 0:
            return 0
        pos, kind, _, _, _, size_or_type = self._record(type_id)
        if depth > 64:
            raise LayoutError(
                f"{self.path}: loop in the type graph at type id {type_id} (byte {pos})"
            )
        if kind in (1, 4, 5, 6, 15, 16, 19):
            return size_or_type
        if kind == 2:
            return POINTER_SIZE
        if kind == 3:
            arr = btf_array.parse(self.data[pos + 12 : pos + 24])
            return int(arr.nelems) * self.size_of(arr.type, depth + 1)
        if kind in (8, 9, 10, 11, 18):
            return self.size_of(size_or_type, depth + 1)
        return 0

    def type_name(self, type_id: int, depth: int = 0) -> str:
        if type_id == 0:
            return "void"
        pos, kind, _, _, name_off, ref = self._record(type_id)
        if depth > 64:
            raise LayoutError(
                f"{self.path}: loop in the type graph at type id {type_id} (byte {pos})"
            )
        name = self.string(name_off)
        if kind in (1, 8, 16):
            return name
        if kind in (4, 5, 6, 7, 19):
            keyword = {4: "struct", 5: "union", 6: "enum", 19: "enum"}.get(kind, "struct")
            return f"{keyword} {name or '{...}'}"
        if kind == 2:
            return self.type_name(ref, depth + 1) + " *"
        if kind == 3:
            arr = btf_array.parse(self.data[pos + 12 : pos + 24])
            return f"{self.type_name(arr.type, depth + 1)}[{arr.nelems}]"
        if kind in (9, 10, 11):
            return f"{KINDS[kind].lower()} {self.type_name(ref, depth + 1)}"
        if kind == 18:
            return self.type_name(ref, depth + 1)
        if kind == 13:
            return "fn"
        return name

    def struct(self, name: str) -> StructLayout:
        """The layout of ``struct name`` (or union), anonymous members flattened in place."""
        type_id = self.struct_index.get(name)
        if type_id is None:
            raise LayoutError(f"{self.path}: no struct or union named {name!r}")
        _, kind, _, _, _, size = self._record(type_id)
        members = tuple(self._members(type_id, 0, 0))
        return StructLayout(name, "struct" if kind == 4 else "union", size, members)

    def _members(self, type_id: int, base_bits: int, depth: int) -> list[Member]:
        if depth > 16:
            raise LayoutError(f"{self.path}: anonymous members nest too deep at type id {type_id}")
        pos, _, vlen, kind_flag, _, _ = self._record(type_id)
        out: list[Member] = []
        for i in range(vlen):
            m = btf_member.parse(self.data[pos + 12 + 12 * i : pos + 24 + 12 * i])
            bit_size = (m.offset >> 24) if kind_flag else 0
            bits = base_bits + ((m.offset & 0xFFFFFF) if kind_flag else m.offset)
            name = self.string(m.name_off)
            target = self._strip(m.type)
            if not name and self._record(target)[1] in (4, 5):
                out += self._members(target, bits, depth + 1)
                continue
            if bit_size or bits % 8:
                size = self.size_of(m.type)
                out.append(
                    Member(
                        name,
                        self.type_name(m.type),
                        bits // 8 // size * size if size else bits // 8,
                        size,
                        bits,
                        bit_size or None,
                        m.type,
                    )
                )
                continue
            out.append(
                Member(
                    name, self.type_name(m.type), bits // 8, self.size_of(m.type), type_id=m.type
                )
            )
        return out

    def member(self, struct_name: str, path: str) -> Member | None:
        """The member at a dotted path (``hdr.num_buffers``), offset from the outer struct."""
        type_id = self.struct_index.get(struct_name)
        if type_id is None:
            raise LayoutError(f"{self.path}: no struct or union named {struct_name!r}")
        base, found = 0, None
        for part in path.split("."):
            found = next((m for m in self._members(type_id, 0, 0) if m.name == part), None)
            if found is None:
                return None
            base += found.offset
            type_id = self._strip(found.type_id)
        assert found is not None
        return Member(
            found.name,
            found.type_name,
            base,
            found.size,
            found.bit_offset,
            found.bit_size,
            found.type_id,
        )

    def _strip(self, type_id: int) -> int:
        """Follow const/volatile/typedef to the underlying type (for anonymous members)."""
        for _ in range(64):
            if type_id == 0:
                return 0
            kind, ref = self._record(type_id)[1], self._record(type_id)[5]
            if kind not in (8, 9, 10, 11, 18):
                return type_id
            type_id = ref
        raise LayoutError(f"{self.path}: loop in the type graph at type id {type_id}")


def _cache_path(path: str) -> Path | None:
    key = btf_key(path)
    return None if key is None else cache_dir() / f"btf-{key}.idx"


def _why(exc: construct.ConstructError) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text.replace("parsing -> ", "")
