"""What the receive path decided for one frame: the ``Plan`` (plain numbers, made in a few
comparisons per frame so that sweeps and replays can afford millions of them) and the reasons
it records, which the narrated steps format instead of deciding again. Each stage owns its
reasons: the drops are here, page_to_skb's build-or-copy reasons in page_to_skb.py."""

from __future__ import annotations

from typing import Final, Literal

from vnetrx.paths.reason import Reason
from vnetrx.paths.virtio_net.buffers import PostedBuffer
from vnetrx.values import Value


class Drop(Reason):
    """Why receive_buf / receive_* drop a frame (the JSON ``reason`` of a drop)."""

    SHORT_PACKET = "short_packet"  # receive_buf: len < hdr_len + ETH_HLEN, rx_length_errors++
    LEN_EXCEEDS_MAX_SIZE = "len_exceeds_max_size"  # receive_small: len > GOOD_PACKET_LEN
    LEN_EXCEEDS_ALLOCATED_SIZE = "len_exceeds_allocated_size"  # receive_big: len > max_len
    # a length no posted buffer holds, on a kernel without the check: the kernel would overrun
    # the buffer; vnetrx stops there
    EXCEEDS_BUFFER = "exceeds_buffer"
    # receive_buf / virtnet_receive_done: virtio_net_hdr_to_skb refused the header ("bad gso"
    # is logged), rx_frame_errors++
    BAD_GSO = "bad_gso"
    # 6.17+ virtnet_receive_done: virtio_net_handle_csum_offload refused the flags ("bad csum")
    BAD_CSUM = "bad_csum"


# The device counter each drop increments (drivers/net/virtio_net.c; docs/kernel/offloads.md
# §8.4): big mode's over-length drop only moves the queue's ``drops``; EXCEEDS_BUFFER is where
# vnetrx stops, not a kernel drop.
COUNTER: Final[dict[Drop, str | None]] = {
    Drop.SHORT_PACKET: "rx_length_errors",
    Drop.LEN_EXCEEDS_MAX_SIZE: "rx_length_errors",
    Drop.LEN_EXCEEDS_ALLOCATED_SIZE: "drops",
    Drop.EXCEEDS_BUFFER: None,
    Drop.BAD_GSO: "rx_frame_errors",
    Drop.BAD_CSUM: "rx_frame_errors",
}


Outcome = Literal["build_skb", "copy", "drop"]


class PlanFrag(Value):
    """A frag a plan attaches: which buffer (mergeable) or chain page (big), where, how much.
    Immutable; a plain ``Value`` class, not a record: a replay makes them for every geometry it
    decides with a header (the record idioms: README, "Records")."""

    __slots__ = ("buffer", "offset", "size", "truesize")
    _names = ("buffer", "offset", "size", "truesize")

    def __init__(self, buffer: int, offset: int, size: int, truesize: int) -> None:
        self.buffer: Final = buffer
        self.offset: Final = offset  # in the backing page
        self.size: Final = size
        # what skb_add_rx_frag / skb_coalesce_rx_frag added to skb->truesize
        self.truesize: Final = truesize

    def _values(self) -> tuple[object, ...]:
        return (self.buffer, self.offset, self.size, self.truesize)


class Append(Value):
    """What receive_mergeable's loop did with one buffer after the first. Immutable; a plain
    ``Value`` class, like ``PlanFrag``."""

    __slots__ = ("coalesced", "frag", "new_skb", "skb")
    _names = ("skb", "frag", "coalesced", "new_skb")

    def __init__(self, skb: int, frag: int, coalesced: bool, new_skb: bool) -> None:
        self.skb: Final = skb  # 0: the head skb; n: the n-th skb chained on its frag_list
        self.frag: Final = frag  # the frag of that skb it became or continued
        # skb_coalesce_rx_frag grew the last frag (else skb_add_rx_frag)
        self.coalesced: Final = coalesced
        self.new_skb: Final = new_skb  # the previous skb was full: this buffer starts ``skb``

    def _values(self) -> tuple[object, ...]:
        return (self.skb, self.frag, self.coalesced, self.new_skb)


