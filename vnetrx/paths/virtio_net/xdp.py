"""drivers/net/virtio_net.c with an XDP program attached: the buffers add_recvbuf_small and
add_recvbuf_mergeable post while vi->xdp_enabled, receive_small's XDP branch
(receive_small_xdp from 6.5), receive_mergeable's (inline up to 6.2, with xdp_linearize_page and
page_to_skb; from 6.3 receive_mergeable_xdp → mergeable_xdp_get_buf →
virtnet_build_xdp_buff_mrg → build_skb_from_xdp_buff), virtnet_xdp_handler's verdicts
(inline up to 6.4) and the queue counters they move.

Read @5.15.215, @6.1.192, @6.2.12, @6.6.150, @6.12.117, @6.18.9 and, for the page_pool buffers
(VIRTIO_RX_PAGE_POOL), @7.1.5, @7.2.12, @7.3.4 (the same functions); the arithmetic with its
sources is docs/kernel/xdp-source-notes.md §A.2-§A.5 and §A.6. Big mode has no XDP hook (receive_big, every
version): receive_buf.py says so and takes the ordinary path.

Modelled: buffers posted after the attach (the ring refilled with the XDP geometry; a ring
model, vnetrx replay, hands over the slots it posted as ``Config.given``); a
``redirect`` program calls bpf_redirect() to the device itself, so the frame leaves through
virtnet_xdp_xmit like XDP_TX (a cpumap or another device is not modelled); the send queue has
room. Buffers posted before the attach (headroom 0: xdp_linearize_page copies every frame) are
not modelled.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import islice
from typing import Final

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.changes import (
    MERGEABLE_LEN_CHECK,
    VIRTIO_RECEIVE_XDP_SPLIT,
    VIRTIO_RX_PAGE_POOL,
    VIRTIO_XDP_MULTI_BUF,
    VIRTIO_XDP_NEEDS_CSUM_DROP,
    Change,
)
from vnetrx.model import DRIVER_COUNTERS, Buffer, XdpRun
from vnetrx.paths.maps import regions
from vnetrx.paths.reason import Reason
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net import buffers as bufs
from vnetrx.paths.virtio_net import page_to_skb as p2s
from vnetrx.paths.virtio_net.buffers import PostedBuffer
from vnetrx.paths.virtio_net.page_to_skb import Build
from vnetrx.paths.virtio_net.plan import Plan, PlanFrag
from vnetrx.paths.virtio_net.setup import MAX_FRAME_LEN, Config
from vnetrx.paths.virtio_net.xdp_config import XdpConfig
from vnetrx.paths.virtio_net_hdr import DATA_VALID, VnetHdr
from vnetrx.paths.xdp import FILTER_SRC, VERDICT, Adjusted, adjust, narrate_helpers
from vnetrx.records import NamedTuple
from vnetrx.values import Value

SRC: Final = "drivers/net/virtio_net.c"
NEEDS_CSUM: Final = 1  # VIRTIO_NET_HDR_F_NEEDS_CSUM


class Buff(NamedTuple):
    """An xdp_buff, offsets from the slot start: data_hard_start, data, data_end, frame_sz,
    xdp_data_hard_end."""

    hard_start: int
    data: int
    data_end: int
    frame_sz: int
    hard_end: int


class XdpReason(Reason):
    """Why the XDP path dropped a frame the program did not drop itself (the JSON ``reason``),
    or refused the program."""

    GSO_TYPE = "xdp_gso_type"  # hdr->hdr.gso_type != 0: every version
    NEEDS_CSUM = "xdp_needs_csum"  # VIRTIO_NET_HDR_F_NEEDS_CSUM: 6.10, 6.6.36
    LINEARIZE = "xdp_linearize"  # xdp_linearize_page: the frame does not fit one page
    LEN_CHECK = "xdp_len_check"  # xdp_linearize_page's check_mergeable_len: rx_length_errors
    TOO_MANY_BUFFERS = "xdp_too_many_buffers"  # > MAX_SKB_FRAGS + 1 buffers (6.3+ frags)
    REDIRECT_FAILED = "xdp_redirect_failed"  # xdp_do_redirect failed: XDP_DROP
    TX_FAILED = "xdp_tx_failed"  # the xdp_frame could not be sent (send queue's xdp_tx_drops)
    ATTACH_REFUSED = "xdp_attach_refused"  # virtnet_xdp_set refused the program


REFUSED: Final = {"gso_type": XdpReason.GSO_TYPE, "needs_csum": XdpReason.NEEDS_CSUM,
           "linearize": XdpReason.LINEARIZE, "len_check": XdpReason.LEN_CHECK,
           "too_many_buffers": XdpReason.TOO_MANY_BUFFERS}


def reason_of(run: XdpRun) -> XdpReason | None:
    """A consumed frame's reason: the driver's refusal, a failed redirect or transmit; None
    when the program itself dropped it or the frame left."""
    if run.refused is not None:
        return REFUSED[run.refused]
    return {"redirect_failed": XdpReason.REDIRECT_FAILED,
            "tx_failed": XdpReason.TX_FAILED}.get(run.result)


def outcome_of(run: XdpRun) -> str:
    """The trace outcome of a frame the program (or the driver before it) consumed."""
    return "xdp_drop" if run.result in ("drop", "redirect_failed", "tx_failed") else \
        f"xdp_{run.result}"


class Verdict(Value):
    """virtnet_xdp_handler's answer: the result, the xdp_buff as the program left it, the
    queue counters and, for a frame sent, what the device reads."""

    __slots__ = ("buff", "counters", "errno", "helpers", "meta_len", "read_hdr", "read_len",
                 "result", "total", "tx_bytes", "tx_packets", "xdpf_headroom")
    _names = ("result", "errno", "buff", "counters", "read_len", "read_hdr", "tx_packets",
              "tx_bytes", "meta_len", "helpers", "total", "xdpf_headroom")

    def __init__(self, result: str, errno: str | None, buff: Buff,
                 counters: tuple[tuple[str, int], ...], read_len: int | None = None,
                 read_hdr: str | None = None, tx_packets: int = 0, tx_bytes: int = 0,
                 meta_len: int = 0, helpers: Adjusted | None = None, total: int = 0,
                 xdpf_headroom: int = 0) -> None:
        self.result: Final = result
        self.errno: Final = errno
        self.buff: Final = buff
        self.counters: Final = counters
        self.read_len: Final = read_len
        self.read_hdr: Final = read_hdr
        self.tx_packets: Final = tx_packets
        self.tx_bytes: Final = tx_bytes
        self.meta_len: Final = meta_len  # data - data_meta after the program
        self.helpers: Final = helpers  # the program's helper calls (None: it did not run)
        self.total: Final = total  # the frame's bytes after the program, frags included
        # xdp_frame->headroom of a frame sent or redirected
        self.xdpf_headroom: Final = xdpf_headroom

    def _values(self) -> tuple[object, ...]:
        return (self.result, self.errno, self.buff, self.counters, self.read_len, self.read_hdr,
                self.tx_packets, self.tx_bytes, self.meta_len, self.helpers, self.total,
                self.xdpf_headroom)


class Linearized(Value):
    """xdp_linearize_page's answer for a program without frags: the buffers copied into one
    new page, or where and why it gave up."""

    __slots__ = ("at", "copied", "length", "limit", "page_off", "refused")
    _names = ("refused", "copied", "at", "length", "limit", "page_off")

    def __init__(self, refused: str | None, copied: int, at: int, length: int, limit: int,
                 page_off: int) -> None:
        self.refused: Final = refused  # "len_check" | "linearize"; None: copied
        self.copied: Final = copied  # bytes in the new page
        self.at: Final = at  # the buffer it stopped at (a refusal)
        self.length: Final = length  # that buffer's length
        self.limit: Final = limit  # check_mergeable_len's limit for it
        self.page_off: Final = page_off  # where it would have gone in the new page

    def _values(self) -> tuple[object, ...]:
        return (self.refused, self.copied, self.at, self.length, self.limit, self.page_off)


class XdpFrame(Value):
    """One frame through the XDP branch, decided: the driver's checks before the program, the
    xdp_buff, the program's verdict and the skb XDP_PASS builds (as a ``Plan``, delivered by
    receive_buf like any other)."""

    __slots__ = ("buff", "buflen", "copied", "first_copy", "frags", "frags_truesize", "frame",
                 "hdr", "linearized", "num_buffers", "plan", "refused", "run", "used", "verdict")
    _names = ("frame", "run", "plan", "hdr", "refused", "copied", "buff", "verdict", "buflen",
              "used", "num_buffers", "first_copy", "linearized", "frags", "frags_truesize")

    def __init__(self, frame: int, run: XdpRun, plan: Plan | None, hdr: VnetHdr,
                 refused: str | None, copied: int, buff: Buff, verdict: Verdict | None,
                 buflen: int = 0, used: tuple[int, ...] = (), num_buffers: int = 0,
                 first_copy: bool | None = None, linearized: Linearized | None = None,
                 frags: tuple[PlanFrag, ...] = (), frags_truesize: int = 0) -> None:
        self.frame: Final = frame
        self.run: Final = run
        # XDP_PASS: the skb receive_*() returns; None: the frame was consumed
        self.plan: Final = plan
        # what virtnet_receive_done reads: the skb's zeroed cb (+ saved DATA_VALID)
        self.hdr: Final = hdr
        self.refused: Final = refused  # the driver dropped the frame before the program ran
        self.copied: Final = copied  # bytes copied into a new page before the program
        self.buff: Final = buff  # the xdp_buff as xdp_prepare_buff made it
        self.verdict: Final = verdict  # None: refused
        self.buflen: Final = buflen  # small mode: receive_small's buflen
        self.used: Final = used  # mergeable: what the device wrote into each buffer
        # mergeable: buffers in the xdp_buff (1 after a linearisation)
        self.num_buffers: Final = num_buffers
        # 6.3+ frags program, old first buffer: copied / no room
        self.first_copy: Final = first_copy
        self.linearized: Final = linearized
        self.frags: Final = frags
        self.frags_truesize: Final = frags_truesize

    def _values(self) -> tuple[object, ...]:
        return (self.frame, self.run, self.plan, self.hdr, self.refused, self.copied, self.buff,
                self.verdict, self.buflen, self.used, self.num_buffers, self.first_copy,
                self.linearized, self.frags, self.frags_truesize)


class Received(NamedTuple):
    """One frame through the XDP branch, narrated: the decision and the buffers' maps."""

    run: XdpRun
    plan: Plan | None
    hdr: VnetHdr
    buffer: Buffer  # the first buffer's map
    buffers: tuple[Buffer, ...]


