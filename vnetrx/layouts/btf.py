"""A reader for BTF, the kernel's own type information (include/uapi/linux/btf.h), as in
/sys/kernel/btf/vmlinux, and split BTF of modules (/sys/kernel/btf/<module>, a module's .BTF
section) on top of it.

The record formats are defined with Construct in ``btf_format.py``; the tests check this reader
against that grammar record by record. This module decodes the same records through a
``memoryview`` of 32-bit words instead, for one measured reason: importing construct alone takes
~45 ms on the reference machine, about as long as all of ``pahole -C``, and issue 6 asks
``vnetrx layout NAME --btf`` to beat pahole. So it imports only built-in modules.

Where the records are (the type id → record table, its disk cache, finding records by name) is
``btf_index.py``; this module says what they mean. Only the records a lookup touches are
decoded. Corrupt or truncated input raises LayoutError naming the file and byte offset.
"""

from __future__ import annotations

from vnetrx.errors import InputError, LayoutError, StructNotFound
from vnetrx.layouts.btf_index import (
    ARRAY,
    FUNC_PROTO,
    KINDS,
    PTR,
    STRUCT,
    TRAILER_WORDS,
    UNION,
    RecordError,
    load_table,
    save_table,
    string_offsets,
    structs_named,
    walk,
)
from vnetrx.layouts.rows import (
    Group,
    Member,
    StructLayout,
    btf_key,
    default_base,
    prune_stale,
)

__all__ = ["KINDS", "TRAILER_WORDS", "Btf", "Member", "StructLayout", "load_btf"]

BTF_MAGIC = 0xEB9F
HEADER_SIZE = 24  # struct btf_header: magic, version, flags, hdr_len, 4 section offsets/lengths
_MODIFIERS = (8, 9, 10, 11, 18)  # TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG: refer onward
_SIZED = (1, 4, 5, 6, 15, 16, 19)  # kinds whose third word is a byte size
POINTER_SIZE = 8  # every profiled architecture is 64-bit
_MAX_DEPTH = 64


