"""Mirrors drivers/net/virtio_net.c's receive path: virtnet_probe's mode choice, receive_buf,
receive_small, receive_big, receive_mergeable and page_to_skb; no XDP program attached.

Facts: ../shared/reference/virtio-rx.md §4 (dispatch), §6 (page_to_skb), §7-§9, appendix A.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import islice

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.changes import (
    BIG_BUILD_SKB_GIVE_PAGES,
    BIG_PACKETS_MTU_SIZED,
    BIG_RECV_LEN_CHECK,
    PADDED_VNET_HDR_V1_HASH,
    PAGE_TO_SKB_BUILD_SKB,
    RX_PREMAPPED_BY_DEFAULT,
    SMALL_USED_LEN_CHECK,
    VIRTIO_RX_PAGE_POOL,
    VNET_HDR_UDP_TUNNEL,
    Change,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer, Cost, Frag, Region, Skb
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths.skbuff import (
    ETH_HLEN,
    build_skb,
    napi_alloc_head,
    shinfo_size,
    skb_add_rx_frag,
    skb_coalesce_rx_frag,
    skb_from_head,
    skb_put,
    skb_reserve,
)
from vnetrx.paths.steps import StepLog

SRC = "drivers/net/virtio_net.c"
RING_SRC = "drivers/virtio/virtio_ring.c"
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


@dataclass(frozen=True)
class RxResult:
    path: str
    outcome: str
    reason: str | None
    buffer: Buffer | None
    buffers: tuple[Buffer, ...]
    skb: Skb | None  # as receive_*() returns it (before eth_type_trans)
    cost: Cost | None


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
    if not 0 <= s.buffer_index < s.ring_size:
        raise InputError(
            f"buffer index {s.buffer_index} out of range (valid: 0..{s.ring_size - 1})"
        )
    if (s.buffer_index or s.buffers) and not s.mergeable and (
        s.guest_gso or s.mtu > bufs.ETH_DATA_LEN
    ):
        raise InputError(
            "--buffer-index applies to small and mergeable buffers; big mode "
            "posts page chains from rq->pages"
        )
    return replace(s, hdr_len=hdr_len)


def receive(k: KernelProfile, s: VirtioRxSetup, log: StepLog) -> RxResult:
    """virtnet_probe's mode choice, then the device write and receive_buf's dispatch."""
    assert s.hdr_len is not None
    big_packets = s.guest_gso or s.mtu > bufs.ETH_DATA_LEN
    mode = "mergeable" if s.mergeable else "big" if big_packets else "small"
    log.add(
        SRC,
        "virtnet_probe",
        f"{mode} receive buffers: "
        + (
            "VIRTIO_NET_F_MRG_RXBUF is negotiated"
            if s.mergeable
            else "no MRG_RXBUF; guest GSO or MTU > 1500 sets big_packets"
            if big_packets
            else "no MRG_RXBUF, no guest GSO, MTU <= 1500"
        ),
        mergeable_rx_bufs=s.mergeable,
        big_packets=big_packets,
        guest_gso=s.guest_gso,
        mtu=s.mtu,
        hdr_len=s.hdr_len,
    )
    if mode == "small":
        return receive_small(k, s, log)
    if mode == "big":
        return receive_big(k, s, log)
    return receive_mergeable(k, s, log, big_packets)


def _short_packet(s: VirtioRxSetup, log: StepLog) -> bool:
    """receive_buf: ``len < vi->hdr_len + ETH_HLEN`` → "short packet", rx_length_errors++."""
    assert s.hdr_len is not None
    used_len = s.hdr_len + s.frame_len
    short = used_len < s.hdr_len + ETH_HLEN
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


# --- small ----------------------------------------------------------------------------------


def receive_small(k: KernelProfile, s: VirtioRxSetup, log: StepLog) -> RxResult:
    """add_recvbuf_small + receive_small: build_skb() around the buffer in every version."""
    assert s.hdr_len is not None
    hdr, frame, pad = s.hdr_len, s.frame_len, bufs.virtnet_rx_pad(k)
    sh = shinfo_size(k)
    bufsize = bufs.small_bufsize(k, hdr)
    posted = s.buffers[0] if s.buffers else next(
        islice(bufs.iter_small(k, bufsize), s.buffer_index, None)
    )
    page_offset = posted.offset
    log.add(
        SRC,
        "add_recvbuf_small",
        f"post {bufsize}-byte buffers from the rx {_allocator(k)}; buffer {s.buffer_index} is "
        f"at {_page_label(k, posted.frag_index)} + {posted.offset}, {posted.len} bytes; the "
        f"device may write hdr_len + GOOD_PACKET_LEN = {hdr + bufs.GOOD_PACKET_LEN} bytes at "
        f"offset {pad}",
        k.present(VIRTIO_RX_PAGE_POOL, RX_PREMAPPED_BY_DEFAULT),
        bufsize=bufsize,
        alloc_len=posted.len,
        VIRTNET_RX_PAD=pad,
        hdr_len=hdr,
        GOOD_PACKET_LEN=bufs.GOOD_PACKET_LEN,
        shinfo_size=sh,
        page_offset=page_offset,
    )
    fits = frame <= bufs.GOOD_PACKET_LEN
    bufsize = posted.len  # 7.x: page_pool_alloc_va may have grown it
    room = bufsize - sh - pad - hdr
    frame_part = (
        ("frame", frame, "") if fits else ("rx space", bufs.GOOD_PACKET_LEN, "frame does not fit")
    )
    written = frame if fits else bufs.GOOD_PACKET_LEN
    buffer = Buffer(
        bufsize,
        _page_label(k, posted.frag_index),
        page_offset,
        hdr + (frame if fits else 0),
        _regions(
            ("headroom", pad, "VIRTNET_RX_PAD"),
            ("vnet_hdr", hdr, ""),
            frame_part,
            ("tailroom", room - written, ""),
            ("skb_shared_info", sh, "reserved at bufsize - shinfo"),
        ),
    )
    if not fits:
        return _oversized(
            k,
            log,
            "virtio-small",
            buffer,
            frame,
            bufs.GOOD_PACKET_LEN,
            "receive_small",
            SMALL_USED_LEN_CHECK,
            "len_exceeds_max_size",
            "rx error: len %u exceeds max size %d; rx_length_errors++, drops++",
        )
    if _short_packet(s, log):
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
    headroom = pad + hdr
    if k.has(VIRTIO_RX_PAGE_POOL):  # 7.x: buflen is the ctx truesize, the real allocation
        buflen = posted.len
    else:  # buflen = SKB_DATA_ALIGN(GOOD_PACKET_LEN + headroom) + shinfo, headroom = PAD + hdr
        buflen = k.skb_data_align(bufs.GOOD_PACKET_LEN + headroom) + sh
    skb = build_skb(k, buflen, "the rx buffer (build_skb)")
    skb = skb_put(skb_reserve(skb, headroom), frame)
    log.add(
        SRC,
        "receive_small",
        f"build_skb(buf, {buflen}) around the rx buffer, skb_reserve({headroom}), "
        f"skb_put({frame}); copy the {hdr}-byte header into skb->cb",
        buflen=buflen,
        headroom=headroom,
        truesize=skb.truesize,
        end=skb.end,
    )
    return RxResult(
        "virtio-small",
        "build_skb",
        None,
        buffer,
        (buffer,),
        skb,
        Cost(allocations=1, bytes_copied=0, frags=0),
    )


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
    if k.has(check):
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


@dataclass(frozen=True)
class PageToSkbIn:
    """page_to_skb()'s arguments as vnetrx needs them (headroom is 0: no XDP)."""

    mergeable: bool
    hdr_len: int  # vi->hdr_len
    hdr_padded_len: int  # mergeable: hdr_len (12 before 5.18); big: sizeof(padded_vnet_hdr)
    used_len: int  # the device's len for this buffer, header included
    truesize: int  # mergeable: the ctx truesize; big: PAGE_SIZE
    pages: tuple[str, ...]  # the backing page(s): one for mergeable, the chain for big
    page_offset: int  # where the buffer starts in pages[0]


