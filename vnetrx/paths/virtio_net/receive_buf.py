"""drivers/net/virtio_net.c:receive_buf: the short-packet guard, the dispatch to receive_small /
receive_big / receive_mergeable, then what happens to the skb they return before
napi_gro_receive (inline in receive_buf up to 6.6, virtnet_receive_done from 6.12): the RSS hash,
DATA_VALID, virtio_net_hdr_to_skb (paths/virtio_net_hdr.py) and eth_type_trans.

``plan`` decides a frame (what sweeps and replays use); ``deliver`` turns the plan into the skb
the stack sees; ``receive`` narrates both, every number read from the plan and the delivery.
Facts: docs/kernel/virtio-net-rx.md §4, docs/kernel/offloads.md §4.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from vnetrx.errors import UnsupportedError
from vnetrx.kernel.changes import VIRTNET_RECEIVE_DONE
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.model import Buffer, Cost, Frag, FragListSkb, Received, Skb, XdpRun
from vnetrx.paths.maps import mark_pulled
from vnetrx.paths.reason import Reason
from vnetrx.paths.skbuff import eth_type_trans, eth_type_trans_of, new_frag, new_skb
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net import big, mergeable, small
from vnetrx.paths.virtio_net.page_to_skb import BUILT_HEAD, cost
from vnetrx.paths.virtio_net.plan import COUNTER, Drop, Plan, PlanFrag, dropped
from vnetrx.paths.virtio_net.setup import Config, RxFrame, for_frame, narrate_probe
from vnetrx.paths.virtio_net_hdr import (
    CHECKSUM_NONE,
    CHECKSUM_UNNECESSARY,
    DATA_VALID,
    GSO_UDP_TUNNEL_BITS,
    UDP_TUNNEL_CSUM,
    VIRTIO_NET_H,
    Check,
    HdrResult,
    VnetHdr,
    narrate_checks,
    virtio_net_hdr_to_skb,
)
from vnetrx.records import NamedTuple
from vnetrx.values import Value

if TYPE_CHECKING:
    from vnetrx.paths.virtio_net.xdp import Posting, XdpFrame

SRC: Final = "drivers/net/virtio_net.c"
TOO_LONG: Final = (Drop.LEN_EXCEEDS_MAX_SIZE, Drop.LEN_EXCEEDS_ALLOCATED_SIZE, Drop.EXCEEDS_BUFFER)
LINEARIZED_HEAD: Final = "a page from xdp_linearize_page (build_skb)"


# Hash report types (include/uapi/linux/virtio_net.h) that virtio_skb_set_hash makes
# PKT_HASH_TYPE_L4: TCPv4 2, UDPv4 3, TCPv6 5, UDPv6 6, TCPv6_EX 8, UDPv6_EX 9
HASH_REPORT_L4: Final = frozenset({2, 3, 5, 6, 8, 9})
HASH_REPORT_L3: Final = frozenset({1, 4, 7})  # IPv4, IPv6, IPv6_EX


class Delivery(NamedTuple):
    """receive_buf after receive_*(): the skb napi_gro_receive sees, or why it was dropped."""

    skb: Skb | None
    reason: Drop | None  # the plan's drop, or receive_buf's own (BAD_GSO, BAD_CSUM)
    offload: HdrResult | None  # virtio_net_hdr_to_skb's checks (None: no header, or not reached)
    csum_check: Check | None = None  # 6.17+ virtio_net_handle_csum_offload, when it refused


def _delivery(skb: Skb | None, reason: Drop | None, offload: HdrResult | None,
              csum_check: Check | None = None) -> Delivery:
    """``Delivery(...)`` made by ``tuple.__new__``, as ``skbuff.new_skb`` makes an Skb: the
    record's ``__new__`` is a Python function, and a replay delivers every new geometry."""
    return tuple.__new__(Delivery, (skb, reason, offload, csum_check))


