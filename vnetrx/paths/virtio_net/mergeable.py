"""drivers/net/virtio_net.c, mergeable mode (VIRTIO_NET_F_MRG_RXBUF): add_recvbuf_mergeable posts
buffers sized by get_mergeable_buf_len and carved one after another from the rx page_frag (or
7.x page_pool); receive_mergeable runs page_to_skb on the first buffer the device filled, then
appends the others (frags.py). The plan and its narration side by side.
Facts: docs/kernel/virtio-net-rx.md §5.4, §5.5, §6, §9.
"""

from __future__ import annotations

from typing import Final

from vnetrx.errors import InputError
from vnetrx.kernel.changes import (
    PADDED_VNET_HDR_V1_HASH,
    RQ_ALLOC_FRESH_PAGE_SHRINK,
    RX_PREMAPPED_BY_DEFAULT,
    VIRTIO_RX_PAGE_POOL,
)
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.model import Buffer
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net import buffers as bufs
from vnetrx.paths.virtio_net import page_to_skb as p2s
from vnetrx.paths.virtio_net.buffers import Carved
from vnetrx.paths.virtio_net.frags import count_frags, narrate_appends, walk_frags
from vnetrx.paths.virtio_net.plan import Append, Drop, Plan, PlanFrag, dropped
from vnetrx.paths.virtio_net.setup import MAX_FRAME_LEN, Config
from vnetrx.paths.virtio_net.virtqueue import narrate_get_buf

SRC: Final = "drivers/net/virtio_net.c"
PATH: Final = "virtio-mergeable"


def mergeable_buf_len(c: Config, frame: int) -> int:
    """The posted buffer length: fixed, or get_mergeable_buf_len() for ewma = frame length (a
    steady stream of such frames)."""
    buf_len = c.buf_len
    if buf_len is None:
        buf_len = bufs.get_mergeable_buf_len(c.mrg_hdr_len, frame, c.min_buf_len, c.page_size,
                                             c.l1_cache_bytes)
    return buf_len


def carved(c: Config, buf_len: int) -> Carved:
    """Enough posted buffers, from a fresh page (skipping ``buffer_index``), to hold the largest
    frame (memoised in ``c``); or the ones a ring model handed over."""
    if c.given:
        return bufs.carved_info(c.given)
    key = bufs.carve_key(c.buffer_index, buf_len)
    memo = c.carved.get(key)
    if memo is None:
        memo = c.carved[key] = bufs.carved(c.alloc, c.buffer_index, buf_len,
                                           MAX_FRAME_LEN + 24 + 1)
    return memo


def plan_mergeable(c: Config, frame: int, detail: bool = True) -> Plan:
    """add_recvbuf_mergeable + receive_mergeable: page_to_skb on the first buffer, then one frag
    (or a coalesced one) per further buffer, frag_list skbs past MAX_SKB_FRAGS.

    Without ``detail`` (sweeps) the frags are counted by the contiguity runs; the buffers are
    walked as the kernel does for the narration, and whenever the head could fill up (the runs
    cannot see frag_list skbs)."""
    buf_len = mergeable_buf_len(c, frame)
    return plan_on(c, frame, buf_len, carved(c, buf_len), detail)