def _x(c: Config) -> XdpConfig:
    assert c.xdp is not None
    return c.xdp


def _function(c: Config) -> str:
    x = _x(c)
    if c.mode == "small":
        return "receive_small_xdp" if x.split else "receive_small"
    return "receive_mergeable_xdp" if x.split else "receive_mergeable"


# --- the buffers posted with a program attached -------------------------------------------


def small_slot(c: Config) -> PostedBuffer:
    """add_recvbuf_small with virtnet_get_headroom() = 256: ``buffer_index``'s slot of a fresh
    page, ctx = the headroom (and, with the page_pool, the allocation: page_pool_alloc_va gives
    a length whose double exceeds PAGE_SIZE a whole page)."""
    x = _x(c)
    if c.given:  # a ring model's (vnetrx replay)
        return c.given[0]
    return next(islice(bufs.carve_fresh(c.alloc, x.small_slot, False), c.buffer_index, None))


def small_buflen(c: Config, slot: PostedBuffer) -> int:
    """receive_small_xdp's buflen: SKB_DATA_ALIGN(GOOD_PACKET_LEN + headroom) + shinfo (the
    2176 asked for), or from the page_pool the ctx truesize (the whole page)."""
    return slot.len if c.buflen_from_ctx else _x(c).small_slot


def _device_len(c: Config, slot: PostedBuffer) -> int:
    """What the device may write into a mergeable slot: from slot + headroom, len (+ a hole
    absorbed up to 6.2)."""
    return slot.len - _x(c).mrg_room


def _ctx_truesize(c: Config, slot: PostedBuffer) -> int:
    """mergeable_len_to_ctx: len (+ hole) up to 6.2, len + room from 6.3."""
    return slot.len if _x(c).multi_buf else _device_len(c, slot)


# --- the shared parts ----------------------------------------------------------------------


def _refusal(c: Config, h: VnetHdr | None) -> str | None:
    """The header checks before the program (gso_type: every version; NEEDS_CSUM: 6.10,
    6.6.36)."""
    if h is not None and h.gso_type:
        return "gso_type"
    if h is not None and h.flags & NEEDS_CSUM and _x(c).needs_csum_drop:
        return "needs_csum"
    return None