def plan(c: Config, frame: int, detail: bool = True) -> Plan:
    """One frame's plan; ``detail=False`` skips what only the narration needs (sweeps)."""
    return planner(c)(c, frame, detail)


def planner(c: Config) -> Callable[[Config, int, bool], Plan]:
    """receive_buf's dispatch, chosen once for a sweep: vi->mergeable_rx_bufs →
    receive_mergeable, else vi->big_packets → receive_big, else receive_small."""
    if c.mode == "small":
        return small.plan_small
    if c.mode == "big":
        return big.plan_big
    return mergeable.plan_mergeable


def deliver(c: Config, p: Plan, narrate: bool = True) -> Delivery:
    """The skb receive_*() built, through the rest of receive_buf with the header the device
    wrote (``c.hdr``): see ``deliver_with``."""
    return deliver_with(c, p, c.hdr, narrate)


def deliver_with(c: Config, p: Plan, h: VnetHdr | None, narrate: bool = True,
                 with_frags: bool = True) -> Delivery:
    """The skb receive_*() built, through the rest of receive_buf: the hash report, DATA_VALID,
    virtio_net_hdr_to_skb with the header ``h`` (a ring model gives each frame its own), then
    eth_type_trans. What napi_gro_receive and its tracepoint see. Without a header (None:
    flags 0, GSO_NONE) virtio_net_hdr_to_skb changes nothing and the skb stays
    CHECKSUM_NONE. ``narrate`` False: ``offload`` keeps virtio_net_hdr_to_skb's result without
    the checks' words (sweeps and replays show none). ``with_frags`` False: the skb delivered
    leaves out its frags and frag_list (nr_frags and truesize stay): a replay's record keeps none
    (vnetrx/replay/napi.py). Without a header they are not made at all; with one they are (the
    pulls read them) and eth_type_trans's skb leaves them out."""
    if p.outcome == "drop":
        return _delivery(None, p.reason, None)
    if h is None:
        return _delivery(plain_skb(c, p, with_frags), None, None)
    # 6.17+ virtio_net_handle_csum_offload reads only the header and the features: decided
    # first, its refusal drops the skb whatever the hash set before it
    refused = _csum_offload(c, h)
    if refused is not None:
        return _delivery(None, Drop.BAD_CSUM, None, refused)
    frags, frag_list = _frag_parts(c, p)
    # the skb receive_*() built, with what receive_buf sets before virtio_net_hdr_to_skb, in
    # one construction: virtio_skb_set_hash → skb_set_hash(skb, hash_value, type) (rx_hash),
    # then DATA_VALID: ip_summed = CHECKSUM_UNNECESSARY
    skb = new_skb(BUILT_HEAD if p.outcome == "build_skb" else c.napi_head.label, p.head_size,
                  p.data, p.tail, p.end, p.len, p.data_len, p.truesize, p.nr_frags, None, frags,
                  frag_list, CHECKSUM_UNNECESSARY if h.flags & DATA_VALID else CHECKSUM_NONE,
                  skb_hash=(h.hash_value or 0) if c.rx_hash else 0,
                  l4_hash=c.rx_hash and h.hash_report in HASH_REPORT_L4)
    # the skb belongs to no socket: a head pskb_expand_head grows is charged to truesize
    result = virtio_net_hdr_to_skb(c.profile, c.hdr_rules, skb, h, owned=False,
                                   tunnel=c.rx_tnl, tunnel_csum=c.rx_tnl_csum,
                                   narrate=narrate)
    if result.skb is None:
        return _delivery(None, Drop.BAD_GSO, result)
    return _delivery(eth_type_trans(result.skb, with_frags), None, result)