def plan_on(c: Config, frame: int, buf_len: int, info: Carved, detail: bool = True) -> Plan:
    """receive_mergeable on the posted buffers ``info`` (a ring model's: vnetrx replay), the
    frame starting in the first; ``buf_len``: the length they were posted with."""
    total = c.hdr_len + frame
    count = bufs.num_buffers(info.prefix, total)
    if count is None:
        raise InputError(
            f"the {len(info.buffers)} posted buffer(s) hold {info.prefix[-1]} bytes; the frame "
            f"needs {total}"
        )
    posted = info.buffers[:count]
    first = posted[0]
    if frame < ETH_HLEN:  # receive_buf: len < hdr_len + ETH_HLEN
        return dropped(Drop.SHORT_PACKET, buf_len, posted, bufs.used_lengths(info, count, total))
    frame0 = min(first.len, total) - c.hdr_len
    h = p2s.page_to_skb(c, first.len, c.mrg_hdr_len, frame0)
    frag0 = h.outcome == "copy" and frame0 > h.copy  # the rest of the first buffer: frag 0
    truesize = h.truesize + (first.len if frag0 else 0)
    nr_frags, later = count_frags(info, count, frag0)
    truesize += later
    frags: tuple[PlanFrag, ...] = ()
    appends: tuple[Append, ...] = ()
    used: tuple[int, ...] = ()
    chained: tuple[tuple[PlanFrag, ...], ...] = ()
    frag_list_skbs = 0
    if detail or nr_frags >= c.max_skb_frags:
        used = bufs.used_lengths(info, count, total)
        span0 = (first.offset + c.mrg_hdr_len + h.copy, frame0 - h.copy) if frag0 else None
        walked = walk_frags(posted, used, span0, c.max_skb_frags)
        if not walked.chained:
            assert len(walked.frags) == nr_frags, (walked, nr_frags)  # the two counts agree
        nr_frags = len(walked.frags)
        frag_list_skbs = len(walked.chained)
        truesize += frag_list_skbs * c.frag_list_truesize
        if detail:
            frags, appends, chained = walked.frags, walked.appends, walked.chained
    return Plan(outcome=h.outcome, reason=None, why=h.why, buf_len=buf_len, buffers=posted,
                used=used, tailroom=h.tailroom, copy=h.copy, frag0=frag0, head_size=h.head_size,
                end=h.end, data=h.data, tail=h.tail, len=frame, data_len=frame - (h.tail - h.data),
                truesize=truesize, frags=frags, appends=appends, pages_used=0, nr_frags=nr_frags,
                frag_list=chained, frag_list_skbs=frag_list_skbs)


# --- narration ---------------------------------------------------------------------------


def buffers_of(c: Config, p: Plan) -> tuple[Buffer, ...]:
    """The posted buffers the frame used, with what the device wrote into each."""
    return tuple(
        Buffer(b.len, c.alloc.label(b.frag_index), b.offset, u)
        for b, u in zip(p.buffers, p.used, strict=True)
    )


def narrate_posting(c: Config, p: Plan, frame: int, log: StepLog) -> None:
    """get_mergeable_buf_len (when this trace sized the buffers), add_recvbuf_mergeable, and the
    device's write across num_buffers buffers."""
    if not c.given and not c.buf_len_fixed:
        _narrate_buf_len(c, p, frame, log)
    posted = p.buffers
    # 6aacd1484468: a buffer that, with the 16-byte struct virtnet_rq_dma, does not fit a fresh
    # page is shrunk; visible only where the page starts with that header (6.13+)
    shrunk = not c.given and posted[0].len < p.buf_len
    log.add(
        SRC,
        "add_recvbuf_mergeable",
        (
            f"buffers of {p.buf_len} bytes are carved one after another from the rx "
            f"{c.alloc.describe()}; ctx = the buffer length (its truesize); the last buffer of "
            "a page absorbs the rest; "
            if not c.given
            else f"the ring model posted these buffers earlier ({bufs.lengths(posted)} bytes, "
            f"carved from the rx {c.alloc.describe()}); ctx = each buffer's length (its "
            "truesize); "
        )
        + f"buffer {c.buffer_index} is at {c.alloc.label(posted[0].frag_index)} + "
        f"{posted[0].offset}, {posted[0].len} bytes"
        + (
            f" (with the {c.alloc.dma_header}-byte struct virtnet_rq_dma, {p.buf_len} bytes do "
            f"not fit a fresh page: the buffer is shrunk by {c.alloc.shrink_fresh})"
            if shrunk
            else ""
        ),
        c.cite(RX_PREMAPPED_BY_DEFAULT, VIRTIO_RX_PAGE_POOL)
        + (c.cite(RQ_ALLOC_FRESH_PAGE_SHRINK) if shrunk else ()),
        len=p.buf_len,
        page_offset=posted[0].offset,
        # the page the buffers are carved from: a 32 KiB page_frag, or (7.x) a page_pool page
        **({"page_pool_page": c.alloc.page_bytes} if c.alloc.page_pool
           else {"page_frag_size": c.alloc.page_bytes}),
    )
    narrate_get_buf(p, log)


