"""GRO: what napi_gro_receive() makes of the skbs a receive path hands it, for one TCP flow.

One home for net/core/gro.c (dev_gro_receive, gro_pull_from_frag0, skb_gro_receive,
napi_gro_complete; net/core/dev.c and net/core/skbuff.c before 5.17), the TCP parts of
net/ipv4/tcp_offload.c and net/ipv6/tcpv6_offload.c (tcp_gro_receive, tcp_gro_complete) and
the flushes of napi_complete_done / __napi_poll. Read at 5.15.215, 6.1.166, 6.12.15 and 6.18.7
(../shared/reference/gro-vhost-captures.md §1, checked against net/core/gro.c @torvalds HEAD).

``gro_receive`` takes the skbs of one flow in arrival order, grouped into NAPI polls, and
returns a record per input (``GroStep``: the gro_result and why) and per skb the stack receives
(``Delivered``: the skb as it leaves GRO and why it was completed). It decides; nothing here
writes words (``vnetrx.render.gro_text`` explains the records).

What is modelled, and what is assumed (said in the output's notes):
- one TCP flow over IPv4 or IPv6, segments contiguous, with the same flags (ACK), options and
  ack_seq, incrementing IPv4 IDs with DF (what a Linux sender writes), correct checksums;
  skb->hash 0 (virtio without HASH_REPORT, tun), so one GRO bucket;
- a GSO skb from a virtio_net_hdr carries SKB_GSO_DODGY (virtio_net_hdr_to_skb): it flushes the
  flow and is delivered alone, except on 6.1.0–6.1.6 (refused: not modelled);
- HZ below 1000 (Debian, Ubuntu and Fedora build with 250): a poll that uses its whole budget
  (64) flushes everything, as napi_complete_done does at the end of a shorter poll.
"""

from __future__ import annotations

from collections.abc import Sequence

from vnetrx.errors import InputError
from vnetrx.kernel.changes import GRO_DODGY_FLUSH, GRO_GSO_TCP_AGGREGATED
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Frag, FragListSkb, Skb
from vnetrx.model import GroFlush as Flush
from vnetrx.model import GroHow as How
from vnetrx.model import GroResult as Result
from vnetrx.paths.skbuff import skb_truesize
from vnetrx.paths.virtio_net_hdr import SKB_GSO_TCPV4, SKB_GSO_TCPV6, gso_type_names
from vnetrx.records import NamedTuple

GRO_MAX_SIZE = 65536  # dev->gro_max_size's default (GRO_LEGACY_MAX_SIZE; a literal in 5.x)
NAPI_POLL_WEIGHT = 64  # the budget of one poll (virtnet_poll, tun_napi_poll)
TCP_CHECK_OFFSET = 16  # offsetof(struct tcphdr, check): tcp_gro_complete's csum_offset
CHECKSUM_NONE, CHECKSUM_UNNECESSARY, CHECKSUM_PARTIAL = 0, 1, 3


class Segment(NamedTuple):
    """One skb napi_gro_receive() gets: the driver's skb (after eth_type_trans, so ``len``
    counts from the IP header) and what GRO reads of it."""

    frame: int  # the input frame's index
    skb: Skb
    head_frag: bool  # skb->head_frag: the head is a page fragment (build_skb, napi page_frag)
    ipv6: bool
    network_len: int  # the IP header's bytes (20, 40)
    tcp_len: int  # the TCP header's bytes, options included (doff * 4)
    page: str = ""  # the page the head lies in (case B makes it a frag), e.g. "frag0"
    page_offset: int = 0  # where skb->head lies in that page

    @property
    def offset(self) -> int:
        """skb_gro_offset() once TCP is parsed: the headers' bytes from the IP header."""
        return self.network_len + self.tcp_len

    @property
    def payload(self) -> int:
        """skb_gro_len(): the TCP payload."""
        return self.skb.len - self.offset


class GroStep(NamedTuple):
    """What GRO did with one input, and the held skb (the aggregate) after it."""

    frame: int
    result: Result
    how: How
    payload: int  # skb_gro_len()
    delta_truesize: int  # what the aggregate's truesize grew by (0 unless merged)
    len: int  # the aggregate's len after this input (the input's own when held or normal)
    truesize: int  # ... its truesize
    nr_frags: int  # the frags of the skb the next merge fills (NAPI_GRO_CB(p)->last)
    frag_list: int  # skbs chained on the aggregate's frag_list


class Delivered(NamedTuple):
    """An skb the stack receives: netif_receive_skb's len, the layout, the frames it carries."""

    skb: Skb
    frames: tuple[int, ...]  # the input indices it carries, in order
    flush: Flush
    segs: int  # NAPI_GRO_CB(skb)->count: gso_segs when it leaves as a GSO skb


class GroRun(NamedTuple):
    steps: tuple[GroStep, ...]
    delivered: tuple[Delivered, ...]
    max_skb_frags: int
    gro_max_size: int


