"""Mirrors net/core/skbuff.c (and the macros of include/linux/skbuff.h) as pure functions.

Formulas: docs/kernel/skbuff.md §2-§6 (read in 5.15, 6.1.192, 6.12.117,
6.18.3 and 7.3.4 sources). Every function takes the profile it depends on and returns new values.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Final

from vnetrx.errors import SimulationError, UnsupportedError
from vnetrx.kernel.changes import (
    ALLOC_SKB_WITH_FRAGS_HIGH_ORDER,
    NAPI_SMALL_PAGE_FRAG,
    SKB_SMALL_HEAD_CACHE,
    SMALL_HEAD_GRO_SIZED,
)
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.kernel.profile import KernelProfile, align
from vnetrx.layouts.skbuff import skb_shared_info
from vnetrx.model import IP_SUMMED, Frag, FragListSkb, Skb
from vnetrx.records import NamedTuple

_CHECKSUM_PARTIAL: Final = IP_SUMMED.index("CHECKSUM_PARTIAL")  # include/linux/skbuff.h: 3
# tuple.__new__, looked up once: compiled, ``tuple.__new__(...)`` looks the method up at each call
_TUPLE_NEW: Final = tuple.__new__


def new_skb(head: str, head_size: int, data: int, tail: int, end: int, length: int,
            data_len: int, truesize: int, nr_frags: int = 0, mac_header: int | None = None,
            frags: tuple[Frag, ...] = (), frag_list: tuple[FragListSkb, ...] = (),
            ip_summed: int = 0, csum_start: int | None = None, csum_offset: int | None = None,
            gso_size: int = 0, gso_type: int = 0, gso_type_names: tuple[str, ...] = (),
            gso_segs: int = 0, skb_hash: int = 0, l4_hash: bool = False,
            meta_len: int = 0) -> Skb:
    """``Skb(...)``, its fields in ``Skb``'s order and with its defaults, made by
    ``tuple.__new__`` as the record's own ``_make`` does: the record's ``__new__`` is a Python
    function (~2 us a call from compiled code) and a replay's stages make several skbs for each
    frame they decide. The same record as ``Skb(...)`` of the same fields (tests/paths/
    test_skbuff.py checks it, defaults included)."""
    return _TUPLE_NEW(Skb, (head, head_size, data, tail, end, length, data_len, truesize,
                            nr_frags, mac_header, frags, frag_list, ip_summed, csum_start,
                            csum_offset, gso_size, gso_type, gso_type_names, gso_segs, skb_hash,
                            l4_hash, meta_len))


def new_frag(page: str, offset: int, size: int, truesize: int) -> Frag:
    """``Frag(...)`` made by ``tuple.__new__``, as ``new_skb`` makes an Skb (the same record:
    tests/paths/test_skbuff.py checks it); a replay's pulls and frags make them per decision."""
    return _TUPLE_NEW(Frag, (page, offset, size, truesize))


def skb_headlen(skb: Skb) -> int:
    """skb_headlen(): skb->len - skb->data_len, the bytes in the linear area (``Skb.headlen``,
    read without a Python property call: virtio_net_hdr_to_skb reads it at every pull)."""
    return skb.len - skb.data_len


# SLUB kmalloc caches a skb head can land in (mm/slab_common.c kmalloc_info); above
# KMALLOC_MAX_CACHE_SIZE (8 KiB) kmalloc goes to the page allocator.
KMALLOC_BUCKETS: Final = (8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192)


@cache
def shinfo_size(k: KernelProfile) -> int:
    """SKB_DATA_ALIGN(sizeof(struct skb_shared_info)): the tailroom build_skb() needs."""
    return k.skb_data_align(skb_shared_info(k.build.max_skb_frags).size)


def skb_truesize(k: KernelProfile, size: int) -> int:
    """SKB_TRUESIZE(X) = X + SKB_DATA_ALIGN(sizeof(sk_buff)) + SKB_DATA_ALIGN(sizeof(shinfo))."""
    return size + k.sk_buff_aligned + shinfo_size(k)


def skb_with_overhead(k: KernelProfile, size: int) -> int:
    """SKB_WITH_OVERHEAD(X) = X - SKB_DATA_ALIGN(sizeof(struct skb_shared_info))."""
    return size - shinfo_size(k)


