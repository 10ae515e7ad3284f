"""What drivers/net/virtio_net.c's receive functions share, narrated: receive_buf's short-packet
guard, page_to_skb, the oversized-frame drop, buffer maps and the skb record built from a plan.
Used by virtio_net_small/_big/_mergeable; the decisions and numbers come from virtio_rx_plan."""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.kernel.changes import (
    PAGE_TO_SKB_BUILD_SKB,
    VIRTIO_RX_PAGE_POOL,
    Change,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer, Cost, Frag, FragListSkb, Region, Skb
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths import virtio_rx_plan as plans
from vnetrx.paths.skbuff import ETH_HLEN
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_rx_plan import VirtioRxSetup

SRC = "drivers/net/virtio_net.c"
RING_SRC = "drivers/virtio/virtio_ring.c"


@dataclass(frozen=True)
class RxResult:
    path: str
    outcome: str
    reason: str | None
    buffer: Buffer | None
    buffers: tuple[Buffer, ...]
    skb: Skb | None  # as receive_*() returns it (before eth_type_trans)
    cost: Cost | None


def short_packet(s: VirtioRxSetup, p: plans.Plan, log: StepLog) -> bool:
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


def regions(*parts: tuple[str, int, str]) -> tuple[Region, ...]:
    """Lay named sizes end to end from offset 0, dropping empty ones."""
    out, offset = [], 0
    for name, size, note in parts:
        if size > 0:
            out.append(Region(name, offset, size, note))
        offset += max(size, 0)
    return tuple(out)


def drop(path: str, reason: str, buffer: Buffer, buffers: tuple[Buffer, ...] = ()) -> RxResult:
    return RxResult(path, "drop", reason, buffer, buffers or (buffer,), None, None)


def skb(
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


def cost(p: plans.Plan) -> Cost:
    # build_skb allocates the sk_buff only; the copy path also allocates a head
    return Cost(
        allocations=1 if p.outcome == "build_skb" else 2, bytes_copied=p.copy, frags=len(p.frags)
    )


def oversized(
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
        return drop(path, reason, buffer)
    log.add(
        SRC,
        function,
        f"{k.name} has no length check here: a device that reported this "
        "length would make the driver overrun the buffer; vnetrx stops",
        len=frame,
    )
    return drop(path, "exceeds_buffer", buffer)


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


def used_regions(
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
        return regions(
            *lead,
            ("frame", frame_bytes, "the skb's linear data"),
            ("tailroom", size - used - sh, "skb tailroom"),
            ("skb_shared_info", sh, "written by build_skb at skb->end"),
        )
    if outcome == "copy":
        released = copied == frame_bytes
        return regions(
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
    return regions(*lead, ("frame", frame_bytes, ""), ("unused", size - used, ""))


def allocator(k: KernelProfile) -> str:
    if k.has(VIRTIO_RX_PAGE_POOL):
        return f"page_pool ({k.build.page_size // 1024} KiB order-0 pages)"
    start = bufs.page_frag_start(k)
    return f"page_frag ({bufs.page_frag_size(k) // 1024} KiB pages" + (
        f", the first {start} bytes of each holding struct virtnet_rq_dma)" if start else ")"
    )


def page_label(k: KernelProfile, index: int) -> str:
    """Names backing pages: frag<N> for page_frag pages, pool<N> for page_pool pages."""
    return f"pool{index}" if k.has(VIRTIO_RX_PAGE_POOL) else f"frag{index}"


def lengths(posted: tuple[bufs.PostedBuffer, ...]) -> str:
    """``3×1536 2048 2×1536``: buffer lengths, runs folded."""
    parts: list[list[int]] = []
    for buf in posted:
        if parts and parts[-1][0] == buf.len:
            parts[-1][1] += 1
        else:
            parts.append([buf.len, 1])
    return " ".join(f"{n}×{length}" if n > 1 else str(length) for length, n in parts)
