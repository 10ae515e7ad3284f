"""Frozen records a trace is made of. Pure data: no kernel arithmetic, no I/O, no click/rich."""

from __future__ import annotations

from enum import Enum
from typing import Any, Union

from vnetrx.kernel.profile import KernelProfile
from vnetrx.records import NamedTuple

Value = Union[int, str, bool, None]  # noqa: UP007  (a runtime alias: py3.10 needs Union)

GRO_SCHEMA = "vnetrx.gro/1"  # vnetrx trace --gro (vnetrx.flow)
# the most segments a flow trace (vnetrx.flow, trace --segments) sends: vnetrx's own bound
# (here, not in vnetrx.flow, so that the CLI's option can say it without loading GRO)
MAX_SEGMENTS = 4096
TRACE_SCHEMA = "vnetrx.trace/1"  # a Trace's ``schema``: the JSON document codec makes of it


class Label(str, Enum):
    """A closed set of names a trace prints (and, as paths/reason.py's Reason, the base of every
    decision's reason): a ``str`` enum whose members print (and serialise) as their values, so
    a member is the string it names."""

    def __str__(self) -> str:
        return str(self.value)


class Path(Label):
    """Which receive path a trace walked: a Trace's ``path``."""

    VIRTIO_SMALL = "virtio-small"  # receive_small: neither MRG_RXBUF nor big packets
    VIRTIO_BIG = "virtio-big"  # receive_big: guest GSO or an MTU above 1500, page chains
    VIRTIO_MERGEABLE = "virtio-mergeable"  # receive_mergeable: MRG_RXBUF
    TAP = "tap"  # a write(2) to a tun/tap fd: tun_get_user
    VHOST_TX = "vhost-tx"  # a guest's transmitted frame on the host: vhost-net into the tap


class Outcome(Label):
    """What became of the frame: a Trace's ``outcome`` (and a sweep row's, a replayed frame's)."""

    BUILD_SKB = "build_skb"  # the skb's head is the buffer the frame is in
    COPY = "copy"  # virtio-net: page_to_skb copied the head into a new skb
    DROP = "drop"  # the driver dropped the frame (``reason``, ``counter``)
    ALLOC_SKB = "alloc_skb"  # tap: tun_alloc_skb, the write copied into a new skb
    ERROR = "error"  # the write() fails (tap) or attaching the XDP program does (``errno``)
    XDP_DROP = "xdp_drop"  # an XDP program's verdict kept the frame from the stack: dropped
    XDP_TX = "xdp_tx"  # ... sent back out (XDP_TX)
    XDP_REDIRECT = "xdp_redirect"  # ... redirected (bpf_redirect to the device itself)


class XdpMode(Label):
    """Where an XDP program ran: an XdpRun's ``mode``."""

    NATIVE = "native"  # in the driver, on its xdp_buff
    GENERIC = "generic"  # do_xdp_generic, on an skb already built


class GroResult(Label):
    """vnetrx trace --gro: enum gro_result, as the net:napi_gro_receive_exit tracepoint prints it."""

    MERGED = "merged"  # GRO_MERGED (0): chained on the held skb's frag_list
    MERGED_FREE = "merged_free"  # GRO_MERGED_FREE (1): its frags (and head) moved, skb freed
    HELD = "held"  # GRO_HELD (2): the first skb of a flow, waiting for more
    NORMAL = "normal"  # GRO_NORMAL (3): to the stack as it is


