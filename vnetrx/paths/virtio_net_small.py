"""Mirrors drivers/net/virtio_net.c: add_recvbuf_small + receive_small (build_skb around the\nrx buffer in every version), narrated from virtio_rx_plan."""

from __future__ import annotations

from vnetrx.kernel.changes import (
    RX_PREMAPPED_BY_DEFAULT,
    SMALL_USED_LEN_CHECK,
    VIRTIO_RX_PAGE_POOL,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths import virtio_rx_plan as plans
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net_common import (
    SRC,
    RxResult,
    allocator,
    cost,
    drop,
    oversized,
    page_label,
    regions,
    short_packet,
    skb,
)
from vnetrx.paths.virtio_rx_plan import VirtioRxSetup


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
        f"post {c.small_bufsize}-byte buffers from the rx {allocator(k)}; buffer "
        f"{s.buffer_index} is at {page_label(k, posted.frag_index)} + {posted.offset}, "
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
    too_long = p.reason in ("len_exceeds_max_size", "exceeds_buffer")
    bufsize = posted.len  # 7.x: page_pool_alloc_va may have grown it
    room = bufsize - sh - pad - hdr
    frame_part = (
        ("rx space", bufs.GOOD_PACKET_LEN, "frame does not fit")
        if too_long
        else ("frame", frame, "")
    )
    written = bufs.GOOD_PACKET_LEN if too_long else frame
    buffer = Buffer(
        bufsize,
        page_label(k, posted.frag_index),
        posted.offset,
        hdr + (0 if too_long else frame),
        regions(
            ("headroom", pad, "VIRTNET_RX_PAD"),
            ("vnet_hdr", hdr, ""),
            frame_part,
            ("tailroom", room - written, ""),
            ("skb_shared_info", sh, "reserved at bufsize - shinfo"),
        ),
    )
    if too_long:
        return oversized(
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
    if short_packet(s, p, log):
        return drop("virtio-small", "short_packet", buffer)
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
    return RxResult("virtio-small", "build_skb", None, buffer, (buffer,), skb(c, p, ()), cost(p))
