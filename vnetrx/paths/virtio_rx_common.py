"""What the three receive modes share in ``virtio_rx_plan``: the ``Plan`` a frame gets, a drop,
and page_to_skb's two ways to an skb head (build_skb around the buffer, or a napi copy)."""

from __future__ import annotations

from typing import NamedTuple

from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths.skbuff import ETH_HLEN
from vnetrx.paths.virtio_rx_setup import Config, PostedBuffer


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


def drop(
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


def built(
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


def build_or_copy(c: Config, frame: int, truesize: int, hp: int) -> tuple[bool, int | None]:
    """page_to_skb: build_skb when NET_IP_ALIGN == 0, len > GOOD_COPY_LEN and the buffer's
    tailroom (truesize - headroom - hdr_padded_len - len) holds skb_shared_info (5.13+)."""
    if not c.build_skb_path:
        return False, None
    tailroom = truesize - hp - frame
    return (
        c.net_ip_align == 0 and frame > bufs.GOOD_COPY_LEN and tailroom >= c.shinfo_size
    ), tailroom


def napi_copy(c: Config, frame: int) -> tuple[int, int, int, int]:
    """napi_alloc_skb(GOOD_COPY_LEN) + the copy: (copy, end, data, truesize of the head)."""
    head = c.napi_head
    end = head.size - c.shinfo_size
    tailroom = end - c.napi_reserve
    # "Do not pull payload in skb->head" (0f6925b3e8da): the whole frame if it fits, else ETH_HLEN
    copy = frame if frame <= tailroom else ETH_HLEN
    return copy, end, c.napi_reserve, head.truesize