class _Held:
    """The skb GRO holds for the flow, with its frag_list members (NAPI_GRO_CB(p)->last is
    the last member, or p itself)."""

    __slots__ = ("first", "frames", "members", "mss", "skb")

    def __init__(self, first: Segment, skb: Skb, mss: int) -> None:
        self.first = first
        self.skb = skb
        self.mss = mss
        self.frames = [first.frame]
        self.members: list[FragListSkb] = []

    def last_frags(self) -> int:
        return len(self.members[-1].frags) if self.members else self.skb.nr_frags


def gro_receive(k: KernelProfile, polls: Sequence[Sequence[Segment]],
                budget: int = NAPI_POLL_WEIGHT) -> GroRun:
    """dev_gro_receive for each segment of each poll, then the poll's flush."""
    if k.has(GRO_GSO_TCP_AGGREGATED) and not k.has(GRO_DODGY_FLUSH) and any(
        s.skb.gso_size for poll in polls for s in poll
    ):
        raise InputError(
            f"GRO of GSO skbs on {k.name} is not modelled: 6.1.0-6.1.6 aggregate SKB_GSO_DODGY "
            "TCP skbs (5eddb24901ee; 7871f54e3dee flushes them again from 6.1.7)"
        )
    steps: list[GroStep] = []
    delivered: list[Delivered] = []
    held: _Held | None = None
    for poll in polls:
        for seg in poll:
            held = _receive(k, seg, held, steps, delivered)
        if held is not None:
            whole = len(poll) >= budget
            delivered.append(_complete(held, Flush.BUDGET if whole else Flush.POLL_END))
            held = None
    return GroRun(tuple(steps), tuple(delivered), k.build.max_skb_frags, GRO_MAX_SIZE)


def _receive(k: KernelProfile, seg: Segment, held: _Held | None, steps: list[GroStep],
             delivered: list[Delivered]) -> _Held | None:
    if seg.skb.gso_size:
        # dev_gro_receive: "Only support TCP and non DODGY users" (6.1.7+, 6.2+); 5.x flushes
        # every GSO skb (skb_is_gso). Either way: flush set, skb_gro_receive refuses (-E2BIG),
        # the held skb is completed, this one goes on as GRO_NORMAL.
        if held is not None:
            delivered.append(_complete(held, Flush.GSO))
        skb = _pull_headers(seg)
        steps.append(GroStep(seg.frame, Result.NORMAL, How.GSO, seg.payload, 0, skb.len,
                             skb.truesize, skb.nr_frags, 0))
        delivered.append(Delivered(skb, (seg.frame,), Flush.NOT_HELD, 1))
        return None
    if held is not None:
        # tcp_gro_receive: "flush |= (len - 1) >= mss" refuses a longer segment;
        # skb_gro_receive: "p->len + len >= gro_max_size" refuses with -E2BIG
        refused = (Flush.LONGER if seg.payload > held.mss
                   else Flush.E2BIG if held.skb.len + seg.payload >= GRO_MAX_SIZE else None)
        if refused is None:
            before = held.skb.truesize
            how = _merge(k, held, seg)
            result = Result.MERGED if how is How.FRAG_LIST else Result.MERGED_FREE
            steps.append(GroStep(seg.frame, result, how, seg.payload, held.skb.truesize - before,
                                 held.skb.len, held.skb.truesize, held.last_frags(),
                                 len(held.members)))
            if seg.payload < held.mss:  # out_check_final: "flush = len < mss"
                delivered.append(_complete(held, Flush.SHORT))
                return None
            return held
        delivered.append(_complete(held, refused))
        return _hold(seg, steps, How.AFTER_E2BIG if refused is Flush.E2BIG else How.AFTER_LONGER)
    return _hold(seg, steps, How.FIRST)


def _hold(seg: Segment, steps: list[GroStep], how: How) -> _Held:
    """dev_gro_receive, GRO_HELD: gso_size = skb_gro_len(skb) (the flow's mss), then the
    headers GRO parsed are pulled into the linear area."""
    skb = _pull_headers(seg)
    held = _Held(seg, skb._replace(gso_size=seg.payload), seg.payload)
    steps.append(GroStep(seg.frame, Result.HELD, how, seg.payload, 0, skb.len, skb.truesize,
                         skb.nr_frags, 0))
    return held


def _pull_headers(seg: Segment) -> Skb:
    """dev_gro_receive's ``pull:``: grow = skb_gro_offset - skb_headlen; gro_pull_from_frag0
    copies ``grow`` header bytes from frags[0] to the tail (frags[0] shrinks, and goes when
    empty). Only an skb with no linear bytes has frag0 (skb_gro_reset_offset); one with some
    linear bytes but not all the headers takes pskb_may_pull's path, not modelled."""
    skb = seg.skb
    grow = seg.offset - skb.headlen
    if grow <= 0:
        return skb
    if skb.headlen:
        raise InputError(
            f"GRO of an skb with {skb.headlen} linear bytes before {seg.offset} bytes of "
            "headers (pskb_may_pull's path) is not modelled"
        )
    if skb.end - skb.tail < grow or not skb.frags or skb.frags[0].size < grow:
        raise InputError(
            f"GRO of this skb is not modelled: frag0 does not hold the {seg.offset} bytes of "
            "headers, or the head has no room for them (skb_gro_header_slow's path)"
        )
    first = skb.frags[0]
    rest = skb.frags[1:]
    if first.size > grow:
        rest = (first._replace(offset=first.offset + grow, size=first.size - grow), *rest)
    return skb._replace(tail=skb.tail + grow, data_len=skb.data_len - grow,
                        nr_frags=len(rest), frags=rest)