def skb_head_align(k: KernelProfile, size: int) -> int:
    """SKB_HEAD_ALIGN(X) = SKB_DATA_ALIGN(X) + SKB_DATA_ALIGN(sizeof(struct skb_shared_info))."""
    return k.skb_data_align(size) + shinfo_size(k)


def max_tcp_header(k: KernelProfile) -> int:
    """MAX_TCP_HEADER = L1_CACHE_ALIGN(128 + MAX_HEADER) (include/net/tcp.h @5.15+)."""
    return align(128 + k.build.max_header, k.build.l1_cache_bytes)


@cache
def small_head_cache_size(k: KernelProfile) -> int:
    """SKB_SMALL_HEAD_CACHE_SIZE (net/core/skbuff.c @6.3+), or what the running kernel's slab says."""
    if k.build.small_head_observed is not None:
        return k.build.small_head_observed
    wanted = max_tcp_header(k)
    if k.has(SMALL_HEAD_GRO_SIZED):  # GRO_MAX_HEAD = MAX_HEADER + 128 (include/net/gro.h)
        wanted = max(wanted, k.build.max_header + 128 + k.net_skb_pad + k.build.net_ip_align)
    size = skb_head_align(k, wanted)
    # "if SKB_SMALL_HEAD_SIZE is a power of two, add L1_CACHE_BYTES so that it does not share
    # a kmalloc cache with kmalloc-N": keeps skbuff_small_head distinct.
    return size + k.build.l1_cache_bytes if size & (size - 1) == 0 else size


def kmalloc_size_roundup(k: KernelProfile, size: int) -> int:
    for bucket in KMALLOC_BUCKETS:
        if size <= bucket:
            return bucket
    pages = k.build.page_size
    while pages < size:  # kmalloc_large: PAGE_SIZE << get_order(size)
        pages *= 2
    return pages


class Head(NamedTuple):
    """Where a new linear area came from, how big it is, and what it costs."""

    label: str
    size: int  # bytes of the allocation, skb_shared_info included
    truesize: int
    frag: bool = False  # skb->head_frag: a page fragment (GRO can steal it as a frag), not kmalloc


@lru_cache(maxsize=4096)  # a tap sweep asks for every head size
def kmalloc_reserve(k: KernelProfile, size: int) -> Head:
    """__alloc_skb()'s head: obj = SKB_HEAD_ALIGN(size), from skbuff_small_head (6.3+) or kmalloc."""
    obj = skb_head_align(k, size)
    small = small_head_cache_size(k)
    if k.has(SKB_SMALL_HEAD_CACHE) and obj <= small:
        return Head(f"skbuff_small_head ({small} B object)", small, small + k.sk_buff_aligned)
    alloc = kmalloc_size_roundup(k, obj)
    label = f"kmalloc-{alloc}" if alloc <= KMALLOC_BUCKETS[-1] else f"pages ({alloc} B)"
    # truesize = SKB_TRUESIZE(SKB_WITH_OVERHEAD(alloc)) = alloc + SKB_DATA_ALIGN(sizeof sk_buff)
    return Head(label, alloc, alloc + k.sk_buff_aligned)


def napi_alloc_head(k: KernelProfile, length: int) -> Head:
    """The head napi_alloc_skb(napi, length) gives (net/core/skbuff.c:__napi_alloc_skb)."""
    length += k.net_skb_pad + k.build.net_ip_align
    if (
        k.has(NAPI_SMALL_PAGE_FRAG)
        and k.build.page_size == 4096  # NAPI_HAS_SMALL_PAGE_FRAG: 4 KiB pages only
        and length <= skb_with_overhead(k, 1024)
    ):
        return Head(
            "1 KiB slice of the napi page_frag (page_frag_alloc_1k)", 1024, 1024 + k.sk_buff_aligned,
            frag=True,
        )
    small_limit = small_head_cache_size(k) if k.has(SMALL_HEAD_GRO_SIZED) else 1024
    if length <= skb_with_overhead(k, small_limit) or length > skb_with_overhead(
        k, k.build.page_size
    ):
        return kmalloc_reserve(k, length)
    frag = skb_head_align(k, length)  # napi_alloc_frag() + __napi_build_skb()
    return Head(f"napi page_frag ({frag} B)", frag, frag + k.sk_buff_aligned, frag=True)


