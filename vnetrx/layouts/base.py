"""C struct layouts: members declared once, offsets and sizes derived from them, parse/build
through Construct.

A layout's geometry (``size``, ``fields``, ``leaves``) is computed here from the member list in
plain Python, so that the receive path, which only needs sizes (a trace's ``SKB_DATA_ALIGN(
sizeof(struct skb_shared_info))``, a header's length), does not import Construct: that import
is ~35 ms of CPU on the 2-core reference machine, a fifth of a whole ``vnetrx trace`` (issue 15).
The Construct ``Struct`` is built from the same members the first time bytes are parsed or built
(``vnetrx decode``, a tap frame's header); tests/layouts checks that its ``sizeof()`` and every
member offset agree with the derived geometry, and tests/layouts' BTF checks compare both with
the kernel's own.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from vnetrx.errors import LayoutError
from vnetrx.records import NamedTuple

# Construct's little-endian integer for each scalar size (``__virtio16`` is little-endian on every
# profiled platform: see layouts/virtio_net.py).
_SCALARS = {1: "Int8ul", 2: "Int16ul", 4: "Int32ul", 8: "Int64ul"}


class Member(NamedTuple):
    """One C member as declared: ``doc`` is "<C type>: what it holds"; a name starting with
    "_" is padding or a hole (it takes room but is not a field)."""

    name: str
    doc: str
    size: int  # bytes of one element
    elements: int | None = None  # an array of this many elements (of ``inner`` if given)
    inner: Layout | None = None  # a nested struct
    raw: bool = False  # char[size]: bytes, not an integer


def u8(name: str, doc: str) -> Member:
    return Member(name, doc, 1)


def u16(name: str, doc: str) -> Member:
    return Member(name, doc, 2)


def u32(name: str, doc: str) -> Member:
    return Member(name, doc, 4)


def u64(name: str, doc: str) -> Member:
    return Member(name, doc, 8)


def chars(name: str, size: int, doc: str) -> Member:
    """char name[size] (padding, holes): raw bytes."""
    return Member(name, doc, size, raw=True)


def nested(name: str, inner: Layout, doc: str) -> Member:
    return Member(name, doc, inner.size, inner=inner)


def array(name: str, count: int, inner: Layout, doc: str) -> Member:
    return Member(name, doc, inner.size, elements=count, inner=inner)


def _span(member: Member) -> int:
    return member.size * (member.elements if member.elements is not None else 1)


class Field(NamedTuple):
    """One C member: name verbatim, byte offset and size derived from the member list."""

    name: str
    offset: int
    size: int
    ctype: str  # the C type as the kernel writes it ("__virtio16", "struct skb_frag[17]")
    doc: str = ""


class Layout(NamedTuple):
    """A fixed-size C struct: ``size`` is the sum of its members (padding is an explicit member),
    never a retyped constant. (A record rather than a frozen dataclass, as every type on the
    trace path: start-up, issue 15.)"""

    name: str
    fields: tuple[Field, ...]
    size: int
    source: str  # the header that defines it, with the version read
    members: tuple[Member, ...]  # what the rest is derived from

    @classmethod
    def of(cls, name: str, members: tuple[Member, ...], *, source: str) -> Layout:
        fields: list[Field] = []
        offset = 0
        for member in members:
            if not member.name.startswith("_"):
                fields.append(Field(member.name, offset, _span(member), _ctype(member),
                                    member.doc))
            offset += _span(member)
        return cls(name, tuple(fields), offset, source, tuple(members))

    def leaves(self) -> tuple[Field, ...]:
        """Members with nested structs expanded: ``hdr.num_buffers``-style dotted names."""
        return tuple(_leaves(self.members, "", 0))

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no member {name!r}")

    def struct(self) -> Any:
        """The Construct ``Struct`` of these members (built, and Construct imported, once)."""
        return _construct_struct(self.members)

    def parse(self, data: bytes) -> dict[str, Any]:
        """Decode ``data`` (exactly ``size`` bytes or more; extra bytes are ignored)."""
        import construct

        if len(data) < self.size:
            raise LayoutError(
                f"{self.name}: need {self.size} bytes, got {len(data)} (truncated input)"
            )
        try:
            obj = self.struct().parse(bytes(data[: self.size]))
        except construct.ConstructError as exc:  # the one place Construct errors are translated
            raise LayoutError(f"{self.name}: {exc}") from None
        return {f.name: _plain(obj[f.name]) for f in self.fields}

    def build(self, values: dict[str, Any]) -> bytes:
        """Encode ``values`` (missing members are zero)."""
        import construct

        unknown = set(values) - {f.name for f in self.fields}
        if unknown:
            raise LayoutError(f"{self.name} has no member {sorted(unknown)[0]!r}")
        full = self.parse(bytes(self.size))  # every member zero, in its own shape
        full.update(values)
        try:
            data: bytes = self.struct().build(full)
        except construct.ConstructError as exc:
            raise LayoutError(f"{self.name}: {exc}") from None
        return data


@cache
def _construct_struct(members: tuple[Member, ...]) -> Any:
    import construct

    subcons = []
    for member in members:
        sub: Any
        if member.inner is not None:
            sub = member.inner.struct()
        elif member.raw:
            sub = construct.Bytes(member.size)
        else:
            sub = getattr(construct, _SCALARS[member.size])
        if member.elements is not None:
            sub = construct.Array(member.elements, sub)
        subcons.append(member.name / sub * member.doc)
    return construct.Struct(*subcons)


def _leaves(members: tuple[Member, ...], prefix: str, base: int) -> list[Field]:
    out: list[Field] = []
    offset = base
    for member in members:
        if not member.name.startswith("_"):
            if member.inner is not None and member.elements is None:
                out += _leaves(member.inner.members, f"{prefix}{member.name}.", offset)
            else:  # scalars, char[], and arrays (even of structs) are leaves
                out.append(Field(prefix + member.name, offset, _span(member), _ctype(member),
                                 member.doc))
        offset += _span(member)
    return out


def _ctype(member: Member) -> str:
    return member.doc.split(":", 1)[0]


def _plain(value: Any) -> Any:
    import construct

    if isinstance(value, construct.ListContainer):
        return [_plain(x) for x in value]
    if isinstance(value, construct.Container):
        return {k: _plain(x) for k, x in value.items() if not k.startswith("_")}
    return value
