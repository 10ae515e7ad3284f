"""Mirrors drivers/net/virtio_net.c's receive path: virtnet_probe's mode choice, receive_buf,
receive_small, receive_big, receive_mergeable and page_to_skb; no XDP program attached.

The decisions and numbers come from ``virtio_rx_plan`` (pure arithmetic); this module narrates
them: the cited steps, the buffer maps and the skb record.
Facts: ../shared/reference/virtio-rx.md §4 (dispatch), §6 (page_to_skb), §7-§9, appendix A.
"""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.kernel.changes import (
    BIG_BUILD_SKB_GIVE_PAGES,
    BIG_PACKETS_MTU_SIZED,
    BIG_RECV_LEN_CHECK,
    PADDED_VNET_HDR_V1_HASH,
    PAGE_TO_SKB_BUILD_SKB,
    RX_PREMAPPED_BY_DEFAULT,
    SMALL_USED_LEN_CHECK,
    VIRTIO_RX_PAGE_POOL,
    Change,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer, Cost, Frag, FragListSkb, Region, Skb
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths import virtio_rx_plan as plans
from vnetrx.paths.skbuff import ETH_HLEN
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_rx_plan import MAX_FRAME_LEN, VirtioRxSetup, resolve

SRC = "drivers/net/virtio_net.c"
RING_SRC = "drivers/virtio/virtio_ring.c"
__all__ = ["MAX_FRAME_LEN", "RxResult", "VirtioRxSetup", "receive", "resolve"]


@dataclass(frozen=True)
class RxResult:
    path: str
    outcome: str
    reason: str | None
    buffer: Buffer | None
    buffers: tuple[Buffer, ...]
    skb: Skb | None  # as receive_*() returns it (before eth_type_trans)
    cost: Cost | None


def receive(k: KernelProfile, s: VirtioRxSetup, log: StepLog) -> RxResult:
    """virtnet_probe's mode choice, then the device write and receive_buf's dispatch."""
    c = plans.config(k, s)
    p = plans.plan(k, c, s.frame_len)
    log.add(
        SRC,
        "virtnet_probe",
        f"{c.mode} receive buffers: "
        + (
            "VIRTIO_NET_F_MRG_RXBUF is negotiated"
            if s.mergeable
            else "no MRG_RXBUF; guest GSO or MTU > 1500 sets big_packets"
            if c.big_packets
            else "no MRG_RXBUF, no guest GSO, MTU <= 1500"
        ),
        mergeable_rx_bufs=s.mergeable,
        big_packets=c.big_packets,
        guest_gso=s.guest_gso,
        mtu=s.mtu,
        hdr_len=s.hdr_len,
    )
    if c.mode == "small":
        return receive_small(k, s, c, p, log)
    if c.mode == "big":
        return receive_big(k, s, c, p, log)
    return receive_mergeable(k, s, c, p, log)


def _short_packet(s: VirtioRxSetup, p: plans.Plan, log: StepLog) -> bool:
    """receive_buf: ``len < vi->hdr_len + ETH_HLEN`` → "short packet", rx_length_errors++."""
    assert s.hdr_len is not None
    used_len = s.hdr_len + s.frame_len
    short = p.reason == "short_packet"
    log.add(
        SRC,
        "receive_buf",
        f"short packet: {used_len} < hdr_len + ETH_HLEN; dropped, rx_length_errors++"
        if short
        else "length passes the short-packet guard; dispatch by mode",
        len=used_len,
        hdr_len=s.hdr_len,
        ETH_HLEN=ETH_HLEN,
    )
    return short


def _regions(*parts: tuple[str, int, str]) -> tuple[Region, ...]:
    """Lay named sizes end to end from offset 0, dropping empty ones."""
    out, offset = [], 0
    for name, size, note in parts:
        if size > 0:
            out.append(Region(name, offset, size, note))
        offset += max(size, 0)
    return tuple(out)


def _drop(path: str, reason: str, buffer: Buffer, buffers: tuple[Buffer, ...] = ()) -> RxResult:
    return RxResult(path, "drop", reason, buffer, buffers or (buffer,), None, None)


def _skb(
    c: plans.Config, p: plans.Plan, frags: tuple[Frag, ...], frag_list: tuple[FragListSkb, ...] = ()
) -> Skb:
    """The skb as receive_*() returns it, from the plan's numbers."""
    head = "the rx buffer (build_skb)" if p.outcome == "build_skb" else c.napi_head.label
    return Skb(
        head=head,
        head_size=p.head_size,
        data=p.data,
        tail=p.tail,
        end=p.end,
        len=p.len,
        data_len=p.data_len,
        truesize=p.truesize,
        frags=frags,
        frag_list=frag_list,
    )


def _cost(p: plans.Plan) -> Cost:
    # build_skb allocates the sk_buff only; the copy path also allocates a head
    return Cost(
        allocations=1 if p.outcome == "build_skb" else 2, bytes_copied=p.copy, frags=len(p.frags)
    )


# --- small ----------------------------------------------------------------------------------


def receive_small(
    k: KernelProfile, s: VirtioRxSetup, c: plans.Config, p: plans.Plan, log: StepLog
) -> RxResult:
    """add_recvbuf_small + receive_small: build_skb() around the buffer in every version."""
    assert s.hdr_len is not None
    assert c.small_posted is not None
    hdr, frame, pad, sh = s.hdr_len, s.frame_len, c.small_pad, c.shinfo_size
    posted = c.small_posted
    log.add(
        SRC,
        "add_recvbuf_small",
        f"post {c.small_bufsize}-byte buffers from the rx {_allocator(k)}; buffer "
        f"{s.buffer_index} is at {_page_label(k, posted.frag_index)} + {posted.offset}, "
        f"{posted.len} bytes; the device may write hdr_len + GOOD_PACKET_LEN = "
        f"{hdr + bufs.GOOD_PACKET_LEN} bytes at offset {pad}",
        k.present(VIRTIO_RX_PAGE_POOL, RX_PREMAPPED_BY_DEFAULT),
        bufsize=c.small_bufsize,
        alloc_len=posted.len,
        VIRTNET_RX_PAD=pad,
        hdr_len=hdr,
        GOOD_PACKET_LEN=bufs.GOOD_PACKET_LEN,
        shinfo_size=sh,
        page_offset=posted.offset,
    )
    oversized = p.reason in ("len_exceeds_max_size", "exceeds_buffer")
    bufsize = posted.len  # 7.x: page_pool_alloc_va may have grown it
    room = bufsize - sh - pad - hdr
    frame_part = (
        ("rx space", bufs.GOOD_PACKET_LEN, "frame does not fit")
        if oversized
        else ("frame", frame, "")
    )
    written = bufs.GOOD_PACKET_LEN if oversized else frame
    buffer = Buffer(
        bufsize,
        _page_label(k, posted.frag_index),
        posted.offset,
        hdr + (0 if oversized else frame),
        _regions(
            ("headroom", pad, "VIRTNET_RX_PAD"),
            ("vnet_hdr", hdr, ""),
            frame_part,
            ("tailroom", room - written, ""),
            ("skb_shared_info", sh, "reserved at bufsize - shinfo"),
        ),
    )
    if oversized:
        return _oversized(
            k,
            log,
            "virtio-small",
            buffer,
            frame,
            bufs.GOOD_PACKET_LEN,
            "receive_small",
            SMALL_USED_LEN_CHECK,
            p.reason or "",
            "rx error: len %u exceeds max size %d; rx_length_errors++, drops++",
        )
    if _short_packet(s, p, log):
        return _drop("virtio-small", "short_packet", buffer)
    if k.has(SMALL_USED_LEN_CHECK):
        log.add(
            SRC,
            "receive_small",
            "length check passes: len <= GOOD_PACKET_LEN",
            (SMALL_USED_LEN_CHECK,),
            len=frame,
            GOOD_PACKET_LEN=bufs.GOOD_PACKET_LEN,
        )
    log.add(
        SRC,
        "receive_small",
        f"build_skb(buf, {p.head_size}) around the rx buffer, skb_reserve({p.data}), "
        f"skb_put({frame}); copy the {hdr}-byte header into skb->cb",
        k.present(VIRTIO_RX_PAGE_POOL),  # 7.x: buflen is the ctx truesize
        buflen=p.head_size,
        headroom=p.data,
        truesize=p.truesize,
        end=p.end,
    )
    return RxResult("virtio-small", "build_skb", None, buffer, (buffer,), _skb(c, p, ()), _cost(p))


def _oversized(
    k: KernelProfile,
    log: StepLog,
    path: str,
    buffer: Buffer,
    frame: int,
    capacity: int,
    function: str,
    check: Change,
    reason: str,
    message: str,
) -> RxResult:
    """A frame longer than the posted buffer holds."""
    log.add(
        RING_SRC,
        "virtqueue_add_inbuf",
        f"a {frame}-byte frame does not fit the posted buffer ({capacity} frame bytes): a "
        "conforming device cannot deliver it",
        len=frame,
        capacity=capacity,
    )
    if reason != "exceeds_buffer":
        log.add(
            SRC,
            function,
            f"a device that reports it anyway is dropped: {message}",
            (check,),
            len=frame,
            limit=capacity,
        )
        return _drop(path, reason, buffer)
    log.add(
        SRC,
        function,
        f"{k.name} has no length check here: a device that reported this "
        "length would make the driver overrun the buffer; vnetrx stops",
        len=frame,
    )
    return _drop(path, "exceeds_buffer", buffer)


# --- page_to_skb (big and mergeable) -------------------------------------------------------


def page_to_skb(
    k: KernelProfile,
    log: StepLog,
    c: plans.Config,
    p: plans.Plan,
    frame: int,
    truesize: int,
    hdr_padded_len: int,
) -> None:
    """Narrates page_to_skb for the frame's first buffer (big: page 0 of the chain)."""
    sh = c.shinfo_size
    if c.build_skb_path:
        tailroom = p.tailroom
        assert tailroom is not None
        # tailroom = truesize - headroom - hdr_padded_len - len (the 5.13 form, truesize - len -
        # headroom - (hdr_padded_len - hdr_len), has the same value)
        why = (
            "NET_IP_ALIGN != 0"
            if c.net_ip_align
            else f"len {frame} <= GOOD_COPY_LEN"
            if frame <= bufs.GOOD_COPY_LEN
            else f"tailroom {tailroom} < shinfo_size {sh}"
            if tailroom < sh
            else f"len {frame} > GOOD_COPY_LEN and tailroom {tailroom} >= shinfo_size {sh}"
        )
        log.add(
            SRC,
            "page_to_skb",
            ("build_skb: " if p.outcome == "build_skb" else "copy: ") + why,
            (PAGE_TO_SKB_BUILD_SKB,),
            len=frame,
            GOOD_COPY_LEN=bufs.GOOD_COPY_LEN,
            truesize=truesize,
            hdr_padded_len=hdr_padded_len,
            tailroom=tailroom,
            shinfo_size=sh,
            NET_IP_ALIGN=c.net_ip_align,
        )
        if p.outcome == "build_skb":
            log.add(
                SRC,
                "page_to_skb",
                f"build_skb(buf, {truesize}): skb_shared_info takes the buffer's last {sh} "
                f"bytes; skb_reserve({hdr_padded_len}), skb_put({frame}); the header is "
                "copied into skb->cb from hdr_p",
                end=p.end,
                truesize=truesize + c.sk_buff_aligned,
            )
            return
    else:
        log.add(
            SRC,
            "page_to_skb",
            f"{k.name} has no build_skb path here: always copy into a "
            "napi_alloc_skb(GOOD_COPY_LEN) head (fb32856b16ad adds one in 5.13)",
            len=frame,
        )
    head = c.napi_head
    skb_tailroom = p.end - p.data
    log.add(
        "net/core/skbuff.c",
        "napi_alloc_skb",
        f"head from {head.label}: truesize {head.truesize}, skb_tailroom {skb_tailroom}; copy "
        + (f"the whole frame ({p.copy} B)" if p.copy == frame else f"ETH_HLEN ({p.copy} B) only"),
        GOOD_COPY_LEN=bufs.GOOD_COPY_LEN,
        head_size=head.size,
        truesize=head.truesize,
        skb_tailroom=skb_tailroom,
        copy=p.copy,
    )


# --- big ------------------------------------------------------------------------------------


def receive_big(
    k: KernelProfile, s: VirtioRxSetup, c: plans.Config, p: plans.Plan, log: StepLog
) -> RxResult:
    """add_recvbuf_big + receive_big: a chain of pages; page_to_skb with truesize PAGE_SIZE."""
    assert s.hdr_len is not None
    hdr, frame, page_size = s.hdr_len, s.frame_len, c.page_size
    n, hp, capacity = c.big_num_skbfrags, c.big_padded, c.big_capacity
    log.add(
        SRC,
        "add_recvbuf_big",
        f"post a chain of {n + 1} pages in {n + 2} sg entries: sg[0] = {hdr} header bytes at "
        f"page 0, sg[1] = page 0 from sizeof(padded_vnet_hdr) = {hp}, then whole pages",
        k.present(BIG_PACKETS_MTU_SIZED),
        num_skbfrags=n,
        pages=n + 1,
        sg_entries=n + 2,
        padded_vnet_hdr=hp,
        capacity=capacity,
    )
    in_page0 = min(frame, page_size - hp)
    buffers = tuple(
        Buffer(
            page_size,
            f"page{i}",
            0,
            hdr + in_page0
            if i == 0
            else max(0, min(page_size, frame - in_page0 - (i - 1) * page_size)),
        )
        for i in range(n + 1)
    )
    if p.reason in ("len_exceeds_allocated_size", "exceeds_buffer"):
        page0 = Buffer(
            page_size,
            "page0",
            0,
            hdr,
            _regions(
                ("vnet_hdr", hdr, ""),
                ("padding", hp - hdr, "the device never writes it"),
                ("rx space", page_size - hp, "frame continues in the chained pages"),
            ),
        )
        return _oversized(
            k,
            log,
            "virtio-big",
            page0,
            frame,
            capacity,
            "receive_big",
            BIG_RECV_LEN_CHECK,
            p.reason or "",
            "rx error: len %u exceeds allocated size %lu; drops++",
        )
    if _short_packet(s, p, log):
        return _drop("virtio-big", "short_packet", _big_page0(c, hdr, frame, None, 0), buffers)
    if k.has(BIG_RECV_LEN_CHECK):
        log.add(
            SRC,
            "receive_big",
            f"length check passes: len {hdr + frame} <= max_len {capacity + hdr}",
            (BIG_RECV_LEN_CHECK,),
            len=hdr + frame,
            max_len=capacity + hdr,
        )
    page_to_skb(k, log, c, p, frame, page_size, hp)
    if p.outcome == "build_skb":
        _big_release_chain(k, log, n)
    else:
        _big_frags(k, log, c, p, frame - p.copy, n + 1)
    frags = tuple(Frag(f"page{i}", off, size, ts) for i, off, size, ts in p.frags)
    page0 = _big_page0(c, hdr, frame, p.outcome, p.copy)
    return RxResult(
        "virtio-big", p.outcome, None, page0, (page0, *buffers[1:]), _skb(c, p, frags), _cost(p)
    )


def _big_frags(
    k: KernelProfile, log: StepLog, c: plans.Config, p: plans.Plan, rest: int, pages: int
) -> None:
    """page_to_skb's big-mode loop: one frag per chained page, each adding PAGE_SIZE to truesize."""
    if not k.has(BIG_RECV_LEN_CHECK):
        limit = k.build.max_skb_frags * c.page_size
        log.add(
            SRC,
            "page_to_skb",
            f"'too much data' check passes: {rest} <= MAX_SKB_FRAGS * PAGE_SIZE = {limit}",
            len=rest,
            limit=limit,
        )
    used = len(p.frags)
    log.add(
        SRC,
        "page_to_skb",
        f"{used} page(s) of the chain become frags, each adding PAGE_SIZE "
        "to truesize even when partly used",
        nr_frags=used,
    )
    if used < pages:
        log.add(
            SRC,
            "give_pages",
            f"the unused {pages - used} page(s) of the chain go back to rq->pages",
            pages=pages - used,
        )


def _big_release_chain(k: KernelProfile, log: StepLog, spare: int) -> None:
    if not spare:
        return
    if k.has(BIG_BUILD_SKB_GIVE_PAGES):
        log.add(
            SRC,
            "give_pages",
            f"the {spare} chained page(s) the frame did not reach go back to rq->pages",
            (BIG_BUILD_SKB_GIVE_PAGES,),
            pages=spare,
        )
    else:
        log.add(
            SRC,
            "page_to_skb",
            f"BUG in {k.name}: the {spare} chained page(s) after "
            "page 0 are never returned (leaked); fixed in 5.15 by 'virtio-net: fix pages "
            "leaking when building skb in big mode'",
            pages_leaked=spare,
        )
        log.note(f"{k.name} leaks {spare} page(s) per big-mode packet that takes build_skb")


def _big_page0(c: plans.Config, hdr: int, frame: int, outcome: str | None, copied: int) -> Buffer:
    size, hp = c.page_size, c.big_padded
    lead = (
        ("vnet_hdr", hdr, ""),
        ("padding", hp - hdr, "sizeof(padded_vnet_hdr) - hdr_len; the device never writes it"),
    )
    in_page0 = min(frame, size - hp)
    return Buffer(
        size, "page0", 0, hdr + in_page0, _used_regions(c, size, lead, in_page0, outcome, copied)
    )


def _used_regions(
    c: plans.Config,
    size: int,
    lead: tuple[tuple[str, int, str], ...],
    frame_bytes: int,
    outcome: str | None,
    copied: int,
) -> tuple[Region, ...]:
    """The buffer after receive: what became the skb head, what was copied, what is a frag."""
    used = sum(part[1] for part in lead) + frame_bytes
    if outcome == "build_skb":
        sh = c.shinfo_size
        return _regions(
            *lead,
            ("frame", frame_bytes, "the skb's linear data"),
            ("tailroom", size - used - sh, "skb tailroom"),
            ("skb_shared_info", sh, "written by build_skb at skb->end"),
        )
    if outcome == "copy":
        released = copied == frame_bytes
        return _regions(
            *lead,
            (
                "frame",
                copied,
                "copied into the new skb head"
                + ("; the buffer is then released" if released else ""),
            ),
            ("frame", frame_bytes - copied, "left in place: frag 0"),
            ("unused", size - used, ""),
        )
    return _regions(*lead, ("frame", frame_bytes, ""), ("unused", size - used, ""))


# --- mergeable ------------------------------------------------------------------------------


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
            f"{_allocator(k)}; ctx = the buffer length (its truesize); the last buffer of a "
            "page absorbs the rest; "
            if not s.buffers
            else f"the ring model posted these buffers earlier ({_lengths(posted)} bytes, "
            f"carved from the rx {_allocator(k)}); ctx = each buffer's length (its truesize); "
        )
        + f"buffer {s.buffer_index} is at {_page_label(k, posted[0].frag_index)} + "
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
        Buffer(b.len, _page_label(k, b.frag_index), b.offset, u)
        for b, u in zip(posted, used, strict=True)
    )
    lead = (("vnet_hdr", hdr, f"num_buffers = {len(posted)} at byte 10"),)
    first = posted[0]
    if _short_packet(s, p, log):
        head = Buffer(
            first.len,
            buffers[0].page,
            first.offset,
            hdr + frame,
            _used_regions(c, first.len, lead, frame, None, 0),
        )
        return _drop("virtio-mergeable", "short_packet", head, (head, *buffers[1:]))
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
        _used_regions(c, first.len, lead, frame0, p.outcome, p.copy),
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
        _skb(c, p, frags, chained),
        _cost(p),
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


def _allocator(k: KernelProfile) -> str:
    if k.has(VIRTIO_RX_PAGE_POOL):
        return f"page_pool ({k.build.page_size // 1024} KiB order-0 pages)"
    start = bufs.page_frag_start(k)
    return f"page_frag ({bufs.page_frag_size(k) // 1024} KiB pages" + (
        f", the first {start} bytes of each holding struct virtnet_rq_dma)" if start else ")"
    )


def _page_label(k: KernelProfile, index: int) -> str:
    """Names backing pages: frag<N> for page_frag pages, pool<N> for page_pool pages."""
    return f"pool{index}" if k.has(VIRTIO_RX_PAGE_POOL) else f"frag{index}"


def _lengths(posted: tuple[bufs.PostedBuffer, ...]) -> str:
    """``3×1536 2048 2×1536``: buffer lengths, runs folded."""
    parts: list[list[int]] = []
    for buf in posted:
        if parts and parts[-1][0] == buf.len:
            parts[-1][1] += 1
        else:
            parts.append([buf.len, 1])
    return " ".join(f"{n}×{length}" if n > 1 else str(length) for length, n in parts)