def skb_from_head(k: KernelProfile, head: Head) -> Skb:
    """An empty skb over ``head``: shinfo at the end, truesize = SKB_TRUESIZE(size - shinfo)."""
    end = head.size - shinfo_size(k)
    return Skb(
        head=head.label,
        head_size=head.size,
        data=0,
        tail=0,
        end=end,
        len=0,
        data_len=0,
        truesize=head.truesize,
    )


def build_skb(k: KernelProfile, frag_size: int, label: str) -> Skb:
    """build_skb(data, frag_size): __build_skb_around() @6.1 / __finalize_skb_around() @6.12.

    end = frag_size - SKB_DATA_ALIGN(sizeof shinfo); truesize = SKB_TRUESIZE(end).
    """
    return skb_from_head(k, Head(label, frag_size, frag_size + k.sk_buff_aligned))


def skb_built(head: str, frag_size: int, shinfo: int, sk_buff_aligned: int, reserve: int,
              length: int, frags: tuple[Frag, ...] = ()) -> Skb:
    """build_skb(data, frag_size) (``head``: what it is built around), skb_reserve(reserve),
    skb_put(length), then skb_add_rx_frag() of each of ``frags``, in one step (a sweep makes
    one skb per length): end = frag_size - shinfo, truesize = frag_size +
    SKB_DATA_ALIGN(sizeof(struct sk_buff)) + each frag's truesize. ``frag_size`` is also the
    allocation's size of a kmalloc'd head (skb_from_head's truesize is the same sum)."""
    end = frag_size - shinfo
    if reserve + length > end:  # the kernel would skb_over_panic()
        raise SimulationError(
            f"skb_put({length}) past end: tail {reserve}, end {end} (skb_over_panic)"
        )
    paged = sum(f.size for f in frags)
    return Skb(head, frag_size, reserve, reserve + length, end, length + paged, paged,
               frag_size + sk_buff_aligned + sum(f.truesize for f in frags), len(frags),
               None, frags)


def skb_reserve(skb: Skb, length: int) -> Skb:
    return skb.but(data=skb.data + length, tail=skb.tail + length)


def skb_put(skb: Skb, length: int) -> Skb:
    if skb.tail + length > skb.end:  # the kernel would skb_over_panic()
        raise SimulationError(
            f"skb_put({length}) past end: tail {skb.tail}, end {skb.end} (skb_over_panic)"
        )
    return skb.but(tail=skb.tail + length, len=skb.len + length)


def skb_add_rx_frag(skb: Skb, frag: Frag) -> Skb:
    return skb.but(
        len=skb.len + frag.size,
        data_len=skb.data_len + frag.size,
        truesize=skb.truesize + frag.truesize,
        nr_frags=skb.nr_frags + 1,
        frags=(*skb.frags, frag),
    )


def skb_coalesce_rx_frag(skb: Skb, size: int, truesize: int) -> Skb:
    last = skb.frags[-1]
    grown = last._replace(size=last.size + size, truesize=last.truesize + truesize)
    return skb.but(
        len=skb.len + size,
        data_len=skb.data_len + size,
        truesize=skb.truesize + truesize,
        frags=(*skb.frags[:-1], grown),
    )


def eth_type_trans(skb: Skb, with_frags: bool = True) -> Skb:
    """net/ethernet/eth.c:eth_type_trans: mac_header = data, then pull ETH_HLEN. ``with_frags``
    False: the result leaves out the frags and frag_list (nr_frags and truesize stay), in the
    same construction: a replay's record keeps none (vnetrx/replay/napi.py)."""
    if skb.tail - skb.data < ETH_HLEN:
        raise SimulationError(f"eth_type_trans with {skb.tail - skb.data} linear bytes "
                              "(< ETH_HLEN)")
    if with_frags:
        return skb_at(skb, skb.data + ETH_HLEN, skb.len - ETH_HLEN, skb.data)
    return new_skb(skb.head, skb.head_size, skb.data + ETH_HLEN, skb.tail, skb.end,
                   skb.len - ETH_HLEN, skb.data_len, skb.truesize, skb.nr_frags, skb.data, (), (),
                   skb.ip_summed, skb.csum_start, skb.csum_offset, skb.gso_size, skb.gso_type,
                   skb.gso_type_names, skb.gso_segs, skb.hash, skb.l4_hash, skb.meta_len)