def page_to_skb(k: KernelProfile, log: StepLog, p: PageToSkbIn) -> tuple[Skb, str, int]:
    """Returns the skb, "build_skb" or "copy", and how many frame bytes were copied."""
    frame, sh = p.used_len - p.hdr_len, shinfo_size(k)
    if k.has(PAGE_TO_SKB_BUILD_SKB):
        # tailroom = truesize - headroom - hdr_padded_len - len (the 5.13 form, truesize - len -
        # headroom - (hdr_padded_len - hdr_len), has the same value)
        tailroom = p.truesize - p.hdr_padded_len - frame
        use_build_skb = k.build.net_ip_align == 0 and frame > bufs.GOOD_COPY_LEN and tailroom >= sh
        why = (
            "NET_IP_ALIGN != 0"
            if k.build.net_ip_align
            else f"len {frame} <= GOOD_COPY_LEN"
            if frame <= bufs.GOOD_COPY_LEN
            else f"tailroom {tailroom} < shinfo_size {sh}"
            if tailroom < sh
            else f"len {frame} > GOOD_COPY_LEN and tailroom {tailroom} >= shinfo_size {sh}"
        )
        log.add(
            SRC,
            "page_to_skb",
            ("build_skb: " if use_build_skb else "copy: ") + why,
            (PAGE_TO_SKB_BUILD_SKB,),
            len=frame,
            GOOD_COPY_LEN=bufs.GOOD_COPY_LEN,
            truesize=p.truesize,
            hdr_padded_len=p.hdr_padded_len,
            tailroom=tailroom,
            shinfo_size=sh,
            NET_IP_ALIGN=k.build.net_ip_align,
        )
        if use_build_skb:
            skb = build_skb(k, p.truesize, "the rx buffer (build_skb)")
            skb = skb_put(skb_reserve(skb, p.hdr_padded_len), frame)
            log.add(
                SRC,
                "page_to_skb",
                f"build_skb(buf, {p.truesize}): skb_shared_info takes the buffer's last {sh} "
                f"bytes; skb_reserve({p.hdr_padded_len}), skb_put({frame}); the header is "
                "copied into skb->cb from hdr_p",
                end=skb.end,
                truesize=skb.truesize,
            )
            if not p.mergeable:
                _big_release_chain(k, log, p.pages[1:])
            return skb, "build_skb", 0
    else:
        log.add(
            SRC,
            "page_to_skb",
            f"{k.name} has no build_skb path here: always copy into a "
            "napi_alloc_skb(GOOD_COPY_LEN) head (fb32856b16ad adds one in 5.13)",
            len=frame,
        )
    head = napi_alloc_head(k, bufs.GOOD_COPY_LEN)
    skb = skb_reserve(skb_from_head(k, head), k.net_skb_pad + k.build.net_ip_align)
    skb_tailroom = skb.end - skb.tail
    copy = frame if frame <= skb_tailroom else ETH_HLEN  # "Do not pull payload in skb->head"
    skb = skb_put(skb, copy)
    log.add(
        "net/core/skbuff.c",
        "napi_alloc_skb",
        f"head from {head.label}: truesize {head.truesize}, skb_tailroom {skb_tailroom}; copy "
        + (f"the whole frame ({copy} B)" if copy == frame else f"ETH_HLEN ({copy} B) only"),
        GOOD_COPY_LEN=bufs.GOOD_COPY_LEN,
        head_size=head.size,
        truesize=head.truesize,
        skb_tailroom=skb_tailroom,
        copy=copy,
    )
    rest, offset = frame - copy, p.page_offset + p.hdr_padded_len + copy
    if p.mergeable:
        if rest:
            skb = skb_add_rx_frag(skb, Frag(p.pages[0], offset, rest, p.truesize))
            log.add(
                SRC,
                "page_to_skb",
                f"the other {rest} bytes stay in the buffer as frag 0 "
                f"(offset {offset}), adding the buffer's truesize {p.truesize}",
                offset=offset,
                size=rest,
                truesize=p.truesize,
            )
        else:
            log.add(
                SRC,
                "page_to_skb",
                "all of the frame was copied: the buffer's page reference "
                "is dropped (page_to_free)",
            )
        return skb, "copy", copy
    return _big_frags(k, log, skb, p.pages, offset, rest), "copy", copy


