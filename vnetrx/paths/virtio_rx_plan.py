"""The arithmetic of drivers/net/virtio_net.c's receive path, without narration.

``config()`` computes what depends only on the kernel and the negotiated setup (buffer sizes, the
napi copy head, which checks exist) once; ``plan()`` then decides one frame with a few
comparisons and additions and returns plain numbers. The narrated engine (``virtio_net.py``)
reads every number it prints from a plan, and ``vnetrx sweep`` uses plans alone, so the kernel's
decisions are written once. Sources: ../shared/reference/virtio-rx.md §5-§9, appendix A; the
citations are on the narrated steps.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, replace
from itertools import islice
from typing import NamedTuple

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.changes import (
    BIG_BUILD_SKB_GIVE_PAGES,
    BIG_RECV_LEN_CHECK,
    PADDED_VNET_HDR_V1_HASH,
    PAGE_TO_SKB_BUILD_SKB,
    SMALL_USED_LEN_CHECK,
    VIRTIO_RX_PAGE_POOL,
    VNET_HDR_UDP_TUNNEL,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths.skbuff import ETH_HLEN, Head, kmalloc_reserve, napi_alloc_head, shinfo_size

PostedBuffer = bufs.PostedBuffer
MAX_FRAME_LEN = 65535


@dataclass(frozen=True)
class VirtioRxSetup:
    """What the device negotiated and what arrives. ``None`` fields are derived by ``resolve``."""

    frame_len: int  # bytes after the virtio-net header (Ethernet header included)
    mergeable: bool = False  # VIRTIO_NET_F_MRG_RXBUF
    guest_gso: bool = False  # any of GUEST_TSO4/TSO6/ECN/UFO (→ big mode without MRG_RXBUF)
    mtu: int = 1500  # with VIRTIO_NET_F_MTU when not 1500
    hdr_len: int | None = None  # vi->hdr_len; None → 12 (VIRTIO_F_VERSION_1)
    buf_len: int | None = None  # mergeable buffer length; None → get_mergeable_buf_len()
    ewma: int | None = None  # rq->mrg_avg_pkt_len; None → frame_len (a steady stream of it)
    ring_size: int = 256
    buffer_index: int = 0  # which posted buffer (0 = the first of a fresh page) the frame lands in
    # The posted buffers the device fills, in order, when a ring model (replay) knows them;
    # empty: carve them from a fresh page as add_recvbuf_* would.
    buffers: tuple[bufs.PostedBuffer, ...] = ()


def resolve(k: KernelProfile, s: VirtioRxSetup) -> VirtioRxSetup:
    """Check the request against the kernel and fill in what the features imply."""
    if not 1 <= s.frame_len <= MAX_FRAME_LEN:
        raise InputError(f"frame length {s.frame_len} out of range (valid: 1..{MAX_FRAME_LEN})")
    if not 68 <= s.mtu <= MAX_FRAME_LEN:
        raise InputError(f"MTU {s.mtu} out of range (valid: 68..{MAX_FRAME_LEN})")
    if s.mergeable and s.guest_gso:
        # With MRG_RXBUF the driver is in mergeable mode whatever the GSO features say.
        raise InputError(
            "--mergeable and --big exclude each other: MRG_RXBUF selects mergeable "
            "mode, --big means guest GSO without MRG_RXBUF"
        )
    hdr_len = 12 if s.hdr_len is None else s.hdr_len
    if hdr_len not in (10, 12, 20, 24):
        raise InputError(
            f"hdr_len {hdr_len} is not a virtio-net header size (valid: 10, 12, 20, 24)"
        )
    if hdr_len == 10 and s.mergeable:
        raise InputError(
            "hdr_len 10 (legacy virtio_net_hdr) cannot go with MRG_RXBUF, which makes "
            "the header at least 12 bytes (virtnet_probe)"
        )
    if hdr_len == 20 and not k.has(PADDED_VNET_HDR_V1_HASH):
        raise UnsupportedError(
            f"hdr_len 20 (VIRTIO_NET_F_HASH_REPORT) needs 5.18 or later, not {k.name}"
        )
    if hdr_len == 24 and not k.has(VNET_HDR_UDP_TUNNEL):
        raise UnsupportedError(f"hdr_len 24 (UDP tunnel GSO) needs 6.18 or later, not {k.name}")
    if s.buf_len is not None:
        if not s.mergeable:
            raise InputError("--buf-len sets the mergeable buffer size: it needs --mergeable")
        low, high = hdr_len + ETH_HLEN, bufs.page_frag_size(k)
        if not low <= s.buf_len <= high:
            raise InputError(f"buffer length {s.buf_len} out of range (valid: {low}..{high})")
    if s.ewma is not None and not 0 <= s.ewma <= MAX_FRAME_LEN:
        raise InputError(f"EWMA {s.ewma} out of range (valid: 0..{MAX_FRAME_LEN})")
    if not 1 <= s.ring_size <= 32768:
        raise InputError(f"ring size {s.ring_size} out of range (valid: 1..32768)")
    # with given buffers (a ring model), buffer_index only labels the first of them
    if not 0 <= s.buffer_index < (s.ring_size if not s.buffers else 1 << 31):
        raise InputError(
            f"buffer index {s.buffer_index} out of range (valid: 0..{s.ring_size - 1})"
        )
    if (
        (s.buffer_index or s.buffers)
        and not s.mergeable
        and (s.guest_gso or s.mtu > bufs.ETH_DATA_LEN)
    ):
        raise InputError(
            "--buffer-index applies to small and mergeable buffers; big mode "
            "posts page chains from rq->pages"
        )
    return replace(s, hdr_len=hdr_len)


class Config(NamedTuple):
    """Everything about one kernel + setup that does not depend on the frame length."""

    mode: str  # "small" | "big" | "mergeable"
    hdr_len: int
    big_packets: bool
    shinfo_size: int  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
    sk_buff_aligned: int  # SKB_DATA_ALIGN(sizeof(struct sk_buff))
    build_skb_path: bool  # page_to_skb has the build_skb path (5.13+)
    net_ip_align: int
    napi_head: Head  # napi_alloc_skb(GOOD_COPY_LEN)'s head
    napi_reserve: int  # NET_SKB_PAD + NET_IP_ALIGN
    page_size: int
    # small mode
    small_bufsize: int  # add_recvbuf_small's SKB_DATA_ALIGN(hdr + PAD + 1518) + shinfo
    small_pad: int  # VIRTNET_RX_PAD
    small_posted: PostedBuffer | None  # the buffer the frame lands in
    small_len_check: bool  # "rx error: len %u exceeds max size" (5.14+)
    buflen_from_ctx: bool  # 7.x: receive_small's buflen is the ctx truesize
    # big mode
    big_num_skbfrags: int
    big_padded: int  # sizeof(struct padded_vnet_hdr)
    big_capacity: int  # frame bytes a page chain holds
    big_len_check: bool  # receive_big's max_len check (6.18 and backports)
    big_give_pages: bool  # build_skb returns the unused chain (5.15+)
    # mergeable mode
    mrg_hdr_len: int  # hdr_padded_len for mergeable (and the sizing header length)
    min_buf_len: int
    buf_len: int | None  # fixed buffer length (--buf-len, a given EWMA, given buffers), or None
    # None: sized per frame for a steady stream (ewma = frame length)
    buffer_index: int
    given: tuple[PostedBuffer, ...]  # buffers a ring model handed over (replay)
    ewma: int | None
    max_skb_frags: int
    l1_cache_bytes: int
    frag_list_truesize: int  # alloc_skb(0, GFP_ATOMIC)'s truesize (a frag_list skb)
    carved: dict[int, Carved]  # buf_len → buffers from a fresh page (a cache; -1: given ones)


class Carved(NamedTuple):
    """Posted buffers with what lets a plan skip walking them: prefix sums of their lengths and
    runs of buffers that follow each other in the same page (which skb_coalesce_rx_frag merges)."""

    buffers: tuple[PostedBuffer, ...]
    prefix: tuple[int, ...]  # prefix[i] = total length of buffers[:i]
    run: tuple[int, ...]  # run[i] = how many times contiguity breaks among buffers[0..i]


def carved_info(buffers: tuple[PostedBuffer, ...]) -> Carved:
    prefix, run = [0], [0]
    for i, buf in enumerate(buffers):
        prefix.append(prefix[-1] + buf.len)
        if i:
            prev = buffers[i - 1]
            contiguous = prev.frag_index == buf.frag_index and prev.offset + prev.len == buf.offset
            run.append(run[-1] + (0 if contiguous else 1))
    return Carved(buffers, tuple(prefix), tuple(run))


class Plan(NamedTuple):
    """One frame's fate: plain numbers, skb fields as receive_*() returns it (before the pull)."""

    outcome: str  # "build_skb" | "copy" | "drop"
    reason: str | None
    buf_len: int  # mergeable: the posted length; small: bufsize; big: PAGE_SIZE
    buffers: tuple[PostedBuffer, ...]  # small/mergeable: posted buffers used; big: ()
    used: tuple[int, ...]  # bytes the device wrote into each (header included in the first)
    tailroom: int | None  # page_to_skb's tailroom test value (None where not evaluated)
    copy: int  # frame bytes copied into a new head
    head_size: int  # skb head allocation (0 on a drop)
    end: int
    data: int
    tail: int
    len: int
    data_len: int
    truesize: int
    # frags: (buffer index or chain page index, offset in its page, size, truesize added)
    frags: tuple[tuple[int, int, int, int], ...]  # empty when planned without detail
    coalesced: tuple[bool, ...]  # for each buffer after the first: coalesced into the last frag
    pages_used: int  # big mode: chain pages the skb references (page 0 included)
    nr_frags: int  # the head skb's own frags
    # frag_list skbs, each a tuple of frags like ``frags`` (empty when planned without detail)
    frag_list: tuple[tuple[tuple[int, int, int, int], ...], ...] = ()
    frag_list_skbs: int = 0
    new_skb_at: tuple[int, ...] = ()  # buffer indices that start a frag_list skb