class Plan(Value):
    """One frame's fate: the skb as receive_*() returns it (before virtio_net_hdr_to_skb and
    eth_type_trans), the buffers it used and the decisions with their deciding values.
    Immutable; a plain ``Value`` class, not a record: a sweep makes one per length (the record
    idioms: README, "Records")."""

    __slots__ = (
        "appends",
        "buf_len",
        "buffers",
        "copy",
        "data",
        "data_len",
        "end",
        "frag0",
        "frag_list",
        "frag_list_skbs",
        "frags",
        "head_size",
        "len",
        "nr_frags",
        "outcome",
        "pages_used",
        "reason",
        "tail",
        "tailroom",
        "truesize",
        "used",
        "why",
    )

    def __init__(self, outcome: Outcome, reason: Drop | None, why: Reason | None, buf_len: int,
                 buffers: tuple[PostedBuffer, ...], used: tuple[int, ...],
                 tailroom: int | None, copy: int, frag0: bool, head_size: int, end: int,
                 data: int, tail: int, len: int, data_len: int, truesize: int,
                 frags: tuple[PlanFrag, ...], appends: tuple[Append, ...], pages_used: int,
                 nr_frags: int, frag_list: tuple[tuple[PlanFrag, ...], ...] = (),
                 frag_list_skbs: int = 0) -> None:
        self.outcome: Final = outcome
        self.reason: Final = reason  # why it was dropped
        self.why: Final = why  # how the skb head was made (page_to_skb.Build); None on a drop
        # mergeable: the posted length; small: bufsize; big: PAGE_SIZE
        self.buf_len: Final = buf_len
        self.buffers: Final = buffers  # small/mergeable: posted buffers used; big: ()
        # bytes the device wrote into each (header included in the first)
        self.used: Final = used
        # page_to_skb's tailroom test value (None where not evaluated)
        self.tailroom: Final = tailroom
        self.copy: Final = copy  # frame bytes copied into a new head
        # the copy left the rest of the first buffer (big: of page 0) in it as frag 0
        self.frag0: Final = frag0
        self.head_size: Final = head_size  # skb head allocation (0 on a drop)
        self.end: Final = end
        self.data: Final = data
        self.tail: Final = tail
        self.len: Final = len
        self.data_len: Final = data_len
        self.truesize: Final = truesize
        self.frags: Final = frags  # empty when planned without detail
        # mergeable, per buffer after the first (empty without detail)
        self.appends: Final = appends
        # big mode: chain pages the skb references (page 0 included)
        self.pages_used: Final = pages_used
        self.nr_frags: Final = nr_frags  # the head skb's own frags
        # frag_list skbs, each a tuple of frags like ``frags`` (empty when planned without
        # detail)
        self.frag_list: Final = frag_list
        self.frag_list_skbs: Final = frag_list_skbs

    _names = ("outcome", "reason", "why", "buf_len", "buffers", "used", "tailroom", "copy",
              "frag0", "head_size", "end", "data", "tail", "len", "data_len", "truesize",
              "frags", "appends", "pages_used", "nr_frags", "frag_list", "frag_list_skbs")

    def _values(self) -> tuple[object, ...]:
        return (self.outcome, self.reason, self.why, self.buf_len, self.buffers, self.used,
                self.tailroom, self.copy, self.frag0, self.head_size, self.end,
                self.data, self.tail, self.len, self.data_len, self.truesize,
                self.frags, self.appends, self.pages_used, self.nr_frags,
                self.frag_list, self.frag_list_skbs)

    @property
    def allocations(self) -> int:
        """Objects allocated on the receive path: the sk_buff, and a separate head on a copy."""
        return 1 if self.outcome == "build_skb" else 2


def dropped(
    reason: Drop, buf_len: int, buffers: tuple[PostedBuffer, ...] = (), used: tuple[int, ...] = ()
) -> Plan:
    return Plan(outcome="drop", reason=reason, why=None, buf_len=buf_len, buffers=buffers,
                used=used, tailroom=None, copy=0, frag0=False, head_size=0, end=0, data=0,
                tail=0, len=0, data_len=0, truesize=0, frags=(), appends=(), pages_used=0,
                nr_frags=0)