def _big_frags(
    k: KernelProfile, log: StepLog, skb: Skb, pages: tuple[str, ...], offset: int, rest: int
) -> Skb:
    """page_to_skb's big-mode loop: one frag per chained page, each adding PAGE_SIZE to truesize."""
    if not k.has(BIG_RECV_LEN_CHECK):
        limit = k.build.max_skb_frags * k.build.page_size
        log.add(
            SRC,
            "page_to_skb",
            f"'too much data' check passes: {rest} <= MAX_SKB_FRAGS * PAGE_SIZE = {limit}",
            len=rest,
            limit=limit,
        )
    used = 0
    while rest:
        size = min(k.build.page_size - offset, rest)
        skb = skb_add_rx_frag(skb, Frag(pages[used], offset, size, k.build.page_size))
        rest, offset, used = rest - size, 0, used + 1
    log.add(
        SRC,
        "page_to_skb",
        f"{used} page(s) of the chain become frags, each adding PAGE_SIZE "
        "to truesize even when partly used",
        nr_frags=used,
    )
    if used < len(pages):
        log.add(
            SRC,
            "give_pages",
            f"the unused {len(pages) - used} page(s) of the chain go back to rq->pages",
            pages=len(pages) - used,
        )
    return skb


def _big_release_chain(k: KernelProfile, log: StepLog, spare: tuple[str, ...]) -> None:
    if not spare:
        return
    if k.has(BIG_BUILD_SKB_GIVE_PAGES):
        log.add(
            SRC,
            "give_pages",
            f"the {len(spare)} chained page(s) the frame did not reach go back to rq->pages",
            (BIG_BUILD_SKB_GIVE_PAGES,),
            pages=len(spare),
        )
    else:
        log.add(
            SRC,
            "page_to_skb",
            f"BUG in {k.name}: the {len(spare)} chained page(s) after "
            "page 0 are never returned (leaked); fixed in 5.15 by 'virtio-net: fix pages "
            "leaking when building skb in big mode'",
            pages_leaked=len(spare),
        )
        log.note(f"{k.name} leaks {len(spare)} page(s) per big-mode packet that takes build_skb")