def config(k: KernelProfile, s: VirtioRxSetup) -> Config:
    """What ``s`` (resolved) fixes for every frame length."""
    assert s.hdr_len is not None
    hdr = s.hdr_len
    big_packets = s.guest_gso or s.mtu > bufs.ETH_DATA_LEN
    mode = "mergeable" if s.mergeable else "big" if big_packets else "small"
    small_bufsize = bufs.small_bufsize(k, hdr)
    small_posted = None
    if mode == "small":
        small_posted = (
            s.buffers[0]
            if s.buffers
            else next(islice(bufs.iter_small(k, small_bufsize), s.buffer_index, None))
        )
    n = bufs.big_num_skbfrags(k, s.guest_gso, s.mtu, k.build.max_skb_frags)
    max_mtu = s.mtu if s.mtu != bufs.ETH_DATA_LEN else bufs.MAX_MTU
    min_buf_len = bufs.mergeable_min_buf_len(k, hdr, big_packets, max_mtu, s.ring_size)
    buf_len = s.buf_len
    if buf_len is None and s.buffers:
        buf_len = s.buffers[0].len
    elif buf_len is None and s.ewma is not None:
        buf_len = bufs.get_mergeable_buf_len(k, hdr, s.ewma, min_buf_len)
    return Config(
        mode=mode,
        hdr_len=hdr,
        big_packets=big_packets,
        shinfo_size=shinfo_size(k),
        sk_buff_aligned=k.sk_buff_aligned,
        build_skb_path=k.has(PAGE_TO_SKB_BUILD_SKB),
        net_ip_align=k.build.net_ip_align,
        napi_head=napi_alloc_head(k, bufs.GOOD_COPY_LEN),
        napi_reserve=k.net_skb_pad + k.build.net_ip_align,
        page_size=k.build.page_size,
        small_bufsize=small_bufsize,
        small_pad=bufs.virtnet_rx_pad(k),
        small_posted=small_posted,
        small_len_check=k.has(SMALL_USED_LEN_CHECK),
        buflen_from_ctx=k.has(VIRTIO_RX_PAGE_POOL),
        big_num_skbfrags=n,
        big_padded=bufs.padded_hdr_size(k),
        big_capacity=bufs.big_capacity(k, n),
        big_len_check=k.has(BIG_RECV_LEN_CHECK),
        big_give_pages=k.has(BIG_BUILD_SKB_GIVE_PAGES),
        mrg_hdr_len=bufs.mergeable_hdr_len(k, hdr),
        min_buf_len=min_buf_len,
        buf_len=buf_len,
        buffer_index=s.buffer_index,
        given=s.buffers,
        ewma=s.ewma,
        max_skb_frags=k.build.max_skb_frags,
        l1_cache_bytes=k.build.l1_cache_bytes,
        frag_list_truesize=kmalloc_reserve(k, 0).truesize,
        carved={},
    )


