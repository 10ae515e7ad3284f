"""Mirrors drivers/net/tun.c's build_skb path (from 4.14): tun_can_build_skb's conditions, then
tun_build_skb (copy into current->task_frag, build_skb() around it), and the frag-source what-if
on where that buffer comes from (skb_page_frag_refill). Each stage returns a record
(``CanBuild``, ``Built``, ``FragSourceWhatIf``); the narration below reads it."""

from __future__ import annotations

from functools import cache
from typing import Final

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
from vnetrx.model import Buffer, Skb
from vnetrx.paths.maps import regions
from vnetrx.paths.reason import Reason
from vnetrx.paths.skbuff import shinfo_size, skb_built
from vnetrx.paths.steps import StepLog
from vnetrx.paths.tun import xdp
from vnetrx.paths.tun.setup import SKBUFF_SRC, SOCK_SRC, SRC, TapConfig, TapSetup, tun_rx_pad
from vnetrx.records import NamedTuple
from vnetrx.values import Value

FRAG_SOURCES: Final = ("task-frag", "per-queue", "full-page")


class BuildRules(NamedTuple):
    """What tun_can_build_skb and tun_build_skb read of one kernel and device, resolved once
    (``build_rules``; a version-gated condition of theirs adds a field here)."""

    path: bool  # tun_build_skb exists (TUN_BUILD_SKB, 4.14)
    extra: int  # XDP_PACKET_HEADROOM tun_can_build_skb counts (TUN_BUILD_XDP_HEADROOM)
    limit: int  # the longest frame tun_can_build_skb accepts
    pad: int  # tun_build_skb's pad: TUN_RX_PAD (+ XDP_PACKET_HEADROOM with a program)
    owner: bool  # tun_build_skb charges the skb to the tap socket (TUN_BUILD_SKB_OWNER)


def build_rules(k: KernelProfile, s: TapSetup) -> BuildRules:
    return BuildRules(
        path=k.has(TUN_BUILD_SKB),
        extra=k.value(TUN_BUILD_XDP_HEADROOM),
        limit=build_limit(k),
        pad=tun_rx_pad(k) + (k.value(XDP_PACKET_HEADROOM) if s.xdp else 0),
        owner=k.has(TUN_BUILD_SKB_OWNER),
    )


@cache
def build_limit(k: KernelProfile) -> int:
    """The longest frame tun_can_build_skb() accepts (its size condition, solved for len)."""
    extra = k.value(TUN_BUILD_XDP_HEADROOM)
    room = k.build.page_size - shinfo_size(k) - tun_rx_pad(k) - extra
    return room - room % k.smp_cache_bytes


def frag_page_size(k: KernelProfile) -> int:
    """The page skb_page_frag_refill() carves current->task_frag from: SKB_FRAG_PAGE_ORDER's
    32 KiB, or one page where that is larger."""
    return max(k.value(SKB_FRAG_PAGE_BYTES), k.build.page_size)