class GroHow(Label):
    """vnetrx trace --gro: why an input got its GroResult."""

    FIRST = "first"  # no held skb of this flow: held, gso_size = its payload (the mss)
    FRAGS = "frags"  # skb_gro_receive: the payload is in frags; they move to the held skb
    HEAD_FRAG = "head_frag"  # skb_gro_receive: a page-fragment head becomes a frag too
    FRAG_LIST = "frag_list"  # skb_gro_receive: chained (frags would pass MAX_SKB_FRAGS, or a
    # linear payload in a kmalloc'd head)
    AFTER_E2BIG = "after_e2big"  # p->len + len >= gro_max_size: the held skb was completed and
    # this one is held in its place
    AFTER_LONGER = "after_longer"  # len > mss: not merged; the held skb completed, this one held
    AFTER_MISMATCH = "after_mismatch"  # a header differs from the held skb's (flags, window,
    # ack, options, TTL/TOS/DF, IP ID, sequence): that one completed, this one held
    GSO = "gso"  # a GSO skb dev_gro_receive flushes (before 6.1 every one; not TCP; from
    # 7871f54e3dee, 6.1.7 and 6.2, SKB_GSO_DODGY too): delivered alone
    GSO_SEGS = "gso_segs"  # a GSO skb GRO let in whose len is not gso_segs * gso_size
    # (virtio_net_hdr_to_skb leaves gso_segs 0): out_check_final flushes it, delivered alone
    FLAGS = "flags"  # URG, PSH, RST, SYN or FIN and nothing to merge into: delivered alone
    BAD_CHECKSUM = "bad_checksum"  # CHECKSUM_NONE and the TCP checksum is wrong: alone
    BAD_NETWORK = "bad_network"  # IPv4 options, a fragment, a bad header checksum or length
    GRO_OFF = "gro_off"  # NETIF_F_GRO off (netif_elide_gro): every skb as it is
    NOT_TCP = "not_tcp"  # not TCP over IPv4/IPv6: nothing merges it, it passes the flows by
    NO_PAYLOAD = "no_payload"  # a TCP segment without payload (a pure ACK): never merged
    HAS_FRAG_LIST = "has_frag_list"  # the skb already has a frag_list: flushed, alone
    UDP_UNMERGEABLE = "udp_unmergeable"  # udp_gro_receive_segment: a zero UDP checksum, or
    # a length field that is not the datagram's: flushed
    NOT_PARSED = "not_parsed"  # a VLAN tag without vlan_gro_receive (CONFIG_VLAN_8021Q not
    # set), or an IPv6 hop-by-hop header the kernel's extension header walk does not take


class GroFlush(Label):
    """Why a held skb was completed (napi_gro_complete) and handed to the stack."""

    SHORT = "short"  # tcp_gro_receive: a merged segment shorter than mss ends the aggregate
    E2BIG = "e2big"  # the next segment would reach gro_max_size
    LONGER = "longer"  # the next segment is longer than mss
    GSO = "gso"  # a GSO skb of the flow arrived (flush set by dev_gro_receive)
    GSO_SIZE = "gso_size"  # a GSO skb of the flow whose gso_size is not the flow's mss
    GSO_SEGS = "gso_segs"  # a GSO skb merged whose len is not gso_segs * gso_size
    POLL_END = "poll_end"  # napi_complete_done after a poll below budget: everything flushed
    BUDGET = "budget"  # __napi_poll after a whole budget, HZ < 1000: everything flushed
    NOT_HELD = "not_held"  # a GRO_NORMAL skb: never held
    MISMATCH = "mismatch"  # a segment of the flow whose headers differ arrived
    FLAGS = "flags"  # a merged segment with PSH or FIN ended it
    EVICTED = "evicted"  # a ninth flow was held (MAX_GRO_SKBS 8): the oldest completed
    TIMER = "timer"  # the gro_flush_timeout hrtimer's poll (napi_complete_done with no work)
    OLD = "old"  # napi_complete_done with gro_flush_timeout: held since an earlier jiffy
    MAX_COUNT = "max_count"  # a UDP aggregate of UDP_GRO_CNT_MAX (64) segments
    UNMERGEABLE = "unmergeable"  # a segment of the flow GRO never merges (a pure ACK, an skb
    # with a frag_list) arrived


class Refusal(NamedTuple):
    """The check that refused a header: where the kernel makes it, what it requires, why the
    header failed it, and the changes that put the check there."""

    function: str
    source: str  # "include/linux/virtio_net.h:virtio_net_hdr_to_skb @ 6.6.44"
    test: str
    reason: str
    because: tuple[str, ...] = ()


class Step(NamedTuple):
    """One decision or action of a kernel function, with the values that decided it."""

    function: str  # the kernel function, verbatim ("page_to_skb")
    source: str  # "drivers/net/virtio_net.c:page_to_skb @ 5.13"
    summary: str  # what happened, one sentence
    values: tuple[
        tuple[str, Value], ...
    ] = ()  # ordered name → value; kernel names where they exist
    because: tuple[str, ...] = ()  # Change.key values that chose this branch


class Region(NamedTuple):
    """A byte range of a buffer: offsets relative to the buffer's first byte."""

    name: str  # "vnet_hdr", "frame", "tailroom", "skb_shared_info", ...
    offset: int
    size: int
    note: str = ""


class Buffer(NamedTuple):
    """One posted rx buffer (or page) and how its bytes are used."""

    size: int  # bytes of the allocation (mergeable: ctx truesize; small: bufsize; big: a page)
    page: str  # the backing memory, e.g. "frag0" (a 32 KiB page_frag page) or "page1"
    page_offset: int  # where the buffer starts inside that backing page
    used: int  # bytes the device wrote into it (header included for the first buffer)
    regions: tuple[Region, ...] = ()