def plan(k: KernelProfile, c: Config, frame: int, detail: bool = True) -> Plan:
    """One frame's plan; ``detail=False`` skips what only the narration needs (sweeps)."""
    if c.mode == "small":
        return plan_small(k, c, frame)
    if c.mode == "big":
        return plan_big(c, frame)
    return plan_mergeable(k, c, frame, detail)


def _drop(
    reason: str, buf_len: int, buffers: tuple[PostedBuffer, ...] = (), used: tuple[int, ...] = ()
) -> Plan:
    return Plan(
        outcome="drop",
        reason=reason,
        buf_len=buf_len,
        buffers=buffers,
        used=used,
        tailroom=None,
        copy=0,
        head_size=0,
        end=0,
        data=0,
        tail=0,
        len=0,
        data_len=0,
        truesize=0,
        frags=(),
        coalesced=(),
        pages_used=0,
        nr_frags=0,
    )


def plan_small(k: KernelProfile, c: Config, frame: int) -> Plan:
    """add_recvbuf_small + receive_small: build_skb() around the buffer in every version."""
    posted = c.small_posted
    assert posted is not None
    if frame > bufs.GOOD_PACKET_LEN:
        return _drop(
            "len_exceeds_max_size" if c.small_len_check else "exceeds_buffer",
            posted.len,
            (posted,),
            (c.hdr_len,),
        )
    if frame < ETH_HLEN:  # receive_buf: len < hdr_len + ETH_HLEN
        return _drop("short_packet", posted.len, (posted,), (c.hdr_len + frame,))
    headroom = c.small_pad + c.hdr_len
    if c.buflen_from_ctx:  # 7.x: the ctx truesize, i.e. the page_pool allocation
        buflen = posted.len
    else:  # SKB_DATA_ALIGN(GOOD_PACKET_LEN + headroom) + shinfo
        buflen = k.skb_data_align(bufs.GOOD_PACKET_LEN + headroom) + c.shinfo_size
    return _built(
        c,
        frag_size=buflen,
        reserve=headroom,
        frame=frame,
        buf_len=posted.len,
        buffers=(posted,),
        used=(c.hdr_len + frame,),
        tailroom=None,
        pages_used=0,
    )


