"""Buffer maps: the named byte ranges every path draws (what the text view shows as a memory map)."""

from __future__ import annotations

from typing import Final

from vnetrx.model import Buffer, Region


def regions(*parts: tuple[str, int, str]) -> tuple[Region, ...]:
    """Lay named sizes end to end from offset 0, dropping empty ones."""
    out, offset = [], 0
    for name, size, note in parts:
        if size > 0:
            out.append(Region(name, offset, size, note))
        offset += max(size, 0)
    return tuple(out)


PULLED_NOTE: Final = "pulled into the skb head by virtio_net_hdr_to_skb (pskb_may_pull)"


def mark_pulled(buffer: Buffer, pulled: int) -> Buffer:
    """The buffer after __pskb_pull_tail copied ``pulled`` bytes of frag 0 into the skb head: the
    front of the region left in place as frag 0 is now a copy in the head."""
    out: list[Region] = []
    for region in buffer.regions:
        if pulled and region.name == "frame" and "frag 0" in region.note:
            take = min(pulled, region.size)
            out.append(Region(region.name, region.offset, take, PULLED_NOTE))
            if region.size > take:
                out.append(Region(region.name, region.offset + take, region.size - take,
                                  region.note))
            pulled -= take
            continue
        out.append(region)
    return buffer._replace(regions=tuple(out))