class Frag(NamedTuple):
    """skb_shinfo(skb)->frags[i]: ``offset`` is inside the backing page, as skb_frag_off() sees it."""

    page: str
    offset: int
    size: int
    truesize: int  # what skb_add_rx_frag()/skb_coalesce_rx_frag() added to skb->truesize


class FragListSkb(NamedTuple):
    """An skb chained on skb_shinfo(head)->frag_list (receive_mergeable past MAX_SKB_FRAGS)."""

    len: int
    truesize: int  # its own: alloc_skb(0)'s head plus the buffers it references
    frags: tuple[Frag, ...] = ()


class Skb(NamedTuple):
    """The sk_buff fields vnetrx explains (offsets are from skb->head). A NamedTuple: sweeps build
    one per frame length. Every output field is also a row of ``SKB_FIELDS`` below, which is
    where JSON, schemas, sweep rows, CSV, diff, the text view and the live/lab checks get them."""

    head: str  # what skb->head points at ("the rx buffer (build_skb)", "kmalloc-512", ...)
    head_size: int  # bytes of the head allocation: end + the skb_shared_info area
    data: int
    tail: int
    end: int  # where skb_shared_info starts
    len: int
    data_len: int
    truesize: int
    nr_frags: int = 0  # skb_shinfo(skb)->nr_frags (== len(frags) whenever frags are listed)
    mac_header: int | None = None
    frags: tuple[Frag, ...] = ()
    frag_list: tuple[FragListSkb, ...] = ()  # the head's len/data_len/truesize include them
    # what virtio_net_hdr_to_skb (and receive_buf's DATA_VALID and hash) set
    ip_summed: int = 0  # CHECKSUM_NONE 0, UNNECESSARY 1, COMPLETE 2, PARTIAL 3
    csum_start: int | None = None  # CHECKSUM_PARTIAL: offset from skb->head (else the union is csum)
    csum_offset: int | None = None
    gso_size: int = 0  # skb_shinfo(skb)->gso_size
    gso_type: int = 0  # skb_shinfo(skb)->gso_type: the SKB_GSO_* mask
    gso_type_names: tuple[str, ...] = ()  # its bits, named as that kernel names them
    gso_segs: int = 0
    hash: int = 0  # skb->hash
    l4_hash: bool = False
    meta_len: int = 0  # skb_metadata_len(): XDP metadata kept in front of skb->data

    @property
    def headlen(self) -> int:
        """skb_headlen(): bytes in the linear area."""
        return self.len - self.data_len

    @property
    def ip_summed_name(self) -> str:
        return IP_SUMMED[self.ip_summed]

    def but(self, **changes: object) -> Skb:
        return self._replace(**changes)  # type: ignore[arg-type]


class SkbField(NamedTuple):
    """One skb output field: what it is and which outputs carry it."""

    name: str  # the Skb attribute, and the JSON key
    kind: str  # "nat" (a count or offset) | "nat?" (may be null) | "str" | "strs" | "bool"
    doc: str
    diff: bool = True  # one of `vnetrx diff`'s result fields
    row: bool = False  # a column of sweep rows (JSONL and CSV)
    observed: str = ""  # "tracepoint" | "kprobe": what the live and lab checks can compare
    text: tuple[int, int] | None = None  # (line, position) in the text view's skb block