def skb_reset_mac_header(skb: Skb) -> Skb:
    """skb_reset_mac_header(): mac_header = data."""
    return skb_at(skb, skb.data, skb.len, skb.data)


def skb_at(skb: Skb, data: int, length: int, mac_header: int | None) -> Skb:
    """``skb`` with data, len and mac_header moved, the rest kept: what a pull or a header reset
    changes, in one construction (``_replace`` walks all the fields; a sweep does this for
    every length)."""
    return new_skb(skb.head, skb.head_size, data, skb.tail, skb.end, length, skb.data_len,
                   skb.truesize, skb.nr_frags, mac_header, skb.frags, skb.frag_list, skb.ip_summed,
                   skb.csum_start, skb.csum_offset, skb.gso_size, skb.gso_type, skb.gso_type_names,
                   skb.gso_segs, skb.hash, skb.l4_hash, skb.meta_len)


def skb_partial_csum(skb: Skb, csum_start: int, csum_offset: int) -> Skb:
    """What skb_partial_csum_set sets once its tests pass (net/core/skbuff.c @6.12.117):
    ip_summed = CHECKSUM_PARTIAL, csum_start (from skb->head) and csum_offset; the rest kept,
    in one construction (a replay does it for every frame it decides with NEEDS_CSUM)."""
    return new_skb(skb.head, skb.head_size, skb.data, skb.tail, skb.end, skb.len, skb.data_len,
                   skb.truesize, skb.nr_frags, skb.mac_header, skb.frags, skb.frag_list,
                   _CHECKSUM_PARTIAL, csum_start, csum_offset, skb.gso_size, skb.gso_type,
                   skb.gso_type_names, skb.gso_segs, skb.hash, skb.l4_hash, skb.meta_len)


def skb_set_gso(skb: Skb, gso_size: int, gso_type: int, gso_type_names: tuple[str, ...],
                gso_segs: int) -> Skb:
    """skb_shinfo(skb)->gso_size, gso_type and gso_segs set (virtio_net_hdr_to_skb's GSO
    fields, include/linux/virtio_net.h @6.12.117); the rest kept, in one construction."""
    return new_skb(skb.head, skb.head_size, skb.data, skb.tail, skb.end, skb.len, skb.data_len,
                   skb.truesize, skb.nr_frags, skb.mac_header, skb.frags, skb.frag_list,
                   skb.ip_summed, skb.csum_start, skb.csum_offset, gso_size, gso_type,
                   gso_type_names, gso_segs, skb.hash, skb.l4_hash, skb.meta_len)


def eth_type_trans_of(
    head: str,
    head_size: int,
    data: int,
    tail: int,
    end: int,
    length: int,
    data_len: int,
    truesize: int,
    nr_frags: int,
    frags: tuple[Frag, ...],
    frag_list: tuple[FragListSkb, ...],
) -> Skb:
    """eth_type_trans on an skb given by its fields (receive paths build the skb the stack sees
    in one step, once per frame of a sweep): mac_header = data, then pull ETH_HLEN; the fields
    after frag_list are ``new_skb``'s defaults (no ``*rest``: compiled, the call stays a direct
    C call instead of one through Python's argument parsing)."""
    if tail - data < ETH_HLEN:
        raise SimulationError(f"eth_type_trans with {tail - data} linear bytes (< ETH_HLEN)")
    return new_skb(head, head_size, data + ETH_HLEN, tail, end, length - ETH_HLEN, data_len,
                   truesize, nr_frags, data, frags, frag_list)