# --- big ------------------------------------------------------------------------------------


def receive_big(k: KernelProfile, s: VirtioRxSetup, log: StepLog) -> RxResult:
    """add_recvbuf_big + receive_big: a chain of pages; page_to_skb with truesize PAGE_SIZE."""
    assert s.hdr_len is not None
    hdr, frame, page_size = s.hdr_len, s.frame_len, k.build.page_size
    n = bufs.big_num_skbfrags(k, s.guest_gso, s.mtu, k.build.max_skb_frags)
    hp = bufs.padded_hdr_size(k)
    capacity = bufs.big_capacity(k, n)
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
    pages = tuple(f"page{i}" for i in range(n + 1))
    in_page0 = min(frame, page_size - hp)
    buffers = tuple(
        Buffer(
            page_size,
            name,
            0,
            hdr + in_page0
            if i == 0
            else max(0, min(page_size, frame - in_page0 - (i - 1) * page_size)),
        )
        for i, name in enumerate(pages)
    )
    fits = frame <= capacity
    page0 = buffers[0]
    if not fits:
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
            "len_exceeds_allocated_size",
            "rx error: len %u exceeds allocated size %lu; drops++",
        )
    if _short_packet(s, log):
        return _drop("virtio-big", "short_packet", _big_page0(k, hdr, hp, frame, None, 0), buffers)
    if k.has(BIG_RECV_LEN_CHECK):
        log.add(
            SRC,
            "receive_big",
            f"length check passes: len {hdr + frame} <= max_len {capacity + hdr}",
            (BIG_RECV_LEN_CHECK,),
            len=hdr + frame,
            max_len=capacity + hdr,
        )
    skb, outcome, copied = page_to_skb(
        k,
        log,
        PageToSkbIn(
            mergeable=False,
            hdr_len=hdr,
            hdr_padded_len=hp,
            used_len=hdr + frame,
            truesize=page_size,
            pages=pages,
            page_offset=0,
        ),
    )
    page0 = _big_page0(k, hdr, hp, frame, outcome, copied)
    return RxResult(
        "virtio-big",
        outcome,
        None,
        page0,
        (page0, *buffers[1:]),
        skb,
        Cost(
            allocations=1 if outcome == "build_skb" else 2, bytes_copied=copied, frags=skb.nr_frags
        ),
    )