def _built(
    c: Config,
    *,
    frag_size: int,
    reserve: int,
    frame: int,
    buf_len: int,
    buffers: tuple[PostedBuffer, ...],
    used: tuple[int, ...],
    tailroom: int | None,
    pages_used: int,
) -> Plan:
    """build_skb(buf, frag_size) + skb_reserve(reserve) + skb_put(frame) (virtnet_build_skb from
    6.5): the buffer is the head, skb_shared_info its last bytes, truesize frag_size + sk_buff."""
    return Plan(
        outcome="build_skb",
        reason=None,
        buf_len=buf_len,
        buffers=buffers,
        used=used,
        tailroom=tailroom,
        copy=0,
        head_size=frag_size,
        end=frag_size - c.shinfo_size,
        data=reserve,
        tail=reserve + frame,
        len=frame,
        data_len=0,
        truesize=frag_size + c.sk_buff_aligned,
        frags=(),
        coalesced=(),
        pages_used=pages_used,
        nr_frags=0,
    )


def _build_or_copy(c: Config, frame: int, truesize: int, hp: int) -> tuple[bool, int | None]:
    """page_to_skb: build_skb when NET_IP_ALIGN == 0, len > GOOD_COPY_LEN and the buffer's
    tailroom (truesize - headroom - hdr_padded_len - len) holds skb_shared_info (5.13+)."""
    if not c.build_skb_path:
        return False, None
    tailroom = truesize - hp - frame
    return (
        c.net_ip_align == 0 and frame > bufs.GOOD_COPY_LEN and tailroom >= c.shinfo_size
    ), tailroom


def _napi_copy(c: Config, frame: int) -> tuple[int, int, int, int]:
    """napi_alloc_skb(GOOD_COPY_LEN) + the copy: (copy, end, data, truesize of the head)."""
    head = c.napi_head
    end = head.size - c.shinfo_size
    tailroom = end - c.napi_reserve
    # "Do not pull payload in skb->head" (0f6925b3e8da): the whole frame if it fits, else ETH_HLEN
    copy = frame if frame <= tailroom else ETH_HLEN
    return copy, end, c.napi_reserve, head.truesize


