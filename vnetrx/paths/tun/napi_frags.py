"""A write to a tap opened with IFF_NAPI_FRAGS: ``tun_napi_alloc_frags`` and ``napi_frags_skb``
(drivers/net/tun.c, net/core/gro.c @6.18.7; the same since 4.15, when IFF_NAPI_FRAGS came).

The skb is NAPI's own (``napi_get_frags``: ``napi_alloc_skb(napi, GRO_MAX_HEAD)``): the first
iovec segment (what is left of it after the vnet header) becomes its linear part
(``__skb_grow``, which reallocates the head with ``pskb_expand_head`` when its tailroom is too
small), and every further segment a frag of its own from ``netdev_alloc_frag``; truesize grows by
the frags' bytes. ``napi_gro_frags`` then takes the Ethernet header off the front
(``napi_frags_skb``: pulled from frag0 when the linear part is empty) and hands the skb to GRO,
and ``napi_complete`` ends the poll inside the write: every write is a GRO run of its own.
Not modelled: a write that reuses an skb ``napi_reuse_skb`` recycled (after a merge, which a
lone write never makes).
"""

from __future__ import annotations

from vnetrx.errors import InputError
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Frag, Skb
from vnetrx.paths.skbuff import kmalloc_reserve, napi_alloc_head, shinfo_size


def napi_frags_skb(k: KernelProfile, segments: tuple[int, ...], hdr_len: int) -> Skb:
    """The skb GRO gets for one writev of ``segments`` (iovec lengths: the vnet header's
    ``hdr_len`` bytes first, then the Ethernet frame), with the Ethernet header pulled."""
    total = sum(segments)
    frame_len = total - hdr_len
    if frame_len < ETH_HLEN:
        raise InputError(f"an IFF_NAPI_FRAGS write of {frame_len} frame bytes: tun_get_user "
                         f"refuses less than ETH_HLEN ({ETH_HLEN})")
    # copy_from_iter took the vnet header: the iterator stands in the segment it ended in
    rest = list(segments)
    left = hdr_len
    while left and rest:
        taken = min(left, rest[0])
        rest[0] -= taken
        left -= taken
        if not rest[0] and left:
            rest.pop(0)
    if rest and not rest[0] and len(rest) > 1:
        rest.pop(0)
    linear, frags = rest[0], rest[1:]
    # tun_napi_alloc_frags: "it->nr_segs > MAX_SKB_FRAGS + 1" (the header's segment too)
    if len(segments) > k.build.max_skb_frags + 1:
        raise InputError(f"an IFF_NAPI_FRAGS write of {len(segments)} iovec segments: "
                         f"tun_napi_alloc_frags refuses more than MAX_SKB_FRAGS + 1 "
                         f"({k.build.max_skb_frags + 1}) with EMSGSIZE")
    for size in frags:
        if not 0 < size <= k.build.page_size:
            raise InputError(f"an IFF_NAPI_FRAGS segment of {size} bytes: tun_napi_alloc_frags "
                             f"takes 1..PAGE_SIZE ({k.build.page_size}) (EINVAL)")
    # napi_get_frags: napi_alloc_skb(napi, GRO_MAX_HEAD), GRO_MAX_HEAD = MAX_HEADER + 128
    head = napi_alloc_head(k, k.build.max_header + 128)
    shinfo = shinfo_size(k)
    data = k.net_skb_pad + k.build.net_ip_align
    end = head.size - shinfo
    truesize = head.truesize
    label, size = head.label, head.size
    if end - data < linear:
        # __skb_grow → pskb_expand_head(skb, 0, linear - tailroom): the head reallocated by
        # kmalloc_reserve, truesize += its new end - the old (the skb has no socket yet)
        grown = kmalloc_reserve(k, end + linear - (end - data))
        truesize += (grown.size - shinfo) - end
        label, size, end = grown.label, grown.size, grown.size - shinfo
    data_len = frame_len - linear
    truesize += data_len  # "skb->truesize += skb->data_len"
    skb_frags = tuple(Frag("netdev_alloc_frag", 0, s, s) for s in frags)
    # napi_frags_skb: the Ethernet header, from frag0 when nothing is linear, then pulled
    pull = max(0, ETH_HLEN - linear)
    tail = data + linear
    if pull:
        first = skb_frags[0]
        trimmed = first._replace(offset=first.offset + pull, size=first.size - pull)
        skb_frags = (trimmed, *skb_frags[1:]) if first.size > pull else skb_frags[1:]
        tail += pull
        data_len -= pull
    return Skb(head=label, head_size=size, data=data + ETH_HLEN, tail=tail, end=end,
               len=frame_len - ETH_HLEN, data_len=data_len, truesize=truesize,
               nr_frags=len(skb_frags), mac_header=data, frags=skb_frags)