def plain_skb(c: Config, p: Plan, with_frags: bool = True) -> Skb:
    """``deliver``'s skb when the device wrote no header (flags 0, GSO_NONE: virtio_net_hdr_to_skb
    changes nothing): eth_type_trans on what receive_*() built. Sweeps call it per length.
    ``with_frags`` False: its frags and frag_list left out (``deliver_with``)."""
    if not with_frags:
        return eth_type_trans_of(BUILT_HEAD if p.outcome == "build_skb" else c.napi_head.label,
                                 p.head_size, p.data, p.tail, p.end, p.len, p.data_len,
                                 p.truesize, p.nr_frags, (), ())
    return eth_type_trans_of(
        BUILT_HEAD if p.outcome == "build_skb" else c.napi_head.label,
        p.head_size,
        p.data,
        p.tail,
        p.end,
        p.len,
        p.data_len,
        p.truesize,
        p.nr_frags,
        _frags(c, p, p.frags) if p.frags else (),
        tuple(
            FragListSkb(
                sum(f.size for f in group),
                c.frag_list_truesize + sum(f.truesize for f in group),
                _frags(c, p, group),
            )
            for group in p.frag_list
        )
        if p.frag_list
        else (),
    )


def _frag_parts(c: Config, p: Plan) -> tuple[tuple[Frag, ...], tuple[FragListSkb, ...]]:
    frags = _frags(c, p, p.frags) if p.frags else ()
    frag_list = tuple(
        FragListSkb(sum(f.size for f in group),
                    c.frag_list_truesize + sum(f.truesize for f in group), _frags(c, p, group))
        for group in p.frag_list
    )
    return frags, frag_list


def _csum_offload(c: Config, h: VnetHdr) -> Check | None:
    """6.17+ virtio_net_handle_csum_offload(skb, hdr, vi->rx_tnl_csum) (include/linux/
    virtio_net.h @6.17.0, @6.18.9), before virtio_net_hdr_tnl_to_skb: without a tunnel gso_type
    bit, DATA_VALID with VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM needs GUEST_UDP_TUNNEL_GSO_CSUM (then
    skb->csum_level = 1); with one, DATA_VALID is refused ("DATA_VALID is mutually exclusive with
    NEEDS_CSUM, and GSO over UDP tunnel requires the latter"). Before 6.17 neither bit means
    anything here. A refusal logs "bad csum" and counts rx_frame_errors."""
    if not c.hdr_rules.tunnel or not h.flags & DATA_VALID:
        return None
    where = f"{VIRTIO_NET_H}:virtio_net_handle_csum_offload @ {c.kernel}"
    if h.gso_type & GSO_UDP_TUNNEL_BITS:
        return Check(where, "virtio_net_handle_csum_offload",
                     "a UDP-tunnel gso_type goes without DATA_VALID", False,
                     f"flags {h.flags:#x}, gso_type {h.gso_type:#04x}", ("vnet_hdr_udp_tunnel",),
                     "DATA_VALID with a UDP-tunnel gso_type (GSO over a UDP tunnel needs "
                     "NEEDS_CSUM; \"bad csum\" is logged)")
    if not h.flags & UDP_TUNNEL_CSUM:
        return None
    if c.rx_tnl_csum is None:
        raise UnsupportedError(
            "DATA_VALID | UDP_TUNNEL_CSUM with a 24-byte header: whether "
            "VIRTIO_NET_F_GUEST_UDP_TUNNEL_GSO_CSUM was negotiated was not said (valid: "
            "--udp-tunnel gso, gso-csum or host)")
    if c.rx_tnl_csum:
        return None  # skb->csum_level = 1: the outer and the inner checksum are valid
    return Check(where, "virtio_net_handle_csum_offload",
                 "DATA_VALID with UDP_TUNNEL_CSUM needs rx_tnl_csum", False,
                 f"flags {h.flags:#x}, hdr_len {c.hdr_len}: UDP tunnel csum not negotiated",
                 ("vnet_hdr_udp_tunnel",),
                 "DATA_VALID with VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM, which was not negotiated "
                 "(\"bad csum\" is logged)")