def plan_big(c: Config, frame: int) -> Plan:
    """add_recvbuf_big + receive_big + page_to_skb with truesize PAGE_SIZE per page."""
    page, hp = c.page_size, c.big_padded
    if frame > c.big_capacity:
        return _drop("len_exceeds_allocated_size" if c.big_len_check else "exceeds_buffer", page)
    if frame < ETH_HLEN:
        return _drop("short_packet", page)
    build, tailroom = _build_or_copy(c, frame, page, hp)
    if build:
        return _built(
            c,
            frag_size=page,
            reserve=hp,
            frame=frame,
            buf_len=page,
            buffers=(),
            used=(),
            tailroom=tailroom,
            pages_used=1,
        )
    copy, end, data, truesize = _napi_copy(c, frame)
    rest, offset = frame - copy, hp + copy
    frags: list[tuple[int, int, int, int]] = []
    while rest:
        size = min(page - offset, rest)
        frags.append((len(frags), offset, size, page))
        rest, offset = rest - size, 0
    return Plan(
        outcome="copy",
        reason=None,
        buf_len=page,
        buffers=(),
        used=(),
        tailroom=tailroom,
        copy=copy,
        head_size=c.napi_head.size,
        end=end,
        data=data,
        tail=data + copy,
        len=frame,
        data_len=frame - copy,
        truesize=truesize + page * len(frags),
        frags=tuple(frags),
        coalesced=(),
        pages_used=max(1, len(frags)),
        nr_frags=len(frags),
    )


def _carved(k: KernelProfile, c: Config, buf_len: int) -> Carved:
    """Enough posted buffers, from a fresh page, to hold the largest frame (cached in ``c``)."""
    key = -1 if c.given else buf_len
    cached = c.carved.get(key)
    if cached is not None:
        return cached
    if c.given:
        c.carved[key] = carved_info(c.given)
        return c.carved[key]
    need = MAX_FRAME_LEN + 24 + 1
    out: list[PostedBuffer] = []
    for buf in islice(bufs.iter_posted_mergeable(k, buf_len), c.buffer_index, None):
        out.append(buf)
        need -= buf.len
        if need <= 0:
            break
    c.carved[key] = carved_info(tuple(out))
    return c.carved[key]


def mergeable_buf_len(c: Config, frame: int) -> int:
    """The posted buffer length: fixed, or get_mergeable_buf_len() for ewma = frame length:
    ALIGN(h + clamp(ewma, min_buf_len, PAGE_SIZE - h), L1_CACHE_BYTES)."""
    if c.buf_len is not None:
        return c.buf_len
    h = c.mrg_hdr_len
    clamped = min(max(frame, c.min_buf_len), c.page_size - h)
    return (h + clamped + c.l1_cache_bytes - 1) // c.l1_cache_bytes * c.l1_cache_bytes