# The skb output fields, in the order JSON prints them. Adding a field: a row here, the
# attribute on Skb, and the code that computes it.
SKB_FIELDS: tuple[SkbField, ...] = (
    SkbField("len", "nat", "skb->len: bytes from skb->data, frags included", row=True,
             observed="tracepoint", text=(1, 0)),
    SkbField("data_len", "nat", "skb->data_len: bytes in frags (and frag_list skbs)", row=True,
             observed="tracepoint", text=(1, 1)),
    SkbField("truesize", "nat", "skb->truesize: the memory charged for this packet", row=True,
             observed="tracepoint", text=(1, 4)),
    SkbField("nr_frags", "nat", "skb_shinfo(skb)->nr_frags", row=True, observed="tracepoint",
             text=(1, 3)),
    SkbField("mac_header", "nat?", "offset of the Ethernet header from skb->head",
             observed="kprobe", text=(0, 0)),
    SkbField("end", "nat", "skb->end: where skb_shared_info starts", observed="kprobe",
             text=(0, 3)),
    SkbField("data", "nat", "skb->data, from skb->head", diff=False, observed="kprobe",
             text=(0, 1)),
    SkbField("tail", "nat", "skb->tail, from skb->head", diff=False, observed="kprobe",
             text=(0, 2)),
    SkbField("headlen", "nat", "skb_headlen(): bytes in the linear area", text=(1, 2)),
    SkbField("head", "str", "what skb->head points at"),
    SkbField("head_size", "nat", "bytes of the head allocation (end + skb_shared_info)",
             diff=False),
    SkbField("ip_summed", "nat", "skb->ip_summed (CHECKSUM_NONE 0 .. CHECKSUM_PARTIAL 3)",
             row=True, observed="tracepoint", text=(2, 0)),
    SkbField("ip_summed_name", "str", "the name of skb->ip_summed", diff=False),
    SkbField("csum_start", "nat?", "skb->csum_start from skb->head (CHECKSUM_PARTIAL only)",
             text=(2, 1)),
    SkbField("csum_offset", "nat?", "skb->csum_offset (CHECKSUM_PARTIAL only)", text=(2, 2)),
    SkbField("gso_size", "nat", "skb_shinfo(skb)->gso_size", row=True, observed="tracepoint",
             text=(2, 3)),
    SkbField("gso_type", "nat", "skb_shinfo(skb)->gso_type: the kernel's SKB_GSO_* mask",
             row=True, observed="tracepoint", text=(2, 4)),
    SkbField("gso_type_names", "strs", "the SKB_GSO_* bits of gso_type", diff=False),
    SkbField("gso_segs", "nat", "skb_shinfo(skb)->gso_segs", text=(2, 5)),
    SkbField("hash", "nat", "skb->hash (the RSS hash a HASH_REPORT device gave)",
             observed="tracepoint", text=(2, 6)),
    SkbField("l4_hash", "bool", "skb->l4_hash: the hash covers the L4 ports",
             observed="tracepoint", text=(2, 7)),
    SkbField("meta_len", "nat", "skb_metadata_len(): XDP metadata in front of skb->data (an "
             "XDP_PASS after bpf_xdp_adjust_meta)"),
)

# include/linux/skbuff.h (unchanged 5.12 .. 7.x)
IP_SUMMED = ("CHECKSUM_NONE", "CHECKSUM_UNNECESSARY", "CHECKSUM_COMPLETE", "CHECKSUM_PARTIAL")


# What the live and lab checks can compare: the fields a tracepoint prints
# (net:netif_receive_skb_entry, net:napi_gro_receive_entry) and those a kprobe reads.
TRACEPOINT_FIELDS = tuple(f.name for f in SKB_FIELDS if f.observed == "tracepoint")
KPROBE_FIELDS = tuple(f.name for f in SKB_FIELDS if f.observed == "kprobe")


class Cost(NamedTuple):
    """What receiving this packet costs, beyond the rx buffers posted in advance."""

    allocations: int  # objects allocated on the receive path: the sk_buff, a separate head
    bytes_copied: int  # frame bytes memcpy'd into a new linear area (the vnet header copy into
    # skb->cb, hdr_len bytes on every path, is not counted)
    frags: int  # page fragments the skb references (nr_frags)


# a Trace's outcome when XDP kept the frame
XDP_OUTCOMES = (Outcome.XDP_DROP, Outcome.XDP_TX, Outcome.XDP_REDIRECT)
# ... when the stack receives an skb (napi_gro_receive, or netif_rx/netif_receive_skb for tun)
STACK_OUTCOMES = (Outcome.BUILD_SKB, Outcome.COPY, Outcome.ALLOC_SKB)
# --check's exit status when the outcome is not one of them: the kernel dropped or refused the
# frame (README, "Exit status")
EXIT_CHECK = 3