def _frags(c: Config, p: Plan, frags: tuple[PlanFrag, ...]) -> tuple[Frag, ...]:
    if c.mode == "big":  # chain pages
        return tuple(new_frag(f"page{f.buffer}", f.offset, f.size, f.truesize) for f in frags)
    return tuple(
        new_frag(c.alloc.label(p.buffers[f.buffer].frag_index), f.offset, f.size, f.truesize)
        for f in frags
    )


def receive(c: Config, f: RxFrame, log: StepLog) -> Received:
    """virtnet_probe's mode choice (the device ``c``, resolved by ``config``), the buffers
    posted, the device's write of the frame ``f``, receive_buf."""
    c, frame = for_frame(c, f), f.len
    narrate_probe(c, log)
    if c.xdp is not None and c.mode != "big":
        return _receive_xdp(c, frame, log)
    if c.xdp is not None and not _narrate_attach_big(c, log):
        return _attach_refused(c)
    p = plan(c, frame)
    buffers: tuple[Buffer, ...]
    if c.mode == "small":
        buffer = small.narrate_posting(c, p, frame, log)
        if p.reason in TOO_LONG:
            small.narrate_too_long(c, p, frame, log)
            return _drop(small.PATH, p, buffer, (buffer,))
        if _narrate_guard(c, p, frame, log):
            return _drop(small.PATH, p, buffer, (buffer,))
        small.narrate_receive(c, p, frame, log)
        path, buffers = small.PATH, (buffer,)
    elif c.mode == "big":
        big.narrate_posting(c, log)
        if p.reason in TOO_LONG:
            buffer = big.too_long_map(c)
            big.narrate_too_long(c, p, frame, log)
            return _drop(big.PATH, p, buffer, (buffer,))
        if _narrate_guard(c, p, frame, log):
            return _drop(big.PATH, p, big.page0(c, p), big.chain(c, p))
        big.narrate_receive(c, p, frame, log)
        buffer = big.page0(c, p)
        path, buffers = big.PATH, (buffer, *big.chain(c, p)[1:])
    else:
        mergeable.narrate_posting(c, p, frame, log)
        if _narrate_guard(c, p, frame, log):
            return _drop(mergeable.PATH, p, *mergeable.short_maps(c, p, frame))
        buffer, buffers = mergeable.narrate_receive(c, p, frame, log)
        path = mergeable.PATH
    d = deliver(c, p)
    _narrate_receive_done(c, d, log)
    if d.skb is None:
        assert d.reason is not None
        failed = d.csum_check or (d.offload.failed if d.offload is not None else None)
        return Received(path, "drop", d.reason, buffer, buffers, None, None,
                        counter=COUNTER[d.reason],
                        refused_by=None if failed is None else failed.refused())
    _narrate_eth_type_trans(d.skb, log)
    if d.offload is not None and d.offload.pulled and buffers and buffers[0] is buffer:
        buffer = mark_pulled(buffer, d.offload.pulled)
        buffers = (buffer, *buffers[1:])
    return Received(path, p.outcome, None, buffer, buffers, d.skb, cost(p))


def _path(c: Config) -> str:
    return {"small": small.PATH, "big": big.PATH}.get(c.mode, mergeable.PATH)


def _narrate_attach_refusal(c: Config, log: StepLog) -> bool:
    """virtnet_xdp_set's answer; False when it refused the program."""
    assert c.xdp is not None
    a = c.xdp.attach
    if a.attach:
        return True
    failed = next(check for check in a.checks if not check.passed)
    log.add(SRC, "virtnet_xdp_set", f"the {failed.name} check fails ({failed.detail}): "
            f"-{a.errno}, extack \"{a.message}\"; no program is attached",
            errno=a.errno or "")
    for warning in a.warnings:
        log.note(f"dmesg at attach: \"{warning}\"")
    log.note(f"virtnet_xdp_set refuses the program: -{a.errno} \"{a.message}\" (see `vnetrx "
             "xdp check`)")
    return False