def _big_page0(
    k: KernelProfile, hdr: int, hp: int, frame: int, outcome: str | None, copied: int
) -> Buffer:
    size = k.build.page_size
    lead = (
        ("vnet_hdr", hdr, ""),
        ("padding", hp - hdr, "sizeof(padded_vnet_hdr) - hdr_len; the device never writes it"),
    )
    in_page0 = min(frame, size - hp)
    return Buffer(
        size, "page0", 0, hdr + in_page0, _used_regions(k, size, lead, in_page0, outcome, copied)
    )


def _used_regions(
    k: KernelProfile,
    size: int,
    lead: tuple[tuple[str, int, str], ...],
    frame_bytes: int,
    outcome: str | None,
    copied: int,
) -> tuple[Region, ...]:
    """The buffer after receive: what became the skb head, what was copied, what is a frag."""
    used = sum(part[1] for part in lead) + frame_bytes
    if outcome == "build_skb":
        sh = shinfo_size(k)
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
    k: KernelProfile, s: VirtioRxSetup, log: StepLog, big_packets: bool
) -> RxResult:
    """add_recvbuf_mergeable + receive_mergeable: page_to_skb on the first buffer, then one frag
    (or a coalesced one) per further buffer."""
    assert s.hdr_len is not None
    hdr, frame = s.hdr_len, s.frame_len
    if s.buffers:  # a ring model gave the buffers (replay)
        buf_len, source = s.buffers[0].len, iter(s.buffers)
    else:
        buf_len = s.buf_len or _posted_len(k, s, log, big_packets)
        source = islice(bufs.iter_posted_mergeable(k, buf_len), s.buffer_index, None)
    used_total = hdr + frame
    posted: list[bufs.PostedBuffer] = []
    covered = 0
    for buf in source:
        posted.append(buf)
        covered += buf.len
        if covered >= used_total:
            break
    if covered < used_total:
        raise InputError(f"the {len(posted)} posted buffer(s) hold {covered} bytes; the frame "
                         f"needs {used_total}")
    used = [min(b.len, used_total - sum(p.len for p in posted[:i])) for i, b in enumerate(posted)]
    log.add(
        SRC,
        "add_recvbuf_mergeable",
        f"buffers of {buf_len} bytes are carved one after another from the rx {_allocator(k)}; "
        "ctx = the buffer length (its truesize); the last buffer of a page absorbs the rest; "
        f"buffer {s.buffer_index} is at {_page_label(k, posted[0].frag_index)} + "
        f"{posted[0].offset}, {posted[0].len} bytes",
        k.present(RX_PREMAPPED_BY_DEFAULT, VIRTIO_RX_PAGE_POOL),
        len=buf_len,
        page_offset=posted[0].offset,
        page_frag_size=bufs.page_frag_size(k),
    )
    log.add(
        RING_SRC,
        "virtqueue_get_buf_ctx",
        f"the device writes {used_total} bytes (header + frame) across num_buffers = "
        f"{len(posted)} buffer(s)",
        len=used[0],
        num_buffers=len(posted),
    )
    buffers = tuple(
        Buffer(b.len, _page_label(k, b.frag_index), b.offset, u)
        for b, u in zip(posted, used, strict=True)
    )
    lead = (("vnet_hdr", hdr, f"num_buffers = {len(posted)} at byte 10"),)
    if _short_packet(s, log):
        head = Buffer(
            posted[0].len,
            buffers[0].page,
            posted[0].offset,
            used_total,
            _used_regions(k, posted[0].len, lead, frame, None, 0),
        )
        return _drop("virtio-mergeable", "short_packet", head, (head, *buffers[1:]))
    log.add(
        SRC,
        "receive_mergeable",
        f"length check passes: len {used[0]} <= truesize {posted[0].len}",
        len=used[0],
        truesize=posted[0].len,
    )
    skb, outcome, copied = page_to_skb(
        k,
        log,
        PageToSkbIn(
            mergeable=True,
            hdr_len=hdr,
            hdr_padded_len=bufs.mergeable_hdr_len(k, hdr),
            used_len=used[0],
            truesize=posted[0].len,
            pages=(buffers[0].page,),
            page_offset=posted[0].offset,
        ),
    )
    head = Buffer(
        posted[0].len,
        buffers[0].page,
        posted[0].offset,
        used[0],
        _used_regions(k, posted[0].len, lead, used[0] - hdr, outcome, copied),
    )
    for later, this_used in zip(buffers[1:], used[1:], strict=True):
        skb = _append_buffer(k, log, skb, later, this_used)
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
        ewma_after=bufs.ewma_pkt_len_add(ewma_before, skb.len),
    )
    return RxResult(
        "virtio-mergeable",
        outcome,
        None,
        head,
        (head, *buffers[1:]),
        skb,
        Cost(
            allocations=1 if outcome == "build_skb" else 2, bytes_copied=copied, frags=skb.nr_frags
        ),
    )


