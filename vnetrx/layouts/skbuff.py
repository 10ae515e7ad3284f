"""include/linux/skbuff.h: struct skb_frag (bio_vec before 6.12) and struct skb_shared_info.

The 5.x-7.x member layout (48 fixed bytes + MAX_SKB_FRAGS x 16) matches pahole on the running
6.18.44 kernel (docs/kernel/virtio-net-rx.md Appendix B, docs/kernel/skbuff.md §2.6): 320 bytes with 17 frags on x86_64.
"""

from __future__ import annotations

from functools import cache

from construct import Array, Bytes, Int8ul, Int16ul, Int32ul, Int64ul, Struct

from vnetrx.layouts.base import Layout

SKBUFF_H = "include/linux/skbuff.h"


@cache
def skb_frag(netmem: bool = True) -> Layout:
    """skb_frag_t: {page|netmem, len, offset} (6.12+) or struct bio_vec {bv_page, bv_len, bv_offset}."""
    if netmem:
        struct = Struct(
            "netmem" / Int64ul * "netmem_ref: the page (or net_iov) holding the bytes",
            "len" / Int32ul * "unsigned int: bytes in this fragment",
            "offset" / Int32ul * "unsigned int: where they start in the page",
        )
        return Layout.of("skb_frag", struct, source=SKBUFF_H)
    struct = Struct(
        "bv_page" / Int64ul * "struct page *",
        "bv_len" / Int32ul * "unsigned int",
        "bv_offset" / Int32ul * "unsigned int",
    )
    return Layout.of("bio_vec", struct, source="include/linux/bvec.h")


@cache
def skb_shared_info(
    max_skb_frags: int = 17, netmem: bool = True, xdp_frags_union: bool = False
) -> Layout:
    """struct skb_shared_info: sits at skb->end; build_skb() needs SKB_DATA_ALIGN(sizeof) of tailroom.

    ``xdp_frags_union``: from "xdp: add generic xdp_buff_add_frag()" (6.14) xdp_frags_size and
    xdp_frags_truesize share a union with destructor_arg at 40, and 36 is a hole.
    """
    frag = skb_frag(netmem)
    tail: tuple[object, ...]
    if xdp_frags_union:
        tail = (
            "_hole" / Bytes(4) * "4-byte hole",
            "xdp_frags_size" / Int32ul * "u32: in a union with destructor_arg",
            "xdp_frags_truesize" / Int32ul * "u32: in a union with destructor_arg",
        )
    else:
        tail = (
            "xdp_frags_size" / Int32ul * "unsigned int",
            "destructor_arg" / Int64ul * "void *",
        )
    struct = Struct(
        "flags" / Int8ul * "__u8",
        "meta_len" / Int8ul * "__u8: XDP metadata length",
        "nr_frags" / Int8ul * "__u8",
        "tx_flags" / Int8ul * "__u8",
        "gso_size" / Int16ul * "unsigned short",
        "gso_segs" / Int16ul * "unsigned short",
        "frag_list" / Int64ul * "struct sk_buff *",
        # 6.8+ (xsk TX metadata) puts it in a union with struct xsk_tx_metadata_compl xsk_meta
        "hwtstamps" / Int64ul * "struct skb_shared_hwtstamps: in a union with xsk_meta where "
        "the kernel has xsk_tx_metadata_compl",
        "gso_type" / Int32ul * "unsigned int",
        "tskey" / Int32ul * "u32",
        "dataref" / Int32ul * "atomic_t",
        *tail,
        "frags"
        / Array(max_skb_frags, frag._struct)
        * f"skb_frag_t[{max_skb_frags}]: MAX_SKB_FRAGS",
    )
    return Layout.of("skb_shared_info", struct, source=SKBUFF_H)