def _attach_refused(c: Config) -> Received:
    from vnetrx.paths.virtio_net import xdp

    assert c.xdp is not None
    a = c.xdp.attach
    return Received(_path(c), "error", xdp.XdpReason.ATTACH_REFUSED, None, (), None, None,
                    errno=a.errno)


def _narrate_attach_big(c: Config, log: StepLog) -> bool:
    """Big mode: the program is accepted and never runs."""
    from vnetrx.paths.virtio_net import xdp

    if not _narrate_attach_refusal(c, log):
        return False
    xdp.narrate_attach(c, log)
    log.add(SRC, "receive_big", "big mode has no XDP hook (\"In big_packets mode, xdp cannot "
            "work\", every version read 5.15-7.1): the program never sees the frame and its "
            "counters stay 0; the frame takes the ordinary path")
    return True


class XdpReceived(Value):
    """A frame in small or mergeable mode with a program attached, decided: receive_buf's
    length checks, the XDP branch (paths/virtio_net/xdp.py) and, for XDP_PASS, the rest of
    receive_buf. What sweeps and replays read; ``_receive_xdp`` narrates it."""

    __slots__ = ("buffers", "cost", "counter", "delivery", "errno", "frame", "guard", "outcome",
                 "posting", "reason", "skb")
    _names = ("outcome", "reason", "counter", "skb", "cost", "buffers", "guard", "posting", "frame",
              "delivery", "errno")

    def __init__(self, outcome: str, reason: Reason | None, counter: str | None, skb: Skb | None,
                 cost: Cost | None, buffers: int, guard: Plan | None, posting: Posting | None,
                 frame: XdpFrame | None, delivery: Delivery | None,
                 errno: str | None = None) -> None:
        self.outcome: Final = outcome
        self.reason: Final = reason
        self.counter: Final = counter  # the dev->stats counter beyond the queue's
        self.skb: Final = skb
        self.cost: Final = cost
        self.buffers: Final = buffers  # the buffers the frame used (0: the program was refused)
        # small: receive_small's plan (its length checks); mergeable: a short drop
        self.guard: Final = guard
        self.posting: Final = posting  # mergeable: the buffers the frame lands in
        self.frame: Final = frame  # the XDP branch's decision (None: dropped before it)
        self.delivery: Final = delivery  # XDP_PASS: the rest of receive_buf
        self.errno: Final = errno  # virtnet_xdp_set refused the program

    def _values(self) -> tuple[object, ...]:
        return (self.outcome, self.reason, self.counter, self.skb, self.cost, self.buffers,
                self.guard, self.posting, self.frame, self.delivery, self.errno)

    @property
    def run(self) -> XdpRun | None:
        return None if self.frame is None else self.frame.run