def _merge(k: KernelProfile, held: _Held, seg: Segment) -> How:
    """skb_gro_receive(p, skb): the three ways a segment joins the held skb."""
    skb, offset, headlen = seg.skb, seg.offset, seg.skb.headlen
    room = k.build.max_skb_frags - held.last_frags()
    if headlen <= offset and len(skb.frags) <= room:
        # the payload is all in frags: they move, the first trimmed by offset - headlen;
        # delta = skb->truesize - SKB_TRUESIZE(skb_end_offset(skb))
        trim = offset - headlen
        moved = (skb.frags[0]._replace(offset=skb.frags[0].offset + trim,
                                       size=skb.frags[0].size - trim), *skb.frags[1:])
        delta = skb.truesize - skb_truesize(k, skb.end)
        _add(held, moved, seg.payload, delta)
        held.frames.append(seg.frame)
        return How.FRAGS
    if headlen > offset and seg.head_frag and 1 + len(skb.frags) <= room:
        # the head's page becomes a frag from data + offset (its payload), then skb's frags;
        # delta = skb->truesize - SKB_DATA_ALIGN(sizeof(struct sk_buff)): only the struct stays
        delta = skb.truesize - k.sk_buff_aligned
        head = Frag(seg.page, seg.page_offset + skb.data + offset, headlen - offset,
                    delta - sum(f.truesize for f in skb.frags))
        _add(held, (head, *skb.frags), seg.payload, delta)
        held.frames.append(seg.frame)
        return How.HEAD_FRAG
    # merge: chained whole on frag_list after __skb_pull(offset) (eating into frags[0] when the
    # headers are not all linear); delta = skb->truesize
    frags = skb.frags
    if offset > headlen:
        eat = offset - headlen
        frags = (frags[0]._replace(offset=frags[0].offset + eat, size=frags[0].size - eat),
                 *frags[1:])
    held.members.append(FragListSkb(seg.payload, skb.truesize, frags))
    held.skb = held.skb._replace(len=held.skb.len + seg.payload,
                                 data_len=held.skb.data_len + seg.payload,
                                 truesize=held.skb.truesize + skb.truesize)
    held.frames.append(seg.frame)
    return How.FRAG_LIST


def _add(held: _Held, frags: tuple[Frag, ...], payload: int, delta: int) -> None:
    """``done:`` p (and lp, the last frag_list member, when there is one) gain len, data_len
    and truesize; the frags go to lp."""
    p = held.skb
    if held.members:
        lp = held.members[-1]
        held.members[-1] = FragListSkb(lp.len + payload, lp.truesize + delta, lp.frags + frags)
        held.skb = p._replace(len=p.len + payload, data_len=p.data_len + payload,
                              truesize=p.truesize + delta)
    else:
        held.skb = p._replace(len=p.len + payload, data_len=p.data_len + payload,
                              truesize=p.truesize + delta, nr_frags=p.nr_frags + len(frags),
                              frags=p.frags + frags)


def _complete(held: _Held, flush: Flush) -> Delivered:
    """napi_gro_complete: a lone skb leaves with gso_size 0; an aggregate through
    inet/ipv6_gro_complete → tcp4/6_gro_complete → tcp_gro_complete: gso_type TCPV4/TCPV6,
    csum_start at the TCP header, csum_offset 16, CHECKSUM_PARTIAL, gso_segs = count."""
    skb = held.skb._replace(frag_list=tuple(held.members))
    count = len(held.frames)
    if count == 1:
        # the lone skb: gso_size back to 0; CHECKSUM_NONE was validated by
        # skb_gro_checksum_validate → __skb_incr_checksum_unnecessary: UNNECESSARY
        summed = CHECKSUM_UNNECESSARY if skb.ip_summed == CHECKSUM_NONE else skb.ip_summed
        return Delivered(skb._replace(gso_size=0, ip_summed=summed), tuple(held.frames), flush,
                         1)
    gso_type = SKB_GSO_TCPV6 if held.first.ipv6 else SKB_GSO_TCPV4
    skb = skb._replace(
        gso_type=gso_type,
        gso_type_names=gso_type_names(gso_type),
        gso_segs=count,
        ip_summed=CHECKSUM_PARTIAL,
        csum_start=skb.data + held.first.network_len,
        csum_offset=TCP_CHECK_OFFSET,
    )
    return Delivered(skb, tuple(held.frames), flush, count)