def _counters(**moved: int) -> tuple[tuple[str, int], ...]:
    """The queue counters of one frame, named as ethtool -S totals name them (6.11+: rx_*, tx_*;
    per queue up to 6.10: rx_queue_0_*, tx_queue_0_*)."""
    return tuple((name, moved.get(name, 0)) for name in DRIVER_COUNTERS)


def _hdr_seen(c: Config, h: VnetHdr | None) -> VnetHdr:
    """The header virtnet_receive_done reads for an skb XDP_PASS built: skb->cb, which
    build_skb zeroed ("keep zeroed vnet hdr since XDP is loaded"), so no GSO, no checksum and a
    zero hash; 6.10/6.6.36+ read DATA_VALID from the flags receive_buf saved before."""
    keep = _x(c).needs_csum_drop and h is not None and bool(h.flags & DATA_VALID)
    return VnetHdr(DATA_VALID if keep else 0, 0, 0, 0, 0, 0,
                   hash_value=0 if c.rx_hash else None, hash_report=0 if c.rx_hash else None)


def _verdict(c: Config, b: Buff, frags_size: int) -> Verdict:
    """The program's helper calls, then virtnet_xdp_handler (inline up to 6.4) for a non-PASS
    verdict."""
    x = _x(c)
    base = b.hard_start  # the helpers count from data_hard_start
    done = adjust(x.frame_struct, x.adjust_head, x.adjust_tail, b.data - base,
                  b.data_end - base, b.hard_end - base, frags=frags_size > 0, meta=x.meta)
    b = b._replace(data=done.data + base, data_end=done.data_end + base)
    meta = done.meta_len
    total = b.data_end - b.data + frags_size
    ran = {"rx_xdp_packets": 1}
    if x.action == "pass":
        return Verdict("pass", None, b, _counters(**ran), meta_len=meta, helpers=done,
                       total=total)
    if x.action in ("drop", "aborted"):
        return Verdict("drop", None, b, _counters(**ran, rx_xdp_drops=1, rx_drops=1),
                       meta_len=meta, helpers=done, total=total)
    tx = x.action == "tx"
    counted = {"rx_xdp_tx": 1} if tx else {"rx_xdp_redirects": 1}
    if not tx and total > x.fwd_limit:
        return Verdict("redirect_failed", "EMSGSIZE", b,
                       _counters(**ran, **counted, rx_xdp_drops=1, rx_drops=1), meta_len=meta,
                       helpers=done, total=total)
    headroom = b.data - b.hard_start - x.frame_struct  # xdp_frame->headroom
    if headroom < c.hdr_len:
        return Verdict("tx_failed", "EOVERFLOW", b,
                       _counters(**ran, **counted, tx_xdp_tx=1, tx_xdp_tx_drops=1),
                       meta_len=meta, helpers=done, total=total, xdpf_headroom=headroom)
    sent = c.hdr_len + total
    return Verdict(x.action, None, b, _counters(**ran, **counted, tx_xdp_tx=1), sent,
                   bytes(c.hdr_len).hex(), 1, sent, meta, done, total, headroom)


def _run(c: Config, frame: int, v: Verdict, *, copied: int = 0, nr_frags: int = 0,
         frags_size: int = 0, refused: str | None = None) -> XdpRun:
    """The XdpRun of one frame: rx_packets/rx_bytes are the queue's packets/bytes (counted for
    every frame, XDP's included), rx_dropped its drops (rx_dropped in sysfs)."""
    x, b = _x(c), v.buff
    return XdpRun(
        VERDICT[x.action], "native", _function(c), b.data - b.hard_start, b.data_end - b.data,
        b.frame_sz, b.hard_end - b.data_end, result=v.result, errno=v.errno,
        read_len=v.read_len, read_hdr=v.read_hdr, rx_packets=1, rx_bytes=frame,
        rx_dropped=dict(v.counters).get("rx_drops", 0), tx_packets=v.tx_packets,
        tx_bytes=v.tx_bytes, copied=copied, nr_frags=nr_frags, frags_size=frags_size,
        ran=refused is None, refused=refused, driver=v.counters, meta_len=v.meta_len)


def _refused(c: Config, frame: int, b: Buff, h: VnetHdr | None, refused: str,
             copied: int = 0) -> tuple[XdpRun, VnetHdr]:
    """The run of a frame the driver dropped before the program: xdp_drops++, drops++."""
    v = Verdict("drop", None, b, _counters(rx_xdp_drops=1, rx_drops=1))
    return _run(c, frame, v, copied=copied, refused=refused), _hdr_seen(c, h)


# --- small mode -------------------------------------------------------------------------------


def small_frame(c: Config, frame: int) -> XdpFrame:
    """receive_small's XDP branch (receive_small_xdp 6.5+) on a slot posted with XDP headroom
    (or, posted before the attach, copied by xdp_linearize_page into a fresh page)."""
    x = _x(c)
    slot = c.small_posted if x.posted_before else small_slot(c)
    assert slot is not None
    # an old buffer is copied into a fresh page, whose buflen is the formula (7.x too)
    buflen = x.small_slot if x.posted_before else small_buflen(c, slot)
    pad, hdr, h = c.small_pad, c.hdr_len, c.hdr
    hard_start = pad + hdr
    b = Buff(hard_start, hard_start + x.headroom, hard_start + x.headroom + frame, buflen,
             hard_start + buflen - c.shinfo_size)
    refused = _refusal(c, h)
    if refused is not None:
        run, seen = _refused(c, frame, b, h, refused)
        return XdpFrame(frame, run, None, seen, refused, 0, b, None, buflen)
    copied = hdr + frame if x.posted_before else 0
    v = _verdict(c, b, 0)
    run = _run(c, frame, v, copied=copied)
    plan = None
    if v.result == "pass":
        after = v.buff
        length = after.data_end - after.data
        end = buflen - c.shinfo_size
        if after.data_end > end:
            # [calc] frame_sz counts from buf + VIRTNET_RX_PAD + hdr_len, skb->end from buf
            raise UnsupportedError(
                f"XDP_PASS of a frame the program grew to {length} bytes: build_skb(buf, "
                f"{buflen}) puts skb->end at +{end} but data_end is at +{after.data_end}, so "
                "skb_put() runs past the end and skb_over_panic() BUGs (read in the source, "
                f"never run; small mode's safe growth is "
                f"{end - after.data_end + (x.adjust_tail or 0)} bytes)")
        plan = p2s.built(c, frag_size=buflen, reserve=after.data, frame=length,
                         buffers=(slot,), used=(hdr + frame,))
    return XdpFrame(frame, run, plan, _hdr_seen(c, h), None, copied, b, v, buflen)