def xdp_received(c: Config, frame: int, words: bool = True) -> XdpReceived:
    """Small or mergeable mode with a program attached: virtnet_xdp_set's answer, receive_buf's
    and receive_small's length checks, the XDP branch, then for an skb XDP_PASS built the rest
    of receive_buf. ``words`` False: virtio_net_hdr_to_skb decides without its words."""
    from vnetrx.paths.virtio_net import xdp

    assert c.xdp is not None
    assert c.mode != "big"
    a = c.xdp.attach
    if not a.attach:
        return XdpReceived("error", xdp.XdpReason.ATTACH_REFUSED, None, None, None, 0, None,
                           None, None, None, a.errno)
    posting = None
    if c.mode == "small":
        guard: Plan | None = small.plan_small(c, frame)  # the length checks
        assert guard is not None
        count = 1
        if guard.reason is not None:
            return XdpReceived("drop", guard.reason, COUNTER[guard.reason], None, None, count,
                               guard, None, None, None)
        f = xdp.small_frame(c, frame)
    else:
        posting = xdp.mergeable_posting(c, frame)
        count = len(posting.slots)
        guard = (dropped(Drop.SHORT_PACKET, posting.slots[0].len, posting.slots, posting.used)
                 if frame < ETH_HLEN else None)
        if guard is not None:
            return XdpReceived("drop", Drop.SHORT_PACKET, COUNTER[Drop.SHORT_PACKET], None, None,
                               count, guard, posting, None, None)
        f = xdp.mergeable_frame(c, frame, posting.slots, posting.used)
    run = f.run
    if f.plan is None:
        # the dev->stats counter beyond the queue's: check_mergeable_len's rx_length_errors
        counter = ("rx_length_errors" if run.refused == "len_check" else
                   "drops" if run.rx_dropped else None)
        return XdpReceived(xdp.outcome_of(run), xdp.reason_of(run), counter, None, None, count,
                           guard, posting, f, None)
    d = deliver_with(c, f.plan, f.hdr, words)
    assert d.skb is not None, d  # a zeroed header is never refused
    skb = d.skb._replace(meta_len=run.meta_len) if run.meta_len else d.skb
    spent = cost(f.plan)
    if run.copied:  # xdp_linearize_page's (or the frags copy's) page and memcpy
        if f.plan.outcome == "build_skb":
            skb = skb._replace(head=LINEARIZED_HEAD)
        spent = Cost(spent.allocations + 1, spent.bytes_copied + run.copied, spent.frags)
    return XdpReceived(f.plan.outcome, None, None, skb, spent, count, guard, posting, f, d)


def _receive_xdp(c: Config, frame: int, log: StepLog) -> Received:
    """Small or mergeable mode with a program attached, decided (``xdp_received``), narrated."""
    from vnetrx.paths.virtio_net import xdp

    if not _narrate_attach_refusal(c, log):
        return _attach_refused(c)
    xdp.narrate_attach(c, log)
    r = xdp_received(c, frame)
    path = _path(c)
    if c.mode == "small":
        assert r.guard is not None
        buffer = xdp.narrate_small_posting(c, frame, r.guard, log)
        maps: tuple[Buffer, ...] = (buffer,)
        if r.guard.reason in TOO_LONG:
            small.narrate_too_long(c, r.guard, frame, log)
            return _drop(path, r.guard, buffer, maps)
        if _narrate_guard(c, r.guard, frame, log):
            return _drop(path, r.guard, buffer, maps)
        small.narrate_len_check(c, frame, log)
        assert r.frame is not None
        xdp.narrate_small(c, r.frame, log)
    else:
        assert r.posting is not None
        maps = xdp.narrate_mergeable_posting(c, frame, r.posting, log)
        if _narrate_guard(c, r.guard, frame, log):
            assert r.guard is not None
            return _drop(path, r.guard, maps[0], maps)
        assert r.frame is not None
        xdp.narrate_mergeable(c, r.frame, r.posting.slots, log)
    f = r.frame
    run = f.run
    if r.skb is None:
        return Received(path, r.outcome, r.reason, maps[0], maps, None, None, counter=r.counter,
                        xdp=run)
    assert r.delivery is not None
    if run.meta_len:
        log.add(SRC, run.function, f"skb_metadata_set(skb, {run.meta_len}): the metadata stays "
                "in front of skb->data (skb_metadata_len)", meta_len=run.meta_len)
    _narrate_receive_done(c, r.delivery, log, f.hdr)
    _narrate_eth_type_trans(r.skb, log)
    return Received(path, r.outcome, None, maps[0], maps, r.skb, r.cost, xdp=run)


def _drop(path: str, p: Plan, buffer: Buffer, buffers: tuple[Buffer, ...]) -> Received:
    assert p.reason is not None
    return Received(path, "drop", p.reason, buffer, buffers, None, None,
                    counter=COUNTER[p.reason])


