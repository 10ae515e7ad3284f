"""Mirrors drivers/net/tun.c's copy path, taken whenever tun_can_build_skb fails: tun_get_user's
choice of the linear part, tun_alloc_skb, sock_alloc_send_pskb (net/core/sock.c) and
alloc_skb_with_frags (net/core/skbuff.c), then the copy of the frame. ``tun_alloc_skb`` returns
an ``Alloc`` record; the narration below reads it."""

from __future__ import annotations

from typing import Final

from vnetrx.kernel.changes import (
    ALLOC_SKB_WITH_FRAGS_HIGH_ORDER,
    SKB_SMALL_HEAD_CACHE,
    TUN_ALLOC_SKB_BIG_PAGED,
)
from vnetrx.kernel.constants import TUN_ALLOC_MAX_PAGE_ORDER
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer, Frag, Skb
from vnetrx.paths.maps import regions
from vnetrx.paths.reason import Reason
from vnetrx.paths.skbuff import Head, frag_chunks, frags_limit, kmalloc_reserve, skb_built
from vnetrx.paths.steps import StepLog
from vnetrx.paths.tun.setup import SKBUFF_SRC, SOCK_SRC, SRC, TapConfig
from vnetrx.records import NamedTuple
from vnetrx.values import Value


class AllocRules(NamedTuple):
    """What tun_alloc_skb and alloc_skb_with_frags read of one kernel, resolved once
    (``alloc_rules``; a version-gated condition of theirs adds a field here)."""

    big_paged: bool  # TUN_ALLOC_SKB_BIG_PAGED
    max_order: int  # TUN_ALLOC_MAX_PAGE_ORDER: PAGE_ALLOC_COSTLY_ORDER from 6.6
    frags_limit: int  # the most data_len alloc_skb_with_frags takes (-EMSGSIZE past it)


def alloc_rules(k: KernelProfile) -> AllocRules:
    max_order = k.value(TUN_ALLOC_MAX_PAGE_ORDER)
    return AllocRules(big_paged=k.has(TUN_ALLOC_SKB_BIG_PAGED), max_order=max_order,
                      frags_limit=frags_limit(k, max_order))


class Linear(Reason):
    """How tun_alloc_skb settles the linear part."""

    UNDER_PAGE = "under_page"  # prepad + len < PAGE_SIZE: all linear
    ALL = "all"  # linear == 0 (before 6.6's big-paged change): all linear
    SPLIT = "split"  # the linear part kept, the rest in page frags


class Alloc(Value):
    """tun_get_user's linear choice, tun_alloc_skb, sock_alloc_send_pskb and
    alloc_skb_with_frags: the head, the page frags, and the skb filled by the copy."""

    __slots__ = ("big_paged", "chunks", "copylen", "get_user_linear", "hdr_len", "head",
                 "linear", "linear_why", "max_order", "noblock", "prepad", "skb", "sndbuf")
    _names = ("copylen", "hdr_len", "get_user_linear", "big_paged", "prepad", "linear",
              "linear_why", "max_order", "head", "chunks", "sndbuf", "noblock", "skb")

    def __init__(self, copylen: int, hdr_len: int, get_user_linear: int, big_paged: bool,
                 prepad: int, linear: int, linear_why: Linear, max_order: int, head: Head,
                 chunks: tuple[tuple[int, int], ...], sndbuf: int, noblock: bool,
                 skb: Skb | None) -> None:
        self.copylen: Final = copylen  # the frame bytes
        self.hdr_len: Final = hdr_len  # the vnet header's hdr_len after the NEEDS_CSUM fix-up
        # min(hdr_len, good_linear) (or the big-paged fallback)
        self.get_user_linear: Final = get_user_linear
        self.big_paged: Final = big_paged  # TUN_ALLOC_SKB_BIG_PAGED
        self.prepad: Final = prepad  # tun->align
        self.linear: Final = linear  # what tun_alloc_skb keeps linear
        self.linear_why: Final = linear_why
        self.max_order: Final = max_order  # the frag pages' highest order
        self.head: Final = head
        self.chunks: Final = chunks  # (bytes, page size) per frag page
        self.sndbuf: Final = sndbuf
        self.noblock: Final = noblock
        # None: more than MAX_SKB_FRAGS pages needed (-EMSGSIZE)
        self.skb: Final = skb

    def _values(self) -> tuple[object, ...]:
        return (self.copylen, self.hdr_len, self.get_user_linear, self.big_paged, self.prepad,
                self.linear, self.linear_why, self.max_order, self.head, self.chunks,
                self.sndbuf, self.noblock, self.skb)

    @property
    def data_len(self) -> int:
        return self.copylen - self.linear


