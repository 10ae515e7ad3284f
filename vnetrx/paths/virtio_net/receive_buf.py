"""drivers/net/virtio_net.c:receive_buf: the short-packet guard, the dispatch to receive_small /
receive_big / receive_mergeable, then what happens to the skb they return before
napi_gro_receive: virtio_net_hdr_to_skb (include/linux/virtio_net.h) and eth_type_trans.

``plan`` decides a frame (what sweeps and replays use); ``deliver`` turns the plan into the skb
the stack sees; ``receive`` narrates both, every number read from the plan.
Facts: docs/kernel/virtio-net-rx.md §4.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer, Cost, Frag, FragListSkb, Skb
from vnetrx.paths.skbuff import eth_type_trans_of
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net import big, mergeable, small
from vnetrx.paths.virtio_net.page_to_skb import BUILT_HEAD, cost
from vnetrx.paths.virtio_net.plan import Drop, Plan, PlanFrag
from vnetrx.paths.virtio_net.setup import Config, VirtioRxSetup, config, narrate_probe

SRC = "drivers/net/virtio_net.c"
TOO_LONG = (Drop.LEN_EXCEEDS_MAX_SIZE, Drop.LEN_EXCEEDS_ALLOCATED_SIZE, Drop.EXCEEDS_BUFFER)


class RxResult(NamedTuple):
    """One narrated frame: where it went, its buffers as maps, and the skb napi_gro_receive sees."""

    path: str
    outcome: str
    reason: Drop | None
    buffer: Buffer | None  # the buffer the skb head is built from / the frame lands in
    buffers: tuple[Buffer, ...]
    skb: Skb | None
    cost: Cost | None


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


def deliver(c: Config, p: Plan) -> Skb | None:
    """The skb receive_*() built, through the rest of receive_buf: virtio_net_hdr_to_skb with
    the header the device wrote (flags 0, GSO_NONE: nothing changes, CHECKSUM_NONE), then
    eth_type_trans. What napi_gro_receive and its tracepoint see; None for a drop."""
    if p.outcome == "drop":
        return None
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


def _frags(c: Config, p: Plan, frags: tuple[PlanFrag, ...]) -> tuple[Frag, ...]:
    if c.mode == "big":  # chain pages
        return tuple(Frag(f"page{f.buffer}", f.offset, f.size, f.truesize) for f in frags)
    return tuple(
        Frag(c.alloc.label(p.buffers[f.buffer].frag_index), f.offset, f.size, f.truesize)
        for f in frags
    )


def receive(k: KernelProfile, s: VirtioRxSetup, log: StepLog) -> RxResult:
    """virtnet_probe's mode choice, the buffers posted, the device write, receive_buf."""
    c = config(k, s)
    p = plan(c, s.frame_len)
    frame = s.frame_len
    buffers: tuple[Buffer, ...]
    narrate_probe(c, log)
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
    skb = deliver(c, p)
    assert skb is not None
    _narrate_delivery(skb, log)
    return RxResult(path, p.outcome, None, buffer, buffers, skb, cost(p))


def _drop(path: str, p: Plan, buffer: Buffer, buffers: tuple[Buffer, ...]) -> RxResult:
    return RxResult(path, "drop", p.reason, buffer, buffers, None, None)


def _narrate_guard(c: Config, p: Plan, frame: int, log: StepLog) -> bool:
    """receive_buf: ``len < vi->hdr_len + ETH_HLEN`` → "short packet", rx_length_errors++."""
    used_len = c.hdr_len + frame
    short = p.reason is Drop.SHORT_PACKET
    log.add(
        SRC,
        "receive_buf",
        f"short packet: {used_len} < hdr_len + ETH_HLEN; dropped, rx_length_errors++"
        if short
        else "length passes the short-packet guard; dispatch by mode",
        len=used_len,
        hdr_len=c.hdr_len,
        ETH_HLEN=ETH_HLEN,
    )
    return short


def _narrate_delivery(skb: Skb, log: StepLog) -> None:
    log.add(
        SRC,
        "receive_buf",
        "the header has no flags and GSO_NONE: virtio_net_hdr_to_skb() changes nothing "
        "(CHECKSUM_NONE)",
        flags=0,
        gso_type=0,
    )
    log.add(
        "net/ethernet/eth.c",
        "eth_type_trans",
        "mac_header = data; pull ETH_HLEN (14): what napi_gro_receive and the tracepoints see",
        len=skb.len,
        data_len=skb.data_len,
        truesize=skb.truesize,
        nr_frags=skb.nr_frags,
    )