def _ewma_before(s: VirtioRxSetup) -> int:
    return s.frame_len if s.ewma is None else s.ewma


def _posted_len(k: KernelProfile, s: VirtioRxSetup, log: StepLog, big_packets: bool) -> int:
    assert s.hdr_len is not None
    # dev->max_mtu is the device's MTU with VIRTIO_NET_F_MTU (assumed negotiated when --mtu is
    # not 1500), else MAX_MTU.
    max_mtu = s.mtu if s.mtu != bufs.ETH_DATA_LEN else bufs.MAX_MTU
    min_buf_len = bufs.mergeable_min_buf_len(k, s.hdr_len, big_packets, max_mtu, s.ring_size)
    ewma = _ewma_before(s)
    buf_len = bufs.get_mergeable_buf_len(k, s.hdr_len, ewma, min_buf_len)
    if s.ewma is None:
        log.note(
            f"mergeable buffers sized for a steady stream of {s.frame_len}-byte frames "
            f"(ewma_pkt_len = {ewma}); set --ewma or --buf-len for another history"
        )
    log.add(
        SRC,
        "get_mergeable_buf_len",
        f"ALIGN(hdr_len + clamp(ewma {ewma}, min_buf_len {min_buf_len}, PAGE_SIZE - hdr_len), "
        f"L1_CACHE_BYTES) = {buf_len}",
        k.present(PADDED_VNET_HDR_V1_HASH),
        ewma=ewma,
        min_buf_len=min_buf_len,
        hdr_len=bufs.mergeable_hdr_len(k, s.hdr_len),
        L1_CACHE_BYTES=k.build.l1_cache_bytes,
        len=buf_len,
    )
    return buf_len


def _append_buffer(k: KernelProfile, log: StepLog, skb: Skb, buf: Buffer, used: int) -> Skb:
    """receive_mergeable's loop body (virtnet_skb_append_frag from 6.5): coalesce or add a frag."""
    last = skb.frags[-1] if skb.frags else None
    if last is not None and last.page == buf.page and last.offset + last.size == buf.page_offset:
        log.add(
            SRC,
            "receive_mergeable",
            f"buffer at {buf.page}+{buf.page_offset} continues frag "
            f"{skb.nr_frags - 1}: skb_coalesce_rx_frag grows it by {used}",
            offset=buf.page_offset,
            len=used,
            truesize=buf.size,
        )
        return skb_coalesce_rx_frag(skb, used, buf.size)
    if skb.nr_frags >= k.build.max_skb_frags:
        raise UnsupportedError(
            "this frame needs a frag_list skb (more than MAX_SKB_FRAGS "
            "frags), which vnetrx does not model yet"
        )
    log.add(
        SRC,
        "receive_mergeable",
        f"buffer at {buf.page}+{buf.page_offset} becomes frag {skb.nr_frags} (skb_add_rx_frag)",
        offset=buf.page_offset,
        len=used,
        truesize=buf.size,
    )
    return skb_add_rx_frag(skb, Frag(buf.page, buf.page_offset, used, buf.size))


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