class XdpRun(NamedTuple):
    """What an attached XDP program saw and what its verdict did (tun: tun_build_skb's native
    XDP or do_xdp_generic on a built skb; virtio-net: receive_small's / receive_mergeable's XDP
    branch). Counters are the device's deltas for this frame and, for a frame the program
    transmitted, what a reader of it gets (tun: a read() on the fd; virtio-net: the device,
    from the send queue); None where the stack after XDP decides (XDP_PASS's rx_dropped)."""

    action: str  # the verdict the program returns: "XDP_PASS", "XDP_DROP", ...
    mode: str  # an XdpMode: "native" (in the driver) | "generic" (do_xdp_generic on an skb)
    function: str  # where it ran: "tun_build_skb" | "do_xdp_generic" | "receive_small_xdp" ...
    headroom: int | None  # xdp.data - xdp.data_hard_start (None: generic, not laid out)
    len: int  # xdp.data_end - xdp.data
    frame_sz: int | None  # xdp.frame_sz
    tailroom: int | None  # bytes between data_end and the end of frame_sz less skb_shared_info
    # "pass" | "drop" | "tx" | "redirect" | "redirect_failed" | "tx_failed" (virtio-net: the
    # xdp_frame could not be sent, counted in the send queue's xdp_tx_drops)
    result: str
    errno: str | None  # a failed redirect's or transmit's error
    read_len: int | None  # bytes the reader of a transmitted frame gets (vnet header included)
    read_hdr: str | None  # the vnet header bytes in front of it, hex
    rx_packets: int
    rx_bytes: int
    rx_dropped: int | None
    tx_packets: int
    tx_bytes: int
    copied: int = 0  # bytes copied before the program runs (generic XDP's new head, virtio's
    # xdp_linearize_page into a fresh page)
    nr_frags: int = 0  # the xdp_buff's frags (virtio-net multi-buffer XDP, 6.3+)
    frags_size: int = 0  # their bytes (skb_shared_info.xdp_frags_size)
    ran: bool = True  # the program ran; False: the driver dropped the frame before it (refused)
    refused: str | None = None  # why the driver did not run it: "gso_type", "needs_csum", ...
    meta_len: int = 0  # xdp.data - xdp.data_meta after the program
    # virtio-net's per-queue counters for this frame (struct virtnet_rq_stats / _sq_stats,
    # what ethtool -S prints): ("xdp_packets", 1), ...; empty on tun
    driver: tuple[tuple[str, int], ...] = ()


class RecordField(NamedTuple):
    """One attribute of a structured result record (``XdpRun``, ``VhostTx``, ``Refusal``...):
    where a trace's JSON puts it and what it is. Codec's JSON and its reader, the trace schema
    and `vnetrx diff`'s fields come from these tables (``RESULT_RECORDS``)."""

    name: str  # the record's attribute
    # its place in the trace JSON, dotted: "xdp.mode", "xdp.xdp_buff.headroom" (in a nested
    # record's table: from that record's object)
    at: str
    # SkbField's kinds, and "str?" (a string or null); with ``values``: "str" is one of them,
    # "str?" one of them or null, "counters?" null or an object of a whole number per value;
    # "record?": null or the object of a nested record (``table``)
    kind: str
    doc: str
    diff: bool = True  # one of `vnetrx diff`'s result fields
    values: tuple[str, ...] = ()
    # the object holding this field is printed only when this attribute is not None (xdp_tx:
    # only a frame the program transmitted is read back)
    gate: bool = False
    table: RecordTable | None = None  # kind "record?": the nested record's


class RecordTable(NamedTuple):
    """A structured record and its fields, in the order a trace's JSON prints them."""

    record: type[Any]  # the class the fields make (XdpRun(**fields))
    fields: tuple[RecordField, ...]


# include/uapi/linux/bpf.h: enum xdp_action, in its order (vnetrx.paths.xdp.VERDICT's names)
XDP_ACTIONS = ("XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT")
# virtio-net's queue counters one frame moves (struct virtnet_rq_stats / _sq_stats), named as
# ethtool -S totals name them (6.11+; per queue up to 6.10: rx_queue_0_*, tx_queue_0_*)
DRIVER_COUNTERS = ("rx_drops", "rx_xdp_packets", "rx_xdp_tx", "rx_xdp_redirects",
                   "rx_xdp_drops", "tx_xdp_tx", "tx_xdp_tx_drops")