def plan_mergeable(k: KernelProfile, c: Config, frame: int, detail: bool = True) -> Plan:
    """add_recvbuf_mergeable + receive_mergeable: page_to_skb on the first buffer, then one frag
    (or a coalesced one, skb_coalesce_rx_frag) per further buffer.

    Without ``detail`` (sweeps) the buffers are counted by bisection and the frags by the
    contiguity runs; with it, each buffer is walked as the kernel does and the two must agree.
    """
    buf_len = mergeable_buf_len(c, frame)
    info = _carved(k, c, buf_len)
    total = c.hdr_len + frame
    count = bisect_left(info.prefix, total)  # the fewest buffers holding `total` bytes
    if count >= len(info.prefix):
        have = info.prefix[-1]
        raise InputError(
            f"the {len(info.buffers)} posted buffer(s) hold {have} bytes; the frame needs {total}"
        )
    posted = info.buffers[:count]
    first = posted[0]
    used0 = min(first.len, total)
    if frame < ETH_HLEN:
        return _drop("short_packet", buf_len, posted, _used(info, count, total))
    frame0 = used0 - c.hdr_len
    hp = c.mrg_hdr_len
    build, tailroom = _build_or_copy(c, frame0, first.len, hp)
    if build:
        outcome, copy, head_size = "build_skb", 0, first.len
        end, data, truesize = first.len - c.shinfo_size, hp, first.len + c.sk_buff_aligned
        tail = hp + frame0
    else:
        outcome, head_size = "copy", c.napi_head.size
        copy, end, data, truesize = _napi_copy(c, frame0)
        tail = data + copy
    frag0 = not build and frame0 > copy  # the rest of the first buffer stays as frag 0
    if frag0:
        truesize += first.len
    nr_frags = int(frag0)
    if count > 1:
        later_runs = info.run[count - 1] - info.run[1] + 1
        joins_frag0 = frag0 and info.run[1] == info.run[0]
        nr_frags = later_runs + (int(frag0) if not joins_frag0 else 0)
        truesize += info.prefix[count] - info.prefix[1]
    frags: tuple[tuple[int, int, int, int], ...] = ()
    coalesced: tuple[bool, ...] = ()
    used: tuple[int, ...] = ()
    chained: tuple[tuple[tuple[int, int, int, int], ...], ...] = ()
    starts: tuple[int, ...] = ()
    frag_list_skbs = 0
    # Past MAX_SKB_FRAGS frags the kernel chains frag_list skbs; the runs above cannot see that,
    # so walk the buffers whenever the head could fill up (and always for the narration).
    if detail or nr_frags >= c.max_skb_frags:
        used = _used(info, count, total)
        walked = _walk_frags(
            posted,
            used,
            (first.offset + hp + copy, frame0 - copy) if frag0 else None,
            c.max_skb_frags,
        )
        if not walked.chained:
            assert len(walked.frags) == nr_frags, (walked, nr_frags)  # the two counts agree
        nr_frags = len(walked.frags)
        frag_list_skbs = len(walked.chained)
        truesize += frag_list_skbs * c.frag_list_truesize
        if detail:
            frags, coalesced = walked.frags, walked.coalesced
            chained, starts = walked.chained, walked.starts
    return Plan(
        outcome=outcome,
        reason=None,
        buf_len=buf_len,
        buffers=posted,
        used=used,
        tailroom=tailroom,
        copy=copy,
        head_size=head_size,
        end=end,
        data=data,
        tail=tail,
        len=frame,
        data_len=frame - (tail - data),
        truesize=truesize,
        frags=frags,
        coalesced=coalesced,
        pages_used=0,
        nr_frags=nr_frags,
        frag_list=chained,
        frag_list_skbs=frag_list_skbs,
        new_skb_at=starts,
    )


def _used(info: Carved, count: int, total: int) -> tuple[int, ...]:
    """Bytes the device wrote into each buffer: all full but the last."""
    return (*(b.len for b in info.buffers[: count - 1]), total - info.prefix[count - 1])


class Walked(NamedTuple):
    frags: tuple[tuple[int, int, int, int], ...]  # the head skb's
    chained: tuple[tuple[tuple[int, int, int, int], ...], ...]  # each frag_list skb's
    coalesced: tuple[bool, ...]  # per buffer after the first
    starts: tuple[int, ...]  # buffer indices that start a frag_list skb


def _walk_frags(
    posted: tuple[PostedBuffer, ...],
    used: tuple[int, ...],
    frag0: tuple[int, int] | None,
    max_frags: int,
) -> Walked:
    """receive_mergeable's loop, buffer by buffer (virtnet_skb_append_frag from 6.5): when the
    current skb already has MAX_SKB_FRAGS frags, chain a new one (alloc_skb(0)) first; then
    coalesce into its last frag when that is in the same page and ends where this buffer starts
    (skb_can_coalesce), else add a frag."""
    skbs: list[list[tuple[int, int, int, int]]] = [[]]
    if frag0 is not None:
        skbs[0].append((0, frag0[0], frag0[1], posted[0].len))
    coalesced, starts = [], []
    for index in range(1, len(posted)):
        buf, size = posted[index], used[index]
        if len(skbs[-1]) == max_frags:
            skbs.append([])
            starts.append(index)
        curr = skbs[-1]
        if curr:
            last = curr[-1]
            if posted[last[0]].frag_index == buf.frag_index and last[1] + last[2] == buf.offset:
                curr[-1] = (last[0], last[1], last[2] + size, last[3] + buf.len)
                coalesced.append(True)
                continue
        curr.append((index, buf.offset, size, buf.len))
        coalesced.append(False)
    return Walked(
        tuple(skbs[0]), tuple(tuple(f) for f in skbs[1:]), tuple(coalesced), tuple(starts)
    )