class Btf:
    """One BTF blob; with ``base``, split BTF whose type ids and string offsets continue after
    the base's (tools/lib/bpf/btf.c: btf_new, start_id and start_str_off). ``path`` names the
    file in error messages."""

    def __init__(self, data: bytes, path: str, base: Btf | None = None) -> None:
        self.data, self.path, self.base = data, path, base
        if len(data) < 8:
            raise LayoutError(f"{path}: not BTF at byte 0 (only {len(data)} bytes)")
        magic = int.from_bytes(data[0:2], "little")
        if magic != BTF_MAGIC:
            order = " (a big-endian BTF: not supported)" if magic == 0x9FEB else ""
            raise LayoutError(
                f"{path}: not BTF at byte 0 (magic {magic:#06x}, expected {BTF_MAGIC:#06x}){order}"
            )
        if data[2] != 1:
            raise LayoutError(f"{path}: not BTF at byte 2 (version {data[2]}; vnetrx reads 1)")
        hdr_len = int.from_bytes(data[4:8], "little")
        if hdr_len < HEADER_SIZE or len(data) < hdr_len:
            raise LayoutError(
                f"{path}: header length {hdr_len} at byte 4 (valid: {HEADER_SIZE}.."
                f"{len(data)}, the file's size)"
            )
        type_off, type_len, str_off, str_len = (
            int.from_bytes(data[8 + 4 * i : 12 + 4 * i], "little") for i in range(4)
        )
        self.types_start = hdr_len + type_off
        self.types_end = self.types_start + type_len
        self.str_start = hdr_len + str_off
        self.str_end = self.str_start + str_len
        if self.types_end > len(data) or self.str_end > len(data):
            raise LayoutError(
                f"{path}: section lengths run past the end of the file "
                f"({len(data)} bytes) at byte 12"
            )
        if type_len % 4:
            raise LayoutError(
                f"{path}: type section length {type_len} at byte 12 is not a multiple of 4"
            )
        # A base BTF's string section starts with the empty string; a split one's does not
        # (tools/lib/bpf/btf.c: btf_parse_str_sec accepts a non-empty first string only with
        # a base): that is how a module's BTF is told from vmlinux's.
        self.split = str_len > 0 and data[self.str_start] != 0
        if self.split and base is None:
            raise InputError(
                f"{path} is a module's split BTF: give --btf-base, the BTF of the kernel it was "
                "built for (its vmlinux, bzImage or /sys/kernel/btf/vmlinux)"
            )
        if base is not None and not self.split:
            raise InputError(f"{path} is not split BTF (it is a kernel's own): drop --btf-base")
        # Split BTF: ids from base.count on, string offsets from the base's string length on.
        self.first_id: int = 1 if base is None else base.count
        self.str_base: int = 0 if base is None else base.str_base + base.str_end - base.str_start
        self.words = memoryview(data)[self.types_start : self.types_end].cast("I")
        self._starts: list[int] | None = None
        self._cache_file: str | None = None
        self._cache_key: str | None = None

    @classmethod
    def load(cls, path: str, cache: bool = True, base: Btf | None = None) -> Btf:
        """Read BTF from a raw BTF file, an ELF file's .BTF section (vmlinux, a module .ko) or a
        bzImage; with ``cache``, reuse the record table saved for this file (its size, mtime and
        inode) under the user cache directory (vnetrx/btf-*.idx)."""
        from vnetrx.layouts.kernel_image import read_btf_bytes

        data, label = read_btf_bytes(path)
        btf = cls(data, label, base)
        if cache:
            key = btf_key(path)
            if key is not None:
                btf._cache_key = key
                btf._cache_file = f"btf-{key}.idx"  # a vnetrx.cache name
                btf._load_index()
        return btf

    # --- the record table -----------------------------------------------------------------

    @property
    def starts(self) -> list[int]:
        """Word index of each of this blob's records in the type section; index = id - first_id."""
        if self._starts is None:
            self._starts = self._walk()
        return self._starts

    @property
    def count(self) -> int:
        """One past the last type id (void, id 0, counts in a base BTF)."""
        return self.first_id + len(self.starts)

    def _walk(self) -> list[int]:
        try:
            return walk(self.words)
        except RecordError as exc:
            where = self.types_start + 4 * exc.word
            raise LayoutError(
                f"{self.path}: {exc.problem} at byte {where} "
                f"(section bytes {self.types_start}..{self.types_end})"
            ) from None

    def _load_index(self) -> None:
        if self._cache_file is not None:
            self._starts = load_table(self._cache_file, self.words)
            if self._starts is not None:
                self._cache_file = None  # loaded: nothing to save

    def save_index(self) -> None:
        """Write the record table for the next run (best effort: an unwritable cache is skipped)."""
        if self._cache_file is not None and self.starts:
            if self._cache_key is not None:
                prune_stale(self._cache_key)
            save_table(self._cache_file, self.starts)
        self._cache_file = None

    # --- records and strings --------------------------------------------------------------

    def string(self, offset: int) -> str:
        if offset < self.str_base:
            assert self.base is not None  # str_base > 0 only for split BTF
            return self.base.string(offset)
        start = self.str_start + offset - self.str_base
        end = self.data.find(b"\0", start, self.str_end)
        if start >= self.str_end or end < 0:
            raise LayoutError(
                f"{self.path}: string offset {offset} outside the string section at byte {start}"
            )
        return self.data[start:end].decode("utf-8", "replace")

    def _owner(self, type_id: int, at: int | None = None) -> Btf:
        if type_id < self.first_id and self.base is not None:
            return self.base._owner(type_id, at)
        if not self.first_id <= type_id < self.count:
            where = "" if at is None else f", referred to at byte {at}"
            raise LayoutError(
                f"{self.path}: type id {type_id} out of range (1..{self.count - 1}){where}"
            )
        return self

    def _record(
        self, type_id: int, at: int | None = None
    ) -> tuple[Btf, int, int, int, int, int, int]:
        """(owner, word index, kind, vlen, kind_flag, name_off, size_or_type) of a type id;
        ``at``: the byte that refers to it, for the error message."""
        owner = self._owner(type_id, at)
        i = owner.starts[type_id - owner.first_id]
        return (owner, i, *owner._header(i))

    # The three decoders of record contents. GrammarBtf (btf_format.py) overrides them to read
    # through the Construct grammar instead of 32-bit words.

    def _header(self, i: int) -> tuple[int, int, int, int, int]:
        """(kind, vlen, kind_flag, name_off, size_or_type) of the record at word ``i``."""
        words = self.words
        info = words[i + 1]
        return (info >> 24) & 0x1F, info & 0xFFFF, info >> 31, words[i], words[i + 2]

    def _array(self, i: int) -> tuple[int, int]:
        """(element type, nelems) of the ARRAY record at word ``i`` (struct btf_array)."""
        return self.words[i + 3], self.words[i + 5]

    def _member_entries(self, i: int, vlen: int) -> list[tuple[int, int, int, int]]:
        """(name_off, type, offset, byte) of each struct btf_member of the record at ``i``."""
        words = self.words
        return [
            (words[e], words[e + 1], words[e + 2], self._byte(e))
            for e in range(i + 3, i + 3 + 3 * vlen, 3)
        ]

    def _byte(self, word_index: int) -> int:
        return self.types_start + 4 * word_index

    def size_of(self, type_id: int, depth: int = 0, at: int | None = None) -> int:
        if type_id == 0:
            return 0
        owner, i, kind, _, _, _, size_or_type = self._record(type_id, at)
        if depth > _MAX_DEPTH:
            raise LayoutError(
                f"{owner.path}: loop in the type graph at type id {type_id} (byte {owner._byte(i)})"
            )
        if kind in _SIZED:
            return size_or_type
        if kind == PTR:
            return POINTER_SIZE
        if kind == ARRAY:
            element, nelems = owner._array(i)
            return nelems * self.size_of(element, depth + 1, owner._byte(i))
        if kind in _MODIFIERS:
            return self.size_of(size_or_type, depth + 1, owner._byte(i))
        return 0

    def type_name(self, type_id: int, depth: int = 0, at: int | None = None) -> str:
        if type_id == 0:
            return "void"
        owner, i, kind, _, _, name_off, ref = self._record(type_id, at)
        here = owner._byte(i)
        if depth > _MAX_DEPTH:
            raise LayoutError(
                f"{owner.path}: loop in the type graph at type id {type_id} (byte {owner._byte(i)})"
            )
        name = self.string(name_off)
        if kind in (1, 8, 16):
            return name
        if kind in (4, 5, 6, 7, 19):
            keyword = {4: "struct", 5: "union", 6: "enum", 19: "enum"}.get(kind, "struct")
            return f"{keyword} {name or '{...}'}"
        if kind == PTR:
            target = self._record(ref, here) if ref else None
            if target is not None and target[2] == FUNC_PROTO:  # a function pointer
                return self._prototype(target[0], target[1], target[3], target[6], depth, "(*)")
            return self.type_name(ref, depth + 1, here) + " *"
        if kind == ARRAY:
            element_type, nelems = owner._array(i)
            return f"{self.type_name(element_type, depth + 1, here)}[{nelems}]"
        if kind in (9, 10, 11):
            return f"{KINDS[kind].lower()} {self.type_name(ref, depth + 1, here)}"
        if kind == 18:
            return self.type_name(ref, depth + 1, here)
        if kind == FUNC_PROTO:
            _, vlen = owner._header(i)[:2]
            return self._prototype(owner, i, vlen, ref, depth, "")
        return name

    def _prototype(self, owner: Btf, i: int, vlen: int, ret: int, depth: int,
                   pointer: str) -> str:
        """A FUNC_PROTO as C writes it: ``void (*)(struct sk_buff *)`` (params are struct
        btf_param {name_off, type}; a last type 0 is ``...``)."""
        params = [owner.words[e + 1] for e in range(i + 3, i + 3 + 2 * vlen, 2)]
        names = ["..." if t == 0 else self.type_name(t, depth + 1) for t in params]
        result = self.type_name(ret, depth + 1)
        return f"{result} {pointer}({', '.join(names) or 'void'})"

    # --- structs ----------------------------------------------------------------------------

    def find_struct(self, name: str) -> int | None:
        """The type id of ``struct name`` or ``union name``: the first with members, else the
        first declaration (ids ascending, base first). A byte search for the name in the string
        section, then for records whose name_off is one of its offsets."""
        if not name:
            return None
        found = self._named(name)
        with_members = [type_id for type_id in found if self._record(type_id)[3]]
        candidates = with_members or found
        return candidates[0] if candidates else None

    def _named(self, name: str) -> list[int]:
        """Struct and union ids named ``name``. Strings are deduplicated whole, so the name's
        own string is tried first; offsets into longer strings ("struct_page" ends in "page")
        only when that finds nothing, since nothing forbids such a name_off."""
        found = [] if self.base is None else self.base._named(name)
        # (a name from the command line may hold undecodable bytes as surrogates)
        wanted = name.encode("utf-8", "surrogateescape") + b"\0"
        whole, suffixes = self._name_offsets(wanted)
        if self.base is not None:  # a module's struct may be named by a base string
            base_whole, base_suffixes = self.base._name_offsets(wanted)
            whole, suffixes = whole | base_whole, suffixes | base_suffixes
        section = (self.data, self.types_start, self.types_end)
        own = structs_named(*section, self.starts, whole) or structs_named(
            *section, self.starts, suffixes
        )
        return sorted(found + [self.first_id + k for k in own])

    def _name_offsets(self, wanted: bytes) -> tuple[set[int], set[int]]:
        return string_offsets(self.data, self.str_start, self.str_end, self.str_base, wanted)

    def struct_names(self) -> list[str]:
        """Every named struct and union in this blob (not its base), in id order."""
        words = self.words
        return [self.string(words[i]) for i in self.starts if self._is_struct(i) and words[i]]

    def struct_sizes(self) -> list[tuple[str, str, int]]:
        """(name, "struct" | "union", size) of every named definition in this blob (not its
        base), in id order; a name defined twice alike is listed once."""
        seen: set[tuple[str, str, int]] = set()
        out = []
        for i in self.starts:
            info = self.words[i + 1]
            if (info >> 24) & 0x1F in (STRUCT, UNION) and info & 0xFFFF and self.words[i]:
                kind = "struct" if (info >> 24) & 0x1F == STRUCT else "union"
                item = (self.string(self.words[i]), kind, self.words[i + 2])
                if item not in seen:
                    seen.add(item)
                    out.append(item)
        return out

    def _is_struct(self, word_index: int) -> bool:
        return (self.words[word_index + 1] >> 24) & 0x1F in (STRUCT, UNION)

    def _struct_id(self, name: str) -> int:
        type_id = self.find_struct(name)
        if type_id is None:
            def known() -> list[str]:
                return [n for blob in (self, self.base) if blob is not None
                        for n, _, _ in blob.struct_sizes()]

            raise StructNotFound(f"{self.path}: no struct or union named {name!r}", known)
        return type_id

    def struct(self, name: str) -> StructLayout:
        """The layout of ``struct name`` (or union), anonymous members flattened in place."""
        type_id = self._struct_id(name)
        kind, size = self._record(type_id)[2], self._record(type_id)[6]
        members: list[Member] = []
        groups: list[Group] = []
        self._collect(type_id, 0, 0, members, groups)
        for m in members:  # a member past the end: damaged BTF, not a layout to print
            start = m.offset * 8 if m.bit_offset is None else m.bit_offset
            end = start + (m.bit_size or m.size * 8)
            if end > size * 8:
                owner, i = self._record(type_id)[:2]
                raise LayoutError(
                    f"{owner.path}: damaged BTF: member {m.name or '(anonymous)'!r} of "
                    f"{name!r} (type id {type_id}, byte {owner._byte(i)}) ends at bit {end}, "
                    f"past the {size}-byte size of the {'struct' if kind == STRUCT else 'union'}")
        groups.sort(key=lambda g: (g[0], g[5]))  # by first row, outer before inner
        return StructLayout(
            name, "struct" if kind == STRUCT else "union", size, tuple(members), tuple(groups)
        )

    def _members(self, type_id: int, base_bits: int, depth: int) -> list[Member]:
        out: list[Member] = []
        self._collect(type_id, base_bits, depth, out, [])
        return out

    def _collect(
        self, type_id: int, base_bits: int, depth: int, out: list[Member], groups: list[Group]
    ) -> None:
        """Append the members of ``type_id`` to ``out``, anonymous struct/union members
        flattened in place, and each of those to ``groups``."""
        owner, i, _, vlen, kind_flag, _, _ = self._record(type_id)
        if depth > 16:
            raise LayoutError(
                f"{owner.path}: anonymous members nest too deep at type id {type_id} "
                f"(byte {owner._byte(i)})"
            )
        for name_off, member_type, offset, at in owner._member_entries(i, vlen):
            bit_size = (offset >> 24) if kind_flag else 0
            bits = base_bits + ((offset & 0xFFFFFF) if kind_flag else offset)
            name = self.string(name_off)
            target = self._strip(member_type, at)
            target_kind = self._record(target)[2] if target else 0
            if not name and target_kind in (STRUCT, UNION):
                first = len(out)
                self._collect(target, bits, depth + 1, out, groups)
                kind = "struct" if target_kind == STRUCT else "union"
                groups.append((first, len(out), kind, bits // 8, self.size_of(target), depth + 1))
                continue
            if bit_size or bits % 8:
                size = self.size_of(member_type, at=at)
                out.append(
                    Member(
                        name,
                        self.type_name(member_type, at=at),
                        bits // 8 // size * size if size else bits // 8,
                        size,
                        bits,
                        bit_size or None,
                        member_type,
                    )
                )
                continue
            out.append(
                Member(
                    name,
                    self.type_name(member_type, at=at),
                    bits // 8,
                    self.size_of(member_type, at=at),
                    type_id=member_type,
                )
            )

    def member(self, struct_name: str, path: str) -> Member | None:
        """The member at a dotted path (``hdr.num_buffers``), offset from the outer struct."""
        type_id = self._struct_id(struct_name)
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

    def array_length(self, type_id: int) -> int | None:
        """nelems of an array type (through typedefs and qualifiers); None if not an array."""
        type_id = self._strip(type_id)
        if type_id == 0:
            return None
        owner, i, kind, *_ = self._record(type_id)
        return owner._array(i)[1] if kind == ARRAY else None

    def _strip(self, type_id: int, at: int | None = None) -> int:
        """Follow const/volatile/typedef to the underlying type (for anonymous members)."""
        for _ in range(_MAX_DEPTH):
            if type_id == 0:
                return 0
            owner, i, kind, *_, ref = self._record(type_id, at)
            if kind not in _MODIFIERS:
                return type_id
            type_id, at = ref, owner._byte(i)
        raise LayoutError(
            f"{self.path}: loop in the type graph at type id {type_id}"
            + ("" if at is None else f" (byte {at})")
        )


def load_btf(path: str, base_path: str | None = None, reader: type[Btf] | None = None) -> Btf:
    """A BTF file, as split BTF on ``base_path`` when given (or when ``default_base`` says a
    module's sysfs file needs vmlinux); record tables cached for the next run. ``reader``:
    Btf (the word decoder, the default) or btf_format.GrammarBtf (the Construct grammar)."""
    reader = reader or Btf
    base_path = base_path or default_base(path)
    base = None
    if base_path is not None:
        base = reader.load(base_path)
        base.save_index()
    btf = reader.load(path, base=base)
    btf.save_index()
    return btf