# The XdpRun output fields, in the order a trace's JSON prints them (``xdp`` with its nested
# ``xdp_buff``, ``counters`` and ``driver_counters``, then ``xdp_tx``): codec's JSON and its
# reader, the trace schema and `vnetrx diff`'s fields come from here. Adding a field: a row
# here, the attribute on XdpRun, and the code that computes it.
XDP_FIELDS: tuple[RecordField, ...] = (
    RecordField("action", "xdp.action", "str", "the verdict the program returns", diff=False,
             values=XDP_ACTIONS),
    RecordField("mode", "xdp.mode", "str", "native (in the driver) or generic (do_xdp_generic on "
             "an skb)", values=tuple(m.value for m in XdpMode)),
    RecordField("function", "xdp.function", "str", "the kernel function the program ran in"),
    RecordField("headroom", "xdp.xdp_buff.headroom", "nat?", "xdp.data - xdp.data_hard_start "
             "(null: generic XDP, not laid out)"),
    RecordField("len", "xdp.xdp_buff.len", "nat", "xdp.data_end - xdp.data", diff=False),
    RecordField("frame_sz", "xdp.xdp_buff.frame_sz", "nat?", "xdp.frame_sz"),
    RecordField("tailroom", "xdp.xdp_buff.tailroom", "nat?", "bytes between data_end and the end "
             "of frame_sz less skb_shared_info", diff=False),
    RecordField("nr_frags", "xdp.xdp_buff.nr_frags", "nat", "the xdp_buff's frags (multi-buffer "
             "XDP, 6.3+)"),
    RecordField("frags_size", "xdp.xdp_buff.frags_size", "nat", "their bytes "
             "(skb_shared_info.xdp_frags_size)", diff=False),
    RecordField("meta_len", "xdp.xdp_buff.meta_len", "nat", "xdp.data - xdp.data_meta after the "
             "program (bpf_xdp_adjust_meta)", diff=False),
    RecordField("ran", "xdp.ran", "bool", "the program ran (false: the driver dropped the frame "
             "before it)", diff=False),
    RecordField("refused", "xdp.refused", "str?", "why the driver did not run the program",
             values=("gso_type", "needs_csum", "linearize", "len_check", "too_many_buffers")),
    RecordField("result", "xdp.result", "str", "what the verdict did", values=(
        "pass", "drop", "tx", "redirect", "redirect_failed", "tx_failed")),
    RecordField("errno", "xdp.errno", "str?", "a failed redirect's or transmit's error"),
    RecordField("copied", "xdp.copied", "nat", "bytes copied before the program ran (generic "
             "XDP's new head, xdp_linearize_page)"),
    RecordField("rx_packets", "xdp.counters.rx_packets", "nat", "the device's rx_packets delta"),
    RecordField("rx_bytes", "xdp.counters.rx_bytes", "nat", "the device's rx_bytes delta"),
    RecordField("rx_dropped", "xdp.counters.rx_dropped", "nat?", "the device's rx_dropped delta "
             "(null: the stack after XDP_PASS decides)"),
    RecordField("tx_packets", "xdp.counters.tx_packets", "nat", "the device's tx_packets delta"),
    RecordField("tx_bytes", "xdp.counters.tx_bytes", "nat", "the device's tx_bytes delta"),
    RecordField("driver", "xdp.driver_counters", "counters?", "virtio-net's queue counters for "
             "this frame (null on tun)", values=DRIVER_COUNTERS),
    RecordField("read_len", "xdp_tx.len", "nat", "bytes the reader of the transmitted frame gets "
             "(vnet header included)", gate=True),
    RecordField("read_hdr", "xdp_tx.hdr", "str?", "the vnet header bytes in front of it, hex",
             diff=False),
)


class VhostBuffer(NamedTuple):
    """vhost_net_build_xdp's buffer (drivers/vhost/net.c): its padding and size."""

    pad: int  # SKB_DATA_ALIGN(VHOST_NET_RX_PAD + headroom + sock_hlen): where the frame starts
    headroom: int  # XDP_PACKET_HEADROOM when the tap has an XDP program (SOCK_XDP), else 0
    buflen: int  # SKB_DATA_ALIGN(len + pad) + SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
    page_size: int  # buflen above PAGE_SIZE is -ENOSPC
    max_frame: int  # the longest frame (after the vnet header) that fits
    hdr_offset: int  # where the vnet header sits: 4 (struct tun_xdp_hdr's gso), 0 from 6.17


class VhostTx(NamedTuple):
    """What vhost-net did with a guest's transmitted frame (handle_tx): which road it took into
    the tap and the values that decided it. A trace's ``vhost`` (path vhost-tx)."""

    path: str  # "batch" (vhost_net_build_xdp + tun_xdp_one) | "tun_get_user" (sendmsg)
    reason: str  # why that road: "batched" | "enospc" | "sndbuf" | "zerocopy" | "einval"
    sock_hlen: int  # the vnet header the tap socket carries (the tap's vnet_hdr_sz)
    len: int  # iov_iter_count: sock_hlen + the frame
    sk_sndbuf: int  # the tap socket's sk_sndbuf (INT_MAX unless TUNSETSNDBUF)
    zerocopy: bool  # experimental_zcopytx: handle_tx_zerocopy instead of handle_tx_copy
    zcopy_used: bool  # this frame's pages were pinned (zerocopy_sg_from_iter), not copied
    iff_napi: bool  # the tap has IFF_NAPI: its skbs go through GRO
    page_frag: str  # the allocator: "vhost_net_page_frag_refill" | "page_frag_alloc_align"
    stalled: bool  # vhost_net_build_xdp failed (not -ENOSPC): the queue stops at this frame
    delivery: str | None  # "netif_receive_skb" | "napi_gro_receive"; None: no skb
    batch: int  # VHOST_NET_BATCH
    weight: int  # VHOST_NET_WEIGHT (bytes per handle_tx run)
    pkt_weight: int  # VHOST_NET_PKT_WEIGHT (packets per handle_tx run)
    buffer: VhostBuffer | None  # None: vhost_net_build_xdp was not called