def _lead(p: Plan, c: Config) -> tuple[tuple[str, int, str], ...]:
    return (("vnet_hdr", c.hdr_len, f"num_buffers = {len(p.buffers)} at byte 10"),)


def short_maps(c: Config, p: Plan, frame: int) -> tuple[Buffer, tuple[Buffer, ...]]:
    """The buffers of a short packet: nothing was built."""
    buffers = buffers_of(c, p)
    first = p.buffers[0]
    head = Buffer(first.len, buffers[0].page, first.offset, c.hdr_len + frame,
                  p2s.used_regions(c, first.len, _lead(p, c), frame, None, 0))
    return head, (head, *buffers[1:])


def narrate_receive(c: Config, p: Plan, frame: int, log: StepLog
                    ) -> tuple[Buffer, tuple[Buffer, ...]]:
    """receive_mergeable: the head buffer's length check, page_to_skb, frag 0, the loop over the
    other buffers, recycling (7.x) and the EWMA update."""
    first, used0 = p.buffers[0], p.used[0]
    log.add(
        SRC,
        "receive_mergeable",
        f"length check passes: len {used0} <= truesize {first.len}",
        len=used0,
        truesize=first.len,
    )
    frame0 = used0 - c.hdr_len
    p2s.narrate(c, p, log, frame0, first.len, c.mrg_hdr_len)
    if p.outcome == "copy":
        if p.frag0:
            log.add(
                SRC,
                "page_to_skb",
                f"the other {frame0 - p.copy} bytes stay in the buffer as frag 0 "
                f"(offset {p.frags[0].offset}), adding the buffer's truesize {first.len}",
                offset=p.frags[0].offset,
                size=frame0 - p.copy,
                truesize=first.len,
            )
        else:
            log.add(
                SRC,
                "page_to_skb",
                "all of the frame was copied: the buffer's page reference "
                "is dropped (page_to_free)",
            )
    buffers = buffers_of(c, p)
    narrate_appends(c, p, buffers, log)
    head = Buffer(first.len, buffers[0].page, first.offset, used0,
                  p2s.used_regions(c, first.len, _lead(p, c), frame0, p.outcome, p.copy))
    if c.alloc.page_pool:
        log.add(
            SRC,
            "receive_mergeable",
            "skb_mark_for_recycle(head_skb): pp_recycle = 1, the "
            "pages go back to the page_pool when the skb is freed",
            c.cite(VIRTIO_RX_PAGE_POOL),
        )
    before = frame if c.ewma is None else c.ewma
    log.add(
        SRC,
        "receive_mergeable",
        "ewma_pkt_len_add(head_skb->len): the average that sizes the next buffers",
        ewma_before=before,
        ewma_after=bufs.ewma_pkt_len_add(before, p.len),
    )
    return head, (head, *buffers[1:])


def _narrate_buf_len(c: Config, p: Plan, frame: int, log: StepLog) -> None:
    """get_mergeable_buf_len's step. dev->max_mtu is the device's MTU with VIRTIO_NET_F_MTU
    (assumed negotiated when --mtu is not 1500), else MAX_MTU."""
    ewma = frame if c.ewma is None else c.ewma
    if c.ewma is None:
        log.note(
            f"mergeable buffers sized for a steady stream of {frame}-byte frames "
            f"(ewma_pkt_len = {ewma}); set --ewma or --buf-len for another history"
        )
    log.add(
        SRC,
        "get_mergeable_buf_len",
        f"ALIGN(hdr_len + clamp(ewma {ewma}, min_buf_len {c.min_buf_len}, PAGE_SIZE - hdr_len), "
        f"L1_CACHE_BYTES) = {p.buf_len}",
        c.cite(PADDED_VNET_HDR_V1_HASH),
        ewma=ewma,
        min_buf_len=c.min_buf_len,
        hdr_len=c.mrg_hdr_len,
        L1_CACHE_BYTES=c.l1_cache_bytes,
        len=p.buf_len,
    )
