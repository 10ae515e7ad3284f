"""include/linux/skbuff.h: struct skb_frag (bio_vec before 6.12) and struct skb_shared_info.

The 5.x-7.x member layout (48 fixed bytes + MAX_SKB_FRAGS x 16) matches pahole on the running
6.18.44 kernel (docs/kernel/virtio-net-rx.md Appendix B, docs/kernel/skbuff.md §2.6): 320 bytes with 17 frags on x86_64.
"""

from __future__ import annotations

from functools import cache

from vnetrx.layouts.base import Layout, Member, array, chars, u8, u16, u32, u64

SKBUFF_H = "include/linux/skbuff.h"


@cache
def skb_frag(netmem: bool = True) -> Layout:
    """skb_frag_t: {page|netmem, len, offset} (6.12+) or struct bio_vec {bv_page, bv_len, bv_offset}."""
    if netmem:
        members = (
            u64("netmem", "netmem_ref: the page (or net_iov) holding the bytes"),
            u32("len", "unsigned int: bytes in this fragment"),
            u32("offset", "unsigned int: where they start in the page"),
        )
        return Layout.of("skb_frag", members, source=SKBUFF_H)
    members = (
        u64("bv_page", "struct page *"),
        u32("bv_len", "unsigned int"),
        u32("bv_offset", "unsigned int"),
    )
    return Layout.of("bio_vec", members, source="include/linux/bvec.h")


@cache
def skb_shared_info(
    max_skb_frags: int = 17, netmem: bool = True, xdp_frags_union: bool = False
) -> Layout:
    """struct skb_shared_info: sits at skb->end; build_skb() needs SKB_DATA_ALIGN(sizeof) of tailroom.

    ``xdp_frags_union``: from "xdp: add generic xdp_buff_add_frag()" (6.14) xdp_frags_size and
    xdp_frags_truesize share a union with destructor_arg at 40, and 36 is a hole.
    """
    frag = skb_frag(netmem)
    tail: tuple[Member, ...]
    if xdp_frags_union:
        tail = (
            chars("_hole", 4, "4-byte hole"),
            u32("xdp_frags_size", "u32: in a union with destructor_arg"),
            u32("xdp_frags_truesize", "u32: in a union with destructor_arg"),
        )
    else:
        tail = (
            u32("xdp_frags_size", "unsigned int"),
            u64("destructor_arg", "void *"),
        )
    members = (
        u8("flags", "__u8"),
        u8("meta_len", "__u8: XDP metadata length"),
        u8("nr_frags", "__u8"),
        u8("tx_flags", "__u8"),
        u16("gso_size", "unsigned short"),
        u16("gso_segs", "unsigned short"),
        u64("frag_list", "struct sk_buff *"),
        # 6.8+ (xsk TX metadata) puts it in a union with struct xsk_tx_metadata_compl xsk_meta
        u64("hwtstamps", "struct skb_shared_hwtstamps: in a union with xsk_meta where "
            "the kernel has xsk_tx_metadata_compl"),
        u32("gso_type", "unsigned int"),
        u32("tskey", "u32"),
        u32("dataref", "atomic_t"),
        *tail,
        array("frags", max_skb_frags, frag, f"skb_frag_t[{max_skb_frags}]: MAX_SKB_FRAGS"),
    )
    return Layout.of("skb_shared_info", members, source=SKBUFF_H)
