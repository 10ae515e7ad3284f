"""drivers/net/virtio_net.c, small mode (no MRG_RXBUF, no big packets): add_recvbuf_small posts
one GOOD_PACKET_LEN buffer per descriptor; receive_small wraps it with build_skb() in every
version. The plan and its narration side by side. Facts: docs/kernel/virtio-net-rx.md §5.2, §7.
"""

from __future__ import annotations

from typing import Final

from vnetrx.kernel.changes import RX_PREMAPPED_BY_DEFAULT, SMALL_USED_LEN_CHECK, VIRTIO_RX_PAGE_POOL
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.model import Buffer
from vnetrx.paths.maps import regions
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net.buffers import PostedBuffer
from vnetrx.paths.virtio_net.page_to_skb import built
from vnetrx.paths.virtio_net.plan import Drop, Plan, dropped
from vnetrx.paths.virtio_net.setup import Config
from vnetrx.paths.virtio_net.virtqueue import narrate_too_long as _too_long

SRC: Final = "drivers/net/virtio_net.c"
PATH: Final = "virtio-small"


def plan_small(c: Config, frame: int, detail: bool = True) -> Plan:  # noqa: ARG001
    """add_recvbuf_small + receive_small (``detail`` changes nothing: no frags)."""
    assert c.small_posted is not None
    return plan_on(c, frame, c.small_posted)


def plan_on(c: Config, frame: int, posted: PostedBuffer) -> Plan:
    """receive_small on the posted buffer ``posted`` (a ring model's: vnetrx replay)."""
    if frame > c.good_packet_len:  # receive_small: len > GOOD_PACKET_LEN (ad993a95c508, 5.14)
        reason = Drop.LEN_EXCEEDS_MAX_SIZE if c.small_len_check else Drop.EXCEEDS_BUFFER
        return dropped(reason, posted.len, (posted,), (c.hdr_len,))
    if frame < ETH_HLEN:  # receive_buf: len < hdr_len + ETH_HLEN
        return dropped(Drop.SHORT_PACKET, posted.len, (posted,), (c.hdr_len + frame,))
    # receive_small's buflen: SKB_DATA_ALIGN(GOOD_PACKET_LEN + header offset + hdr_len) + shinfo,
    # the length add_recvbuf_small asked for; 7.x: the ctx truesize, i.e. the page_pool
    # allocation (which may be larger)
    buflen = posted.len if c.buflen_from_ctx else c.small_bufsize
    return built(
        c,
        frag_size=buflen,
        reserve=c.small_pad + c.hdr_len,
        frame=frame,
        buffers=(posted,),
        used=(c.hdr_len + frame,),
    )


def narrate_posting(c: Config, p: Plan, frame: int, log: StepLog) -> Buffer:
    """add_recvbuf_small's step, and the buffer's map after the device wrote into it."""
    posted = c.small_posted
    assert posted is not None
    hdr, pad, sh = c.hdr_len, c.small_pad, c.shinfo_size
    log.add(
        SRC,
        "add_recvbuf_small",
        f"post {c.small_bufsize}-byte buffers from the rx {c.alloc.describe()}; buffer "
        f"{c.buffer_index} is at {c.alloc.label(posted.frag_index)} + {posted.offset}, "
        f"{posted.len} bytes; the device may write hdr_len + GOOD_PACKET_LEN = "
        f"{hdr + c.good_packet_len} bytes at offset {pad}",
        c.cite(VIRTIO_RX_PAGE_POOL, RX_PREMAPPED_BY_DEFAULT),
        bufsize=c.small_bufsize,
        alloc_len=posted.len,
        VIRTNET_RX_PAD=pad,
        hdr_len=hdr,
        GOOD_PACKET_LEN=c.good_packet_len,
        shinfo_size=sh,
        page_offset=posted.offset,
    )
    too_long = p.reason in (Drop.LEN_EXCEEDS_MAX_SIZE, Drop.EXCEEDS_BUFFER)
    bufsize = posted.len  # 7.x: page_pool_alloc_va may have grown it
    room = bufsize - sh - pad - hdr
    written = c.good_packet_len if too_long else frame
    return Buffer(
        bufsize,
        c.alloc.label(posted.frag_index),
        posted.offset,
        hdr + (0 if too_long else frame),
        regions(
            ("headroom", pad, "VIRTNET_RX_PAD"),
            ("vnet_hdr", hdr, ""),
            ("rx space", c.good_packet_len, "frame does not fit")
            if too_long
            else ("frame", frame, ""),
            ("tailroom", room - written, ""),
            ("skb_shared_info", sh, "reserved at bufsize - shinfo"),
        ),
    )


def narrate_too_long(c: Config, p: Plan, frame: int, log: StepLog) -> None:
    """receive_small's length check (or its absence before 5.14)."""
    _too_long(
        c,
        p,
        log,
        frame,
        c.good_packet_len,
        "receive_small",
        SMALL_USED_LEN_CHECK,
        # pr_debug("%s: rx error: len %u exceeds max size %d\n", ...): len without the header
        f"'rx error: len {frame} exceeds max size {c.good_packet_len}' (pr_debug); "
        "rx_length_errors++, drops++",
    )


def narrate_len_check(c: Config, frame: int, log: StepLog) -> None:
    """receive_small's length check, when the kernel has it (it passed)."""
    if c.small_len_check:
        log.add(
            SRC,
            "receive_small",
            "length check passes: len <= GOOD_PACKET_LEN",
            c.cite(SMALL_USED_LEN_CHECK),
            len=frame,
            GOOD_PACKET_LEN=c.good_packet_len,
        )


def narrate_receive(c: Config, p: Plan, frame: int, log: StepLog) -> None:
    """receive_small: the length check passes, then build_skb around the buffer."""
    narrate_len_check(c, frame, log)
    log.add(
        SRC,
        "receive_small",
        f"build_skb(buf, {p.head_size}) around the rx buffer, skb_reserve({p.data}), "
        f"skb_put({frame}); copy the {c.hdr_len}-byte header into skb->cb",
        c.cite(VIRTIO_RX_PAGE_POOL),  # 7.x: buflen is the ctx truesize
        buflen=p.head_size,
        headroom=p.data,
        truesize=p.truesize,
        end=p.end,
    )