def data_align(c: TapConfig, x: int) -> int:
    """SKB_DATA_ALIGN(x) with the device's SMP_CACHE_BYTES (here, not KernelProfile's: this
    runs for every length of a sweep, compiled)."""
    return -(-x // c.cache_bytes) * c.cache_bytes


# --- tun_can_build_skb ---------------------------------------------------------------------


class CantBuild(Reason):
    """The first condition of tun_can_build_skb that fails: the write goes to tun_alloc_skb."""

    NO_BUILD_PATH = "no_build_path"  # before 4.14 there is no tun_build_skb
    TUN = "tun"  # only TAP devices build
    SNDBUF = "sndbuf"  # TUNSETSNDBUF made sk_sndbuf finite
    BLOCKING = "blocking"  # noblock is false
    ZEROCOPY = "zerocopy"  # vhost-net's zerocopy sendmsg: the guest's pages become frags
    TOO_BIG = "too_big"  # the buffer would not fit one page


class CanBuild(Value):
    """tun_can_build_skb's answer and the values that decided it."""

    __slots__ = ("failed", "size")
    _names = ("failed", "size")

    def __init__(self, failed: CantBuild | None, size: int) -> None:
        self.failed: Final = failed  # None: every condition holds, tun_build_skb
        self.size: Final = size  # SKB_DATA_ALIGN(len + TUN_RX_PAD + extra) + shinfo (0: no path)

    def _values(self) -> tuple[object, ...]:
        return (self.failed, self.size)


def tun_can_build_skb(c: TapConfig, length: int, zerocopy: bool = False) -> CanBuild:
    """tun_can_build_skb (tun.c @4.14.5 … @7.3.4): every condition must hold, in this order;
    zerocopy (only vhost-net's sendmsg with a ubuf) and IFF_NAPI_FRAGS are never set on a
    write(2)."""
    if not c.build.path:
        return CanBuild(CantBuild.NO_BUILD_PATH, 0)
    s = c.setup
    need = data_align(c, length + c.rx_pad + c.build.extra) + c.shinfo
    failed = (CantBuild.TUN if s.tun else
              CantBuild.SNDBUF if s.sndbuf != INT_MAX else
              CantBuild.BLOCKING if s.blocking else
              CantBuild.ZEROCOPY if zerocopy else
              CantBuild.TOO_BIG if need > c.page_size else None)
    return CanBuild(failed, need)


# --- tun_build_skb -------------------------------------------------------------------------


class Built(Value):
    """tun_build_skb: the page-fragment buffer, a native XDP program's run on it, the skb."""

    __slots__ = ("buflen", "gso_skips_xdp", "length", "native", "skb")
    _names = ("buflen", "length", "gso_skips_xdp", "native", "skb")

    def __init__(self, buflen: int, length: int, gso_skips_xdp: bool,
                 native: xdp.Native | None, skb: Skb | None) -> None:
        # SKB_DATA_ALIGN(len + pad) + SKB_DATA_ALIGN(sizeof(skb_shared_info))
        self.buflen: Final = buflen
        self.length: Final = length  # the frame bytes copied into the buffer
        self.gso_skips_xdp: Final = gso_skips_xdp  # a GSO header: generic XDP later
        self.native: Final = native  # the program's run on the buffer
        self.skb: Final = skb  # None: the program kept the frame (no skb is built)

    def _values(self) -> tuple[object, ...]:
        return (self.buflen, self.length, self.gso_skips_xdp, self.native, self.skb)


def tun_build_skb(c: TapConfig, length: int, gso: bool) -> Built:
    """tun_build_skb: copy into current->task_frag, run a native XDP program on it (not for a
    GSO header: ``gso``), build_skb() around it."""
    pad = c.build.pad
    buflen = data_align(c, length + pad) + c.shinfo
    native = None
    data, put = pad, length
    if c.setup.xdp is not None and not gso:
        native = xdp.native(c, buflen, pad, length)
        if native.run.result != "pass":
            return Built(buflen, length, False, native, None)
        # tun_build_skb: pad = xdp.data - data_hard_start, len = data_end - data
        data, put = native.run.headroom or pad, native.run.len
    skb = skb_built("current->task_frag page fragment", buflen, c.shinfo, c.sk_buff_aligned,
                    data, put)
    if native is not None and native.run.meta_len:  # 6.15+ (0ca23a4d64ce): skb_metadata_set
        skb = skb.but(meta_len=native.run.meta_len)
    return Built(buflen, length, c.setup.xdp is not None and gso, native, skb)


def build_map(c: TapConfig, b: Built) -> Buffer:
    """The page-fragment buffer tun_build_skb fills."""
    pad = c.build.pad
    return Buffer(
        size=b.buflen,
        page="current->task_frag",
        page_offset=0,
        used=b.length,
        regions=regions(
            ("headroom", pad, "TUN_RX_PAD" + (" + XDP_PACKET_HEADROOM" if c.setup.xdp else "")),
            ("frame", b.length, "copied from the write"),
            ("tailroom", b.buflen - c.shinfo - pad - b.length, "SKB_DATA_ALIGN slack"),
            ("skb_shared_info", c.shinfo, ""),
        ),
    )


# --- the seed thread's frag-source what-if ---------------------------------------------------


class FragSourceWhatIf(NamedTuple):
    """Where tun_build_skb's buffers could come from, and what each source costs per packet."""

    source: str  # one of FRAG_SOURCES
    buflen: int
    page_size: int  # PAGE_SIZE
    fragment_page: int  # the page carved (one page per packet for full-page)
    packets_per_page: int
    bytes_per_packet: int
    full_page_bytes_per_packet: int
    truesize: int | None  # None: how the unmerged full-page variant set it was not seen


def frag_source_whatif(k: KernelProfile, source: str, buflen: int) -> FragSourceWhatIf:
    """The seed thread's design question: where should tun_build_skb's buffers come from?"""
    page = k.build.page_size
    full_page = -(-buflen // page) * page
    if source == "full-page":
        return FragSourceWhatIf(source, buflen, page, page, 1, full_page, full_page, None)
    frag_page = frag_page_size(k)
    per_page = frag_page // buflen
    return FragSourceWhatIf(source, buflen, page, frag_page, per_page, -(-frag_page // per_page),
                            full_page, buflen + k.sk_buff_aligned)


# --- narration -----------------------------------------------------------------------------


def narrate_can_build(c: TapConfig, length: int, can: CanBuild, log: StepLog) -> None:
    """tun_can_build_skb's step: the conditions, and the first that fails."""
    k, s = c.profile, c.setup
    if can.failed is CantBuild.NO_BUILD_PATH:
        log.add(
            SRC,
            "tun_get_user",
            f"no build_skb path in {k.name} (tun_build_skb arrives in 4.14): tun_alloc_skb",
        )
        return
    failed = {
        CantBuild.TUN: "a TUN device (only TAP builds)",
        CantBuild.SNDBUF: f"sk_sndbuf {s.sndbuf} is not INT_MAX",
        CantBuild.BLOCKING: "a blocking writer (noblock is false)",
        CantBuild.ZEROCOPY: "zerocopy (the guest's pages are pinned, not copied)",
        CantBuild.TOO_BIG: (
            f"SKB_DATA_ALIGN(len + TUN_RX_PAD{' + XDP_PACKET_HEADROOM' if c.build.extra else ''})"
            f" + shinfo = {can.size} > PAGE_SIZE {c.page_size} (frames up to "
            f"{c.build.limit} fit)"
        ),
    }.get(can.failed) if can.failed is not None else None
    log.add(
        SRC,
        "tun_can_build_skb",
        "every condition holds: tun_build_skb" if failed is None
        else f"fails on: {failed}: tun_alloc_skb",
        because=(TUN_BUILD_SKB, TUN_BUILD_SKB_XDP_HEADROOM_LIMIT) if c.build.extra
        else (TUN_BUILD_SKB,),
        tap=not s.tun,
        sk_sndbuf=s.sndbuf,
        noblock=not s.blocking,
        zerocopy=can.failed is CantBuild.ZEROCOPY,
        len=length,
        TUN_RX_PAD=c.rx_pad,
        XDP_PACKET_HEADROOM=c.build.extra,
        size=can.size,
        PAGE_SIZE=c.page_size,
        build_limit=c.build.limit,
        napi_frags=False,
    )


def narrate_build(c: TapConfig, b: Built, log: StepLog) -> None:
    """tun_build_skb's steps: the buffer, a native program's run, build_skb, the what-if."""
    k, s = c.profile, c.setup
    frag_page = frag_page_size(k)
    log.add(
        SRC,
        "tun_build_skb",
        f"pad = TUN_RX_PAD{' + XDP_PACKET_HEADROOM (a program is attached)' if s.xdp else ''}; "
        "buflen = SKB_DATA_ALIGN(len + pad) + SKB_DATA_ALIGN(sizeof(skb_shared_info)); "
        f"skb_page_frag_refill() takes buflen from current->task_frag (a {frag_page // 1024} KiB "
        "page, offset first aligned to SMP_CACHE_BYTES) and the frame is copied to offset + pad",
        pad=c.build.pad,
        buflen=b.buflen,
        len=b.length,
        frag_page=frag_page,
    )
    if b.gso_skips_xdp:
        log.add(SRC, "tun_build_skb", "a GSO header (hdr->gso_type set): native XDP is skipped; "
                "the skb is built with the XDP headroom and the program runs later as generic "
                "XDP", because=(TUN_XDP,))
    elif b.native is not None:
        xdp.narrate_native(s, b.native, log)
    if b.skb is None:
        return
    log.add(
        SKBUFF_SRC,
        "build_skb",
        "truesize = SKB_TRUESIZE(buflen - shinfo) = buflen + SKB_DATA_ALIGN(sizeof(sk_buff)); "
        "head_frag = 1; skb_reserve(pad), skb_put(len)"
        + ("; skb_set_owner_w() charges it to the tap socket" if c.build.owner else ""),
        because=(TUN_BUILD_SKB_OWNER,) if c.build.owner else (),
        truesize=b.skb.truesize,
        headroom=b.skb.data,
        tailroom=b.skb.end - b.skb.tail,
    )
    if s.frag_source is not None:
        narrate_frag_source(frag_source_whatif(k, s.frag_source, b.buflen), log)


def narrate_frag_source(w: FragSourceWhatIf, log: StepLog) -> None:
    """The what-if's step and note."""
    if w.source == "full-page":
        summary = (
            f"full-page: one {w.fragment_page // 1024} KiB page per packet, "
            f"{w.bytes_per_packet} bytes of memory each for a {w.buflen}-byte buffer; the "
            "thread measured 1.58 Mpps against 1.95 Mpps for the page frag ('too much stress "
            "on the page allocator'); its truesize is not known (the variant was never merged "
            "and its accounting was not seen)"
        )
    else:
        where = (
            "current->task_frag: one per writing thread, no lock (0bbd7dad34f8, every release)"
            if w.source == "task-frag"
            else "a per-queue page_frag as first posted: needs a lock when threads share a "
            "queue (the thread's 'tun: serialize page frag allocation' spinlock patch; no release "
            "has it)"
        )
        summary = (
            f"{w.source}: {w.packets_per_page} packets per {w.fragment_page // 1024} KiB "
            f"fragment page, {w.bytes_per_packet} bytes of memory each against {w.page_size} "
            f"for one page per packet; {where}; "
            "1.95 Mpps (page frag) vs 1.58 Mpps (full page) in the thread"
        )
    known = {} if w.truesize is None else {"truesize": w.truesize}
    log.add(
        SOCK_SRC,
        "skb_page_frag_refill",
        "what-if " + summary,
        because=(TUN_BUILD_SKB,),
        frag_source=w.source,
        buflen=w.buflen,
        fragment_page=w.fragment_page,
        packets_per_page=w.packets_per_page,
        bytes_per_packet=w.bytes_per_packet,
        full_page_bytes_per_packet=w.full_page_bytes_per_packet,
        **known,
    )
    log.note(
        "frag-source what-if: with a page fragment truesize is buflen + SKB_DATA_ALIGN(sizeof "
        "sk_buff) and the rest of the fragment page is not charged (docs/kernel/skbuff.md §3); "
        "how the unmerged full-page variant set truesize was not seen. Mpps figures: netdev "
        "thread 2017-08-16, Jason Wang, on 'tap: use build_skb() for small packet'"
    )
