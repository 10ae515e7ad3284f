"""The arithmetic of drivers/net/virtio_net.c's receive path, without narration.

``config()`` computes what depends only on the kernel and the negotiated setup (buffer sizes, the
napi copy head, which checks exist) once; ``plan()`` then decides one frame with a few
comparisons and additions and returns plain numbers. The narrated engine (``virtio_net.py``)
reads every number it prints from a plan, and ``vnetrx sweep`` uses plans alone, so the kernel's
decisions are written once. Sources: ../shared/reference/virtio-rx.md §5-§9, appendix A; the
citations are on the narrated steps.

This module plans small and big mode and dispatches; the setup and its checks are in
``virtio_rx_setup``, the ``Plan`` and page_to_skb's head helpers in ``virtio_rx_common``,
mergeable mode in ``virtio_rx_mergeable``. Every name is re-exported here.
"""

from __future__ import annotations

from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths.skbuff import ETH_HLEN
from vnetrx.paths.virtio_rx_common import Plan, build_or_copy, built, drop, napi_copy
from vnetrx.paths.virtio_rx_mergeable import (
    Walked,
    carved_info,
    mergeable_buf_len,
    plan_mergeable,
)
from vnetrx.paths.virtio_rx_setup import (
    MAX_FRAME_LEN,
    Carved,
    Config,
    PostedBuffer,
    VirtioRxSetup,
    config,
    resolve,
)

__all__ = [
    "MAX_FRAME_LEN",
    "Carved",
    "Config",
    "Plan",
    "PostedBuffer",
    "VirtioRxSetup",
    "Walked",
    "carved_info",
    "config",
    "mergeable_buf_len",
    "plan",
    "plan_big",
    "plan_mergeable",
    "plan_small",
    "resolve",
]


def plan(k: KernelProfile, c: Config, frame: int, detail: bool = True) -> Plan:
    """One frame's plan; ``detail=False`` skips what only the narration needs (sweeps)."""
    if c.mode == "small":
        return plan_small(k, c, frame)
    if c.mode == "big":
        return plan_big(c, frame, detail)
    return plan_mergeable(k, c, frame, detail)


def plan_small(k: KernelProfile, c: Config, frame: int) -> Plan:
    """add_recvbuf_small + receive_small: build_skb() around the buffer in every version."""
    posted = c.small_posted
    assert posted is not None
    if frame > bufs.GOOD_PACKET_LEN:
        return drop(
            "len_exceeds_max_size" if c.small_len_check else "exceeds_buffer",
            posted.len,
            (posted,),
            (c.hdr_len,),
        )
    if frame < ETH_HLEN:  # receive_buf: len < hdr_len + ETH_HLEN
        return drop("short_packet", posted.len, (posted,), (c.hdr_len + frame,))
    headroom = c.small_pad + c.hdr_len
    if c.buflen_from_ctx:  # 7.x: the ctx truesize, i.e. the page_pool allocation
        buflen = posted.len
    else:  # SKB_DATA_ALIGN(GOOD_PACKET_LEN + headroom) + shinfo
        buflen = k.skb_data_align(bufs.GOOD_PACKET_LEN + headroom) + c.shinfo_size
    return built(
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


def plan_big(c: Config, frame: int, detail: bool = True) -> Plan:
    """add_recvbuf_big + receive_big + page_to_skb with truesize PAGE_SIZE per page. Without
    ``detail`` (sweeps) the frags are counted, not listed."""
    page, hp = c.page_size, c.big_padded
    if frame > c.big_capacity:
        return drop("len_exceeds_allocated_size" if c.big_len_check else "exceeds_buffer", page)
    if frame < ETH_HLEN:
        return drop("short_packet", page)
    build, tailroom = build_or_copy(c, frame, page, hp)
    if build:
        return built(
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
    copy, end, data, truesize = napi_copy(c, frame)
    rest, offset = frame - copy, hp + copy
    frags: list[tuple[int, int, int, int]] = []
    if detail:
        while rest:  # the rest of page 0 after the copy, then whole pages of the chain
            size = min(page - offset, rest)
            frags.append((len(frags), offset, size, page))
            rest, offset = rest - size, 0
        nr_frags = len(frags)
    else:
        first = min(page - offset, rest)
        nr_frags = (1 + -(-(rest - first) // page)) if rest else 0
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
        truesize=truesize + page * nr_frags,
        frags=tuple(frags),
        coalesced=(),
        pages_used=max(1, nr_frags),
        nr_frags=nr_frags,
    )
