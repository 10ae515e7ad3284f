"""Compare vnetrx's Construct layouts with the kernel's own (BTF), member by member."""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.kernel.changes import (
    SHINFO_XDP_FRAGS_UNION,
    SKB_FRAG_NETMEM,
    V1_HASH_SPLIT_HASH_VALUE,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.layouts.base import Layout
from vnetrx.layouts.btf import Btf
from vnetrx.layouts.rows import Row
from vnetrx.layouts.skbuff import skb_frag, skb_shared_info
from vnetrx.layouts.virtio_net import (
    virtio_net_hdr,
    virtio_net_hdr_mrg_rxbuf,
    virtio_net_hdr_v1,
    virtio_net_hdr_v1_hash,
    virtio_net_hdr_v1_hash_tunnel,
    virtnet_rq_dma,
)


def layouts_for(k: KernelProfile) -> dict[str, Layout]:
    """Every struct vnetrx defines, as kernel ``k`` has it (padded_vnet_hdr is not in BTF)."""
    layouts = [
        virtio_net_hdr(),
        virtio_net_hdr_mrg_rxbuf(),
        virtio_net_hdr_v1(),
        virtio_net_hdr_v1_hash(k.has(V1_HASH_SPLIT_HASH_VALUE)),
        virtio_net_hdr_v1_hash_tunnel(),
        skb_frag(netmem=k.has(SKB_FRAG_NETMEM)),
        skb_shared_info(k.build.max_skb_frags, xdp_frags_union=k.has(SHINFO_XDP_FRAGS_UNION)),
        virtnet_rq_dma(),
    ]
    return {layout.name: layout for layout in layouts}


@dataclass(frozen=True)
class Mismatch:
    member: str
    ours: str
    kernel: str


def compare(layout: Layout, btf: Btf) -> list[Mismatch]:
    """Every member vnetrx defines must exist in BTF at the same offset with the same size."""
    problems = []
    theirs = btf.struct(layout.name)
    if theirs.size != layout.size:
        problems.append(Mismatch("(sizeof)", str(layout.size), str(theirs.size)))
    for leaf in layout.leaves():
        member = btf.member(layout.name, leaf.name)
        if member is None:
            problems.append(Mismatch(leaf.name, f"{leaf.offset}/{leaf.size}", "absent"))
        elif (member.offset, member.size) != (leaf.offset, leaf.size):
            problems.append(
                Mismatch(leaf.name, f"{leaf.offset}/{leaf.size}", f"{member.offset}/{member.size}")
            )
    return problems


def rows_of_layout(layout: Layout) -> list[Row]:
    return [Row(f.name, f.ctype or "", f.offset, f.size) for f in layout.fields]


def rows_of_btf(btf: Btf, name: str) -> tuple[int, list[Row]]:
    struct = btf.struct(name)
    return struct.size, [
        Row(m.name, m.type_name, m.offset, m.size, m.bit_offset, m.bit_size) for m in struct.members
    ]
