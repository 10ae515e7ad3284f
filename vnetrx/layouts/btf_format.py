"""BTF's binary format as Construct definitions: include/uapi/linux/btf.h (@6.12), every kind
1-19 with the records that follow ``struct btf_type``, and ``GrammarBtf``, the BTF reader that
decodes every record it reads through them.

``vnetrx layout --check`` (which imports construct for vnetrx's own layouts anyway) reads BTF
with GrammarBtf. ``vnetrx layout NAME --btf`` uses btf.py's word decoder instead, because
importing construct costs ~45 ms, about all of pahole's run (benchmarks/layout_vs_pahole.py).
The tests hold the two to the same records and the same struct layouts.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from construct import (
    Array,
    Computed,
    Const,
    ConstructError,
    Int8ul,
    Int16ul,
    Int32sl,
    Int32ul,
    Pass,
    Struct,
    Switch,
    this,
)

from vnetrx.errors import LayoutError
from vnetrx.layouts.btf import BTF_MAGIC, Btf

btf_header = Struct(
    "magic" / Const(BTF_MAGIC, Int16ul),
    "version" / Const(1, Int8ul),
    "flags" / Int8ul,
    "hdr_len" / Int32ul,
    "type_off" / Int32ul,  # relative to the end of the header
    "type_len" / Int32ul,
    "str_off" / Int32ul,
    "str_len" / Int32ul,
)

btf_array = Struct("type" / Int32ul, "index_type" / Int32ul, "nelems" / Int32ul)
# offset: bit offset; with the struct's kind_flag, bits 24-31 are the bit-field size
btf_member = Struct("name_off" / Int32ul, "type" / Int32ul, "offset" / Int32ul)
btf_enum = Struct("name_off" / Int32ul, "val" / Int32sl)
btf_param = Struct("name_off" / Int32ul, "type" / Int32ul)
btf_var = Struct("linkage" / Int32ul)
btf_var_secinfo = Struct("type" / Int32ul, "offset" / Int32ul, "size" / Int32ul)
btf_decl_tag = Struct("component_idx" / Int32sl)
btf_enum64 = Struct("name_off" / Int32ul, "val_lo32" / Int32ul, "val_hi32" / Int32ul)
# BTF_KIND_INT's u32: encoding (bits 24-27), offset (16-23), bits (0-7)
btf_int = Struct("encoding" / Int32ul)

btf_type = Struct(
    "name_off" / Int32ul,
    "info" / Int32ul,  # vlen: bits 0-15, kind: bits 24-28, kind_flag: bit 31
    "kind" / Computed(lambda ctx: (ctx.info >> 24) & 0x1F),
    "vlen" / Computed(lambda ctx: ctx.info & 0xFFFF),
    "kind_flag" / Computed(lambda ctx: ctx.info >> 31),
    "size_or_type" / Int32ul,
    "trailer"
    / Switch(
        this.kind,
        {
            1: btf_int,
            3: btf_array,
            4: Array(this.vlen, btf_member),
            5: Array(this.vlen, btf_member),
            6: Array(this.vlen, btf_enum),
            13: Array(this.vlen, btf_param),
            14: btf_var,
            15: Array(this.vlen, btf_var_secinfo),
            17: btf_decl_tag,
            19: Array(this.vlen, btf_enum64),
        },
        default=Pass,
    ),
    "size" / Computed(lambda ctx: 12 + _trailer_size(ctx)),
)


def _trailer_size(ctx: Any) -> int:
    trailer = ctx.trailer
    if trailer is None:
        return 0
    if isinstance(trailer, list):
        entry = {4: 12, 5: 12, 6: 8, 13: 8, 15: 12, 19: 12}[ctx.kind]
        return entry * len(trailer)
    return {1: 4, 3: 12, 14: 4, 17: 4}[ctx.kind]


def iter_records(section: bytes) -> Iterator[tuple[int, Any]]:
    """(byte offset, Construct container) of each record of a type section, in id order."""
    stream = io.BytesIO(section)
    while stream.tell() < len(section):
        offset = stream.tell()
        yield offset, btf_type.parse_stream(stream)


class GrammarBtf(Btf):
    """A Btf whose records are decoded by the Construct grammar (``btf_type``), one parse per
    record read; the record table and name search are btf.py's."""

    def __init__(self, data: bytes, path: str, base: Btf | None = None) -> None:
        super().__init__(data, path, base)
        self._stream = io.BytesIO(data)
        self._parsed: dict[int, Any] = {}

    def _parse(self, i: int) -> Any:
        record = self._parsed.get(i)
        if record is None:
            self._stream.seek(self._byte(i))
            try:
                record = self._parsed[i] = btf_type.parse_stream(self._stream)
            except ConstructError as exc:
                raise LayoutError(f"{self.path}: record at byte {self._byte(i)}: {exc}") from None
        return record

    def _header(self, i: int) -> tuple[int, int, int, int, int]:
        r = self._parse(i)
        return r.kind, r.vlen, r.kind_flag, r.name_off, r.size_or_type

    def _array(self, i: int) -> tuple[int, int]:
        trailer = self._parse(i).trailer
        return trailer.type, trailer.nelems

    def _member_entries(self, i: int, vlen: int) -> list[tuple[int, int, int, int]]:
        members = self._parse(i).trailer
        assert len(members) == vlen  # the grammar read vlen from the same info word
        first = self._byte(i) + 12
        return [(m.name_off, m.type, m.offset, first + 12 * n) for n, m in enumerate(members)]
