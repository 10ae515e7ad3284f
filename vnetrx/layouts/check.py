"""Compare vnetrx's Construct layouts with the kernel's own (BTF), member by member."""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.errors import LayoutError
from vnetrx.kernel.changes import (
    SHINFO_XDP_FRAGS_UNION,
    SKB_FRAG_NETMEM,
    V1_HASH_SPLIT_HASH_VALUE,
    VIRTNET_RQ_DMA,
    VNET_HDR_UDP_TUNNEL,
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
    """Every struct vnetrx defines that kernel ``k`` has, in ``k``'s form. padded_vnet_hdr is
    left out: virtio_net.c uses it only inside sizeof(), so no BTF (vmlinux or module) has it."""
    layouts = [
        virtio_net_hdr(),
        virtio_net_hdr_mrg_rxbuf(),
        virtio_net_hdr_v1(),
        virtio_net_hdr_v1_hash(k.has(V1_HASH_SPLIT_HASH_VALUE)),
        skb_frag(netmem=k.has(SKB_FRAG_NETMEM)),
        skb_shared_info(k.build.max_skb_frags, xdp_frags_union=k.has(SHINFO_XDP_FRAGS_UNION)),
    ]
    if k.has(VNET_HDR_UDP_TUNNEL):
        layouts.append(virtio_net_hdr_v1_hash_tunnel())
    if k.has(VIRTNET_RQ_DMA):
        layouts.append(virtnet_rq_dma())
    return {layout.name: layout for layout in layouts}


@dataclass(frozen=True)
class Mismatch:
    member: str
    ours: str
    kernel: str


def compare(layout: Layout, btf: Btf) -> list[Mismatch]:
    """Every member vnetrx defines must exist in BTF at the same offset with the same size."""
    problems = []
    try:
        theirs = btf.struct(layout.name)
    except LayoutError:
        # Not in this BTF. vmlinux lacks the structs of a driver built as a module (Debian's
        # virtio_net): their BTF is the module's, read on top of vmlinux with --btf-base.
        return [Mismatch("(struct)", f"{layout.size} bytes", "absent from this BTF")]
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