# --- mergeable mode ------------------------------------------------------------------------


def _slots_for(c: Config, frame: int) -> tuple[tuple[PostedBuffer, ...], tuple[int, ...]]:
    """The slots the device fills with hdr_len + frame bytes, and what it wrote into each."""
    x = _x(c)
    need = -(-(c.hdr_len + MAX_FRAME_LEN) // x.mrg_len) + 1
    slots, info = _posted(c.alloc, c.given, c.buffer_index, x.mrg_len, x.mrg_room,
                          x.multi_buf, need)
    total = c.hdr_len + frame
    count = bufs.num_buffers(info.prefix, total)
    if count is None:  # cannot happen: need covers MAX_FRAME_LEN
        raise InputError(f"{total} bytes do not fit the posted XDP buffers")
    used = bufs.used_lengths(info, count, total)
    return slots[:count], used


@lru_cache(maxsize=256)  # one per device in a sweep; a replay's given slots vary
def _posted(alloc: bufs.RxAllocator, given: tuple[PostedBuffer, ...], buffer_index: int,
            mrg_len: int, mrg_room: int, multi_buf: bool, count: int
            ) -> tuple[tuple[PostedBuffer, ...], bufs.Carved]:
    """add_recvbuf_mergeable with room: each buffer asks skb_page_frag_refill for len + room =
    PAGE_SIZE. Up to 6.2 a slot that leaves less than that in the page absorbs the hole (never on
    a fresh 32 KiB page); 6.3+ (484beac2ffc1) skips the hole instead. ``count`` slots, and the
    device's share of each."""
    if given:  # the slots a ring model posted (vnetrx replay)
        slots = given[:count]
    else:
        carve = bufs.carve_fresh(alloc, mrg_len + mrg_room, not multi_buf)
        slots = tuple(islice(carve, buffer_index, buffer_index + count))
    # _device_len: the slot less the room
    return slots, bufs.carved_info(tuple(PostedBuffer(s.frag_index, s.offset, s.len - mrg_room)
                                         for s in slots))


class Posting(Value):
    """The mergeable buffers a frame lands in with a program attached."""

    __slots__ = ("old", "slots", "used")
    _names = ("slots", "used", "old")

    def __init__(self, slots: tuple[PostedBuffer, ...], used: tuple[int, ...],
                 old: Plan | None) -> None:
        self.slots: Final = slots
        self.used: Final = used
        self.old: Final = old  # posted before the attach: mergeable.py's plan of those buffers

    def _values(self) -> tuple[object, ...]:
        return (self.slots, self.used, self.old)


def mergeable_posting(c: Config, frame: int) -> Posting:
    """add_recvbuf_mergeable with room (or, posted before the attach, the EWMA-sized buffers of
    mergeable.py with headroom 0), and what the device wrote into each."""
    if _x(c).posted_before:
        from vnetrx.paths.virtio_net import mergeable

        p = mergeable.plan_mergeable(c, frame)
        old = tuple(PostedBuffer(b.frag_index, b.offset, b.len) for b in p.buffers)
        return Posting(old, p.used, p)
    slots, used = _slots_for(c, frame)
    return Posting(slots, used, None)


def _slot_map(c: Config, slot: PostedBuffer, used: int, first: bool) -> Buffer:
    x = _x(c)
    dev = _device_len(c, slot)
    hdr = c.hdr_len if first else 0
    parts: list[tuple[str, int, str]] = [("xdp headroom", x.headroom, "XDP_PACKET_HEADROOM")]
    if first:
        parts.append(("vnet_hdr", hdr, ""))
    parts.append(("frame" if first else "frame (cont.)", used - hdr, ""))
    parts.append(("tailroom", dev - used, ""))
    parts.append(("skb_shared_info", x.mrg_room - x.headroom, "room for shinfo"))
    return Buffer(slot.len, c.alloc.label(slot.frag_index), slot.offset, used,
                  regions(*[p for p in parts if p[1] > 0]))


def mergeable_frame(c: Config, frame: int, slots: tuple[PostedBuffer, ...],
                    used: tuple[int, ...]) -> XdpFrame:
    """receive_mergeable's XDP branch (receive_mergeable_xdp 6.5+) on the buffers ``slots``."""
    x = _x(c)
    h = c.hdr
    hdr = c.hdr_len
    count = len(slots)
    if x.multi_buf:
        b = Buff(0, x.headroom + hdr, x.headroom + used[0], x.mrg_len + x.mrg_room,
                 x.mrg_len + x.mrg_room - c.shinfo_size)
    else:  # frame_sz PAGE_SIZE - hdr_len counted from buf + hdr_len
        b = Buff(hdr, x.headroom + hdr, x.headroom + used[0], c.page_size - hdr,
                 c.page_size - c.shinfo_size)
    refused = _refusal(c, h)
    copied = 0
    first_copy: bool | None = None
    lin = None
    first_only = x.posted_before and x.frags  # 6.3+ frags: only the first buffer is copied
    if refused is None and x.posted_before and first_only:
        first_copy = used[0] + x.mrg_room <= c.page_size
        if first_copy:
            copied = used[0]
        else:
            refused = "linearize"
    elif refused is None and (count > 1 or x.posted_before) and not x.frags:
        lin = _linearize(c, slots, used)
        refused, copied = lin.refused, lin.copied
        if refused is None:  # an old buffer (or chain) now in one fresh page
            count = 1
    if refused is None and count > x.max_buffers:
        refused = "too_many_buffers"
    if refused is not None:
        run, seen = _refused(c, frame, b, h, refused, copied)
        return XdpFrame(frame, run, None, seen, refused, copied, b, None, 0, used, count,
                        first_copy, lin)
    if x.posted_before:  # old buffers: no room, ctx truesize = the length; frags start at +0
        frags = tuple(PlanFrag(i, s.offset, u, s.len)
                      for i, (s, u) in enumerate(zip(slots[1:count], used[1:count],
                                                     strict=True), 1))
        frags_truesize = sum(s.len for s in slots[1:count])
    else:
        frags = tuple(PlanFrag(i, s.offset + x.headroom, u, s.len)
                      for i, (s, u) in enumerate(zip(slots[1:], used[1:], strict=True), 1))
        frags_truesize = sum(_ctx_truesize(c, s) for s in slots[1:])
    frags_size = sum(f.size for f in frags)
    prepared = b
    if x.posted_before:  # the copy is the xdp_buff's first buffer: all of it, hdr_len first
        b = b._replace(data_end=b.data + (sum(used) if count == 1 else used[0]) - hdr)
    v = _verdict(c, b, frags_size)
    run = _run(c, frame, v, copied=copied, nr_frags=len(frags), frags_size=frags_size)
    plan = None
    if v.result == "pass":
        device = (slots if x.posted_before else
                  tuple(PostedBuffer(s.frag_index, s.offset + x.headroom, _device_len(c, s))
                        for s in slots))
        if x.multi_buf:
            plan = _build_skb_from_xdp_buff(c, v.buff, device, used, frags, frags_truesize)
        else:
            plan = _page_to_skb(c, v.buff, device, used, v.meta_len)
    return XdpFrame(frame, run, plan, _hdr_seen(c, h), None, copied, prepared, v, 0, used,
                    count, first_copy, lin, frags, frags_truesize)


def _linearize(c: Config, slots: tuple[PostedBuffer, ...], used: tuple[int, ...]) -> Linearized:
    """xdp_linearize_page(page_off = 256) for a non-frags program and a frame over several
    buffers: one new page, the buffers copied after 256 bytes of headroom while
    page_off + len + SKB_DATA_ALIGN(sizeof(shinfo)) fits PAGE_SIZE, else it gives up; with
    MERGEABLE_LEN_CHECK each further buffer first passes check_mergeable_len(). ``copied``: the
    bytes copied into the new page (0 when the first buffer already fails the pre-check: no
    page is allocated)."""
    x = _x(c)
    page_off = x.headroom
    sh = c.shinfo_size
    for i, length in enumerate(used):
        # check_mergeable_len: room from the buffer's own ctx headroom (0 for an old buffer)
        limit = (slots[i].len if x.posted_before else _ctx_truesize(c, slots[i]) - x.mrg_room)
        if i and x.len_check and length > limit:
            # ≤ 6.2 the ctx truesize of an XDP buffer leaves the room out, so the backported
            # check refuses a full further buffer (measured on Debian 6.1.192)
            return Linearized("len_check", page_off - x.headroom, i, length, limit, page_off)
        if page_off + length + sh > c.page_size:
            return Linearized("linearize", page_off - x.headroom, i, length, limit, page_off)
        page_off += length
    if not x.posted_before:  # fresh XDP buffers hold PAGE_SIZE - room: several never fit
        raise UnsupportedError("xdp_linearize_page of several XDP-sized buffers that fit one "
                               "page: not reachable with buffers posted after the attach")
    return Linearized(None, sum(used), len(used), 0, 0, page_off)


def _build_skb_from_xdp_buff(c: Config, b: Buff, device: tuple[PostedBuffer, ...],
                             used: tuple[int, ...], frags: tuple[PlanFrag, ...],
                             frags_truesize: int) -> Plan:
    """6.3+ XDP_PASS: build_skb(data_hard_start, frame_sz), skb_reserve(data - hard_start),
    __skb_put(data_end - data), then xdp_update_skb_shared_info for the frags."""
    head = b.frame_sz
    frags_size = sum(f.size for f in frags)
    return Plan(outcome="build_skb", reason=None, why=Build.XDP_BUFF, buf_len=device[0].len,
                buffers=device, used=used, tailroom=None, copy=0, frag0=False, head_size=head,
                end=head - c.shinfo_size, data=b.data, tail=b.data_end,
                len=b.data_end - b.data + frags_size, data_len=frags_size,
                truesize=head + c.sk_buff_aligned + frags_truesize, frags=frags, appends=(),
                pages_used=0, nr_frags=len(frags))


def _p2s_headroom(b: Buff, meta_len: int) -> int:
    """page_to_skb's headroom argument for an XDP_PASS up to 6.2: data - data_hard_start,
    the metadata left out."""
    return b.data - b.hard_start - meta_len


def _page_to_skb(c: Config, b: Buff, device: tuple[PostedBuffer, ...], used: tuple[int, ...],
                 meta_len: int) -> Plan:
    """≤ 6.2 XDP_PASS: page_to_skb(page, offset = data - hdr_len, len, PAGE_SIZE, hdr_valid
    false, metasize, headroom = data - data_hard_start): with headroom, truesize is PAGE_SIZE
    and buf = p - headroom is the slot start."""
    meta = meta_len
    headroom = _p2s_headroom(b, meta)
    length = b.data_end - b.data
    # the metadata travels in front of the frame (offset and len include it) and is pulled
    # off again after the skb is made: __skb_pull(metasize), skb_metadata_set(metasize)
    h = p2s.page_to_skb(c, c.page_size, c.mrg_hdr_len, length + meta, headroom=headroom)
    return Plan(outcome=h.outcome, reason=None, why=h.why, buf_len=device[0].len,
                buffers=device, used=used, tailroom=h.tailroom, copy=h.copy, frag0=False,
                head_size=h.head_size, end=h.end, data=h.data + meta, tail=h.tail, len=length,
                data_len=length + meta - (h.tail - h.data), truesize=h.truesize, frags=(),
                appends=(), pages_used=0, nr_frags=0)


# --- narration -----------------------------------------------------------------------------


def narrate_attach(c: Config, log: StepLog) -> None:
    """virtnet_xdp_set's step for any mode (receive_buf calls it first)."""
    x = _x(c)
    a = x.attach
    log.add(SRC, "virtnet_xdp_set",
            "the program is attached: " + "; ".join(f"{what}: {how}" for what, how in a.effects
                                                     if what in ("guest offloads", "XDP_TX queues")),
            mtu=c.mtu, xdp_frags=x.frags, xdp_queue_pairs=a.xdp_queue_pairs)
    for warning in a.warnings:
        log.note(f"dmesg at attach: \"{warning}\"")
    if c.hdr is not None and (c.hdr.gso_type or c.hdr.flags):
        log.note("attaching turned the guest offloads off (VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET 0): "
                 "a device following the spec then sends flags 0 and GSO_NONE; the header given "
                 "here is taken as the device wrote it")


def _narrate_refusal(c: Config, refused: str, log: StepLog) -> None:
    """The header check that dropped the frame before the program ran."""
    because: tuple[Change, ...] = ()
    if refused == "gso_type":
        assert c.hdr is not None
        text = (f"hdr->hdr.gso_type {c.hdr.gso_type} != 0 (\"transient failure\" of a GSO frame "
                "posted before XDP was enabled)")
    else:
        text = ("VIRTIO_NET_HDR_F_NEEDS_CSUM: \"Partially checksummed packets must be "
                "dropped\"")
        because = c.cite(VIRTIO_XDP_NEEDS_CSUM_DROP)
    log.add(SRC, _function(c),
            f"{text}: goto err_xdp, the program does not run; xdp_drops++, drops++, the "
            "buffer's page reference is put", because=because, xdp_drops=1, drops=1)


def _narrate_verdict(c: Config, v: Verdict, log: StepLog) -> None:
    """The program's helper calls, then what virtnet_xdp_handler does with its verdict."""
    x = _x(c)
    assert v.helpers is not None
    narrate_helpers(v.helpers, log)
    if v.result == "pass":
        return
    fn = "virtnet_xdp_handler" if x.split else _function(c)
    if v.result == "drop":
        log.add(SRC, fn, f"{VERDICT[x.action]}: "
                + ("trace_xdp_exception(); " if x.action == "aborted" else "")
                + "goto err_xdp: xdp_drops++, drops++; the buffer's pages are put",
                xdp_packets=1, xdp_drops=1, drops=1)
        return
    if v.result == "redirect_failed":
        log.add(FILTER_SRC, "xdp_do_redirect",
                f"bpf_redirect() to this device: xdp_ok_fwd_dev() refuses {v.total} > mtu "
                f"{c.mtu} + ETH_HLEN + VLAN_HLEN = {x.fwd_limit}: -EMSGSIZE", len=v.total,
                limit=x.fwd_limit)
        log.add(SRC, fn, "the redirect failed: XDP_DROP, xdp_drops++, drops++",
                xdp_redirects=1, xdp_drops=1, drops=1)
        return
    tx = x.action == "tx"
    log.add(SRC, fn,
            ("XDP_TX: xdp_tx++; xdp_convert_buff_to_frame() keeps the struct xdp_frame at "
             "data_hard_start, then virtnet_xdp_xmit(dev, 1, &xdpf, 0)" if tx else
             "XDP_REDIRECT: xdp_redirects++; xdp_do_redirect() converts the buffer to an "
             "xdp_frame and queues it for this device (dev_xdp_enqueue); xdp_do_flush() at the "
             "end of the NAPI poll hands it to virtnet_xdp_xmit()"),
            xdp_packets=1, xdp_tx=int(tx), xdp_redirects=int(not tx),
            xdpf_headroom=v.xdpf_headroom)
    if v.result == "tx_failed":
        log.add(SRC, "__virtnet_xdp_xmit_one",
                f"xdpf->headroom {v.xdpf_headroom} < hdr_len {c.hdr_len}: -EOVERFLOW, no room to "
                "push the virtio-net header; virtnet_xdp_xmit returns 0 sent, the frame is freed "
                "(xdp_return_frame_rx_napi) and counted in the send queue's xdp_tx_drops, not "
                "as an rx drop", headroom=v.xdpf_headroom, hdr_len=c.hdr_len)
        return
    log.add(SRC, "__virtnet_xdp_xmit_one",
            f"push a zeroed {c.hdr_len}-byte virtio-net header in front of the frame "
            f"(xdpf->data -= hdr_len, xdpf->len += hdr_len) and add it to the send queue: the "
            f"device reads {v.read_len} bytes; the send queue's xdp_tx++; once the device is "
            "done, free_old_xmit counts tx_packets++ and tx_bytes += xdpf->len (header "
            "included)", len=v.read_len, xdp_tx=1)


def _narrate_buff(c: Config, b: Buff, log: StepLog, how: str,
                  frags: int = 0) -> None:
    x = _x(c)
    log.add(SRC, "virtnet_build_xdp_buff_mrg" if c.mode == "mergeable" and x.multi_buf
            else _function(c),
            f"{how}: data_hard_start at +{b.hard_start}, data at +{b.data} ({b.data - b.hard_start} "
            f"bytes of XDP headroom), frame_sz {b.frame_sz}, xdp_data_hard_end at +{b.hard_end} "
            f"({b.hard_end - b.data_end} bytes of tailroom)"
            + (f"; {frags} frag(s) in the buffer's skb_shared_info (XDP_FLAGS_HAS_FRAGS)" if frags
               else "")
            + f"; bpf_prog_run_xdp() returns {VERDICT[x.action]}, xdp_packets++",
            because=c.cite(VIRTIO_XDP_MULTI_BUF) if frags else (),
            data_hard_start=b.hard_start, data=b.data, data_end=b.data_end, frame_sz=b.frame_sz,
            tailroom=b.hard_end - b.data_end, verdict=VERDICT[x.action])


def narrate_small_posting(c: Config, frame: int, guard: Plan, log: StepLog) -> Buffer:
    """add_recvbuf_small's step with XDP, and the slot's map after the device wrote into it
    (a buffer posted before the attach: small.py's, without XDP headroom, ``guard`` its plan)."""
    x = _x(c)
    if x.posted_before:
        from vnetrx.paths.virtio_net import small

        log.note("the frame lands in a buffer posted before the program was attached (ctx "
                 "headroom 0): the rings are not reset on attach, so the first ring after it "
                 "is copied into fresh pages")
        return small.narrate_posting(c, guard, frame, log)
    slot = small_slot(c)
    size = small_buflen(c, slot)
    pad, hdr, sh = c.small_pad, c.hdr_len, c.shinfo_size
    log.add(SRC, "add_recvbuf_small",
            f"vi->xdp_enabled: post SKB_DATA_ALIGN(hdr_len + VIRTNET_RX_PAD + GOOD_PACKET_LEN + "
            f"{x.headroom}) + shinfo = {x.small_slot}-byte slots from the rx "
            f"{c.alloc.describe()}"
            + (f" (twice {x.small_slot} exceeds PAGE_SIZE: page_pool_alloc_va gives each a whole "
               f"page, {slot.len} bytes), ctx = the headroom and that truesize"
               if c.alloc.page_pool else f", ctx = the headroom ({x.headroom})")
            + f"; buffer {c.buffer_index} is at {c.alloc.label(slot.frag_index)} + "
            f"{slot.offset}; the device may write {hdr + c.good_packet_len} bytes at "
            f"+{pad + x.headroom}",
            c.cite(VIRTIO_RX_PAGE_POOL),
            bufsize=x.small_slot, alloc_len=slot.len, VIRTNET_RX_PAD=pad,
            xdp_headroom=x.headroom, hdr_len=hdr, page_offset=slot.offset)
    room = size - sh - pad - x.headroom - hdr
    written = min(frame, c.good_packet_len)
    return Buffer(size, c.alloc.label(slot.frag_index), slot.offset, hdr + written,
                  regions(("headroom", pad, "VIRTNET_RX_PAD"),
                          ("xdp headroom", x.headroom, "XDP_PACKET_HEADROOM"),
                          ("vnet_hdr", hdr, ""), ("frame", written, ""),
                          ("tailroom", room - written, ""),
                          ("skb_shared_info", sh, "reserved at bufsize - shinfo")))


def narrate_small(c: Config, f: XdpFrame, log: StepLog) -> None:
    """receive_small's XDP branch, from its decision."""
    x = _x(c)
    log.add(SRC, "receive_small",
            "vi->xdp_enabled and rq->xdp_prog: " + ("receive_small_xdp()" if x.split else
                                                     "the XDP branch"),
            because=c.cite(VIRTIO_RECEIVE_XDP_SPLIT))
    if f.refused is not None:
        _narrate_refusal(c, f.refused, log)
        return
    pad = c.small_pad
    if x.posted_before:
        log.add(SRC, "xdp_linearize_page",
                f"ctx headroom 0 < virtnet_get_headroom() {x.headroom}: the buffer was posted "
                f"before the attach; alloc_page(GFP_ATOMIC), copy hdr_len + len = {f.copied} "
                f"bytes to page + VIRTNET_RX_PAD + {x.headroom} = +{pad + x.headroom}, put the "
                f"old buffer; buflen = SKB_DATA_ALIGN(GOOD_PACKET_LEN + headroom) + shinfo = "
                f"{f.buflen}", page_off=pad + x.headroom, len=f.copied, buflen=f.buflen)
    _narrate_buff(c, f.buff, log, f"xdp_init_buff(frame_sz = buflen {f.buflen}), "
                  f"xdp_prepare_buff(buf + VIRTNET_RX_PAD + hdr_len, {x.headroom}, len)")
    assert f.verdict is not None
    _narrate_verdict(c, f.verdict, log)
    if f.plan is None:
        return
    b = f.verdict.buff
    log.add(SRC, "virtnet_build_skb" if x.split else "receive_small",
            f"XDP_PASS: build_skb(buf, {f.buflen}) around the slot, skb_reserve({b.data}) "
            f"(data - buf, the program's head change included), skb_put({f.plan.len}); the vnet "
            "header is not copied: skb->cb stays zeroed"
            + ("; skb_mark_for_recycle(): the page goes back to the page_pool"
               if c.alloc.page_pool else ""),
            c.cite(VIRTIO_RX_PAGE_POOL), buflen=f.buflen, headroom=b.data, len=f.plan.len)


def narrate_mergeable_posting(c: Config, frame: int, posting: Posting, log: StepLog
                              ) -> tuple[Buffer, ...]:
    """add_recvbuf_mergeable's step with XDP (or the old buffers'), and the buffers' maps."""
    x = _x(c)
    if posting.old is not None:  # mergeable.py's buffers, sized by the EWMA, headroom 0
        from vnetrx.paths.virtio_net import mergeable

        log.note("the frame lands in buffers posted before the program was attached (ctx "
                 "headroom 0, sized by the EWMA): the rings are not reset on attach, so the "
                 "first ring after it is copied into fresh pages")
        mergeable.narrate_posting(c, posting.old, frame, log)
        return tuple(Buffer(b.len, c.alloc.label(b.frag_index), b.offset, u,
                            regions(*((("vnet_hdr", c.hdr_len, ""),) if i == 0 else ()),
                                    ("frame" if i == 0 else "frame (cont.)",
                                     u - (c.hdr_len if i == 0 else 0), ""),
                                    *((("unused", b.len - u, ""),) if b.len > u else ())))
                     for i, (b, u) in enumerate(zip(posting.slots, posting.used, strict=True)))
    slots, used = posting.slots, posting.used
    first = slots[0]
    log.add(SRC, "get_mergeable_buf_len",
            f"room = SKB_DATA_ALIGN(headroom {x.headroom} + sizeof(struct skb_shared_info)) = "
            f"{x.mrg_room}: the length is PAGE_SIZE - room = {x.mrg_len}, whatever the EWMA",
            room=x.mrg_room, len=x.mrg_len)
    log.add(SRC, "add_recvbuf_mergeable",
            f"each buffer takes len + room = {x.mrg_len + x.mrg_room} bytes of the rx "
            f"{c.alloc.describe()}"
            + (" (a whole page each: twice that exceeds PAGE_SIZE)" if c.alloc.page_pool else "")
            + f"; the device writes from +{x.headroom}; ctx truesize "
            f"{_ctx_truesize(c, first)}"
            + (" (len + room, 484beac2ffc1: no hole)" if x.multi_buf else " (len; a page's "
               "hole would be added)")
            + f"; buffer {c.buffer_index} is at {c.alloc.label(first.frag_index)} + "
            f"{first.offset}; the frame takes {len(slots)} buffer(s)",
            because=c.cite(VIRTIO_XDP_MULTI_BUF), len=x.mrg_len,
            ctx_truesize=_ctx_truesize(c, first), num_buffers=len(slots))
    return tuple(_slot_map(c, s, u, i == 0) for i, (s, u) in enumerate(zip(slots, used,
                                                                            strict=True)))


def narrate_mergeable(c: Config, f: XdpFrame, slots: tuple[PostedBuffer, ...],
                      log: StepLog) -> None:
    """receive_mergeable's XDP branch, from its decision."""
    x = _x(c)
    used = f.used
    log.add(SRC, "receive_mergeable",
            f"length check passes: len {used[0]} <= truesize - room; vi->xdp_enabled and "
            "rq->xdp_prog: " + ("receive_mergeable_xdp()" if x.split else "the XDP branch"),
            because=c.cite(VIRTIO_RECEIVE_XDP_SPLIT), len=used[0], num_buffers=len(used))
    if f.refused in ("gso_type", "needs_csum"):
        _narrate_refusal(c, f.refused, log)
        return
    if f.first_copy is False:
        log.add(SRC, "mergeable_xdp_get_buf",
                f"an old first buffer of {used[0]} bytes and a frags program: {used[0]} + "
                f"{x.mrg_room} > PAGE_SIZE, no room to copy it; dropped", len=used[0])
    elif f.first_copy:
        log.add(SRC, "mergeable_xdp_get_buf",
                f"ctx headroom 0 < {x.headroom} and a frags program: alloc_page(GFP_ATOMIC), "
                f"copy the first buffer ({f.copied} bytes) to +{x.headroom}; the others stay "
                "where they are as frags (their own ctx truesize)", len=f.copied)
    elif f.linearized is not None:
        _narrate_linearize(c, f.linearized, slots, used, log)
    if f.refused == "too_many_buffers":
        log.add(SRC, "virtnet_build_xdp_buff_mrg",
                f"{f.num_buffers} buffers > MAX_SKB_FRAGS + 1 = {x.max_buffers}: -EINVAL; the "
                "program does not run; xdp_drops++, drops++", because=c.cite(VIRTIO_XDP_MULTI_BUF),
                num_buffers=f.num_buffers, xdp_drops=1, drops=1)
    if f.refused is not None:
        return
    b = f.buff
    _narrate_buff(c, b, log,
                  ("mergeable_xdp_get_buf(): in place (headroom >= 256"
                   + (", a frags program)" if f.num_buffers > 1 else ", one buffer)")
                   + f"; xdp_init_buff(frame_sz = ctx truesize {b.frame_sz}), xdp_prepare_buff("
                   f"buf - {x.headroom}, {x.headroom} + hdr_len, len - hdr_len)") if x.multi_buf
                  else (f"one buffer with headroom: xdp_init_buff(frame_sz = PAGE_SIZE - hdr_len "
                        f"= {b.frame_sz}), xdp_prepare_buff(data - {x.headroom} + hdr_len, "
                        f"{x.headroom}, len - hdr_len)"), len(f.frags))
    assert f.verdict is not None
    _narrate_verdict(c, f.verdict, log)
    if f.plan is None:
        return
    if x.multi_buf:
        _narrate_build_skb_from_xdp_buff(c, f.plan, f.frags_truesize, log)
    else:
        _narrate_page_to_skb(c, f.plan, f.verdict, log)


def _narrate_linearize(c: Config, lin: Linearized, slots: tuple[PostedBuffer, ...],
                       used: tuple[int, ...], log: StepLog) -> None:
    x = _x(c)
    i, length = lin.at, lin.length
    if lin.refused == "len_check":
        log.add(SRC, "check_mergeable_len",
                f"buffer {i}: len {length} > ctx truesize {_ctx_truesize(c, slots[i])} - "
                f"room {x.mrg_room} = {lin.limit}: \"rx error: len {length} exceeds truesize "
                f"{lin.limit}\" (pr_debug), rx_length_errors++; xdp_linearize_page gives up, the "
                "frame is dropped (xdp_drops++, drops++)",
                because=c.cite(MERGEABLE_LEN_CHECK), len=length, limit=lin.limit,
                rx_length_errors=1, xdp_drops=1, drops=1)
    elif lin.refused == "linearize":
        page_off, sh = lin.page_off, c.shinfo_size
        log.add(SRC, "xdp_linearize_page",
                f"{len(used)} buffer(s) to copy into one page for a program without frags: "
                + (f"alloc_page(GFP_ATOMIC), copy {page_off - x.headroom} bytes, then "
                   if i else "")
                + f"buffer {i} ({length} bytes) does not fit: {page_off} + {length} + {sh} "
                f"> PAGE_SIZE; the page is freed, the frame dropped (xdp_drops++, drops++)"
                + ("; a program loaded with BPF_F_XDP_HAS_FRAGS would get it as a "
                   "multi-buffer xdp_buff" if x.multi_buf else
                   f"; {c.kernel} has no multi-buffer XDP (6.3)"),
                because=c.cite(VIRTIO_XDP_MULTI_BUF), page_off=page_off, len=length,
                xdp_drops=1, drops=1)
    else:
        log.add(SRC, "xdp_linearize_page",
                f"ctx headroom 0 < {x.headroom}: the buffer(s) were posted before the attach; "
                f"alloc_page(GFP_ATOMIC), copy {len(used)} buffer(s), {sum(used)} bytes, to "
                f"+{x.headroom} of the new page (frame_sz PAGE_SIZE); the old buffers are put",
                because=c.cite(MERGEABLE_LEN_CHECK), page_off=lin.page_off, len=sum(used))


def _narrate_build_skb_from_xdp_buff(c: Config, p: Plan, frags_truesize: int,
                                     log: StepLog) -> None:
    nr = p.nr_frags
    log.add(SRC, "build_skb_from_xdp_buff",
            f"XDP_PASS: build_skb(data_hard_start, frame_sz {p.head_size}), "
            f"skb_reserve({p.data}), __skb_put({p.len - p.data_len})"
            + (f"; xdp_update_skb_shared_info: {nr} frag(s), len += data_len = "
               f"{p.data_len}, truesize += {frags_truesize} (each buffer's ctx truesize)"
               if nr else "")
            + "; skb->cb (the vnet header) stays zeroed"
            + ("; skb_mark_for_recycle(): the pages go back to the page_pool"
               if c.alloc.page_pool else ""),
            because=c.cite(VIRTIO_XDP_MULTI_BUF, VIRTIO_RX_PAGE_POOL), headroom=p.data,
            len=p.len, data_len=p.data_len, truesize=p.truesize, nr_frags=nr)


def _narrate_page_to_skb(c: Config, p: Plan, v: Verdict, log: StepLog) -> None:
    meta = v.meta_len
    headroom = _p2s_headroom(v.buff, meta)
    log.add(SRC, "receive_mergeable", "XDP_PASS: page_to_skb(page, data - hdr_len - metasize, "
            f"len + metasize, PAGE_SIZE, hdr_valid false, metasize {meta}, headroom "
            f"{headroom}): with headroom the truesize is PAGE_SIZE and buf = p - headroom, the "
            "slot's start" + ("; the metadata is pulled off again (__skb_pull, "
                              "skb_metadata_set)" if meta else ""), headroom=headroom,
            metasize=meta)
    p2s.narrate(c, p, log, p.len + meta, c.page_size, c.mrg_hdr_len, headroom)
