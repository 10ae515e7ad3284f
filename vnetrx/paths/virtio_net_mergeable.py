"""Mirrors drivers/net/virtio_net.c: add_recvbuf_mergeable + receive_mergeable (page_to_skb on\nthe first buffer, then frags, coalescing and frag_list), narrated from virtio_rx_plan."""

from __future__ import annotations

from vnetrx.kernel.changes import (
    PADDED_VNET_HDR_V1_HASH,
    RX_PREMAPPED_BY_DEFAULT,
    VIRTIO_RX_PAGE_POOL,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer, Frag, FragListSkb
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths import virtio_rx_plan as plans
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net_common import (
    RING_SRC,
    SRC,
    RxResult,
    allocator,
    cost,
    drop,
    lengths,
    page_label,
    page_to_skb,
    short_packet,
    skb,
    used_regions,
)
from vnetrx.paths.virtio_rx_plan import VirtioRxSetup


def receive_mergeable(
    k: KernelProfile, s: VirtioRxSetup, c: plans.Config, p: plans.Plan, log: StepLog
) -> RxResult:
    """add_recvbuf_mergeable + receive_mergeable: page_to_skb on the first buffer, then one frag
    (or a coalesced one) per further buffer."""
    assert s.hdr_len is not None
    hdr, frame = s.hdr_len, s.frame_len
    if not s.buffers and s.buf_len is None:
        _posted_len(k, s, c, p, log)
    posted, used = p.buffers, p.used
    log.add(
        SRC,
        "add_recvbuf_mergeable",
        (
            f"buffers of {p.buf_len} bytes are carved one after another from the rx "
            f"{allocator(k)}; ctx = the buffer length (its truesize); the last buffer of a "
            "page absorbs the rest; "
            if not s.buffers
            else f"the ring model posted these buffers earlier ({lengths(posted)} bytes, "
            f"carved from the rx {allocator(k)}); ctx = each buffer's length (its truesize); "
        )
        + f"buffer {s.buffer_index} is at {page_label(k, posted[0].frag_index)} + "
        f"{posted[0].offset}, {posted[0].len} bytes",
        k.present(RX_PREMAPPED_BY_DEFAULT, VIRTIO_RX_PAGE_POOL),
        len=p.buf_len,
        page_offset=posted[0].offset,
        page_frag_size=bufs.page_frag_size(k),
    )
    log.add(
        RING_SRC,
        "virtqueue_get_buf_ctx",
        f"the device writes {hdr + frame} bytes (header + frame) across num_buffers = "
        f"{len(posted)} buffer(s)",
        len=used[0],
        num_buffers=len(posted),
    )
    buffers = tuple(
        Buffer(b.len, page_label(k, b.frag_index), b.offset, u)
        for b, u in zip(posted, used, strict=True)
    )
    lead = (("vnet_hdr", hdr, f"num_buffers = {len(posted)} at byte 10"),)
    first = posted[0]
    if short_packet(s, p, log):
        head = Buffer(
            first.len,
            buffers[0].page,
            first.offset,
            hdr + frame,
            used_regions(c, first.len, lead, frame, None, 0),
        )
        return drop("virtio-mergeable", "short_packet", head, (head, *buffers[1:]))
    log.add(
        SRC,
        "receive_mergeable",
        f"length check passes: len {used[0]} <= truesize {first.len}",
        len=used[0],
        truesize=first.len,
    )
    frame0 = used[0] - hdr
    page_to_skb(k, log, c, p, frame0, first.len, c.mrg_hdr_len)
    frags = tuple(Frag(buffers[i].page, off, size, ts) for i, off, size, ts in p.frags)
    chained = tuple(
        FragListSkb(
            sum(size for _, _, size, _ in group),
            c.frag_list_truesize + sum(ts for *_, ts in group),
            tuple(Frag(buffers[i].page, off, size, ts) for i, off, size, ts in group),
        )
        for group in p.frag_list
    )
    if p.outcome == "copy":
        first_frag = p.frags[0] if p.frags and p.frags[0][0] == 0 else None
        if first_frag is not None:
            rest = frame0 - p.copy
            log.add(
                SRC,
                "page_to_skb",
                f"the other {rest} bytes stay in the buffer as frag 0 "
                f"(offset {first_frag[1]}), adding the buffer's truesize {first.len}",
                offset=first_frag[1],
                size=rest,
                truesize=first.len,
            )
        else:
            log.add(
                SRC,
                "page_to_skb",
                "all of the frame was copied: the buffer's page reference "
                "is dropped (page_to_free)",
            )
    _narrate_appends(c, log, p, buffers)
    head = Buffer(
        first.len,
        buffers[0].page,
        first.offset,
        used[0],
        used_regions(c, first.len, lead, frame0, p.outcome, p.copy),
    )
    if k.has(VIRTIO_RX_PAGE_POOL):
        log.add(
            SRC,
            "receive_mergeable",
            "skb_mark_for_recycle(head_skb): pp_recycle = 1, the "
            "pages go back to the page_pool when the skb is freed",
            (VIRTIO_RX_PAGE_POOL,),
        )
    ewma_before = _ewma_before(s)
    log.add(
        SRC,
        "receive_mergeable",
        "ewma_pkt_len_add(head_skb->len): the average that sizes the next buffers",
        ewma_before=ewma_before,
        ewma_after=bufs.ewma_pkt_len_add(ewma_before, p.len),
    )
    return RxResult(
        "virtio-mergeable",
        p.outcome,
        None,
        head,
        (head, *buffers[1:]),
        skb(c, p, frags, chained),
        cost(p),
    )


def _narrate_appends(
    c: plans.Config, log: StepLog, p: plans.Plan, buffers: tuple[Buffer, ...]
) -> None:
    """receive_mergeable's loop (virtnet_skb_append_frag from 6.5): chain, coalesce or add."""
    nr_frags = 1 if p.frags and p.frags[0][0] == 0 else 0
    skb_name = "head skb"
    for index, coalesced in enumerate(p.coalesced, 1):
        buf, used = buffers[index], p.used[index]
        if index in p.new_skb_at:
            chained = p.new_skb_at.index(index)
            log.add(
                SRC,
                "receive_mergeable",
                f"the {skb_name} already has MAX_SKB_FRAGS = {c.max_skb_frags} frags: "
                "alloc_skb(0, GFP_ATOMIC) becomes "
                + ("skb_shinfo(head_skb)->frag_list" if chained == 0 else "curr_skb->next")
                + f"; head_skb->truesize += {c.frag_list_truesize}",
                MAX_SKB_FRAGS=c.max_skb_frags,
                truesize=c.frag_list_truesize,
            )
            nr_frags, skb_name = 0, f"frag_list skb {chained + 1}"
        if coalesced:
            log.add(
                SRC,
                "receive_mergeable",
                f"buffer at {buf.page}+{buf.page_offset} continues frag {nr_frags - 1} of the "
                f"{skb_name}: skb_coalesce_rx_frag grows it by {used}",
                offset=buf.page_offset,
                len=used,
                truesize=buf.size,
            )
            continue
        log.add(
            SRC,
            "receive_mergeable",
            f"buffer at {buf.page}+{buf.page_offset} becomes frag {nr_frags} of the {skb_name} "
            "(skb_add_rx_frag)",
            offset=buf.page_offset,
            len=used,
            truesize=buf.size,
        )
        nr_frags += 1


def _ewma_before(s: VirtioRxSetup) -> int:
    return s.frame_len if s.ewma is None else s.ewma


def _posted_len(
    k: KernelProfile, s: VirtioRxSetup, c: plans.Config, p: plans.Plan, log: StepLog
) -> None:
    """get_mergeable_buf_len's step. dev->max_mtu is the device's MTU with VIRTIO_NET_F_MTU
    (assumed negotiated when --mtu is not 1500), else MAX_MTU."""
    ewma = _ewma_before(s)
    if s.ewma is None:
        log.note(
            f"mergeable buffers sized for a steady stream of {s.frame_len}-byte frames "
            f"(ewma_pkt_len = {ewma}); set --ewma or --buf-len for another history"
        )
    log.add(
        SRC,
        "get_mergeable_buf_len",
        f"ALIGN(hdr_len + clamp(ewma {ewma}, min_buf_len {c.min_buf_len}, PAGE_SIZE - hdr_len), "
        f"L1_CACHE_BYTES) = {p.buf_len}",
        k.present(PADDED_VNET_HDR_V1_HASH),
        ewma=ewma,
        min_buf_len=c.min_buf_len,
        hdr_len=c.mrg_hdr_len,
        L1_CACHE_BYTES=k.build.l1_cache_bytes,
        len=p.buf_len,
    )