def _narrate_guard(c: Config, p: Plan | None, frame: int, log: StepLog) -> bool:
    """receive_buf: ``len < vi->hdr_len + ETH_HLEN`` → "short packet", rx_length_errors++."""
    used_len = c.hdr_len + frame
    short = p is not None and p.reason is Drop.SHORT_PACKET
    log.add(
        SRC,
        "receive_buf",
        f"short packet: {used_len} < hdr_len + ETH_HLEN"
        + (" (the device wrote the header alone)" if frame == 0 else "")
        + f"; dropped, rx_length_errors++ (no drops++); {_short_free(c)}"
        if short
        else "length passes the short-packet guard; dispatch by mode",
        len=used_len,
        hdr_len=c.hdr_len,
        ETH_HLEN=ETH_HLEN,
    )
    return short


def _short_free(c: Config) -> str:
    """How receive_buf's short-packet guard gives the buffer back: 6.1.0 open-codes
    put_page(virt_to_head_page(buf)) / give_pages(rq, buf) per mode; 6.3 calls
    virtnet_rq_free_unused_buf, 6.6+ virtnet_rq_free_buf, which do the same
    (drivers/net/virtio_net.c:receive_buf @ 6.1, 6.12; virtnet_rq_free_buf @ 6.12); 7.x returns
    small and mergeable buffers to the page_pool (docs/kernel/virtio-net-rx.md §4.2)."""
    if c.mode == "big":
        return "the page chain goes back to rq->pages (give_pages)"
    if c.alloc.page_pool:
        return "the buffer goes back to the page_pool"
    return "the buffer's page reference is dropped (put_page(virt_to_head_page(buf)))"


def _narrate_receive_done(c: Config, d: Delivery, log: StepLog,
                          seen: VnetHdr | None = None) -> None:
    """The hash report, DATA_VALID and virtio_net_hdr_to_skb, as the delivery decided them
    (``seen``: the header an XDP_PASS skb carries instead of the device's)."""
    fn = "virtnet_receive_done" if c.profile.has(VIRTNET_RECEIVE_DONE) else "receive_buf"
    h = c.hdr if seen is None else seen
    if h is None:
        log.add(SRC, fn, "the header has no flags and GSO_NONE: virtio_net_hdr_to_skb() changes "
                "nothing (CHECKSUM_NONE)", flags=0, gso_type=0)
        return
    if c.rx_hash:
        kind = ("L4" if h.hash_report in HASH_REPORT_L4 else
                "L3" if h.hash_report in HASH_REPORT_L3 else "NONE")
        log.add(SRC, "virtio_skb_set_hash",
                f"HASH_REPORT: skb_set_hash(hash_value, PKT_HASH_TYPE_{kind}); skb->hash is set "
                "whatever the type" + ("; l4_hash = 1" if kind == "L4" else ""),
                hash_value=h.hash_value or 0, hash_report=h.hash_report or 0)
    if d.csum_check is not None:
        narrate_checks((d.csum_check,), log)
        log.add(SRC, fn, "\"bad csum\" is logged; rx_frame_errors++, the skb is freed",
                rx_frame_errors=1)
        return
    if h.flags & DATA_VALID:
        log.add(SRC, fn, "VIRTIO_NET_HDR_F_DATA_VALID: ip_summed = CHECKSUM_UNNECESSARY "
                "(the device checked the checksum)", ip_summed=CHECKSUM_UNNECESSARY)
    assert d.offload is not None
    narrate_checks(d.offload.checks, log)
    if d.skb is None:
        log.add(SRC, fn, f"virtio_net_hdr_to_skb failed: \"{'{dev}'}: bad gso: type: "
                f"{h.gso_type}, size: {h.gso_size}\" is logged (net_warn_ratelimited); "
                "rx_frame_errors++, the skb is freed", rx_frame_errors=1)


def _narrate_eth_type_trans(skb: Skb, log: StepLog) -> None:
    log.add(
        "net/ethernet/eth.c",
        "eth_type_trans",
        "mac_header = data; pull ETH_HLEN (14): what napi_gro_receive and the tracepoints see",
        len=skb.len,
        data_len=skb.data_len,
        truesize=skb.truesize,
        nr_frags=skb.nr_frags,
    )