def frag_chunks(
    k: KernelProfile, data_len: int, max_page_order: int
) -> tuple[tuple[int, int], ...]:
    """The pages alloc_skb_with_frags() attaches for ``data_len`` bytes: (chunk, page bytes) each.

    Up to 6.5 (net/core/skbuff.c:alloc_skb_with_frags @4.14.5, @6.1.192): npages =
    DIV_ROUND_UP(data_len, PAGE_SIZE); an order is tried only while npages >= 1 << order.
    From 6.6 (09c2c90705bb; @6.6.87, @6.18.3): the order drops while PAGE_ALIGN(remaining) <
    PAGE_SIZE << order. Either way each chunk is min(remaining, PAGE_SIZE << order). An unfragmented
    machine is assumed: every high-order allocation succeeds (docs/kernel/skbuff.md §6.4).
    """
    page = k.build.page_size
    chunks: list[tuple[int, int]] = []
    remaining, order = data_len, max_page_order
    high = k.has(ALLOC_SKB_WITH_FRAGS_HIGH_ORDER)
    while remaining > 0:
        if high:
            while order and -(-remaining // page) * page < page << order:  # PAGE_ALIGN()
                order -= 1
        else:
            while order and -(-remaining // page) < 1 << order:
                order -= 1
        size = page << order
        chunks.append((min(remaining, size), size))
        remaining -= min(remaining, size)
    return tuple(chunks)


def frags_limit(k: KernelProfile, max_page_order: int) -> int:
    """Most data_len alloc_skb_with_frags() accepts before -EMSGSIZE: MAX_SKB_FRAGS pages of the
    largest order it may use (order 0 up to 6.5, ``max_page_order`` from 6.6)."""
    order = max_page_order if k.has(ALLOC_SKB_WITH_FRAGS_HIGH_ORDER) else 0
    return k.build.max_skb_frags * (k.build.page_size << order)


def pskb_expand_head(k: KernelProfile, skb: Skb, nhead: int, ntail: int, owned: bool) -> Skb:
    """net/core/skbuff.c:pskb_expand_head @6.12.117: a new head of end + nhead + ntail bytes
    from kmalloc_reserve (the small-head cache or kmalloc), the data copied, headroom kept
    (plus nhead); ``truesize += new end - old end`` only when the skb has no socket (``owned``
    False: virtio receive; tun's skbs are charged to the tap socket and keep their truesize)."""
    head = kmalloc_reserve(k, skb.end + nhead + ntail)
    end = head.size - shinfo_size(k)
    return skb._replace(
        head=head.label,
        head_size=head.size,
        data=skb.data + nhead,
        tail=skb.tail + nhead,
        end=end,
        mac_header=None if skb.mac_header is None else skb.mac_header + nhead,
        # skb_headers_offset_update(): csum_start follows the data (CHECKSUM_PARTIAL)
        csum_start=None if skb.csum_start is None else skb.csum_start + nhead,
        truesize=skb.truesize if owned else skb.truesize + end - skb.end,
    )


def pskb_may_pull(k: KernelProfile, skb: Skb, length: int, owned: bool) -> Skb | None:
    """include/linux/skbuff.h:pskb_may_pull → net/core/skbuff.c:__pskb_pull_tail @6.12.117:
    make the first ``length`` bytes linear. Nothing to do when they are; None (failure) past
    skb->len; else the head grows when the tail would pass end (pskb_expand_head(skb, 0, eat +
    128)), the bytes are copied out of the frags and the frags shrink from the front (a frag
    eaten whole is released). Pulling into frag_list skbs is not modelled."""
    headlen = skb_headlen(skb)
    if length <= headlen:
        return skb
    if length > skb.len:
        return None
    delta = length - headlen
    eat = skb.tail + delta - skb.end
    if eat > 0:
        skb = pskb_expand_head(k, skb, 0, eat + 128, owned)
    frags, left = list(skb.frags), delta
    if skb.nr_frags and not frags:
        raise SimulationError("pskb_may_pull on an skb planned without its frags")
    while left and frags:
        first = frags[0]
        if first.size <= left:
            left -= first.size
            frags.pop(0)
        else:
            frags[0] = new_frag(first.page, first.offset + left, first.size - left,
                                first.truesize)
            left = 0
    if left:
        raise UnsupportedError(
            f"pulling {delta} header bytes reaches past the head skb's frags into its frag_list: "
            "__pskb_pull_tail's frag_list case is not modelled"
        )
    # tail, data_len, nr_frags and frags move (one construction: a replay pulls the headers of
    # every frame it decides with a NEEDS_CSUM header)
    return new_skb(skb.head, skb.head_size, skb.data, skb.tail + delta, skb.end, skb.len,
                   skb.data_len - delta, skb.truesize, len(frags), skb.mac_header, tuple(frags),
                   skb.frag_list, skb.ip_summed, skb.csum_start, skb.csum_offset, skb.gso_size,
                   skb.gso_type, skb.gso_type_names, skb.gso_segs, skb.hash, skb.l4_hash,
                   skb.meta_len)
