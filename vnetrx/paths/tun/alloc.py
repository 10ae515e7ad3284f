"""Mirrors drivers/net/tun.c's copy path, taken whenever tun_can_build_skb fails: tun_get_user's
choice of the linear part, tun_alloc_skb, sock_alloc_send_pskb (net/core/sock.c) and
alloc_skb_with_frags (net/core/skbuff.c), then the copy of the frame."""

from __future__ import annotations

from vnetrx.kernel.changes import (
    ALLOC_SKB_WITH_FRAGS_HIGH_ORDER,
    SKB_SMALL_HEAD_CACHE,
    TUN_ALLOC_SKB_BIG_PAGED,
)
from vnetrx.kernel.constants import TUN_ALLOC_MAX_PAGE_ORDER
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer, Cost, Frag, Skb
from vnetrx.paths.maps import regions
from vnetrx.paths.skbuff import (
    Head,
    frag_chunks,
    frags_limit,
    kmalloc_reserve,
    skb_add_rx_frag,
    skb_from_head,
    skb_put,
    skb_reserve,
)
from vnetrx.paths.steps import StepLog
from vnetrx.paths.tun.setup import SKBUFF_SRC, SOCK_SRC, SRC, TapResult, TapSetup, error


def tun_alloc_skb(
    k: KernelProfile,
    s: TapSetup,
    length: int,
    hdr_len: int,
    prepad: int,
    linear_max: int,
    noblock: bool,
    log: StepLog,
) -> TapResult:
    """tun_get_user's linear choice, tun_alloc_skb, sock_alloc_send_pskb, alloc_skb_with_frags."""
    assert s.sndbuf is not None
    big_paged = k.has(TUN_ALLOC_SKB_BIG_PAGED)
    linear = _get_user_linear(length, hdr_len, linear_max, big_paged, log)
    max_order = k.value(TUN_ALLOC_MAX_PAGE_ORDER)  # PAGE_ALLOC_COSTLY_ORDER from 6.6
    linear = _alloc_skb_linear(k, length, prepad, linear, max_order, big_paged, log)
    data_len = length - linear
    head = kmalloc_reserve(k, prepad + linear)
    chunks = frag_chunks(k, data_len, max_order)
    _sock_alloc_send_pskb(k, s.sndbuf, prepad + linear, data_len, head, chunks, noblock, log)
    if data_len > frags_limit(k, max_order):
        return error(f"data_len {data_len} needs more than MAX_SKB_FRAGS pages", "EMSGSIZE")
    skb = _alloc_skb_with_frags(k, head, prepad, linear, chunks, log)
    head_buffer = Buffer(
        size=head.size,
        page=head.label,
        page_offset=0,
        used=linear,
        regions=regions(
            ("headroom", prepad, "prepad = tun->align"),
            ("frame", linear, "copied: the linear part"),
            ("tailroom", skb.end - skb.tail, ""),
            ("skb_shared_info", head.size - skb.end, ""),
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
        for index, (size, page) in enumerate(chunks)
    )
    cost = Cost(allocations=2 + len(chunks), bytes_copied=length, frags=len(chunks))
    return TapResult(
        "tap", "alloc_skb", None, None, head_buffer, (head_buffer, *pages), skb, cost, None
    )


def _get_user_linear(
    length: int, hdr_len: int, linear_max: int, big_paged: bool, log: StepLog
) -> int:
    """tun_get_user: copylen = len; linear = min(hdr_len, good_linear)."""
    linear = min(hdr_len, linear_max)
    if big_paged and linear == 0:
        linear = min(linear_max, length)
    log.add(
        SRC,
        "tun_get_user",
        "copylen = len; linear = min(hdr_len, good_linear)"
        + ("; linear == 0 → min(good_linear, copylen)" if big_paged else ""),
        because=(TUN_ALLOC_SKB_BIG_PAGED,) if big_paged else (),
        copylen=length,
        hdr_len=hdr_len,
        linear=linear,
    )
    return linear


def _alloc_skb_linear(
    k: KernelProfile,
    length: int,
    prepad: int,
    linear: int,
    max_order: int,
    big_paged: bool,
    log: StepLog,
) -> int:
    """tun_alloc_skb: how much of the frame stays linear; the rest goes to page frags."""
    limit = k.build.max_skb_frags * (k.build.page_size << max_order)
    under_page = prepad + length < k.build.page_size
    if under_page or (not big_paged and linear == 0):
        linear = length
    elif big_paged and length - linear > limit:
        linear = length - limit
    log.add(
        SRC,
        "tun_alloc_skb",
        (
            "prepad + len < PAGE_SIZE: linear = len (no paged part)"
            if under_page
            else "linear == 0: linear = len (a fully linear skb)"
            if linear == length
            else "linear part kept; the rest goes to page frags"
        ),
        because=(TUN_ALLOC_SKB_BIG_PAGED,) if big_paged else (),
        prepad=prepad,
        len=length,
        linear=linear,
        data_len=length - linear,
        max_page_order=max_order,
    )
    return linear


def _sock_alloc_send_pskb(
    k: KernelProfile,
    sndbuf: int,
    header_len: int,
    data_len: int,
    head: Head,
    chunks: tuple[tuple[int, int], ...],
    noblock: bool,
    log: StepLog,
) -> None:
    """sock_alloc_send_pskb: the sndbuf check, then alloc_skb_with_frags' head and pages."""
    high = k.has(ALLOC_SKB_WITH_FRAGS_HIGH_ORDER)
    log.add(
        SOCK_SRC,
        "sock_alloc_send_pskb",
        f"sk_wmem_alloc 0 < sk_sndbuf {sndbuf}: no wait"
        + ("" if noblock else " (a blocking writer would sleep here once it is full)")
        + "; alloc_skb_with_frags(header_len = prepad + linear, data_len): the head from "
        f"{head.label}, {len(chunks)} page frag(s)",
        because=tuple(
            c
            for c, on in ((SKB_SMALL_HEAD_CACHE, True), (ALLOC_SKB_WITH_FRAGS_HIGH_ORDER, high))
            if on and k.has(c)
        ),
        sk_sndbuf=sndbuf,
        header_len=header_len,
        head=head.label,
        head_size=head.size,
        data_len=data_len,
        frag_pages=" + ".join(str(page) for _, page in chunks) or "none",
    )


def _alloc_skb_with_frags(
    k: KernelProfile,
    head: Head,
    prepad: int,
    linear: int,
    chunks: tuple[tuple[int, int], ...],
    log: StepLog,
) -> Skb:
    """alloc_skb_with_frags' skb, reserved, put and filled by skb_copy_datagram_from_iter."""
    skb = skb_put(skb_reserve(skb_from_head(k, head), prepad), linear)
    for index, (size, page) in enumerate(chunks):
        skb = skb_add_rx_frag(skb, Frag(f"frag page {index}", 0, size, page))
    log.add(
        SKBUFF_SRC,
        "alloc_skb_with_frags",
        "truesize = head allocation + SKB_DATA_ALIGN(sizeof(sk_buff)) + every frag page; "
        "skb_set_owner_w() charges it to the tap socket; skb_reserve(prepad), skb_put(linear), "
        "skb_copy_datagram_from_iter() copies the frame",
        truesize=skb.truesize,
        headlen=skb.headlen,
        data_len=skb.data_len,
        nr_frags=skb.nr_frags,
    )
    return skb