def tun_alloc_skb(c: TapConfig, length: int, hdr_len: int) -> Alloc:
    """tun_get_user's linear choice, tun_alloc_skb, sock_alloc_send_pskb, alloc_skb_with_frags."""
    k, s = c.profile, c.setup
    assert s.sndbuf is not None
    r = c.alloc
    prepad, linear_max, max_order = c.align, c.good_linear, r.max_order
    # tun_get_user: copylen = len; linear = min(hdr_len, good_linear)
    first = min(hdr_len, linear_max)
    if r.big_paged and first == 0:
        first = min(linear_max, length)
    limit = k.build.max_skb_frags * (c.page_size << max_order)
    linear, why = first, Linear.SPLIT
    if prepad + length < c.page_size:
        linear, why = length, Linear.UNDER_PAGE
    elif not r.big_paged and first == 0:
        linear, why = length, Linear.ALL
    elif r.big_paged and length - first > limit:
        linear = length - limit
    data_len = length - linear
    head = kmalloc_reserve(k, prepad + linear)
    chunks = frag_chunks(k, data_len, max_order)
    skb = None
    if data_len <= r.frags_limit:
        frags = tuple(Frag(f"frag page {index}", 0, size, page)
                      for index, (size, page) in enumerate(chunks))
        skb = skb_built(head.label, head.size, c.shinfo, c.sk_buff_aligned, prepad, linear, frags)
    return Alloc(length, hdr_len, first, r.big_paged, prepad, linear, why, max_order, head,
                 chunks, s.sndbuf, not s.blocking, skb)


def alloc_maps(a: Alloc) -> tuple[Buffer, ...]:
    """The head and each frag page, as maps."""
    assert a.skb is not None
    head = Buffer(
        size=a.head.size,
        page=a.head.label,
        page_offset=0,
        used=a.linear,
        regions=regions(
            ("headroom", a.prepad, "prepad = tun->align"),
            ("frame", a.linear, "copied: the linear part"),
            ("tailroom", a.skb.end - a.skb.tail, ""),
            ("skb_shared_info", a.head.size - a.skb.end, ""),
        ),
    )
    pages = tuple(
        Buffer(
            size=page,
            page=f"frag page {index}",
            page_offset=0,
            used=size,
            regions=regions(("frame", size, "frag: copied"), ("unused", page - size, "")),
        )
        for index, (size, page) in enumerate(a.chunks)
    )
    return (head, *pages)


# --- narration -----------------------------------------------------------------------------


def narrate_alloc(k: KernelProfile, a: Alloc, log: StepLog, zerocopy: bool = False) -> None:
    """The copy path's steps, from tun_get_user's linear choice to the filled skb;
    ``zerocopy``: the head of a zerocopy write (its linear choice is narrated before, its
    frags after)."""
    if not zerocopy:
        _narrate_linear(a, log)
    _narrate_head(k, a, log, zerocopy)


def _narrate_linear(a: Alloc, log: StepLog) -> None:
    log.add(
        SRC,
        "tun_get_user",
        "copylen = len; linear = min(hdr_len, good_linear)"
        + ("; linear == 0 → min(good_linear, copylen)" if a.big_paged else ""),
        because=(TUN_ALLOC_SKB_BIG_PAGED,) if a.big_paged else (),
        copylen=a.copylen,
        hdr_len=a.hdr_len,
        linear=a.get_user_linear,
    )


def _narrate_head(k: KernelProfile, a: Alloc, log: StepLog, zerocopy: bool) -> None:
    log.add(
        SRC,
        "tun_alloc_skb",
        (
            "prepad + len < PAGE_SIZE: linear = len (no paged part)"
            if a.linear_why is Linear.UNDER_PAGE
            else "linear == 0: linear = len (a fully linear skb)"
            if a.linear == a.copylen
            else "linear part kept; the rest goes to page frags"
        ),
        because=(TUN_ALLOC_SKB_BIG_PAGED,) if a.big_paged else (),
        prepad=a.prepad,
        len=a.copylen,
        linear=a.linear,
        data_len=a.data_len,
        max_page_order=a.max_order,
    )
    high = k.has(ALLOC_SKB_WITH_FRAGS_HIGH_ORDER)
    log.add(
        SOCK_SRC,
        "sock_alloc_send_pskb",
        f"sk_wmem_alloc 0 < sk_sndbuf {a.sndbuf}: no wait"
        + ("" if a.noblock else " (a blocking writer would sleep here once it is full)")
        + "; alloc_skb_with_frags(header_len = prepad + linear, data_len): the head from "
        f"{a.head.label}, {len(a.chunks)} page frag(s)",
        because=tuple(
            c
            for c, on in ((SKB_SMALL_HEAD_CACHE, True), (ALLOC_SKB_WITH_FRAGS_HIGH_ORDER, high))
            if on and k.has(c)
        ),
        sk_sndbuf=a.sndbuf,
        header_len=a.prepad + a.linear,
        head=a.head.label,
        head_size=a.head.size,
        data_len=a.data_len,
        frag_pages=" + ".join(str(page) for _, page in a.chunks) or "none",
    )
    if a.skb is None:
        return
    log.add(
        SKBUFF_SRC,
        "alloc_skb_with_frags",
        "truesize = head allocation + SKB_DATA_ALIGN(sizeof(sk_buff)) + every frag page; "
        "skb_set_owner_w() charges it to the tap socket; skb_reserve(prepad), skb_put(linear), "
        + ("zerocopy_sg_from_iter() fills it" if zerocopy else
           "skb_copy_datagram_from_iter() copies the frame"),
        truesize=a.skb.truesize,
        headlen=a.skb.headlen,
        data_len=a.skb.data_len,
        nr_frags=a.skb.nr_frags,
    )