class Received(NamedTuple):
    """What one frame's path made of it, the result a trace reports (virtio-net receive and a
    tap write alike): the engine adds the kernel, the inputs and the narrated steps."""

    path: str  # "virtio-small" | "virtio-big" | "virtio-mergeable" | "tap"
    outcome: str  # "build_skb" | "copy" | "alloc_skb" | "drop" | "error" | "xdp_*"
    reason: str | None  # why it was dropped or failed (a Reason enum's value)
    buffer: Buffer | None  # the buffer the skb head is built from / the frame lands in
    buffers: tuple[Buffer, ...]  # every buffer the frame used, in order
    skb: Skb | None  # as the stack sees it: after eth_type_trans()
    cost: Cost | None
    errno: str | None = None  # outcome "error": what the syscall (or the attach) fails with
    counter: str | None = None  # the device counter a drop or failure increments
    refused_by: Refusal | None = None  # the check that refused the virtio_net_hdr
    xdp: XdpRun | None = None  # an attached program's run
    vhost: VhostTx | None = None  # path vhost-tx: vhost-net's road into the tap


class Trace(NamedTuple):
    """Everything one run of a path produced. Renderers consume only this."""

    schema: str
    kernel: KernelProfile  # the profile used, resolved
    input: tuple[tuple[str, Value], ...]  # every option, resolved
    path: str  # a Path: "virtio-small" | "virtio-big" | "virtio-mergeable" | "tap"
    outcome: str  # an Outcome: "build_skb" | "copy" | "drop" | ...
    reason: str | None  # why it was dropped (None otherwise)
    steps: tuple[Step, ...]
    buffer: Buffer | None  # the buffer the skb head is built from / the frame lands in
    buffers: tuple[Buffer, ...]  # every buffer the frame used, in order
    skb: Skb | None  # as the stack sees it: after eth_type_trans() pulled ETH_HLEN
    cost: Cost | None
    notes: tuple[str, ...] = ()  # approximations and uncertainties for this scenario
    errno: str | None = None  # outcome "error": what the syscall fails with ("EINVAL")
    counter: str | None = None  # the device counter a drop or failure increments
    refused_by: Refusal | None = None  # the check that refused the virtio_net_hdr
    xdp: XdpRun | None = None  # an attached XDP program's run (tap path)
    vhost: VhostTx | None = None  # path vhost-tx: vhost-net's road into the tap


class ResultField(NamedTuple):
    """A result field that is a string or null: a ``Received`` and a ``Trace`` attribute of
    this name. Codec's JSON and its reader, the trace schema and `vnetrx diff`'s fields come
    from ``RESULT_STRINGS``."""

    name: str
    kind: str  # "str", or "str?": a string or null
    values: tuple[str, ...] = ()  # the closed set it is one of (empty: any string)
    diff: bool = True  # one of `vnetrx diff`'s result fields


# The string result fields, in the order a trace's JSON prints them (after ``input``). A new
# one: a row here and the attribute in Received and Trace (the engine copies every Received
# field into the Trace), then the stage that sets it.
RESULT_STRINGS: tuple[ResultField, ...] = (
    ResultField("path", "str", tuple(p.value for p in Path)),
    ResultField("outcome", "str", tuple(o.value for o in Outcome)),
    ResultField("reason", "str?"),  # a Reason enum's value
    ResultField("errno", "str?", diff=False),
    ResultField("counter", "str?", ("rx_length_errors", "rx_frame_errors", "drops"),
                diff=False),
)


# ``refused_by`` (always printed; null unless a check refused the virtio_net_hdr)
REFUSAL_FIELDS: tuple[RecordField, ...] = (
    RecordField("function", "refused_by.function", "str", "the kernel function whose check "
                "refused the header", diff=False),
    RecordField("source", "refused_by.source", "str", "where the check is: file:function @ "
                "version", diff=False),
    RecordField("test", "refused_by.test", "str", "what the check requires", diff=False),
    RecordField("reason", "refused_by.reason", "str", "why the header failed it", diff=False),
    RecordField("because", "refused_by.because", "strs", "the change-table keys that put the "
                "check there", diff=False),
)

