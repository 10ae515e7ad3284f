"""Mergeable mode in ``virtio_rx_plan``: add_recvbuf_mergeable's buffers (carved from a fresh
page, or handed over by a ring model) and receive_mergeable's skb: page_to_skb on the first
buffer, then one frag (or a coalesced one) per further buffer, frag_list skbs past
MAX_SKB_FRAGS."""

from __future__ import annotations

from bisect import bisect_left
from itertools import islice
from typing import NamedTuple

from vnetrx.errors import InputError
from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths.skbuff import ETH_HLEN
from vnetrx.paths.virtio_rx_common import Plan, build_or_copy, drop, napi_copy
from vnetrx.paths.virtio_rx_setup import MAX_FRAME_LEN, Carved, Config, PostedBuffer

Frag = tuple[int, int, int, int]  # (buffer index, offset in its page, size, truesize added)


def carved_info(buffers: tuple[PostedBuffer, ...]) -> Carved:
    prefix, run = [0], [0]
    for i, buf in enumerate(buffers):
        prefix.append(prefix[-1] + buf.len)
        if i:
            prev = buffers[i - 1]
            contiguous = prev.frag_index == buf.frag_index and prev.offset + prev.len == buf.offset
            run.append(run[-1] + (0 if contiguous else 1))
    return Carved(buffers, tuple(prefix), tuple(run))


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
    count = _buffers_needed(info, total)
    posted = info.buffers[:count]
    first = posted[0]
    used0 = min(first.len, total)
    if frame < ETH_HLEN:
        return drop("short_packet", buf_len, posted, _used(info, count, total))
    frame0 = used0 - c.hdr_len
    outcome, tailroom, copy, head_size, end, data, tail, head_truesize = _page_to_skb(
        c, first.len, frame0
    )
    frag0 = outcome == "copy" and frame0 > copy  # the rest of the first buffer stays as frag 0
    truesize = head_truesize + (first.len if frag0 else 0)
    nr_frags, later = _count_frags(info, count, frag0)
    truesize += later
    frags: tuple[Frag, ...] = ()
    coalesced: tuple[bool, ...] = ()
    used: tuple[int, ...] = ()
    chained: tuple[tuple[Frag, ...], ...] = ()
    starts: tuple[int, ...] = ()
    frag_list_skbs = 0
    # Past MAX_SKB_FRAGS frags the kernel chains frag_list skbs; the runs above cannot see that,
    # so walk the buffers whenever the head could fill up (and always for the narration).
    if detail or nr_frags >= c.max_skb_frags:
        used = _used(info, count, total)
        span0 = (first.offset + c.mrg_hdr_len + copy, frame0 - copy) if frag0 else None
        walked = _walk_frags(posted, used, span0, c.max_skb_frags)
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


def _buffers_needed(info: Carved, total: int) -> int:
    """The fewest buffers holding ``total`` bytes (the header and the frame)."""
    count = bisect_left(info.prefix, total)
    if count >= len(info.prefix):
        have = info.prefix[-1]
        raise InputError(
            f"the {len(info.buffers)} posted buffer(s) hold {have} bytes; the frame needs {total}"
        )
    return count


# The skb head page_to_skb makes of the first buffer: outcome ("build_skb" | "copy"), tailroom,
# copy, head_size, end, data, tail, and the truesize of the head alone (frag 0, when the copy
# leaves one, is added by the caller). A plain tuple: this runs once per frame in a sweep.
_Head = tuple[str, "int | None", int, int, int, int, int, int]


def _page_to_skb(c: Config, first_len: int, frame0: int) -> _Head:
    """page_to_skb on the first buffer: build_skb around it, or napi_alloc_skb and a copy."""
    hp = c.mrg_hdr_len
    build, tailroom = build_or_copy(c, frame0, first_len, hp)
    if build:
        end, truesize = first_len - c.shinfo_size, first_len + c.sk_buff_aligned
        return ("build_skb", tailroom, 0, first_len, end, hp, hp + frame0, truesize)
    copy, end, data, truesize = napi_copy(c, frame0)
    return ("copy", tailroom, copy, c.napi_head.size, end, data, data + copy, truesize)


def _count_frags(info: Carved, count: int, frag0: bool) -> tuple[int, int]:
    """The head skb's frags counted by contiguity runs (no frag_list), and the truesize the
    buffers after the first add: (nr_frags, truesize)."""
    if count <= 1:
        return int(frag0), 0
    later_runs = info.run[count - 1] - info.run[1] + 1
    joins_frag0 = frag0 and info.run[1] == info.run[0]
    nr_frags = later_runs + (int(frag0) if not joins_frag0 else 0)
    return nr_frags, info.prefix[count] - info.prefix[1]


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
