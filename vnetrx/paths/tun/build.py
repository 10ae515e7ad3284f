"""Mirrors drivers/net/tun.c's build_skb path (from 4.14): tun_can_build_skb's conditions, then
tun_build_skb (copy into current->task_frag, build_skb() around it), and the frag-source what-if
on where that buffer comes from (skb_page_frag_refill)."""

from __future__ import annotations

from vnetrx.kernel.changes import (
    TUN_BUILD_SKB,
    TUN_BUILD_SKB_OWNER,
    TUN_BUILD_SKB_XDP_HEADROOM_LIMIT,
    TUN_XDP,
)
from vnetrx.kernel.constants import (
    INT_MAX,
    SKB_FRAG_PAGE_BYTES,
    TUN_BUILD_XDP_HEADROOM,
    XDP_PACKET_HEADROOM,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer, Cost
from vnetrx.paths.maps import regions
from vnetrx.paths.skbuff import build_skb, shinfo_size, skb_put, skb_reserve
from vnetrx.paths.steps import StepLog
from vnetrx.paths.tun import xdp
from vnetrx.paths.tun.setup import SKBUFF_SRC, SOCK_SRC, SRC, TapResult, TapSetup, tun_rx_pad

FRAG_SOURCES = ("task-frag", "per-queue", "full-page")


def build_limit(k: KernelProfile) -> int:
    """The longest frame tun_can_build_skb() accepts (its size condition, solved for len)."""
    extra = k.value(TUN_BUILD_XDP_HEADROOM)
    room = k.build.page_size - shinfo_size(k) - tun_rx_pad(k) - extra
    return room - room % k.smp_cache_bytes


def tun_can_build_skb(k: KernelProfile, s: TapSetup, length: int, log: StepLog) -> bool:
    """tun_can_build_skb (tun.c @4.14.5 … @7.3.4): every condition must hold."""
    if not k.has(TUN_BUILD_SKB):
        log.add(
            SRC,
            "tun_get_user",
            f"no build_skb path in {k.name} (tun_build_skb arrives in 4.14): tun_alloc_skb",
        )
        return False
    assert s.sndbuf is not None
    extra = k.value(TUN_BUILD_XDP_HEADROOM)
    need = k.skb_data_align(length + tun_rx_pad(k) + extra) + shinfo_size(k)
    checks: list[tuple[str, bool]] = [
        ("a TUN device (only TAP builds)", not s.tun),
        (f"sk_sndbuf {s.sndbuf} is not INT_MAX", s.sndbuf == INT_MAX),
        ("a blocking writer (noblock is false)", not s.blocking),
        ("zerocopy", True),
        (
            f"SKB_DATA_ALIGN(len + TUN_RX_PAD{' + XDP_PACKET_HEADROOM' if extra else ''}) + "
            f"shinfo = {need} > PAGE_SIZE {k.build.page_size} (frames up to "
            f"{build_limit(k)} fit)",
            need <= k.build.page_size,
        ),
        ("IFF_NAPI_FRAGS", True),
    ]
    failed = next((name for name, ok in checks if not ok), None)
    log.add(
        SRC,
        "tun_can_build_skb",
        "every condition holds: tun_build_skb"
        if failed is None
        else f"fails on: {failed}: tun_alloc_skb",
        because=(TUN_BUILD_SKB, TUN_BUILD_SKB_XDP_HEADROOM_LIMIT) if extra else (TUN_BUILD_SKB,),
        tap=not s.tun,
        sk_sndbuf=s.sndbuf,
        noblock=not s.blocking,
        zerocopy=False,
        len=length,
        TUN_RX_PAD=tun_rx_pad(k),
        XDP_PACKET_HEADROOM=extra,
        size=need,
        PAGE_SIZE=k.build.page_size,
        build_limit=build_limit(k),
        napi_frags=False,
    )
    return failed is None


def tun_build_skb(k: KernelProfile, s: TapSetup, length: int, gso: bool,
                  log: StepLog) -> TapResult:
    """tun_build_skb: copy into current->task_frag, run a native XDP program on it (not for a
    GSO header: ``gso``), build_skb() around it."""
    pad = tun_rx_pad(k) + (k.value(XDP_PACKET_HEADROOM) if s.xdp else 0)
    sh = shinfo_size(k)
    buflen = k.skb_data_align(length + pad) + sh
    frag_page = max(k.value(SKB_FRAG_PAGE_BYTES), k.build.page_size)
    log.add(
        SRC,
        "tun_build_skb",
        f"pad = TUN_RX_PAD{' + XDP_PACKET_HEADROOM (a program is attached)' if s.xdp else ''}; "
        "buflen = SKB_DATA_ALIGN(len + pad) + SKB_DATA_ALIGN(sizeof(skb_shared_info)); "
        f"skb_page_frag_refill() takes buflen from current->task_frag (a {frag_page // 1024} KiB "
        "page, offset first aligned to SMP_CACHE_BYTES) and the frame is copied to offset + pad",
        pad=pad,
        buflen=buflen,
        len=length,
        frag_page=frag_page,
    )
    tail = buflen - sh - pad - length
    buffer = Buffer(
        size=buflen,
        page="current->task_frag",
        page_offset=0,
        used=length,
        regions=regions(
            ("headroom", pad, "TUN_RX_PAD" + (" + XDP_PACKET_HEADROOM" if s.xdp else "")),
            ("frame", length, "copied from the write"),
            ("tailroom", tail, "SKB_DATA_ALIGN slack"),
            ("skb_shared_info", sh, ""),
        ),
    )
    run = None
    if s.xdp is not None and gso:
        log.add(SRC, "tun_build_skb", "a GSO header (hdr->gso_type set): native XDP is skipped; "
                "the skb is built with the XDP headroom and the program runs later as generic "
                "XDP", because=(TUN_XDP,))
    elif s.xdp is not None:
        run = xdp.native(k, s, buflen, pad, length, sh, log)
        if run.result != "pass":
            return TapResult("tap", xdp.outcome_of(run), None, None, buffer, (buffer,), None,
                             Cost(allocations=1, bytes_copied=length, frags=0), None, xdp=run)
    if run is not None:  # tun_build_skb: pad = xdp.data - data_hard_start, len = data_end - data
        pad, length = run.headroom or pad, run.len
    skb = build_skb(k, buflen, "current->task_frag page fragment")
    skb = skb_put(skb_reserve(skb, pad), length)
    if run is not None and run.meta_len:  # 6.15+ (0ca23a4d64ce): skb_metadata_set(metasize)
        skb = skb.but(meta_len=run.meta_len)
    owner = k.has(TUN_BUILD_SKB_OWNER)
    log.add(
        SKBUFF_SRC,
        "build_skb",
        "truesize = SKB_TRUESIZE(buflen - shinfo) = buflen + SKB_DATA_ALIGN(sizeof(sk_buff)); "
        "head_frag = 1; skb_reserve(pad), skb_put(len)"
        + ("; skb_set_owner_w() charges it to the tap socket" if owner else ""),
        because=(TUN_BUILD_SKB_OWNER,) if owner else (),
        truesize=skb.truesize,
        headroom=skb.data,
        tailroom=skb.end - skb.tail,
    )
    if s.frag_source is not None:
        frag_source_whatif(k, s.frag_source, buflen, log)
    cost = Cost(allocations=1, bytes_copied=length, frags=0)
    return TapResult("tap", "build_skb", None, None, buffer, (buffer,), skb, cost, None,
                     owned=owner, xdp=run)


def frag_source_whatif(k: KernelProfile, source: str, buflen: int, log: StepLog) -> None:
    """The seed thread's design question: where should tun_build_skb's buffers come from?"""
    frag_page = max(k.value(SKB_FRAG_PAGE_BYTES), k.build.page_size)
    page = k.build.page_size
    if source == "full-page":
        pages_each = -(-buflen // page)
        per_page, memory = 1, pages_each * page
        summary = (
            f"full-page: one {page // 1024} KiB page per packet, {memory} bytes of memory each "
            f"for a {buflen}-byte buffer; the thread measured 1.58 Mpps against 1.95 Mpps for "
            "the page frag ('too much stress on the page allocator'); its truesize is not "
            "known (the variant was never merged and its accounting was not seen)"
        )
    else:
        per_page = frag_page // buflen
        memory = -(-frag_page // per_page)
        where = (
            "current->task_frag: one per writing thread, no lock (0bbd7dad34f8, every release)"
            if source == "task-frag"
            else "a per-queue page_frag as first posted: needs a lock when threads share a "
            "queue (the thread's 'tun: serialize page frag allocation' spinlock patch; no release "
            "has it)"
        )
        summary = (
            f"{source}: {per_page} packets per {frag_page // 1024} KiB fragment page, "
            f"{memory} bytes of memory each against {page} for one page per packet; {where}; "
            "1.95 Mpps (page frag) vs 1.58 Mpps (full page) in the thread"
        )
    known = {} if source == "full-page" else {"truesize": buflen + k.sk_buff_aligned}
    log.add(
        SOCK_SRC,
        "skb_page_frag_refill",
        "what-if " + summary,
        because=(TUN_BUILD_SKB,),
        frag_source=source,
        buflen=buflen,
        fragment_page=frag_page if source != "full-page" else page,
        packets_per_page=per_page,
        bytes_per_packet=memory,
        full_page_bytes_per_packet=-(-buflen // page) * page,
        **known,
    )
    log.note(
        "frag-source what-if: with a page fragment truesize is buflen + SKB_DATA_ALIGN(sizeof "
        "sk_buff) and the rest of the fragment page is not charged (docs/kernel/skbuff.md §3); "
        "how the unmerged full-page variant set truesize was not seen. Mpps figures: netdev "
        "thread 2017-08-16, Jason Wang, on 'tap: use build_skb() for small packet'"
    )
