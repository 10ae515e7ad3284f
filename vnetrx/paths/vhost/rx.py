"""drivers/vhost/net.c:handle_rx: the frames the host's tap transmits, into the buffers the guest
posted in its rx ring, then through the guest's own receive path (paths/virtio_net).

The stages, each a function of the kernel profile, the setup and the frames that returns records
(an enum reason with the values that decided it); the narration (render/vhost_rx.py) only reads
them:

=====================  ==========================================================================
``tap_xmit``           what the host stack hands tun_net_xmit: the skb whole, or the segments
                       validate_xmit_skb cuts when the tap lacks the GSO feature (no TUN_F_TSO*
                       / TUN_F_USO*: the guest did not negotiate it), its checksum finished in
                       software when the tap has no TUN_F_CSUM
``handle_rx``          per skb on the tap's ptr_ring: vhost_net_buf_produce's batch of 64,
                       peek_head_len (+4 for a VLAN tag), sock_len = len + sock_hlen,
                       get_rx_bufs over the posted chains (quota UIO_MAXIOV with MRG_RXBUF, else
                       1), the overrun discard, tun_put_user's header
                       (virtio_net_hdr_from_skb), num_buffers, and vhost_net_signal_used (done_idx
                       > VHOST_NET_BATCH, the end of a run: the weight or an empty ring)
``guest_receive``      the buffers vhost filled, through virtio-net's receive_buf as vnetrx
                       models it: the skb the guest's stack sees
=====================  ==========================================================================

Sources: drivers/vhost/net.c:handle_rx, get_rx_bufs, peek_head_len, vhost_net_buf_produce /
_peek / _peek_len, vhost_net_signal_used, vhost_net_set_features @5.x (torvalds/linux as stored,
010e85f9), 6.12.117 and 6.18.9 (../shared/reference/offloads-xdp.md §4, gro-vhost-captures.md
§2.2); set_num_buffers: a3b9c053d82a (6.14); drivers/vhost/vhost.c:vhost_exceeds_weight;
drivers/net/tun.c:tun_put_user, include/linux/virtio_net.h:virtio_net_hdr_from_skb @6.1, 6.2
(860b7f27b8f7 adds UDP_L4).

Assumed, and said in every result's notes: QEMU's setup (the tap carries the header: sock_hlen =
vnet_hdr_sz = the guest's header length, vhost_hlen 0); the tap's ring holds the whole burst
before handle_rx runs (tx_queue_len 500 is not modelled: a longer burst is not dropped); the
guest keeps its ring stocked (every chain vhost asks for is posted: no refill wait); no
busy polling. VIRTIO_F_IN_ORDER (6.17+, ``in_order``) is from source only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.changes import (
    TUN_USO,
    VHOST_IN_ORDER,
    VHOST_NUM_BUFFERS_VERSION_1,
    VHOST_UDP_TUNNEL_GSO,
    VNET_HDR_GSO_UDP_L4,
)
from vnetrx.kernel.constants import ETH_DATA_LEN, ETH_HLEN, VLAN_HLEN
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import require_path
from vnetrx.packet import Headers
from vnetrx.paths.reason import Reason
from vnetrx.paths.virtio_net import receive_buf
from vnetrx.paths.virtio_net.buffers import PageCursor, PostedBuffer, carve_many
from vnetrx.paths.virtio_net.plan import Plan
from vnetrx.paths.virtio_net.receive_buf import Delivery
from vnetrx.paths.virtio_net.setup import (
    Config,
    RxFrame,
    VirtioRxSetup,
    check_virtio_setup,
    config,
    for_frame,
)
from vnetrx.paths.virtio_net_hdr import (
    DATA_VALID,
    GSO_ECN,
    GSO_NONE,
    GSO_TCPV4,
    GSO_TCPV6,
    GSO_UDP,
    GSO_UDP_L4,
    NEEDS_CSUM,
    VnetHdr,
)
from vnetrx.records import NamedTuple

SRC: Final = "drivers/vhost/net.c"
VHOST_C: Final = "drivers/vhost/vhost.c"
TUN_C: Final = "drivers/net/tun.c"
DEV_C: Final = "net/core/dev.c"
VIRTIO_NET_H: Final = "include/linux/virtio_net.h"

VHOST_NET_BATCH: Final = 64  # drivers/vhost/net.c: pointers per vhost_net_buf_produce, and the
# done_idx above which handle_rx signals the guest
UIO_MAXIOV: Final = 1024  # include/uapi/linux/uio.h: get_rx_bufs' quota with MRG_RXBUF
VHOST_NET_WEIGHT: Final = 0x80000  # bytes per handle_rx run (vhost_dev_init's byte_weight)
VHOST_NET_PKT_WEIGHT: Final = 256  # packets per handle_rx run (vhost_dev_init's weight)
VNET_HDR_BASE: Final = 10  # sizeof(struct virtio_net_hdr): what tun_put_user fills in
NUM_BUFFERS_OFFSET: Final = 10  # offsetof(struct virtio_net_hdr_mrg_rxbuf, num_buffers)
MAX_FRAME_LEN: Final = 65535
# the longest skb a tap transmits here: an IPv6 GSO skb's 65535-byte payload_len after its
# 40-byte IPv6 and 14-byte Ethernet headers (no BIG TCP)
MAX_HOST_LEN: Final = MAX_FRAME_LEN + 40 + ETH_HLEN
MODES: Final = ("small", "big", "mergeable")

NOTES: Final = (
    "QEMU's setup: the tap carries the virtio_net_hdr (TUNSETVNETHDRSZ = the guest's header "
    "length: vhost's sock_hlen; vhost_hlen 0, no VHOST_NET_F_VIRTIO_NET_HDR)",
    "the tap's ptr_ring holds the whole burst before handle_rx runs (its tx_queue_len, 500, is "
    "not modelled), and the guest keeps its rx ring stocked: get_rx_bufs never waits for a "
    "refill",
    "one kernel for host and guest; no VIRTIO_F_IN_ORDER (6.17+), no busy polling, no XDP "
    "frames on the tap's ring (tun XDP_REDIRECT)",
)


IN_ORDER_NOTE: Final = (
    "VIRTIO_F_IN_ORDER: from the kernel source (drivers/vhost/net.c, vhost.c @6.17.0, @6.18.9), "
    "not measured: no 6.17+ vhost_net ran here (this host has none; Debian's guests are 6.1 "
    "and 6.12); the guest's receive is the one vnetrx models without IN_ORDER: the 6.17 "
    "vhost pull says the guest bits 'missed the merge window', and a guest driver's in-order "
    "receive is not modelled")


def notes_of(c: VhostRxConfig) -> tuple[str, ...]:
    """The assumptions every result states, and the in-order caveat when negotiated."""
    if not c.in_order:
        return NOTES
    return (*[n.replace("no VIRTIO_F_IN_ORDER (6.17+), ", "") for n in NOTES], IN_ORDER_NOTE)


class Discard(Reason):
    """Why handle_rx reads a packet off the tap's ring and throws it away ("Discarded rx
    packet: len %zd", pr_debug): the guest sees nothing, its buffers are given back
    (vhost_discard_vq_desc)."""

    # get_rx_bufs: the chains it may take (quota: UIO_MAXIOV with MRG_RXBUF, else 1) hold less
    # than vhost_len (datalen > 0 after the loop → UIO_MAXIOV + 1)
    OVERRUN = "overrun"


class Signal(Reason):
    """Why vhost_net_signal_used adds the batched heads to the used ring and signals the guest
    after a packet."""

    DONE_IDX = "done_idx"  # nvq->done_idx > VHOST_NET_BATCH after this packet
    WEIGHT = "weight"  # vhost_exceeds_weight: 256 packets or 0x80000 bytes this run; requeued
    EMPTY = "ring_empty"  # peek_head_len found the tap's ring empty: the end of handle_rx


class Segment(Reason):
    """Why the host stack segments a GSO skb before tun_net_xmit (validate_xmit_skb →
    skb_gso_segment: the tap lacks the skb's GSO feature)."""

    NO_TSO = "tap_no_tso"  # no TUN_F_TSO4/TSO6 (NETIF_F_TSO/TSO6): the guest has no guest TSO
    NO_USO = "tap_no_uso"  # no NETIF_F_GSO_UDP_L4: a kernel without tun USO, or no guest USO


class HostFrame(NamedTuple):
    """A frame the host's stack sends out of the tap: skb->len (Ethernet header included, a
    VLAN tag out of band not counted), its offload state written as the virtio_net_hdr
    virtio_net_hdr_from_skb would make of it (flags NEEDS_CSUM = CHECKSUM_PARTIAL with
    csum_start/csum_offset from the Ethernet header, DATA_VALID = CHECKSUM_UNNECESSARY; a GSO
    type and gso_size; hdr_len = skb_headlen), where its headers are, and a VLAN tag."""

    len: int
    state: VnetHdr | None = None  # None: CHECKSUM_NONE, not GSO
    headers: Headers | None = None  # Ethernet + IP + TCP/UDP, when known (--l4)
    vlan: bool = False  # skb_vlan_tag_present: tun_put_user inserts it in band


class VhostRxSetup(NamedTuple):
    """The guest's rx queue as vhost sees it, and the tap QEMU set up for it."""

    mode: str = "mergeable"  # "small" | "big" | "mergeable" (MRG_RXBUF)
    hdr_len: int = 12  # 12: VIRTIO_F_VERSION_1 or MRG_RXBUF; 10: a legacy device
    buf_len: int | None = None  # mergeable: the posted length (None: get_mergeable_buf_len)
    ewma: int = 0  # with buf_len None: the guest's average packet length (0: a fresh ring)
    mtu: int = ETH_DATA_LEN
    # QEMU's TUNSETOFFLOAD from the guest's features: TUN_F_CSUM (GUEST_CSUM) and, with guest
    # GSO (mergeable or big mode), TUN_F_TSO4/TSO6/TSO_ECN and TUN_F_USO4/USO6 (6.2+)
    tap_offload: bool = True
    # mergeable: every posted buffer exactly buf_len (a driver that does not carve them from a
    # page_frag as Linux's add_recvbuf_mergeable does, hole included)
    uniform: bool = False
    # VIRTIO_F_IN_ORDER negotiated (6.17+, 45347e79b544): vhost_add_used_n_in_order writes one
    # used element per packet (the last chain's head and used length), used->idx still moves
    # by every chain. From source only (drivers/vhost/net.c:get_rx_bufs, handle_rx;
    # vhost.c:vhost_add_used_n_in_order @6.17.0, @6.18.9): no 6.17+ vhost_net was run here.
    in_order: bool = False


class VhostRxConfig(NamedTuple):
    """What a kernel and a setup fix for every packet."""

    kernel: str
    present: frozenset[str]
    setup: VhostRxSetup
    sock_hlen: int  # vhost_net_set_features: 12 with MRG_RXBUF or VERSION_1, else 10
    mergeable: bool
    set_num_buffers: bool  # handle_rx writes num_buffers: MRG_RXBUF, or VERSION_1 on 6.14+
    in_order: bool  # VIRTIO_F_IN_ORDER negotiated (6.17+)
    quota: int  # get_rx_bufs' headcount quota: UIO_MAXIOV with MRG_RXBUF, else 1
    guest_gso: bool  # the guest negotiated GUEST_TSO4/TSO6 (QEMU then sets TUN_F_TSO*)
    tap_csum: bool  # TUN_F_CSUM: CHECKSUM_PARTIAL skbs reach the tap as they are
    tap_tso: bool  # TUN_F_TSO4|TSO6|TSO_ECN
    tap_uso: bool  # TUN_F_USO4|USO6, on a kernel with tun USO (6.2+)
    udp_l4_hdr: bool  # virtio_net_hdr_from_skb knows SKB_GSO_UDP_L4 (860b7f27b8f7, 6.2)
    buf_len: int  # mergeable: the posted length asked for; small: bufsize; big: PAGE_SIZE
    chain_len: int  # small / big: bytes one posted chain holds (header included)
    chain_iovs: int  # descriptors in one chain (big: header, page 0's rest, then pages)
    guest: Config  # the guest's virtio-net config, sizes only (no buffers given)

    def has(self, key: str) -> bool:
        return key in self.present

    @property
    def linux_guest(self) -> bool:
        """The buffers are a Linux virtio-net driver's (not a driver of its own's: uniform
        single-buffer chains without MRG_RXBUF), so its receive path can follow."""
        return self.mergeable or not self.setup.uniform


class Xmit(NamedTuple):
    """What the host stack did with one frame before tun_net_xmit (dev.c:validate_xmit_skb)."""

    frame: int
    len: int
    segmented: Segment | None  # skb_gso_segment ran
    segments: int  # skbs queued on the tap: 1, or the segments
    header_len: int  # segmented: each segment's Ethernet + IP + TCP/UDP header bytes
    gso_size: int
    csum_help: bool  # skb_checksum_help finished a CHECKSUM_PARTIAL checksum (no TUN_F_CSUM)


class TapSkb(NamedTuple):
    """An skb tun_net_xmit put on the tap's ptr_ring."""

    frame: int  # the input frame it comes from
    segment: int | None  # which segment of it (None: the frame whole)
    len: int  # skb->len
    state: VnetHdr  # its offload state (virtio_net_hdr_from_skb's input)
    vlan: bool


class Packet(NamedTuple):
    """One trip of handle_rx's loop: the skb vhost_net_buf_consume took off the tap's ring and
    what became of it in the guest's ring."""

    seq: int  # in ptr_ring order (discarded packets counted), from 0
    skb: TapSkb
    batch: int  # which vhost_net_buf_produce (ptr_ring_consume_batched, 64 at most)
    run: int  # which handle_rx run (a run ends at the weight or an empty ring)
    peek_len: int  # vhost_net_buf_peek_len: skb->len, + VLAN_HLEN with a tag
    sock_len: int  # peek_len + sock_hlen
    headcount: int  # chains get_rx_bufs took (on an overrun: as many as the quota let it)
    chains: tuple[int, ...]  # the bytes each of them holds
    buffers: tuple[PostedBuffer, ...]  # small / mergeable: the posted buffers (big: ())
    used: tuple[int, ...]  # vring_used_elem.len of each: full, the last what remains
    # the used elements vhost_add_used_n writes for this packet (their len): one per chain, or
    # with IN_ORDER one, the last chain's (vhost_add_used_n_in_order skips the others' slots)
    used_elems: tuple[int, ...]
    discard: Discard | None
    hdr: bytes  # what tun_put_user and handle_rx wrote in front of the frame
    hdr_untouched: int  # header bytes nobody wrote (VERSION_1 without MRG_RXBUF before 6.14)
    num_buffers: int | None  # what handle_rx wrote at offset 10 (None: not written)
    done_idx: int  # nvq->done_idx after this packet (before a signal resets it)
    signal: Signal | None  # vhost_net_signal_used right after this packet


class GuestRx(NamedTuple):
    """The guest's receive_buf on a packet vhost filled (paths/virtio_net)."""

    config: Config
    frame: int  # the frame length the guest sees: used bytes less its header
    plan: Plan
    delivery: Delivery


class VhostRx(NamedTuple):
    """A burst end to end: the host stack, handle_rx, the guest."""

    kernel: str
    config: VhostRxConfig
    xmits: tuple[Xmit, ...]
    packets: tuple[Packet, ...]
    guest: tuple[GuestRx | None, ...]  # per packet; None: discarded
    notes: tuple[str, ...]


# --- setup ---------------------------------------------------------------------------------


def vhost_rx_config(k: KernelProfile, s: VhostRxSetup) -> VhostRxConfig:
    """Check the setup against the kernel and fix what it implies."""
    require_path(k, "virtio")
    if s.mode not in MODES:
        raise InputError(f"guest receive mode {s.mode!r} unknown (valid: {', '.join(MODES)})")
    if s.hdr_len == 24 and k.has(VHOST_UDP_TUNNEL_GSO):
        # vhost_net_set_features @6.17.0/@6.18.9 makes it 24 with HOST_/GUEST_UDP_TUNNEL_GSO;
        # tun_put_user then copies all 24 bytes of its on-stack header when the tap has the
        # UDP-tunnel offload, of which virtio_net_hdr_from_skb sets only the first 10
        # (tun_vnet.h:__tun_vnet_hdr_put): what bytes 12..23 hold was not settled from source
        raise UnsupportedError(
            f"header length 24 (UDP-tunnel GSO, 6.17+) is not modelled for vhost-rx on "
            f"{k.name}: tun_put_user's bytes 12..23 are not settled (valid: 10 legacy, 12 "
            "VERSION_1 or MRG_RXBUF)")
    if s.hdr_len not in (10, 12):
        raise InputError(
            f"header length {s.hdr_len} not one vhost-net serves (valid: 10 legacy, 12 "
            "VERSION_1 or MRG_RXBUF; vhost-net offers no HASH_REPORT)")
    mergeable = s.mode == "mergeable"
    if mergeable and s.hdr_len == 10:
        raise InputError("hdr_len 10 (legacy virtio_net_hdr) cannot go with MRG_RXBUF, which "
                         "makes the header 12 bytes (vhost_net_set_features)")
    # a driver of its own (a probe; not Linux): one buffer of buf_len per chain, no MRG_RXBUF
    own_driver = s.uniform and not mergeable
    if s.buf_len is not None and not mergeable and not own_driver:
        raise InputError("--buf-len sets the mergeable buffer size: it needs --mergeable "
                         "(small and big mode buffers are fixed by the guest's driver), or "
                         "--uniform-buffers (a driver of its own posting one buffer a chain)")
    if own_driver and (s.buf_len is None or s.mode != "small"):
        raise InputError("--uniform-buffers without --mergeable is a driver of its own posting "
                         "one buffer of --buf-len bytes a chain: give --buf-len, not --guest-gso")
    if not 68 <= s.mtu <= MAX_FRAME_LEN:
        raise InputError(f"MTU {s.mtu} out of range (valid: 68..{MAX_FRAME_LEN})")
    if s.mode == "small" and s.mtu > ETH_DATA_LEN:
        raise InputError(f"small mode needs an MTU of at most {ETH_DATA_LEN} (virtnet_probe: a "
                         "larger one sets big_packets): use --guest-gso")
    if s.in_order and not k.has(VHOST_IN_ORDER):
        raise UnsupportedError(f"VIRTIO_F_IN_ORDER: vhost-net offers it from 6.17 "
                               f"({VHOST_IN_ORDER.commit}), not on {k.name} (valid: --kernel "
                               "6.17 or later)")
    if not 0 <= s.ewma <= MAX_FRAME_LEN:
        raise InputError(f"EWMA {s.ewma} out of range (valid: 0..{MAX_FRAME_LEN})")
    # big mode comes from guest GSO (or an MTU above 1500); mergeable guests (Linux on QEMU)
    # negotiate guest GSO too, unless the tap has no offloads at all
    guest_gso = s.mode != "small" and s.tap_offload
    if s.mode == "big" and not guest_gso and s.mtu <= ETH_DATA_LEN:
        raise InputError("big mode comes from guest GSO or an MTU above 1500: with "
                         "--no-tap-offload (no guest GSO) give --mtu 1501..65535")
    guest = config(k, check_virtio_setup(k, VirtioRxSetup(
        mergeable=mergeable, guest_gso=guest_gso, mtu=s.mtu, hdr_len=s.hdr_len,
        buf_len=s.buf_len if mergeable else None,
        ewma=None if s.buf_len is not None else s.ewma)))
    if own_driver:  # its buffers, and the tap offloads it asked for (TUNSETOFFLOAD)
        assert s.buf_len is not None
        buf_len, chain_len, iovs = s.buf_len, s.buf_len, 1
        guest_gso = s.tap_offload
    elif mergeable:
        assert guest.buf_len is not None
        buf_len, chain_len, iovs = guest.buf_len, guest.buf_len, 1
    elif s.mode == "small":  # add_recvbuf_small: sg of vi->hdr_len + GOOD_PACKET_LEN
        buf_len, chain_len, iovs = guest.small_bufsize, s.hdr_len + guest.good_packet_len, 1
    else:  # add_recvbuf_big: hdr_len, PAGE_SIZE - sizeof(padded_vnet_hdr), then whole pages
        buf_len = guest.page_size
        chain_len, iovs = s.hdr_len + guest.big_capacity, guest.big_num_skbfrags + 2
    v1_num_buffers = k.has(VHOST_NUM_BUFFERS_VERSION_1) and s.hdr_len == 12
    return VhostRxConfig(
        kernel=k.name,
        present=k.change_keys,
        setup=s,
        sock_hlen=s.hdr_len,
        mergeable=mergeable,
        set_num_buffers=mergeable or v1_num_buffers,
        in_order=s.in_order,
        quota=UIO_MAXIOV if mergeable else 1,
        guest_gso=guest_gso,
        tap_csum=s.tap_offload,
        tap_tso=guest_gso,
        tap_uso=guest_gso and k.has(TUN_USO),
        udp_l4_hdr=k.has(VNET_HDR_GSO_UDP_L4),
        buf_len=buf_len,
        chain_len=chain_len,
        chain_iovs=iovs,
        guest=guest,
    )


_GSO_VALID: Final = "0 none, 1 tcpv4, 4 tcpv6, 5 udp_l4; tcp types may add 0x80 ecn"


def check_frame(f: HostFrame, where: str = "the frame") -> None:
    """A frame the host stack could send out of a tap, and an offload state an skb can have."""
    if not 1 <= f.len <= MAX_HOST_LEN:
        raise InputError(f"{where}: length {f.len} out of range (valid: 1..{MAX_HOST_LEN}, "
                         "an IPv6 GSO skb's 65535-byte payload behind its headers)")
    h = f.state
    if h is None:
        return
    if h.flags & ~(NEEDS_CSUM | DATA_VALID):
        raise InputError(f"{where}: flags {h.flags:#x}: an skb's checksum state is 0 (none), "
                         "1 NEEDS_CSUM (CHECKSUM_PARTIAL) or 2 DATA_VALID (CHECKSUM_UNNECESSARY)")
    if h.flags == NEEDS_CSUM | DATA_VALID:
        raise InputError(f"{where}: flags 0x3: an skb is CHECKSUM_PARTIAL or "
                         "CHECKSUM_UNNECESSARY, not both (valid: 0, 1, 2)")
    base = h.gso_type & ~GSO_ECN
    if base == GSO_UDP:
        raise UnsupportedError(
            f"{where}: gso_type 3 (UFO): no tap advertises NETIF_F_GSO_UDP, so the host stack "
            f"fragments such an skb before the tap (not modelled) (valid: {_GSO_VALID})")
    if base not in (GSO_NONE, GSO_TCPV4, GSO_TCPV6, GSO_UDP_L4) or (
            h.gso_type & GSO_ECN and base not in (GSO_TCPV4, GSO_TCPV6)):
        raise InputError(f"{where}: gso_type {h.gso_type:#x} is not an skb GSO type "
                         f"virtio_net_hdr_from_skb writes (valid: {_GSO_VALID})")
    if base == GSO_NONE:
        if h.gso_size or h.hdr_len:
            raise InputError(f"{where}: gso_size/hdr_len describe a GSO skb, and gso_type is 0 "
                             "(give 0 for both, or a GSO type)")
    else:
        if not 1 <= h.gso_size <= MAX_FRAME_LEN:
            raise InputError(f"{where}: gso_size {h.gso_size} out of range for a GSO skb "
                             f"(valid: 1..{MAX_FRAME_LEN})")
        if not h.flags & NEEDS_CSUM:
            raise InputError(f"{where}: a GSO skb is CHECKSUM_PARTIAL: set NEEDS_CSUM "
                             "(flags 1) with csum_start/csum_offset")
        if not ETH_HLEN <= h.hdr_len <= f.len:
            raise InputError(f"{where}: hdr_len {h.hdr_len} is the skb's skb_headlen (valid: "
                             f"{ETH_HLEN}..{f.len}, the frame's length)")
    if h.flags & NEEDS_CSUM and h.csum_start + h.csum_offset + 2 > f.len:
        raise InputError(f"{where}: csum_start {h.csum_start} + csum_offset {h.csum_offset} + 2 "
                         f"lies past the {f.len}-byte frame (valid: at most {f.len})")
    if h.flags & DATA_VALID and (h.csum_start or h.csum_offset):
        raise InputError(f"{where}: csum_start/csum_offset describe CHECKSUM_PARTIAL "
                         "(NEEDS_CSUM): give 0 with DATA_VALID")


# --- the host stack: validate_xmit_skb before tun_net_xmit ---------------------------------


def tap_xmit(c: VhostRxConfig, index: int, f: HostFrame) -> tuple[Xmit, tuple[TapSkb, ...]]:
    """dev.c:validate_xmit_skb for the tap: a GSO skb the tap has no feature for is cut by
    skb_gso_segment (tcp_gso_segment / __udp_gso_segment: each segment the headers and
    gso_size payload bytes, the last the rest); a CHECKSUM_PARTIAL skb is finished by
    skb_checksum_help when the tap has no NETIF_F_HW_CSUM (no TUN_F_CSUM). The frame
    must have been checked (``check_frame``)."""
    h = f.state or VnetHdr(0, GSO_NONE, 0, 0, 0, 0)
    base = h.gso_type & ~GSO_ECN
    why: Segment | None = None
    if base in (GSO_TCPV4, GSO_TCPV6) and not c.tap_tso:
        why = Segment.NO_TSO
    elif base == GSO_UDP_L4 and not c.tap_uso:
        why = Segment.NO_USO
    csum_help = bool(h.flags & NEEDS_CSUM) and not c.tap_csum
    if why is None:
        state = h._replace(flags=0, csum_start=0, csum_offset=0) if csum_help else h
        return (Xmit(index, f.len, None, 1, 0, h.gso_size, csum_help),
                (TapSkb(index, None, f.len, state, f.vlan),))
    if f.headers is None or f.headers.l4 is None:
        raise InputError(
            f"frame {index}: the host stack segments this GSO skb before the tap "
            f"({why}): give its l4 (--l4 / \"l4\") so the segments' headers are known")
    header = f.headers.end
    if f.len <= header:
        raise InputError(f"frame {index}: a GSO skb of {f.len} bytes has no payload after its "
                         f"{header} header bytes (valid: {header + 1}..{MAX_HOST_LEN})")
    payload, segs = f.len - header, []
    flags = 0 if csum_help else NEEDS_CSUM
    start, offset = (0, 0) if csum_help else (h.csum_start, h.csum_offset)
    for n, at in enumerate(range(0, payload, h.gso_size)):
        size = header + min(h.gso_size, payload - at)
        segs.append(TapSkb(index, n, size, VnetHdr(flags, GSO_NONE, 0, 0, start, offset),
                           f.vlan))
    return Xmit(index, f.len, why, len(segs), header, h.gso_size, csum_help), tuple(segs)


# --- tun_put_user's header ------------------------------------------------------------------


def virtio_net_hdr_from_skb(state: VnetHdr, vlan_hlen: int) -> VnetHdr:
    """include/linux/virtio_net.h:virtio_net_hdr_from_skb(skb, hdr, little_endian,
    has_data_valid = true (tun), vlan_hlen): memset 0; a GSO skb gets hdr_len = skb_headlen,
    gso_size and its type (ECN bit kept); CHECKSUM_PARTIAL → NEEDS_CSUM with csum_start =
    skb_checksum_start_offset + vlan_hlen and csum_offset; CHECKSUM_UNNECESSARY → DATA_VALID."""
    gso = state.gso_type != GSO_NONE
    if state.flags & NEEDS_CSUM:
        flags, start, offset = NEEDS_CSUM, state.csum_start + vlan_hlen, state.csum_offset
    elif state.flags & DATA_VALID:
        flags, start, offset = DATA_VALID, 0, 0
    else:
        flags, start, offset = 0, 0, 0
    return VnetHdr(flags, state.gso_type if gso else GSO_NONE, state.hdr_len if gso else 0,
                   state.gso_size if gso else 0, start, offset)


# --- the guest's posted chains --------------------------------------------------------------


class Avail:
    """The chains the guest posted, in avail-ring order, as get_rx_bufs reads them: carved
    from the guest's page_frag as add_recvbuf_small / _mergeable do (big mode's page chains
    carry no address: rq->pages). Chains get_rx_bufs gives back (vhost_discard_vq_desc) are
    read again by the next packet."""

    __slots__ = ("_config", "_cursor", "_made", "_pending")

    def __init__(self, c: VhostRxConfig) -> None:
        self._config: Final = c
        self._pending: list[PostedBuffer] = []
        self._cursor = PageCursor()
        self._made = 0  # buffers posted so far (uniform ones are numbered)

    def at(self, index: int) -> PostedBuffer:
        """The posted buffer ``index`` places after the next one get_rx_bufs reads."""
        c = self._config
        if index >= len(self._pending):
            count = index + 1 - len(self._pending) + VHOST_NET_BATCH
            if c.setup.uniform:  # back to back in the allocator's pages, no hole absorbed
                per_page = max(1, c.guest.alloc.page_bytes // c.buf_len)
                more = [PostedBuffer(n // per_page, n % per_page * c.buf_len, c.buf_len)
                        for n in range(self._made, self._made + count)]
            else:
                more, self._cursor = carve_many(c.guest.alloc, self._cursor, c.buf_len,
                                                c.mergeable, count)
            self._made += count
            self._pending.extend(more)
        return self._pending[index]

    def consume(self, count: int) -> None:
        """vhost_get_vq_desc moved last_avail_idx past them, and they stay used."""
        del self._pending[:count]


class RxBufs(NamedTuple):
    """get_rx_bufs' answer."""

    headcount: int
    chains: tuple[int, ...]  # bytes each chain taken holds
    buffers: tuple[PostedBuffer, ...]
    used: tuple[int, ...]  # empty on an overrun
    overrun: bool


def get_rx_bufs(c: VhostRxConfig, avail: Avail, vhost_len: int) -> RxBufs:
    """drivers/vhost/net.c:get_rx_bufs(vq, heads, datalen = vhost_len, ..., quota): take whole
    chains while datalen > 0 and headcount < quota; each head's len is its chain's length, the
    last one's len + datalen (what remains); datalen still > 0 → UIO_MAXIOV + 1, the heads
    discarded (the packet is then an overrun)."""
    chains: list[int] = []
    taken: list[PostedBuffer] = []
    datalen = vhost_len
    if c.setup.mode == "big":  # one chain of pages, no buffer of the page_frag
        chains.append(c.chain_len)
        datalen -= c.chain_len
    else:
        while datalen > 0 and len(chains) < c.quota:
            b = avail.at(len(chains))
            taken.append(b)
            # mergeable: a buffer's length; small: the sg add_recvbuf_small posts in it
            chains.append(b.len if c.mergeable else c.chain_len)
            datalen -= chains[-1]
    buffers = tuple(taken)
    if datalen > 0:
        return RxBufs(len(chains), tuple(chains), buffers, (), True)
    used = (*chains[:-1], chains[-1] + datalen)
    avail.consume(len(chains))
    return RxBufs(len(chains), tuple(chains), buffers, used, False)


# --- handle_rx ------------------------------------------------------------------------------


def handle_rx(c: VhostRxConfig, skbs: Iterable[TapSkb]) -> Iterator[Packet]:
    """drivers/vhost/net.c:handle_rx over the skbs on the tap's ring, in order, run after run
    (a run ends when vhost_exceeds_weight requeues it, or at the empty ring)."""
    avail = Avail(c)
    done_idx = recv_pkts = total_len = run = 0
    it = iter(skbs)
    skb = next(it, None)
    index = 0
    while skb is not None:
        vlan_hlen = VLAN_HLEN if skb.vlan else 0
        peek_len = skb.len + vlan_hlen  # __skb_array_len_with_tag
        sock_len = peek_len + c.sock_hlen
        bufs = get_rx_bufs(c, avail, sock_len)  # vhost_len = sock_len + vhost_hlen (0)
        discard = Discard.OVERRUN if bufs.overrun else None
        hdr, untouched, num_buffers = b"", 0, None
        signal: Signal | None = None
        if discard is None:
            written = virtio_net_hdr_from_skb(skb.state, vlan_hlen).to_bytes(VNET_HDR_BASE)
            if c.set_num_buffers:
                num_buffers = bufs.headcount
                hdr = written + num_buffers.to_bytes(2, "little")
            else:  # tun_put_user skips vnet_hdr_sz - 10 bytes; nobody writes them
                hdr, untouched = written, c.sock_hlen - VNET_HDR_BASE
            done_idx += bufs.headcount
            total_len += sock_len
            if done_idx > VHOST_NET_BATCH:
                signal, done_idx_after = Signal.DONE_IDX, 0
            else:
                done_idx_after = done_idx
        else:
            done_idx_after = done_idx
        recv_pkts += 1
        following = next(it, None)
        ends_run = recv_pkts >= VHOST_NET_PKT_WEIGHT or total_len >= VHOST_NET_WEIGHT
        if signal is None and done_idx_after and (ends_run or following is None):
            signal, done_idx_after = (Signal.WEIGHT if ends_run else Signal.EMPTY), 0
        elems = bufs.used[-1:] if c.in_order else bufs.used
        yield Packet(index, skb, index // VHOST_NET_BATCH, run, peek_len, sock_len,
                     bufs.headcount, bufs.chains, bufs.buffers, bufs.used, elems, discard, hdr,
                     untouched, num_buffers, done_idx, signal)
        done_idx = done_idx_after
        if ends_run:
            run, recv_pkts, total_len = run + 1, 0, 0
        skb, index = following, index + 1


# --- the guest ------------------------------------------------------------------------------


def guest_receive(k: KernelProfile, c: VhostRxConfig, p: Packet) -> GuestRx | None:
    """The guest's receive_buf on what vhost wrote (None: discarded): the buffers it took (big
    mode: a fresh page chain), the header it wrote."""
    if p.discard is not None:
        return None
    s = c.setup
    frame = sum(p.used) - c.sock_hlen
    received = RxFrame(frame, VnetHdr.from_bytes(p.hdr), buffers=p.buffers)
    device = check_virtio_setup(k, VirtioRxSetup(
        mergeable=c.mergeable, guest_gso=c.guest_gso, mtu=s.mtu, hdr_len=s.hdr_len), received)
    g = for_frame(config(k, device), received)
    plan = receive_buf.plan(g, frame)
    return GuestRx(g, frame, plan, receive_buf.deliver(g, plan, narrate=False))


def host_skbs(c: VhostRxConfig, frames: Iterable[HostFrame]
              ) -> tuple[tuple[Xmit, ...], tuple[TapSkb, ...]]:
    """Every frame checked and through ``tap_xmit``: what the host stack did with each, and
    the skbs on the tap's ring in order."""
    xmits: list[Xmit] = []
    skbs: list[TapSkb] = []
    for index, f in enumerate(frames):
        check_frame(f, f"frame {index}")
        x, out = tap_xmit(c, index, f)
        xmits.append(x)
        skbs.extend(out)
    return tuple(xmits), tuple(skbs)


def vhost_rx_stream(k: KernelProfile, c: VhostRxConfig, xmits: tuple[Xmit, ...],
                    skbs: Iterable[TapSkb], guest: bool = True
                    ) -> Iterator[tuple[Xmit, Packet, GuestRx | None]]:
    """Packet by packet (a replay's rows): its frame's ``Xmit``, handle_rx's ``Packet`` and the
    guest's receive (None when discarded, or ``guest`` False)."""
    guest = guest and c.linux_guest
    for p in handle_rx(c, skbs):
        yield xmits[p.skb.frame], p, guest_receive(k, c, p) if guest else None


def vhost_rx(k: KernelProfile, s: VhostRxSetup, frames: Iterable[HostFrame],
             guest: bool = True) -> VhostRx:
    """A burst end to end: the host stack's skbs (``tap_xmit``), ``handle_rx``, and each
    packet in the guest (``guest_receive``; ``guest`` False: not run)."""
    c = vhost_rx_config(k, s)
    xmits, skbs = host_skbs(c, frames)
    rows = tuple(vhost_rx_stream(k, c, xmits, skbs, guest))
    return VhostRx(k.name, c, xmits, tuple(p for _, p, _ in rows), tuple(g for _, _, g in rows),
                   notes_of(c))