# ``vhost.buffer`` (model.VhostBuffer: vhost_net_build_xdp's buffer), places from its object
VHOST_BUFFER_FIELDS: tuple[RecordField, ...] = (
    RecordField("pad", "pad", "nat", "SKB_DATA_ALIGN(VHOST_NET_RX_PAD + headroom + sock_hlen): "
                "where the frame starts", diff=False),
    RecordField("headroom", "headroom", "nat", "XDP_PACKET_HEADROOM when the tap has an XDP "
                "program, else 0", diff=False),
    RecordField("buflen", "buflen", "nat", "SKB_DATA_ALIGN(len + pad) + "
                "SKB_DATA_ALIGN(sizeof(struct skb_shared_info))"),
    RecordField("page_size", "page_size", "nat", "buflen above PAGE_SIZE is -ENOSPC",
                diff=False),
    RecordField("max_frame", "max_frame", "nat", "the longest frame (after the vnet header) "
                "that fits", diff=False),
    RecordField("hdr_offset", "hdr_offset", "nat", "where the vnet header sits: 4 (struct "
                "tun_xdp_hdr's gso), 0 from 6.17"),
)

# ``vhost`` (path vhost-tx only: model.VhostTx, vhost-net's road into the tap)
VHOST_FIELDS: tuple[RecordField, ...] = (
    RecordField("path", "vhost.path", "str", "the road into the tap: vhost_net_build_xdp + "
                "tun_xdp_one (batch) or sendmsg (tun_get_user)", values=("batch", "tun_get_user")),
    RecordField("reason", "vhost.reason", "str", "why that road", values=(
        "batched", "enospc", "sndbuf", "zerocopy", "einval")),
    RecordField("sock_hlen", "vhost.sock_hlen", "nat", "the vnet header the tap socket carries",
                diff=False),
    RecordField("len", "vhost.len", "nat", "iov_iter_count: sock_hlen + the frame", diff=False),
    RecordField("sk_sndbuf", "vhost.sk_sndbuf", "nat", "the tap socket's sk_sndbuf",
                diff=False),
    RecordField("zerocopy", "vhost.zerocopy", "bool", "experimental_zcopytx: "
                "handle_tx_zerocopy", diff=False),
    RecordField("zcopy_used", "vhost.zcopy_used", "bool", "this frame's pages were pinned, not "
                "copied", diff=False),
    RecordField("iff_napi", "vhost.iff_napi", "bool", "the tap has IFF_NAPI: its skbs go "
                "through GRO", diff=False),
    RecordField("page_frag", "vhost.page_frag", "str", "the page frag allocator", values=(
        "vhost_net_page_frag_refill", "page_frag_alloc_align")),
    RecordField("stalled", "vhost.stalled", "bool", "vhost_net_build_xdp failed (not -ENOSPC): "
                "the queue stops at this frame"),
    RecordField("delivery", "vhost.delivery", "str?", "how the skb enters the stack (null: no "
                "skb)", diff=False, values=("netif_receive_skb", "napi_gro_receive")),
    RecordField("batch", "vhost.limits.batch", "nat", "VHOST_NET_BATCH", diff=False),
    RecordField("weight", "vhost.limits.weight", "nat", "VHOST_NET_WEIGHT (bytes per handle_tx "
                "run)", diff=False),
    RecordField("pkt_weight", "vhost.limits.pkt_weight", "nat", "VHOST_NET_PKT_WEIGHT (packets "
                "per handle_tx run)", diff=False),
    RecordField("buffer", "vhost.buffer", "record?", "vhost_net_build_xdp's buffer (null: not "
                "called)", table=RecordTable(VhostBuffer, VHOST_BUFFER_FIELDS)),
)


class ResultRecord(NamedTuple):
    """A structured result field: a ``Received`` and a ``Trace`` attribute of this name, with
    the table of its record's fields."""

    name: str
    table: RecordTable
    # True: its keys are printed only when it is set, after every other key (xdp: a program is
    # attached; vhost: path vhost-tx); False: always printed (null when unset), after the
    # string fields
    optional: bool


# The structured result fields. A new one: its record with a RecordField table, a row here,
# the attribute in Received and Trace (the engine copies every Received field into the Trace),
# then the stage that sets it; codec, the trace schema and diff follow from the table.
RESULT_RECORDS: tuple[ResultRecord, ...] = (
    ResultRecord("refused_by", RecordTable(Refusal, REFUSAL_FIELDS), optional=False),
    ResultRecord("xdp", RecordTable(XdpRun, XDP_FIELDS), optional=True),
    ResultRecord("vhost", RecordTable(VhostTx, VHOST_FIELDS), optional=True),
)
