"""Where a NEEDS_CSUM header's csum_start and csum_start + csum_offset fall in the frame, named
in header terms (``vnetrx decode``): the layer csum_start lands in, and the field the 2-byte
checksum is written over."""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.decode.frame import Layer
from vnetrx.paths.virtio_net_hdr import VnetHdr


@dataclass(frozen=True)
class CsumPlace:
    start: int
    offset: int
    start_in: str  # "the udp header (its first byte)"
    field: str | None  # "udp.check" when the 2 bytes are exactly a known field
    field_at: int
    explanation: str


def csum_place(hdr: VnetHdr, layers: tuple[Layer, ...], frame_len: int | None) -> CsumPlace:
    """Where csum_start and csum_start + csum_offset fall in the frame, in header terms."""
    start, at = hdr.csum_start, hdr.csum_start + hdr.csum_offset
    layer = next((x for x in layers if x.offset <= start < x.offset + x.length), None)
    start_in = _start_in(start, layer, layers, frame_len)
    field = next((f.name for x in layers for f in x.fields if f.offset == at and f.size == 2), None)
    if field is not None:
        text = _named_field(at, field, layer)
    else:
        text = _unnamed_bytes(at, layers, frame_len)
    return CsumPlace(start, hdr.csum_offset, start_in, field, at, text)


def _start_in(
    start: int, layer: Layer | None, layers: tuple[Layer, ...], frame_len: int | None
) -> str:
    """csum_start: the layer it lands in, and how far into it."""
    if not layers:
        return f"frame byte {start} (no frame bytes given to name it)"
    if layer is None:
        where = (
            "past the frame"
            if frame_len is not None and start >= frame_len
            else ("beyond the decoded headers")
        )
        return f"frame byte {start}: {where}"
    if layer.offset == start:
        return f"frame byte {start}: the first byte of the {layer.name} header"
    return f"frame byte {start}: {start - layer.offset} bytes into the {layer.name} header"


def _named_field(at: int, field: str, layer: Layer | None) -> str:
    """The checksum lands exactly on a known 2-byte field."""
    text = f"checksum at frame bytes {at}..{at + 1} = {field}"
    expected = {"tcp": 16, "udp": 6}.get(field.split(".")[0])
    if (
        expected is not None
        and field.endswith(".check")
        and layer is not None
        and layer.name != field.split(".")[0]
    ):
        text += f" (but csum_start is not the {field.split('.')[0]} header)"
    return text


def _unnamed_bytes(at: int, layers: tuple[Layer, ...], frame_len: int | None) -> str:
    """The checksum lands on no known 2-byte field: what it overlaps instead."""
    inside = next((f for x in layers for f in x.fields if f.offset <= at < f.offset + f.size), None)
    beyond = frame_len is not None and at + 2 > frame_len
    return f"checksum at frame bytes {at}..{at + 1}: " + (
        "past the end of the frame"
        if beyond
        else f"overlaps {inside.name} (not a checksum field)"
        if inside is not None
        else "in the payload, not a header checksum field"
        if layers
        else "no frame bytes to name it"
    )
