"""Typed wall around Construct: ``Layout`` (sizes and offsets from ``sizeof``) and parse/build."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import construct

from vnetrx.errors import LayoutError


@dataclass(frozen=True)
class Field:
    """One C member: name verbatim, byte offset and size taken from the Construct definition."""

    name: str
    offset: int
    size: int
    ctype: str  # the C type as the kernel writes it ("__virtio16", "struct skb_frag[17]")
    doc: str = ""


@dataclass(frozen=True)
class Layout:
    """A fixed-size C struct. ``size`` is Construct's ``sizeof()``, never a retyped constant."""

    name: str
    fields: tuple[Field, ...]
    size: int
    source: str  # the header that defines it, with the version read
    _struct: Any = field(repr=False, compare=False, hash=False)

    @classmethod
    def of(cls, name: str, struct: Any, *, source: str) -> Layout:
        fields: list[Field] = []
        offset = 0
        for sub in struct.subcons:
            size = sub.sizeof()
            if sub.name is not None and not sub.name.startswith("_"):
                fields.append(Field(sub.name, offset, size, _ctype(sub), sub.docs or ""))
            offset += size
        if offset != struct.sizeof():  # members must tile the struct: padding is explicit
            raise AssertionError(f"{name}: members sum to {offset}, sizeof is {struct.sizeof()}")
        return cls(name, tuple(fields), offset, source, struct)

    def leaves(self) -> tuple[Field, ...]:
        """Members with nested structs expanded: ``hdr.num_buffers``-style dotted names."""
        return tuple(_leaves(self._struct, "", 0))

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no member {name!r}")

    def parse(self, data: bytes) -> dict[str, Any]:
        """Decode ``data`` (exactly ``size`` bytes or more; extra bytes are ignored)."""
        if len(data) < self.size:
            raise LayoutError(
                f"{self.name}: need {self.size} bytes, got {len(data)} (truncated input)"
            )
        try:
            obj = self._struct.parse(bytes(data[: self.size]))
        except construct.ConstructError as exc:  # the one place Construct errors are translated
            raise LayoutError(f"{self.name}: {exc}") from None
        return {f.name: _plain(obj[f.name]) for f in self.fields}

    def build(self, values: dict[str, Any]) -> bytes:
        """Encode ``values`` (missing members are zero)."""
        unknown = set(values) - {f.name for f in self.fields}
        if unknown:
            raise LayoutError(f"{self.name} has no member {sorted(unknown)[0]!r}")
        full = self.parse(bytes(self.size))  # every member zero, in its own shape
        full.update(values)
        try:
            data: bytes = self._struct.build(full)
        except construct.ConstructError as exc:
            raise LayoutError(f"{self.name}: {exc}") from None
        return data


def _leaves(struct: Any, prefix: str, base: int) -> list[Field]:
    out: list[Field] = []
    offset = base
    for sub in struct.subcons:
        size = sub.sizeof()
        if sub.name is not None and not sub.name.startswith("_"):
            inner = sub.subcon if hasattr(sub, "subcon") else sub
            while hasattr(inner, "subcon") and not isinstance(inner, construct.Array):
                inner = inner.subcon  # through Renamed/Transformed wrappers; arrays stay leaves
            if hasattr(inner, "subcons"):
                out += _leaves(inner, f"{prefix}{sub.name}.", offset)
            else:
                out.append(Field(prefix + sub.name, offset, size, _ctype(sub), sub.docs or ""))
        offset += size
    return out


def _ctype(sub: Any) -> str:
    docs = getattr(sub, "docs", "") or ""
    return docs.split(":", 1)[0]


def _plain(value: Any) -> Any:
    if isinstance(value, construct.ListContainer):
        return [_plain(x) for x in value]
    if isinstance(value, construct.Container):
        return {k: _plain(x) for k, x in value.items() if not k.startswith("_")}
    return value
