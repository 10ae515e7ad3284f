"""GRO: what napi_gro_receive() makes of the TCP skbs a receive path hands it.

One home for net/core/gro.c (dev_gro_receive, gro_list_prepare, gro_pull_from_frag0,
skb_gro_receive, napi_gro_complete, gro_flush_oldest; net/core/dev.c and net/core/skbuff.c
before 5.17), inet_gro_receive / ipv6_gro_receive and inet_gro_flush, tcp_gro_receive and
tcp_gro_complete (net/ipv4/tcp_offload.c, net/ipv6/tcpv6_offload.c), and the flushes of
napi_complete_done / __napi_poll. Read at 5.15.215, 6.1.166, 6.12.15 and 6.18.7
(../shared/reference/gro-vhost-captures.md §1) and net/core/gro.c @torvalds HEAD; checked against
the running 6.18.44 (tests/data/gro: bursts written into IFF_NAPI taps). GSO skbs in GRO
(GroState.gso_flushed, NAPI_GRO_CB count): net/core/gro.c, net/ipv4/tcp_offload.c,
net/ipv4/af_inet.c at 6.0.1 and 6.0.19 (unifreq/linux-6.0.y) and at 6.1.0 to 6.1.7 release by
release (unifreq/linux-6.1.y; 6.1.0's two files are 5eddb24901ee's post-image blobs); the
6.1.0-6.1.6 window is modelled from that source only, no such kernel was booted.

``gro_receive`` takes skbs in arrival order, grouped into runs of NAPI polls, and returns a
record per input (``GroStep``: the gro_result and why) and per skb the stack receives
(``Delivered``: the skb as it leaves GRO, the frames it carries, why it was completed). It
decides; nothing here writes words (``vnetrx.render.gro_text`` explains the records).

A VLAN tag in the frame (a tap or virtio device strips none) goes through vlan_gro_receive
(net/8021q/vlan_core.c) when the kernel has it (CONFIG_VLAN_8021Q y or m: BuildConfig.vlan_8021q),
and IPv6 extension headers through ipv6_gro_receive's walk (ipv6_gro_pull_exthdrs: routing,
destination options, hop-by-hop per version); a frame the kernel's GRO cannot parse that far goes
on alone (GroHow.NOT_PARSED).

Assumed (the callers' notes say so): skb->hash is 0 (virtio without HASH_REPORT, tun), so every
flow is in GRO bucket 0; no hardware-accelerated VLAN tag (skb->vlan_all 0), no tunnel; HZ
below 1000 (Debian's 250): a poll that uses its whole budget flushes everything.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from vnetrx.errors import InputError
from vnetrx.kernel.changes import (
    GRO_BIG_TCP_IPV4,
    GRO_BIG_TCP_IPV6,
    GRO_CWR_COMPARED,
    GRO_DODGY_FLUSH,
    GRO_FIXEDID_BIT_30,
    GRO_FIXEDID_WITHOUT_DF,
    GRO_GSO_TCP_AGGREGATED,
    GRO_IPV6_EXTHDR_GRO_PULL,
    GRO_IPV6_HBH_OFFLOAD,
    GRO_MAX_SIZE_KNOB,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Frag, FragListSkb, Skb
from vnetrx.model import GroFlush as Flush
from vnetrx.model import GroHow as How
from vnetrx.model import GroResult as Result
from vnetrx.packet import ones_complement_sum
from vnetrx.paths.skbuff import pskb_may_pull, skb_truesize
from vnetrx.paths.virtio_net_hdr import (
    SKB_GSO_DODGY,
    SKB_GSO_TCP_ECN,
    SKB_GSO_TCPV4,
    SKB_GSO_TCPV6,
    SKB_GSO_UDP_L4,
    gso_type_names,
)
from vnetrx.records import NamedTuple
from vnetrx.values import Value

if TYPE_CHECKING:
    # mypyc's native 64-bit int (a machine word, no overflow check to a Python int): only the
    # annotations of locals name it, which run nowhere, so neither build imports it at run time
    from mypy_extensions import i64

GRO_MAX_SIZE: Final = 65536  # dev->gro_max_size's default (GRO_LEGACY_MAX_SIZE; a literal in 5.x)
NAPI_POLL_WEIGHT: Final = 64  # the budget of one poll (virtnet_poll, tun_napi_poll)
MAX_GRO_SKBS: Final = 8  # held skbs per GRO hash bucket (net/core/gro.c)
HZ: Final = 250  # CONFIG_HZ of Debian's configs and of this machine's 6.18.44 (/proc/config.gz)
JIFFY_NS: Final = 1_000_000_000 // HZ  # one jiffy: 4 ms
TCP_CHECK_OFFSET: Final = 16  # offsetof(struct tcphdr, check): tcp_gro_complete's csum_offset
CHECKSUM_NONE: Final = 0
CHECKSUM_UNNECESSARY: Final = 1
CHECKSUM_PARTIAL: Final = 3
# tcp_flag_word(): the TCP header's fourth 32-bit word (doff, flags, window), as the kernel
# masks it
TCP_FLAG_CWR: Final = 0x00800000
TCP_FLAG_URG: Final = 0x00200000
TCP_FLAG_PSH: Final = 0x00080000
TCP_FLAG_RST: Final = 0x00040000
TCP_FLAG_SYN: Final = 0x00020000
TCP_FLAG_FIN: Final = 0x00010000
_ENDS: Final = TCP_FLAG_URG | TCP_FLAG_PSH | TCP_FLAG_RST | TCP_FLAG_SYN | TCP_FLAG_FIN
SKB_GSO_TCP_FIXEDID_OLD: Final = 1 << 3
SKB_GSO_TCP_FIXEDID_NEW: Final = 1 << 30
# the names an aggregate's gso_type gets and the ways a merge is named, looked up once (per
# merge, an attribute of the enum class each was a lookup by name)
_TCPV4_NAMES: Final = gso_type_names(SKB_GSO_TCPV4)
_TCPV6_NAMES: Final = gso_type_names(SKB_GSO_TCPV6)
_FRAGS: Final = How.FRAGS
_HEAD_FRAG: Final = How.HEAD_FRAG
_FRAG_LIST: Final = How.FRAG_LIST
# the enum members the per-frame paths name, looked up once (compiled, an enum class's
# attribute is a generic lookup: ~900 instructions each)
_F_E2BIG: Final = Flush.E2BIG
_F_EVICTED: Final = Flush.EVICTED
_F_FLAGS: Final = Flush.FLAGS
_F_GSO: Final = Flush.GSO
_F_GSO_SEGS: Final = Flush.GSO_SEGS
_F_GSO_SIZE: Final = Flush.GSO_SIZE
_F_LONGER: Final = Flush.LONGER
_F_MISMATCH: Final = Flush.MISMATCH
_F_NOT_HELD: Final = Flush.NOT_HELD
_F_OLD: Final = Flush.OLD
_F_SHORT: Final = Flush.SHORT
_F_UNMERGEABLE: Final = Flush.UNMERGEABLE
_H_AFTER_MISMATCH: Final = How.AFTER_MISMATCH
_H_BAD_CHECKSUM: Final = How.BAD_CHECKSUM
_H_BAD_NETWORK: Final = How.BAD_NETWORK
_H_FIRST: Final = How.FIRST
_H_FLAGS: Final = How.FLAGS
_H_GSO: Final = How.GSO
_H_GSO_SEGS: Final = How.GSO_SEGS
_H_HAS_FRAG_LIST: Final = How.HAS_FRAG_LIST
_H_NOT_PARSED: Final = How.NOT_PARSED
_H_NOT_TCP: Final = How.NOT_TCP
_H_NO_PAYLOAD: Final = How.NO_PAYLOAD
# how a segment refused by its flow's held skb is then held, by the reason (else AFTER_MISMATCH)
_AFTER: Final = {Flush.E2BIG: How.AFTER_E2BIG, Flush.LONGER: How.AFTER_LONGER}
# the positions of the Skb fields GRO sets (its declaration, vnetrx.model): an skb GRO
# completes is made from a list of its fields (_RECORD below), which is what Skb._replace does
# without looking each field up by name (a Python method: ~4 us per delivered skb compiled)
_DATA: Final = Skb._fields.index("data")
_LEN: Final = Skb._fields.index("len")
_DATA_LEN: Final = Skb._fields.index("data_len")
_TRUESIZE: Final = Skb._fields.index("truesize")
_NR_FRAGS: Final = Skb._fields.index("nr_frags")
_FRAGS_AT: Final = Skb._fields.index("frags")
_FRAG_LIST_AT: Final = Skb._fields.index("frag_list")
_IP_SUMMED: Final = Skb._fields.index("ip_summed")
_CSUM_START: Final = Skb._fields.index("csum_start")
_CSUM_OFFSET: Final = Skb._fields.index("csum_offset")
_GSO_SIZE: Final = Skb._fields.index("gso_size")
_GSO_TYPE: Final = Skb._fields.index("gso_type")
_GSO_TYPE_NAMES: Final = Skb._fields.index("gso_type_names")
_GSO_SEGS: Final = Skb._fields.index("gso_segs")
# what a record's _make does with its fields (without the length check: ours are whole), as a
# bound builtin: compiled, a record's class called (or its _make) runs its Python __new__
_RECORD: Final = tuple.__new__


class TcpHeaders(Value):
    """What GRO reads of a segment's Ethernet, IP and TCP headers. A plain class, not a record
    (one is made per frame a replay gives GRO: a native class when compiled, see values.py)."""

    __slots__ = (
        "ack",
        "addresses",
        "df",
        "dport",
        "flag_word",
        "ip_id",
        "ipv6",
        "mac",
        "network_len",
        "network_ok",
        "nhoff",
        "options",
        "seq",
        "sport",
        "tcp_csum_ok",
        "tcp_len",
        "tos",
        "tot_len_ok",
        "ttl",
        "udp_check",
        "udp_len",
    )
    _names = ("mac", "ipv6", "addresses", "network_ok", "tot_len_ok", "network_len", "ttl",
              "tos", "df", "ip_id", "sport", "dport", "seq", "ack", "flag_word", "options",
              "tcp_len", "tcp_csum_ok", "nhoff", "udp_len", "udp_check")

    def __init__(self, mac: bytes, ipv6: bool, addresses: bytes, network_ok: bool,
                 tot_len_ok: bool, network_len: int, ttl: int, tos: int, df: bool, ip_id: int,
                 sport: int, dport: int, seq: int, ack: int, flag_word: int, options: bytes,
                 tcp_len: int, tcp_csum_ok: bool, nhoff: int = 0, udp_len: int = 0,
                 udp_check: int = 0) -> None:
        self.mac: Final = mac  # the Ethernet header: compare_ether_header
        self.ipv6: Final = ipv6
        # what must match for the same flow: v4 saddr, daddr, protocol; v6 the addresses, next
        # header, the flow label (ipv6_gro_receive: first_word & 0xF00FFFFF) and the extension
        # headers' bytes; and a VLAN tag's TCI and protocol (vlan_gro_receive)
        self.addresses: Final = addresses
        self.network_ok: Final = network_ok  # IPv4: no options, not a fragment, checksum right
        self.tot_len_ok: Final = tot_len_ok  # the IP length is the packet's (no padding)
        # skb->data to the TCP header: a VLAN tag, the IP header, IPv6 extension headers
        self.network_len: Final = network_len
        self.ttl: Final = ttl  # TTL / hop limit
        self.tos: Final = tos  # TOS / traffic class
        self.df: Final = df
        self.ip_id: Final = ip_id
        self.sport: Final = sport
        self.dport: Final = dport
        self.seq: Final = seq
        self.ack: Final = ack
        self.flag_word: Final = flag_word  # tcp_flag_word(): doff, flags and window
        self.options: Final = options
        self.tcp_len: Final = tcp_len
        self.tcp_csum_ok: Final = tcp_csum_ok  # the TCP checksum verifies (read for NONE)
        self.nhoff: Final = nhoff  # skb->data to the IP header (4: a VLAN tag)
        # a UDP datagram (parse_udp): its length field (0: TCP) and checksum field;
        # ``tcp_len`` is then 8 and ``tcp_csum_ok`` the UDP checksum's
        self.udp_len: Final = udp_len
        self.udp_check: Final = udp_check

    def _values(self) -> tuple[object, ...]:
        return (self.mac, self.ipv6, self.addresses, self.network_ok, self.tot_len_ok,
                self.network_len, self.ttl, self.tos, self.df, self.ip_id, self.sport,
                self.dport, self.seq, self.ack, self.flag_word, self.options, self.tcp_len,
                self.tcp_csum_ok, self.nhoff, self.udp_len, self.udp_check)


# skb->protocol values vlan_gro_receive is registered for (net/8021q/vlan_core.c:
# vlan_packet_offloads: ETH_P_8021Q, ETH_P_8021AD)
VLAN_TPIDS: Final = (0x8100, 0x88A8)
VLAN_HLEN: Final = 4
# what a frame needs of the kernel's GRO before its IP header is parsed (GroInput.needs)
NEEDS_VLAN: Final = 1  # a VLAN tag: vlan_gro_receive (CONFIG_VLAN_8021Q y or m)
NEEDS_HBH: Final = 2  # an IPv6 hop-by-hop header the extension header walk must take
# the IPv6 extension headers with an inet6_offloads entry flagged INET6_PROTO_GSO_EXTHDR
# (net/ipv6/exthdrs_offload.c): routing, destination options, and hop-by-hop (hbh_offload,
# f2e3fc2158e6; before dff0b0161ad5 ipv6_gso_pull_exthdrs took NEXTHDR_HOP without asking)
NEXTHDR_HOP: Final = 0
NEXTHDR_ROUTING: Final = 43
NEXTHDR_DEST: Final = 60
_EXTHDRS: Final = (NEXTHDR_HOP, NEXTHDR_ROUTING, NEXTHDR_DEST)


def parse_tcp(frame: bytes) -> TcpHeaders | None:
    """An Ethernet frame's headers as GRO reads them; None when it is not IPv4/IPv6 + TCP."""
    if len(frame) < 14:
        return None
    return _parse(frame, len(frame) - 14, None)


def parse_tcp_headers(mac: bytes, network: bytes, length: int,
                      tcp_csum_ok: bool = True) -> TcpHeaders | None:
    """The headers of an skb recorded at napi_gro_receive (after eth_type_trans): ``mac`` the
    Ethernet header at skb->head + mac_header, ``network`` the first bytes at skb->data (the
    IP header on, or the VLAN tag before it), ``length`` skb->len. Without the payload the TCP
    checksum cannot be summed: ``tcp_csum_ok`` says what tcp4/6_gro_receive's
    skb_gro_checksum_validate would find (it is read only for CHECKSUM_NONE; DATA_VALID and
    NEEDS_CSUM skbs are trusted). None when it is not IPv4/IPv6 + TCP; InputError when the TCP
    header lies past the bytes given."""
    if len(mac) < 14:
        raise InputError(f"a recorded MAC header of {len(mac)} bytes (GRO compares 14)")
    return _parse(mac[:14] + network, length, tcp_csum_ok)


_IPV4_HEADER: Final = struct.Struct("!10H")  # an IPv4 header without options, as 16-bit words


def _ipv4_header_sum(frame: bytes, at: int) -> int:
    """The one's complement sum of the 20-byte IPv4 header at frame[at:] (0xFFFF: its
    checksum is right): ip_fast_csum, for the header inet_gro_receive checks."""
    total: int = sum(_IPV4_HEADER.unpack_from(frame, at))
    total = (total & 0xFFFF) + (total >> 16)
    return (total & 0xFFFF) + (total >> 16)


def _network_at(frame: bytes, have: int) -> tuple[int, int]:
    """The EtherType GRO dispatches on past a VLAN tag (vlan_gro_receive reads
    h_vlan_encapsulated_proto) and where the IP header starts in ``frame``."""
    ethertype = (frame[12] << 8) | frame[13]
    if ethertype in VLAN_TPIDS and have >= VLAN_HLEN:
        return (frame[16] << 8) | frame[17], 14 + VLAN_HLEN
    return ethertype, 14


def _ipv6_walk(frame: bytes, nh: int, end: int) -> tuple[int, int, int, bool]:
    """ipv6_gro_pull_exthdrs from the IPv6 header at frame[nh:] (the packet ends at ``end``):
    the next header it stops at, where that starts, where the first hop-by-hop header starts
    (0: none), and whether the bytes given ended inside the headers (a capture's snaplen). A
    header past the packet (skb_gro_header fails) ends the walk."""
    proto, at, hbh = frame[nh + 6], nh + 40, 0
    while proto in _EXTHDRS and at + 8 <= end:
        if at + 8 > len(frame):
            return proto, at, hbh, True
        size = (frame[at + 1] + 1) * 8  # ipv6_optlen
        if at + size > end:
            break
        if at + size > len(frame):
            return proto, at, hbh, True
        if proto == NEXTHDR_HOP and not hbh:
            hbh = at
        proto, at = frame[at], at + size
    return proto, at, hbh, False


def _parse(frame: bytes, length: int, tcp_csum_ok: bool | None,
           udp: bool = False) -> TcpHeaders | None:
    """The headers of ``frame`` (the Ethernet header, then the packet from skb->data on,
    ``length`` bytes of it): the whole packet when ``tcp_csum_ok`` is None (the checksum is
    summed), else at least its headers. Read in place: a frame is not copied. A VLAN tag and
    IPv6 extension headers are read as vlan_gro_receive and ipv6_gro_receive read them
    (whether this kernel has them is GroState's question: GroInput.needs). ``udp``: a UDP
    datagram's headers instead (TcpHeaders with ``udp_len`` set: what udp_gro_receive_segment
    reads), None for anything else."""
    want, l4_min = (17, 8) if udp else (6, 20)
    have = min(len(frame) - 14, length)
    end = 14 + length  # where the packet ends in ``frame`` (maybe past the bytes given)
    ethertype, nh = _network_at(frame, have)
    nhoff = nh - 14  # skb->data to the IP header: the VLAN tag
    vlan = frame[14:nh]  # compare_vlan_header: the TCI and the encapsulated protocol
    if ethertype == 0x0800 and have >= nhoff + 20:
        ihl = (frame[nh] & 0x0F) * 4
        tot_len, ip_id, frag_off, ttl, proto = struct.unpack_from("!2xHHHBB", frame, nh)
        if proto != want or length < nhoff + ihl + l4_min:
            return None
        network_ok = (frame[nh] == 0x45 and not frag_off & 0x3FFF
                      and _ipv4_header_sum(frame, nh) == 0xFFFF)
        addresses = frame[nh + 12:nh + 20] + bytes([want]) + vlan
        tot_len_ok = tot_len == length - nhoff
        tos, df, ipv6 = frame[nh + 1], bool(frame[nh + 6] & 0x40), False
        t = nh + ihl  # the TCP header, in ``frame``
    elif ethertype == 0x86DD and length >= nhoff + 40 + l4_min:
        if have < nhoff + 40 + l4_min:
            raise InputError(f"an IPv6 packet with {have - nhoff} header bytes recorded "
                             f"({40 + l4_min} needed)")
        first, payload_len, nexthdr, ttl = struct.unpack_from("!IHBB", frame, nh)
        proto, t, _, cut = _ipv6_walk(frame, nh, end)
        if cut:
            raise InputError(f"IPv6 extension headers past the {have} bytes recorded")
        if proto != want:
            return None
        ip_id, df, ipv6, network_ok = 0, False, True, True
        # ipv6_gro_receive: the flow label, the addresses, the first next header, and every
        # extension header byte (memcmp of nlen - 40) must match
        addresses = (frame[nh + 8:nh + 40] + bytes([nexthdr])
                     + struct.pack("!I", first & 0xF00FFFFF) + frame[nh + 40:t] + vlan)
        tot_len_ok = payload_len == length - nhoff - 40
        tos = (first >> 20) & 0xFF
    else:
        return None
    if udp:
        return _udp_headers(frame, t, end, have, nh, nhoff, ipv6, addresses, network_ok,
                            tot_len_ok, ttl, tos, df, ip_id, tcp_csum_ok)
    if have < t - 14 + 20:
        raise InputError(f"a TCP header past the {have} bytes recorded")
    sport, dport, seq, ack, flag_word = struct.unpack_from("!HHIII", frame, t)
    tcp_len = (flag_word >> 28) * 4
    if tcp_len < 20 or end < t + tcp_len:
        return None
    if have < t - 14 + tcp_len:
        raise InputError(f"TCP options past the {have} bytes recorded (the headers end at "
                         f"{t - 14 + tcp_len})")
    if tcp_csum_ok is None:
        segment = end - t
        pseudo = (frame[nh + 8:nh + 40] + struct.pack("!IxxxB", segment, 6) if ipv6
                  else frame[nh + 12:nh + 20] + struct.pack("!BBH", 0, 6, segment))
        pseudo_sum = ones_complement_sum(pseudo)
        tcp_csum_ok = ones_complement_sum(frame[t:end], pseudo_sum) == 0xFFFF
    return TcpHeaders(frame[:14], ipv6, addresses, network_ok, tot_len_ok, t - 14, ttl, tos, df,
                      ip_id, sport, dport, seq, ack, flag_word, frame[t + 20:t + tcp_len],
                      tcp_len, tcp_csum_ok, nhoff)


def _udp_headers(frame: bytes, t: int, end: int, have: int, nh: int, nhoff: int, ipv6: bool,
                 addresses: bytes, network_ok: bool, tot_len_ok: bool, ttl: int, tos: int,
                 df: bool, ip_id: int, csum_ok: bool | None) -> TcpHeaders | None:
    """A UDP datagram's headers at frame[t:] as udp_gro_receive_segment reads them: the ports,
    the length field (``udp_len``) and the checksum field (``udp_check``)."""
    if have < t - 14 + 8:
        raise InputError(f"a UDP header past the {have} bytes recorded")
    sport, dport, ulen, check = struct.unpack_from("!HHHH", frame, t)
    if csum_ok is None:
        pseudo = (frame[nh + 8:nh + 40] + struct.pack("!IxxxB", end - t, 17) if ipv6
                  else frame[nh + 12:nh + 20] + struct.pack("!BBH", 0, 17, end - t))
        csum_ok = check == 0 or ones_complement_sum(
            frame[t:end], ones_complement_sum(pseudo)) == 0xFFFF
    return TcpHeaders(frame[:14], ipv6, addresses, network_ok, tot_len_ok, t - 14, ttl, tos, df,
                      ip_id, sport, dport, 0, 0, 0, b"", 8, csum_ok, nhoff, ulen, check)


def parse_udp(frame: bytes) -> TcpHeaders | None:
    """A whole Ethernet frame's UDP datagram headers (None: not UDP over IPv4/IPv6)."""
    if len(frame) < 14:
        return None
    return _parse(frame, len(frame) - 14, None, udp=True)


def udp_checksum_validated(frame: bytes, summed: bool = True) -> bool:
    """udp4/6_gro_receive on a CHECKSUM_NONE skb: a nonzero UDP checksum is validated (and
    the skb becomes CHECKSUM_UNNECESSARY); a zero one is left alone. Without a UDP GRO socket
    the datagram is then flushed, never merged. ``summed`` False: the frame's bytes are a
    capture's (maybe cut by its snaplen), and a nonzero checksum is trusted, not summed."""
    if len(frame) < 14:
        return False
    ethertype, nh = _network_at(frame, len(frame) - 14)
    end = len(frame)
    if ethertype == 0x0800 and len(frame) >= nh + 20 and frame[nh + 9] == 17:
        ihl = (frame[nh] & 0x0F) * 4
        pseudo = frame[nh + 12:nh + 20] + struct.pack("!BBH", 0, 17, end - nh - ihl)
        at = nh + ihl
    elif ethertype == 0x86DD and len(frame) >= nh + 40:
        proto, at, _, _ = _ipv6_walk(frame, nh, end)
        if proto != 17:
            return False
        pseudo = frame[nh + 8:nh + 40] + struct.pack("!IxxxB", end - at, 17)
    else:
        return False
    if len(frame) < at + 8 or frame[at + 6:at + 8] == b"\0\0":
        return False
    if not summed:
        return True
    return ones_complement_sum(frame[at:], ones_complement_sum(pseudo)) == 0xFFFF


def network_pull(mac: bytes, net: bytes, length: int) -> int:
    """What vlan_gro_receive and inet_gro_receive / ipv6_gro_receive pulled (skb_gro_pull of
    the tag and the IP header) before a skb that is not merged as TCP went on: GRO_NORMAL's
    ``pull:`` then copies that many bytes into the linear area (gro_pull_from_frag0). IPv4: 20
    when the header passes the checks before the pull (no options, not a fragment, a right
    header checksum) and the protocol has a GRO handler (TCP, UDP; GRE, IPIP and SIT tunnels
    are not modelled: 0); IPv6: 40 and the extension headers ipv6_gro_pull_exthdrs walked (the
    header is pulled before the next header is looked at). A VLAN tag adds its 4 bytes when
    the IP header is pulled (a kernel without vlan_gro_receive pulls nothing: GroState). 0 for
    anything else [net/ipv4/af_inet.c:inet_gro_receive, net/ipv6/ip6_offload.c:ipv6_gro_receive
    @ 6.1.166, 6.12.15, 6.18.7; checked on 6.1.192 and 6.12.117 guests: a UDP datagram leaves
    GRO with 20 linear bytes (tests/data/gro/guest-*.json)]."""
    if len(mac) < 14:
        return 0
    frame = mac[:14] + net
    have = min(len(net), length)
    ethertype, nh = _network_at(frame, have)
    nhoff = nh - 14
    if ethertype == 0x0800 and have >= nhoff + 20:
        frag_off, proto = struct.unpack_from("!HxB", frame, nh + 6)
        ok = (frame[nh] == 0x45 and not frag_off & 0x3FFF and proto in (6, 17)
              and ones_complement_sum(frame[nh:nh + 20]) == 0xFFFF)
        return nhoff + 20 if ok else 0
    if ethertype == 0x86DD and length >= nhoff + 40:
        if have < nhoff + 40:
            return nhoff + 40
        _, at, _, _ = _ipv6_walk(frame, nh, 14 + length)
        return at - 14
    return 0


class GroInput(Value):
    """What GRO reads of one frame: its TCP/IP headers (None: not TCP over IPv4/IPv6), for
    a UDP datagram whether udp4/6_gro_receive validates its checksum, and for a frame that is
    not TCP the header bytes GRO pulls (network_pull). ``needs``: what the kernel's GRO must
    parse before all that holds (NEEDS_VLAN, NEEDS_HBH); ``hbh_at``: where the first IPv6
    hop-by-hop header starts (from skb->data): what a walk that stops there pulled. A plain
    class (one per frame of a replay)."""

    __slots__ = ("hbh_at", "needs", "pull", "tcp", "udp_validated")
    _names = ("tcp", "udp_validated", "pull", "needs", "hbh_at")

    def __init__(self, tcp: TcpHeaders | None, udp_validated: bool = False,
                 pull: int = 0, needs: int = 0, hbh_at: int = 0) -> None:
        self.tcp: Final = tcp
        self.udp_validated: Final = udp_validated
        self.pull: Final = pull
        self.needs: Final = needs
        self.hbh_at: Final = hbh_at

    def _values(self) -> tuple[object, ...]:
        return (self.tcp, self.udp_validated, self.pull, self.needs, self.hbh_at)


def frame_needs(data: bytes, length: int) -> tuple[int, int]:
    """What a frame needs of the kernel's GRO (NEEDS_VLAN, NEEDS_HBH) and where its first
    hop-by-hop header starts (from skb->data; 0: none)."""
    if len(data) < 14:
        return 0, 0
    have = min(len(data) - 14, length - 14)
    ethertype, nh = _network_at(data, have)
    needs = NEEDS_VLAN if nh > 14 else 0
    hbh = 0
    if ethertype == 0x86DD and len(data) >= nh + 40:
        _, _, hbh, _ = _ipv6_walk(data, nh, length)
    if hbh:
        needs |= NEEDS_HBH
    return needs, hbh - 14 if hbh else 0


# the bytes of a capture's frame ``_read_tcp4`` reads at most: Ethernet 14, IPv4 20, TCP 60
TCP4_HEADERS: Final = 94
_HEAD: Final = struct.Struct(f"{TCP4_HEADERS}s").unpack_from  # a view's first TCP4_HEADERS bytes


def read_frame(data: bytes | memoryview, length: int, whole: bool) -> GroInput:
    """What GRO reads of a frame of ``length`` bytes (Ethernet header on) given as ``data``:
    the whole frame (``whole``: its TCP and UDP checksums are summed, as GRO sums them for a
    CHECKSUM_NONE skb) or a capture's bytes, maybe cut by the snaplen (checksums trusted; a
    TCP header the snaplen cut reads as not TCP). ``data`` may be a view of the bytes (a
    reader's buffer): it is read now and not kept; of a capture's frame in the common shape
    only the headers are copied out of it."""
    got = read_frame_headers(data, length, whole)
    return got if isinstance(got, GroInput) else GroInput(got)


def read_frame_headers(data: bytes | memoryview, length: int,
                       whole: bool) -> GroInput | TcpHeaders:
    """``read_frame``, with a capture's frame in the common shape (``_tcp4_headers``) given
    as its TcpHeaders alone: it stands for ``GroInput(tcp)`` (nothing else set), one object
    less per frame for a replay that keeps them (replay.gro.GroFrames)."""
    if not isinstance(data, bytes):
        if not whole:
            # a capture's checksums are trusted: only the headers are read (the same record
            # as from all the bytes: _tcp4_headers reads no byte past TCP4_HEADERS)
            # (one call of a bound Struct method: a slice of the view and its tobytes cost
            # about twice as much compiled, bytes(view[:N]) more)
            head = (_HEAD(data)[0] if len(data) >= TCP4_HEADERS
                    else data.tobytes())
            if len(head) >= 14:
                common = _tcp4_headers(head, length)
                if common is not None:
                    return common
        data = data.tobytes()
    if not whole and len(data) >= 14:
        common = _tcp4_headers(data, length)
        if common is not None:
            return common
    return _read_any(data, length, whole)


def read_captured(buf: bytes | bytearray | memoryview | mmap.mmap, start: int, end: int,
                  length: int, head: bytes | None = None) -> GroInput | TcpHeaders:
    """``read_frame_headers`` of a capture's frame of ``length`` bytes whose captured bytes are
    ``buf[start:end]`` in a reader's buffer (checksums trusted): a frame in the common shape is
    read from a copy of its first TCP4_HEADERS bytes made straight from the buffer, without a
    view of the frame (a view and its slice cost ~0.4k instructions a frame compiled, a third
    of reading the headers); any other frame as ``read_frame_headers`` reads it, from a copy
    of its captured bytes (``bytes`` of a slice: none made of ``bytes`` or a mapped file's)."""
    if end - start >= TCP4_HEADERS:
        # (the Struct call copies them from any buffer; a mapped capture's slice would box
        # both ends into ints and make a slice object: ~0.3k instructions more, compiled).
        # ``head``: those bytes, read by the caller already (capture.SEEN_HEAD of them)
        common = _tcp4_headers(_HEAD(buf, start)[0] if head is None else head, length)
        if common is not None:
            return common
        # not in the common shape (_tcp4_headers reads no byte past TCP4_HEADERS): read whole
        return _read_any(bytes(buf[start:end]), length, False)
    return read_frame_headers(bytes(buf[start:end]), length, False)


def _read_any(data: bytes, length: int, whole: bool) -> GroInput:
    """``read_frame`` of any frame."""
    if len(data) < 14:
        return GroInput(None)
    needs, hbh_at = frame_needs(data, length)
    if whole:
        tcp = parse_tcp(data)
        if tcp is None:  # a UDP datagram's headers: for a UDP GRO socket (GroState.udp_gro)
            tcp = parse_udp(data)
        return GroInput(tcp, udp_checksum_validated(data), _pull(data, length, tcp), needs,
                        hbh_at)
    try:
        tcp = _parse(data, length - 14, True)
        if tcp is None:
            tcp = _parse(data, length - 14, True, udp=True)
    except InputError:  # the snaplen cut the TCP header
        return GroInput(None, False, _pull(data, length, None), needs, hbh_at)
    return GroInput(tcp, (tcp is None or bool(tcp.udp_len))
                    and udp_checksum_validated(data, summed=False),
                    _pull(data, length, tcp), needs, hbh_at)


def _pull(data: bytes, length: int, tcp: TcpHeaders | None) -> int:
    """GroInput.pull: network_pull for a frame that is not TCP (or is UDP), else 0."""
    if tcp is None or tcp.udp_len:
        return network_pull(data[:14], data[14:], length - 14)
    return 0


def _read_tcp4(data: bytes, length: int) -> GroInput | None:
    """``read_frame`` of a capture's frame in its most common shape, read in one pass: an
    untagged IPv4 packet with a 20-byte header carrying TCP, whose TCP header the bytes hold
    whole. The same record the general reading (``_parse``, ``frame_needs``) makes of it: no
    VLAN tag or hop-by-hop header (needs 0), nothing pulled for a TCP frame, the checksum
    trusted. None for any other frame (the general reading takes it)."""
    tcp = _tcp4_headers(data, length)
    return None if tcp is None else GroInput(tcp)


def _tcp4_headers(data: bytes, length: int) -> TcpHeaders | None:
    """``_read_tcp4``'s TcpHeaders (its GroInput holds nothing else). The sums and fields are
    i64 locals: compiled, native words (~0.85k instructions a frame less than tagged ints,
    each operation checked for overflow); plain Python reads the same ints."""
    have = min(len(data), length) - 14  # the packet's bytes the capture holds
    if have < 40 or data[12] != 0x08 or data[13] != 0 or data[14] != 0x45 or data[23] != 6:
        return None
    tcp_len = (data[46] >> 4) * 4
    if tcp_len < 20 or have < 20 + tcp_len:  # _parse: not TCP, or the snaplen cut it
        return None
    # ip_fast_csum of the 20-byte header (inet_gro_receive): its ten 16-bit words summed (as
    # their high bytes' sum times 256 plus their low bytes' sum: the same total)
    high: i64 = data[14]
    high += data[16]
    high += data[18]
    high += data[20]
    high += data[22]
    high += data[24]
    high += data[26]
    high += data[28]
    high += data[30]
    high += data[32]
    low: i64 = data[15]
    low += data[17]
    low += data[19]
    low += data[21]
    low += data[23]
    low += data[25]
    low += data[27]
    low += data[29]
    low += data[31]
    low += data[33]
    total: i64 = (high << 8) + low
    total = (total & 0xFFFF) + (total >> 16)
    total = (total & 0xFFFF) + (total >> 16)
    # (each field's bytes into an i64 one by one: a byte read is an int, and an expression
    # of ints is computed as ints before it is assigned)
    b: i64 = data[20]
    frag_off: i64 = (b << 8) | data[21]
    b = data[16]
    tot_len: i64 = (b << 8) | data[17]
    b = data[18]
    ip_id: i64 = (b << 8) | data[19]
    b = data[34]
    sport: i64 = (b << 8) | data[35]
    b = data[36]
    dport: i64 = (b << 8) | data[37]
    b = data[38]
    seq: i64 = b << 24
    b = data[39]
    seq |= b << 16
    b = data[40]
    seq |= (b << 8) | data[41]
    b = data[42]
    ack: i64 = b << 24
    b = data[43]
    ack |= b << 16
    b = data[44]
    ack |= (b << 8) | data[45]
    b = data[46]
    flag_word: i64 = b << 24
    b = data[47]
    flag_word |= b << 16
    b = data[48]
    flag_word |= (b << 8) | data[49]
    return TcpHeaders(
        data[:14], False, data[26:34] + b"\x06",
        not frag_off & 0x3FFF and total == 0xFFFF, tot_len == length - 14,
        20, data[22], data[15], bool(data[20] & 0x40), ip_id, sport, dport, seq, ack,
        flag_word, data[54:34 + tcp_len], tcp_len, True, 0)


class Segment(Value):
    """One skb napi_gro_receive() gets: the driver's skb (after eth_type_trans, so ``len``
    counts from the IP header) and its headers. A plain class (one per frame of a replay)."""

    __slots__ = ("frame", "hbh_at", "head_frag", "needs", "page", "page_offset", "pull", "skb",
                 "tcp", "udp_validated")
    _names = ("frame", "skb", "head_frag", "tcp", "page", "page_offset", "udp_validated",
              "pull", "needs", "hbh_at")

    def __init__(self, frame: int, skb: Skb, head_frag: bool, tcp: TcpHeaders | None,
                 page: str = "", page_offset: int = 0, udp_validated: bool = False,
                 pull: int = 0, needs: int = 0, hbh_at: int = 0) -> None:
        self.frame: Final = frame  # the input frame's index
        self.skb: Final = skb
        # skb->head_frag: the head is a page fragment (build_skb, napi page_frag)
        self.head_frag: Final = head_frag
        # None: not TCP over IPv4/IPv6 (GRO_NORMAL, see ``udp_validated``)
        self.tcp: Final = tcp
        self.page: Final = page  # the page the head lies in (case B makes it a frag), "frag0"
        self.page_offset: Final = page_offset  # where skb->head lies in that page
        # a UDP datagram whose nonzero checksum udp_gro_receive verifies
        self.udp_validated: Final = udp_validated
        self.pull: Final = pull  # not TCP: the IP header bytes GRO pulled (network_pull)
        self.needs: Final = needs  # GroInput.needs: a VLAN tag, an IPv6 hop-by-hop header
        self.hbh_at: Final = hbh_at  # GroInput.hbh_at

    def _values(self) -> tuple[object, ...]:
        return (self.frame, self.skb, self.head_frag, self.tcp, self.page, self.page_offset,
                self.udp_validated, self.pull, self.needs, self.hbh_at)

    @property
    def offset(self) -> int:
        """skb_gro_offset() once TCP is parsed: the headers' bytes from the IP header."""
        assert self.tcp is not None
        return self.tcp.network_len + self.tcp.tcp_len

    @property
    def payload(self) -> int:
        """skb_gro_len(): the TCP payload (0 for a segment that is not TCP)."""
        return self.skb.len - self.offset if self.tcp is not None else 0


class GroStep(NamedTuple):
    """What GRO did with one input, and the skb it joined or started after it."""

    frame: int
    result: Result
    how: How
    payload: int  # skb_gro_len()
    delta_truesize: int  # what the aggregate's truesize grew by (0 unless merged)
    len: int  # the held skb's len after this input (the input's own when normal)
    truesize: int  # ... its truesize
    nr_frags: int  # the frags of the skb the next merge fills (NAPI_GRO_CB(p)->last)
    frag_list: int  # skbs chained on the held skb's frag_list


class Delivered(NamedTuple):
    """An skb the stack receives: netif_receive_skb's len, the layout, the frames it carries."""

    skb: Skb
    frames: tuple[int, ...]  # the input indices it carries, in order
    flush: Flush
    segs: int  # NAPI_GRO_CB(skb)->count: gso_segs when it leaves as a GSO skb


class GroLimits(NamedTuple):
    """The device's aggregate limits (ip link ... gro_max_size / gro_ipv4_max_size)."""

    gro_max_size: int = GRO_MAX_SIZE  # IPv6 (and IPv4 before 6.3)
    gro_ipv4_max_size: int = GRO_MAX_SIZE  # IPv4 from 6.3 (netif_get_gro_max_size)


GRO_MAX_SIZE_BIG: Final = 8 * 65535  # GRO_MAX_SIZE with BIG TCP (include/linux/netdevice.h)


def gro_limits(k: KernelProfile, gro_max_size: int | None = None,
               gro_ipv4_max_size: int | None = None) -> GroLimits:
    """What ``ip link set DEV gro_max_size N gro_ipv4_max_size M`` leaves on kernel ``k``
    (rtnetlink: netif_set_gro_max_size also sets the IPv4 limit when N <= 65536); refused
    where the kernel has no such knob or limit."""
    if gro_max_size is not None:
        if not k.has(GRO_MAX_SIZE_KNOB):
            raise InputError(f"gro_max_size does not exist on {k.name}: skb_gro_receive's "
                             "limit is a literal 65536 (the knob came in 5.18)")
        top = GRO_MAX_SIZE_BIG if k.has(GRO_BIG_TCP_IPV6) else GRO_MAX_SIZE
        if not 1 <= gro_max_size <= top:
            raise InputError(f"gro_max_size {gro_max_size} out of range (valid: 1..{top} on "
                             f"{k.name})")
    if gro_ipv4_max_size is not None:
        if not k.has(GRO_BIG_TCP_IPV4):
            raise InputError(f"gro_ipv4_max_size does not exist on {k.name} (6.3+): IPv4 uses "
                             "gro_max_size, at most 65536")
        if not 1 <= gro_ipv4_max_size <= GRO_MAX_SIZE_BIG:
            raise InputError(f"gro_ipv4_max_size {gro_ipv4_max_size} out of range (valid: "
                             f"1..{GRO_MAX_SIZE_BIG})")
    v6 = GRO_MAX_SIZE if gro_max_size is None else gro_max_size
    # IPv4 follows gro_max_size up to 64 KiB; before 6.3 IPv4 stops at 64 KiB anyway
    v4 = min(v6, GRO_MAX_SIZE) if gro_ipv4_max_size is None else gro_ipv4_max_size
    return GroLimits(v6, v4)


class UdpGro(NamedTuple):
    """What lets udp_gro_receive merge plain UDP datagrams (net/ipv4/udp_offload.c @ 5.15.215,
    6.1.166, 6.12.15, 6.18.7): a socket with UDP_GRO (setsockopt SOL_UDP UDP_GRO) bound to the
    wildcard address on the destination port (``sockets``: those ports; one such socket turns
    udp_encap_needed_key on, so the lookup runs), NETIF_F_GRO_UDP_FWD (``ethtool -K DEV
    rx-udp-gro-forwarding on``: datagrams no socket takes) or NETIF_F_GRO_FRAGLIST (``ethtool
    -K DEV rx-gro-list on``: chained whole on frag_list unless a UDP_GRO socket takes them)."""

    sockets: tuple[int, ...] = ()
    fwd: bool = False
    fraglist: bool = False

    def mode(self, dport: int) -> str | None:
        """How a datagram to ``dport`` is merged: "segment", "fraglist", or None (flushed)."""
        sk = dport in self.sockets
        if self.fraglist and not sk:  # is_flist = sk ? !GRO_ENABLED : 1
            return "fraglist"
        if sk or self.fwd:
            return "segment"
        return None


UDP_GRO_CNT_MAX: Final = 64  # include/net/udp.h: a UDP aggregate completes at 64 segments
UDP_CHECK_OFFSET: Final = 6  # offsetof(struct udphdr, check)
SKB_GSO_FRAGLIST: Final = 1 << 18


class GroRun(NamedTuple):
    steps: tuple[GroStep, ...]
    delivered: tuple[Delivered, ...]
    max_skb_frags: int
    gro_max_size: int


class _Held:
    """A held skb (p) with its frag_list members (NAPI_GRO_CB(p)->last is the last member, or
    p itself), and what tcp_gro_receive compares the next segment with. What merges change of
    p (len, data_len, truesize, its frags) is kept here and put into its ``Skb`` once, when it
    is completed (``skb()``); so are the last frag_list member's (lp: ``lp_len``,
    ``lp_truesize``, ``lp_frags``), which ``members`` holds as it was chained."""

    __slots__ = ("age", "base", "count", "data_len", "fixed_id", "flag_word", "flist",
                 "frags", "frames", "headers", "len", "lp_frags", "lp_len", "lp_truesize",
                 "members", "mss", "next_seq", "nr_frags", "truesize")

    def __init__(self, payload: int, frame: int, headers: TcpHeaders, skb: Skb,
                 age: int = 0, count: int = 1) -> None:
        self.age = age  # NAPI_GRO_CB(p)->age: the jiffies when it was held
        # NAPI_GRO_CB(p)->count: 1, or a GSO skb's gso_segs; each merge adds the merged skb's
        self.count = count
        self.headers = headers
        self.base = skb  # p as GRO held it
        self.len = skb.len
        self.data_len = skb.data_len
        self.truesize = skb.truesize
        self.nr_frags = skb.nr_frags
        self.frags: list[Frag] = list(skb.frags)
        self.mss = skb.gso_size  # skb_shinfo(p)->gso_size: tcp_gro_receive's mss
        self.frames = [frame]
        self.members: list[FragListSkb] = []
        self.lp_len = 0
        self.lp_truesize = 0
        self.lp_frags: list[Frag] = []
        self.next_seq = (headers.seq + payload) & 0xFFFFFFFF
        self.flag_word = headers.flag_word
        self.fixed_id = False
        self.flist = False  # a UDP aggregate chained by skb_gro_receive_list

    def last_frags(self) -> int:
        return len(self.lp_frags) if self.members else self.nr_frags

    def chain(self, member: FragListSkb) -> None:
        """A member chained on p's frag_list: it is lp now (the one before it as it ends)."""
        if self.members:
            self.members[-1] = self._last()
        self.members.append(member)
        self.lp_len = member.len
        self.lp_truesize = member.truesize
        self.lp_frags = list(member.frags)

    def _members(self) -> tuple[FragListSkb, ...]:
        """p's frag_list members, lp with what the merges added to it."""
        members = self.members
        if not members:
            return ()
        return (*members[:-1], self._last())

    def _last(self) -> FragListSkb:
        """lp with what the merges added to it."""
        lp = self.members[-1]
        if (lp.len == self.lp_len and lp.truesize == self.lp_truesize
                and len(lp.frags) == len(self.lp_frags)):
            return lp  # (nothing was added to it)
        return _RECORD(FragListSkb, (self.lp_len, self.lp_truesize, tuple(self.lp_frags)))

    def skb(self) -> Skb:
        """p with what the merges added (and its frag_list members)."""
        if len(self.frames) == 1:
            return self.base
        return _RECORD(Skb, self._merged())

    def _merged(self) -> list[object]:
        """p's fields (``Skb`` by position) with what the merges added."""
        v: list[object] = list(self.base)
        v[_LEN] = self.len
        v[_DATA_LEN] = self.data_len
        v[_TRUESIZE] = self.truesize
        v[_NR_FRAGS] = self.nr_frags
        v[_FRAGS_AT] = tuple(self.frags)
        v[_FRAG_LIST_AT] = self._members()
        return v

    def same_flow(self, h: TcpHeaders) -> bool:
        """gro_list_prepare (MAC header), inet/ipv6_gro_receive (addresses), tcp_gro_lookup."""
        p = self.headers
        # (the ports first: two ints, where flows of one host pair differ)
        return (p.sport == h.sport and p.dport == h.dport and p.mac == h.mac
                and p.ipv6 == h.ipv6 and p.addresses == h.addresses)


class GroState:
    """A NAPI instance's GRO state across polls: the held skbs, oldest first (the bucket list
    read backwards), and what has been decided so far (``steps``, ``delivered``: a caller that
    streams takes them as they come). ``gro`` False: NETIF_F_GRO is off (netif_elide_gro)."""

    def __init__(self, k: KernelProfile, limits: GroLimits | None = None, gro: bool = True,
                 record_steps: bool = True, udp_gro: UdpGro | None = None) -> None:
        self.k = k
        self.udp_gro = udp_gro or UdpGro()
        self.limits = limits or GroLimits()
        self.gro = gro
        self.record_steps = record_steps
        self.held: list[_Held] = []
        self.jiffies = 0  # the jiffies now: a held skb's age (flush_old)
        self.steps: list[GroStep] = []
        self.delivered: list[Delivered] = []
        # dev_gro_receive lets TCP GSO skbs in (5eddb24901ee, 6.1), and from 7871f54e3dee
        # (6.2; 6.1.7) no SKB_GSO_DODGY one: see gso_flushed
        self.gso_tcp = k.has(GRO_GSO_TCP_AGGREGATED)
        self.dodgy_flush = k.has(GRO_DODGY_FLUSH)
        # vlan_gro_receive exists (CONFIG_VLAN_8021Q y or m)
        self.vlan_gro = k.build.vlan_8021q
        # ipv6_gro_receive walks a hop-by-hop header: always before dff0b0161ad5
        # (ipv6_gso_pull_exthdrs takes NEXTHDR_HOP), after it only with hbh_offload
        self.walks_hbh = not k.has(GRO_IPV6_EXTHDR_GRO_PULL) or k.has(GRO_IPV6_HBH_OFFLOAD)
        # what the per-segment decisions ask of the kernel, looked up once
        self.cwr_compared = k.has(GRO_CWR_COMPARED)
        self.fixedid_without_df = k.has(GRO_FIXEDID_WITHOUT_DF)
        self.big_tcp_ipv4 = k.has(GRO_BIG_TCP_IPV4)
        self.exthdr_gro_pull = k.has(GRO_IPV6_EXTHDR_GRO_PULL)
        self.max_skb_frags = k.build.max_skb_frags
        self.sk_buff_aligned = k.sk_buff_aligned  # (a property of the profile: looked up once)
        # the skbs a replay hands GRO are shared by the frames alike in geometry (its
        # decisions): what GRO makes of one such skb, kept by its id (each entry holds the
        # skb, so the id is not reused while it is kept)
        self.moved: dict[int, _Moved] = {}  # the frags a merge moves (skb_gro_receive)
        self.last_moved: _Moved | None = None  # the last of them used
        self.pulled: dict[int, tuple[Skb, int, Skb]] = {}  # the skb with its headers pulled
        self.lone: dict[int, tuple[Skb, Skb]] = {}  # a held base, completed alone (``complete``)

    def receive(self, seg: Segment) -> None:
        """napi_gro_receive(seg): held, merged, or on to the stack (``delivered``)."""
        if self.gro:
            _receive(self, seg)
            return
        if self.record_steps:
            self.steps.append(GroStep(seg.frame, Result.NORMAL, How.GRO_OFF, seg.payload, 0,
                                      seg.skb.len, seg.skb.truesize, seg.skb.nr_frags, 0))
        self.delivered.append(Delivered(seg.skb, (seg.frame,), Flush.NOT_HELD, 1))

    def gso_flushed(self, skb: Skb) -> bool:
        """dev_gro_receive on an skb with gso_size set (skb_is_gso): True when it sets
        NAPI_GRO_CB(skb)->flush (the skb is never merged, held or merged into), False when it
        lets the skb in, counted as NAPI_GRO_CB(skb)->count = gso_segs. Before 5eddb24901ee
        every GSO skb is flushed (``flush = skb_is_gso(skb) || skb_has_frag_list(skb)``)
        [net/core/gro.c:dev_gro_receive @ 6.0.1, 6.0.19]; from it a GSO skb that is not TCP
        (skb_is_gso_tcp: SKB_GSO_TCPV4 or SKB_GSO_TCPV6) [@ 6.1.0, 6.1.6]; from 7871f54e3dee
        also one with SKB_GSO_DODGY, which virtio_net_hdr_to_skb sets on every GSO skb
        [@ 6.1.7, 6.1.166]."""
        if not self.gso_tcp or not skb.gso_type & (SKB_GSO_TCPV4 | SKB_GSO_TCPV6):
            return True
        return self.dodgy_flush and bool(skb.gso_type & SKB_GSO_DODGY)

    def take(self) -> list[Delivered]:
        """The skbs delivered since the last take, in order."""
        out, self.delivered = self.delivered, []
        return out

    def limit(self, h: TcpHeaders) -> int:
        """skb_gro_receive's size limit: netif_get_gro_max_size (6.3+: gro_max_size when
        p->protocol is ETH_P_IPV6, else gro_ipv4_max_size: a VLAN-tagged IPv6 flow's
        skb->protocol is the tag's, so it gets the IPv4 limit); above GRO_LEGACY_MAX_SIZE only
        TCP, IPv6 with room in the headroom for the jumbo hop-by-hop header (ours always have
        it). Before 6.3 the limit is gro_max_size, and past 64 KiB only an untagged IPv6
        packet whose next header is TCP (``ipv6_hdr(p)->nexthdr``: no extension header) may
        go [net/core/gro.c:skb_gro_receive @ 6.1.166, 6.12.15, 6.18.7]."""
        if h.ipv6 and not h.nhoff and (self.big_tcp_ipv4 or h.network_len == 40):
            return self.limits.gro_max_size
        return self.limits.gro_ipv4_max_size

    def complete(self, p: _Held, flush: Flush) -> None:
        self.held.remove(p)
        if len(p.frames) == 1 and p.count == 1:
            # a lone skb (held, nothing merged) completes as _complete makes it of its base,
            # whatever its frame: the held skbs of frames alike in geometry share their base
            # (``pulled``), so its completed skb is made once and shared (a record made from a
            # list is ~2k instructions, compiled: a flow whose frames never merge pays it for
            # every frame)
            kept = self.lone.get(id(p.base))
            if kept is not None and kept[0] is p.base:
                self.delivered.append(_RECORD(Delivered, (kept[1], (p.frames[0],), flush, 1)))
                return
            d = _complete(self.k, p, flush)
            if len(self.lone) >= MOVED_KEPT:
                self.lone.clear()
            self.lone[id(p.base)] = (p.base, d.skb)
            self.delivered.append(d)
            return
        self.delivered.append(_complete(self.k, p, flush))

    def flush_all(self, flush: Flush) -> None:
        for p in list(self.held):  # napi_gro_flush: the oldest first
            self.complete(p, flush)

    def flush_old(self) -> None:
        """napi_complete_done with gro_flush_timeout and a held skb: gro_flush_normal(gro,
        flush_old true) completes the held skbs, oldest first, up to the first one held in
        this jiffy (``NAPI_GRO_CB(skb)->age == jiffies``: it and the younger ones stay)
        [net/core/gro.c:__gro_flush_chain, net/core/dev.c:napi_complete_done @ 6.18.7;
        net/core/dev.c:napi_gro_flush @ 5.15.215]."""
        for p in list(self.held):
            if p.age == self.jiffies:
                return
            self.complete(p, _F_OLD)


def gso_window_note(k: KernelProfile) -> str | None:
    """What a GRO run on a kernel that lets SKB_GSO_DODGY TCP skbs in (6.1.0-6.1.6) rests on;
    None elsewhere."""
    if not k.has(GRO_GSO_TCP_AGGREGATED) or k.has(GRO_DODGY_FLUSH):
        return None
    return ("6.1.0-6.1.6 let SKB_GSO_DODGY TCP skbs into GRO (5eddb24901ee; 7871f54e3dee "
            "flushes them again from 6.1.7): a GSO skb counts as its gso_segs, which "
            "virtio_net_hdr_to_skb leaves 0. Modelled from the 6.1.0, 6.1.6 and 6.1.7 source "
            "(net/core/gro.c, net/ipv4/tcp_offload.c), not checked on a running kernel (none "
            "of these releases was booted)")


def gro_receive(k: KernelProfile, runs: Sequence[Sequence[Sequence[Segment]]],
                budget: int = NAPI_POLL_WEIGHT, end: Flush = Flush.POLL_END,
                gro: bool = True, limits: GroLimits | None = None,
                steps: bool = True, udp_gro: UdpGro | None = None) -> GroRun:
    """dev_gro_receive for each segment. ``runs``: groups of polls GRO keeps its held skbs
    across (one run per poll, unless gro_flush_timeout keeps them); after a poll that used its
    whole ``budget`` everything is flushed, and at the end of each run everything left, with
    ``end`` as the reason. ``gro`` False: NETIF_F_GRO is off (netif_elide_gro): every skb goes
    on as GRO_NORMAL, unchanged. ``steps`` False: no ``GroStep`` records (a replay prints the
    delivered skbs only)."""
    state = GroState(k, limits, gro, steps, udp_gro)
    for run in runs:
        for poll in run:
            for seg in poll:
                state.receive(seg)
            if len(poll) >= budget:
                state.flush_all(Flush.BUDGET)
        state.flush_all(end)
    return GroRun(tuple(state.steps), tuple(state.delivered), k.build.max_skb_frags,
                  state.limits.gro_max_size)


def _unparsed(state: GroState, seg: Segment) -> int | None:
    """Where this kernel's GRO stops short of the IP or TCP header, as the bytes it pulled
    before it (None: it parses the frame). A VLAN tag without vlan_gro_receive: no
    packet_offload for skb->protocol, dev_gro_receive goes to ``normal`` with nothing pulled
    [net/core/gro.c:dev_gro_receive @ 6.18.7]; a hop-by-hop header the walk does not take:
    ipv6_gro_pull_exthdrs stops there (no inet6_offloads entry for NEXTHDR_HOP), no
    gro_receive for it, ``goto out`` with flush, the bytes before it pulled
    [net/ipv6/ip6_offload.c:ipv6_gro_receive @ 6.1.166 as read]."""
    if seg.needs & NEEDS_VLAN and not state.vlan_gro:
        return 0
    if seg.needs & NEEDS_HBH and not state.walks_hbh:
        return seg.hbh_at
    return None


def _receive(state: GroState, seg: Segment) -> None:
    """One dev_gro_receive: find the flow's held skb, compare, merge or not, hold or not."""
    h = seg.tcp
    if seg.needs:
        pulled = _unparsed(state, seg)
        if pulled is not None:
            skb = _pull_headers(state.k, seg, pulled)
            if state.record_steps:
                state.steps.append(GroStep(seg.frame, Result.NORMAL, _H_NOT_PARSED, 0, 0,
                                           skb.len, skb.truesize, skb.nr_frags, 0))
            state.delivered.append(Delivered(skb, (seg.frame,), _F_NOT_HELD, 1))
            return
    if (h is not None and h.ipv6 and h.network_len > h.nhoff + 40 and seg.skb.headlen
            < seg.offset and not state.exthdr_gro_pull):
        raise InputError(
            f"GRO of an IPv6 skb with extension headers and {seg.skb.headlen} linear bytes on "
            f"{state.k.name} is not modelled: before dff0b0161ad5 ipv6_gro_receive pulls them "
            "into the linear area with __pskb_pull and invalidates frag0"
        )
    if h is not None and h.udp_len:
        mode = state.udp_gro.mode(h.dport)
        if mode is not None:
            _receive_udp(state, seg, h, mode == "fraglist")
            return
        h = None  # udp_gro_receive: "no GRO, be sure flush the current packet"
    if h is None:
        # not TCP: no protocol merges it (UDP without a UDP GRO socket is flushed); it passes
        # the held TCP skbs by (another protocol or flow: not the same flow), with the IP
        # header inet/ipv6_gro_receive pulled
        skb = _pull_headers(state.k, seg, seg.pull)
        if seg.udp_validated and skb.ip_summed == CHECKSUM_NONE:
            skb = skb._replace(ip_summed=CHECKSUM_UNNECESSARY)
        if state.record_steps:
            state.steps.append(GroStep(seg.frame, Result.NORMAL, _H_NOT_TCP, 0, 0, skb.len,
                                       skb.truesize, skb.nr_frags, 0))
        state.delivered.append(Delivered(skb, (seg.frame,), _F_NOT_HELD, 1))
        return
    if not h.network_ok:
        # inet_gro_receive: IP options, a fragment or a bad header checksum: "goto out" with
        # flush set, before the IP header is pulled; no held skb is completed
        _normal(state, seg, _H_BAD_NETWORK, pulled=0)
        return
    # dev_gro_receive: "flush = skb_has_frag_list(skb)", and a GSO skb it does not let in
    # (gso_flushed); inet_gro_receive: tot_len must be the packet's
    skb = seg.skb
    gso = bool(skb.gso_size)  # skb_is_gso
    gso_flush = gso and state.gso_flushed(skb)
    count = skb.gso_segs if gso else 1  # NAPI_GRO_CB(skb)->count
    flush = gso_flush or bool(skb.frag_list) or not h.tot_len_ok
    ip_summed = skb.ip_summed  # as it goes on, when it is held or goes on unmerged
    if not flush and ip_summed == CHECKSUM_NONE:
        # tcp4/6_gro_receive: skb_gro_checksum_validate computes the sum of a CHECKSUM_NONE
        # skb: a bad one is "goto flush" (p stays held), a good one makes it UNNECESSARY
        # (__skb_incr_checksum_unnecessary). A GSO skb dev_gro_receive let in is summed too
        # (6.1.0-6.1.6: an SKB_GSO_DODGY one) [net/ipv4/tcp_offload.c:tcp4_gro_receive @ 6.1.0]
        if not h.tcp_csum_ok:
            # tcp4/6_gro_receive returns before tcp_gro_receive pulls the TCP header: only the
            # IP header was pulled (inet/ipv6_gro_receive)
            _normal(state, seg, _H_BAD_CHECKSUM, pulled=h.network_len)
            return
        ip_summed = CHECKSUM_UNNECESSARY
    payload = skb.len - h.network_len - h.tcp_len  # skb_gro_len()
    if gso and not flush and payload == 0:
        raise InputError(f"GRO of a GSO skb without TCP payload on {state.k.name} is not "
                         "modelled (virtio_net_hdr_to_skb sets gso_size only past it)")
    p = None
    for q in state.held:
        if q.same_flow(h):
            p = q
            break
    flags = h.flag_word
    if p is not None:
        mismatch = _mismatch(state, p, h)
        refused: Flush | None = None
        if flush:
            refused = (_F_GSO if gso_flush else _F_UNMERGEABLE if skb.frag_list
                       else _F_MISMATCH)
        elif mismatch:
            refused = _F_MISMATCH
        elif gso:
            # tcp_gro_receive: "if (unlikely(skb_is_gso(skb))) flush |= (mss !=
            # skb_shinfo(skb)->gso_size)", instead of the length test below
            # [net/ipv4/tcp_offload.c:tcp_gro_receive @ 6.1.0, 6.1.166]
            if skb.gso_size != p.mss:
                refused = _F_GSO_SIZE
        elif payload == 0:  # "(len - 1) >= mss" in unsigned: a pure ACK never merges
            refused = _F_UNMERGEABLE
        elif payload > p.mss:  # "flush |= (len - 1) >= mss"
            refused = _F_LONGER
        if refused is None and p.len + payload >= state.limit(h):  # skb_gro_receive: -E2BIG
            refused = _F_E2BIG
        if refused is None:
            before = p.truesize
            how = _merge(state, p, seg, payload)
            # skb_gro_receive: "NAPI_GRO_CB(p)->count += segs", segs = NAPI_GRO_CB(skb)->count
            # [net/core/gro.c:skb_gro_receive @ 6.1.0] (5.15: count++)
            p.count += count
            p.next_seq = (p.next_seq + payload) & 0xFFFFFFFF
            p.flag_word |= flags & (TCP_FLAG_FIN | TCP_FLAG_PSH)
            if state.record_steps:
                result = Result.MERGED if how is _FRAG_LIST else Result.MERGED_FREE
                state.steps.append(GroStep(seg.frame, result, how, payload,
                                           p.truesize - before, p.len, p.truesize,
                                           p.last_frags(), len(p.members)))
            # out_check_final: a segment shorter than mss (a GSO skb: whose len is not
            # count * gso_size), or URG/PSH/RST/SYN/FIN, ends it
            if gso and payload != count * skb.gso_size:
                state.complete(p, _F_GSO_SEGS)
            elif not gso and payload < p.mss:
                state.complete(p, _F_SHORT)
            elif flags & _ENDS:
                state.complete(p, _F_FLAGS)
            return
        state.complete(p, refused)
        after = _AFTER.get(refused, _H_AFTER_MISMATCH)
    else:
        after = _H_FIRST
    # not merged: out_check_final with mss 1 flushes on "len < mss" (no payload), a GSO skb
    # on "len != NAPI_GRO_CB(skb)->count * gso_size" (gso_segs 0 from virtio_net_hdr_to_skb:
    # always) [net/ipv4/tcp_offload.c:tcp_gro_receive @ 6.1.0], and on URG/PSH/RST/SYN/FIN; a
    # flushed skb goes on as GRO_NORMAL, any other is held
    if flush:
        _normal(state, seg, _H_GSO if gso_flush else _H_HAS_FRAG_LIST
                if skb.frag_list else _H_BAD_NETWORK)
    elif gso and payload != count * skb.gso_size:
        _normal(state, seg, _H_GSO_SEGS, ip_summed)
    elif payload == 0:
        _normal(state, seg, _H_NO_PAYLOAD, ip_summed)
    elif flags & _ENDS:
        _normal(state, seg, _H_FLAGS, ip_summed)
    else:
        if gso and count != 1:
            raise InputError(
                f"GRO holding a GSO skb that counts {count} segments (gso_segs) on "
                f"{state.k.name} is not modelled: the IP ID test of the skbs merged into it "
                "depends on NAPI_GRO_CB(p)->count and differs by version (6.1: is_atomic and "
                "flush_id; 6.12: gro_receive_network_flush), read only for count 1")
        _hold(state, seg, h, payload, after, ip_summed)


def _receive_udp(state: GroState, seg: Segment, h: TcpHeaders, flist: bool) -> None:
    """udp4/6_gro_receive → udp_gro_receive → udp_gro_receive_segment for a datagram that
    may merge (UdpGro.mode) [net/ipv4/udp_offload.c @ 6.18.7; the same steps @ 5.15.215,
    6.1.166, 6.12.15]."""
    skb = seg.skb
    if not h.network_ok:  # inet_gro_receive, before the IP header is pulled
        _normal(state, seg, How.BAD_NETWORK, pulled=0)
        return
    if skb.gso_size and not state.gso_flushed(skb):
        raise InputError(f"GRO of a UDP datagram in a TCP GSO skb on {state.k.name} is not "
                         "modelled: dev_gro_receive lets it in (skb_is_gso_tcp), and "
                         "udp_gro_receive was not read for it")
    flush = bool(skb.gso_size) or bool(skb.frag_list) or not h.tot_len_ok
    ip_summed = skb.ip_summed
    if not flush and ip_summed == CHECKSUM_NONE and h.udp_check:
        # skb_gro_checksum_validate_zero_check: a bad sum flushes, a good one is UNNECESSARY
        if not h.tcp_csum_ok:
            _normal(state, seg, How.BAD_CHECKSUM, pulled=h.network_len)
            return
        ip_summed = CHECKSUM_UNNECESSARY
    payload = skb.len - h.network_len - 8
    if not h.udp_check or h.udp_len <= 8 or h.udp_len != payload + 8:
        # "requires non zero csum", "padded or malicious packets": flushed before any p
        _normal(state, seg, How.UDP_UNMERGEABLE, ip_summed, pulled=h.network_len)
        return
    p = next((q for q in state.held if q.same_flow(h)), None)
    if p is not None:
        refused: Flush | None = None
        if flush or p.flist != flist:
            refused = (Flush.GSO if skb.gso_size else Flush.UNMERGEABLE)
        elif _network_mismatch(state, p, h):
            refused = Flush.MISMATCH
        elif h.udp_len > p.headers.udp_len:  # longer than the first: p completes
            refused = Flush.LONGER
        elif (p.len + skb.len >= GRO_MAX_SIZE if flist
              else p.len + payload >= min(state.limit(h), GRO_MAX_SIZE)):
            # skb_gro_receive_list: p->len + skb->len >= 65536; skb_gro_receive: the size
            # limit, and past GRO_LEGACY_MAX_SIZE only TCP
            refused = Flush.E2BIG
        if refused is None:
            before = p.truesize
            how = _merge_list(p, seg, payload) if flist else _merge(state, p, seg, payload)
            p.count += 1  # skb_gro_receive(_list): count += 1 (a UDP GSO skb never merges)
            result = Result.MERGED if how is How.FRAG_LIST else Result.MERGED_FREE
            if state.record_steps:
                state.steps.append(GroStep(seg.frame, result, how, payload,
                                           p.truesize - before, p.len, p.truesize,
                                           p.last_frags(), len(p.members)))
            if h.udp_len != p.headers.udp_len:  # a shorter one is merged and ends it
                state.complete(p, Flush.SHORT)
            elif len(p.frames) >= UDP_GRO_CNT_MAX:
                state.complete(p, Flush.MAX_COUNT)
            return
        state.complete(p, refused)
        if refused in (Flush.GSO, Flush.UNMERGEABLE):
            _normal(state, seg, How.GSO if skb.gso_size else How.HAS_FRAG_LIST if skb.frag_list
                    else How.BAD_NETWORK, ip_summed, pulled=h.network_len + 8)
            return
        after = {Flush.E2BIG: How.AFTER_E2BIG, Flush.LONGER: How.AFTER_LONGER}.get(
            refused, How.AFTER_MISMATCH)
    else:
        after = How.FIRST
    if flush:
        _normal(state, seg, How.GSO if skb.gso_size else How.HAS_FRAG_LIST if skb.frag_list
                else How.BAD_NETWORK, ip_summed, pulled=h.network_len + 8)
        return
    _hold(state, seg, h, payload, after, ip_summed)
    state.held[-1].flist = flist


def _merge_list(held: _Held, seg: Segment, payload: int) -> How:
    """skb_gro_receive_list(p, skb): chained whole on frag_list after skb_pull(offset), its
    truesize added (pskb_may_pull first: the headers must be linear)."""
    skb = seg.skb
    offset = skb.len - payload
    if skb.len - skb.data_len < offset:
        raise InputError("fraglist GRO of an skb whose headers are not all linear is not "
                         "modelled (pskb_may_pull)")
    held.frames.append(seg.frame)
    held.chain(FragListSkb(payload, skb.truesize, skb.frags))
    held.len += payload
    held.data_len += payload
    held.truesize += skb.truesize
    return How.FRAG_LIST


def _mismatch(state: GroState, p: _Held, h: TcpHeaders) -> bool:
    """tcp_gro_receive's flush terms for a segment of p's flow (and inet_gro_flush's)."""
    q = p.headers
    masked = TCP_FLAG_FIN | TCP_FLAG_PSH
    if not state.cwr_compared:  # before AccECN: a CWR difference alone does not flush
        masked |= TCP_FLAG_CWR
    if (h.flag_word & TCP_FLAG_CWR or (h.flag_word ^ p.flag_word) & ~masked
            or h.ack != q.ack or h.options != q.options or h.seq != p.next_seq):
        return True
    return _network_mismatch(state, p, h)


def _network_mismatch(state: GroState, p: _Held, h: TcpHeaders) -> bool:
    """The IP layer's flush terms for a segment of p's flow (inet_gro_flush /
    gro_receive_network_flush; before 6.10 NAPI_GRO_CB(p)->flush and flush_id, read the same
    way by tcp_gro_receive and udp_gro_receive_segment)."""
    q = p.headers
    if h.ttl != q.ttl or h.tos != q.tos or h.df != q.df:
        return True
    if h.ipv6:
        return False
    # the IP ID: incrementing by NAPI_GRO_CB(p)->count (the segments held; a GSO skb merged
    # counts its gso_segs), or fixed, decided at the second frame (count 1); fixed only with
    # DF before 21f7484220ac (6.18). A held GSO skb counting more than 1 is refused (_receive)
    offset = (h.ip_id - q.ip_id) & 0xFFFF
    if p.count == 1 and offset == 0 and (h.df or state.fixedid_without_df):
        p.fixed_id = True
    return offset != (0 if p.fixed_id else p.count)


def _normal(state: GroState, seg: Segment, how: How, ip_summed: int | None = None,
            pulled: int | None = None) -> None:
    """GRO_NORMAL: to the stack as it is, after dev_gro_receive's pull of the headers GRO
    parsed (``pulled`` bytes from the IP header; None: the IP and TCP headers), and with
    ``ip_summed`` when tcp_gro_receive validated its checksum."""
    skb = _pull_headers(state.k, seg, pulled)
    if ip_summed is not None and ip_summed != skb.ip_summed:
        fields: list[object] = list(skb)  # skb._replace(ip_summed=ip_summed)
        fields[_IP_SUMMED] = ip_summed
        skb = _RECORD(Skb, fields)
    if state.record_steps:
        state.steps.append(GroStep(seg.frame, Result.NORMAL, how, seg.payload, 0, skb.len,
                                   skb.truesize, skb.nr_frags, 0))
    state.delivered.append(_RECORD(Delivered, (skb, (seg.frame,), _F_NOT_HELD, 1)))


def _hold(state: GroState, seg: Segment, h: TcpHeaders, payload: int, how: How,
          ip_summed: int) -> None:
    """dev_gro_receive, GRO_HELD: gso_size = skb_gro_len(skb) (the flow's mss; a GSO skb
    keeps its own: "if (!skb_is_gso(skb))" [net/core/gro.c:dev_gro_receive @ 6.1.0]), the
    headers GRO parsed pulled into the linear area; a ninth held skb completes the oldest."""
    if len(state.held) >= MAX_GRO_SKBS:
        state.complete(state.held[0], _F_EVICTED)  # gro_flush_oldest
    given, offset = seg.skb, seg.offset
    gso = bool(given.gso_size)  # _pull_headers keeps gso_size
    mss = given.gso_size if gso else payload
    kept = state.pulled.get(id(given))
    if (kept is not None and kept[0] is given and kept[1] == offset
            and kept[2].gso_size == mss and kept[2].ip_summed == ip_summed):
        skb = kept[2]
    else:
        skb = _pull_headers(state.k, seg)._replace(gso_size=mss, ip_summed=ip_summed)
        if len(state.pulled) >= MOVED_KEPT:
            state.pulled.clear()
        state.pulled[id(given)] = (given, offset, skb)
    p = _Held(payload, seg.frame, h, skb, state.jiffies, skb.gso_segs if gso else 1)
    state.held.append(p)
    if state.record_steps:
        state.steps.append(GroStep(seg.frame, Result.HELD, how, payload, 0, skb.len,
                                   skb.truesize, skb.nr_frags, 0))


def _pull_headers(k: KernelProfile, seg: Segment, offset: int | None = None) -> Skb:
    """dev_gro_receive's ``pull:``: grow = skb_gro_offset - skb_headlen; gro_pull_from_frag0
    copies ``grow`` header bytes from frags[0] to the tail (frags[0] shrinks, and goes when
    empty). Only an skb with no linear bytes has frag0 (skb_gro_reset_offset); one with some
    linear bytes but not all the headers got them from skb_gro_header_slow → pskb_may_pull
    (tcp_gro_pull_header, before any merge or flush decision): the same bytes out of the
    frags, into the head's tailroom (a head too small, pskb_expand_head, is not modelled)."""
    skb = seg.skb
    offset = seg.offset if offset is None else offset
    grow = offset - skb.headlen
    if grow <= 0:
        return skb
    if skb.headlen:
        if skb.end - skb.tail < grow or skb.len < offset or skb.frag_list:
            raise InputError(
                f"GRO of an skb with {skb.headlen} linear bytes before {offset} bytes of "
                f"headers and {skb.end - skb.tail} bytes of tailroom is not modelled "
                "(pskb_may_pull reallocating the head)"
            )
        return pskb_may_pull(k, skb, offset, owned=False) or skb
    if skb.end - skb.tail < grow or not skb.frags or skb.frags[0].size < grow:
        raise InputError(
            f"GRO of this skb is not modelled: frag0 does not hold the {offset} bytes of "
            "headers, or the head has no room for them (skb_gro_header_slow's path)"
        )
    first = skb.frags[0]
    rest = skb.frags[1:]
    if first.size > grow:
        rest = (first._replace(offset=first.offset + grow, size=first.size - grow), *rest)
    return skb._replace(tail=skb.tail + grow, data_len=skb.data_len - grow,
                        nr_frags=len(rest), frags=rest)


class _Moved:
    """What skb_gro_receive's first way makes of one skb whose headers end ``trim`` bytes
    into frags[0]: the frags that move to p (the first trimmed) and the truesize they bring."""

    __slots__ = ("delta", "frags", "skb", "trim")

    def __init__(self, skb: Skb, trim: int, frags: tuple[Frag, ...], delta: int) -> None:
        self.skb = skb
        self.trim = trim
        self.frags = frags
        self.delta = delta


MOVED_KEPT: Final = 4096  # skbs whose moved frags a GroState keeps (a bound on memory)


def _merge(state: GroState, held: _Held, seg: Segment, payload: int) -> How:
    """skb_gro_receive(p, skb): the three ways a segment joins the held skb."""
    k = state.k
    skb = seg.skb
    offset, headlen = skb.len - payload, skb.len - skb.data_len
    room = state.max_skb_frags - held.last_frags()
    held.frames.append(seg.frame)
    if headlen <= offset and len(skb.frags) <= room:
        # the payload is all in frags: they move, the first trimmed by offset - headlen;
        # delta = skb->truesize - SKB_TRUESIZE(skb_end_offset(skb))
        trim = offset - headlen
        moved = state.last_moved  # a flow's segments mostly share one skb: the last one first
        if moved is None or moved.skb is not skb or moved.trim != trim:
            moved = state.moved.get(id(skb))
        if moved is None or moved.skb is not skb or moved.trim != trim:
            first = skb.frags[0]
            moved = _Moved(skb, trim, (_RECORD(Frag, (first.page, first.offset + trim,
                                                      first.size - trim, first.truesize)),
                                       *skb.frags[1:]),
                           skb.truesize - skb_truesize(k, skb.end))
            if len(state.moved) >= MOVED_KEPT:
                state.moved.clear()
            state.moved[id(skb)] = moved
        state.last_moved = moved
        _add(held, moved.frags, payload, moved.delta)
        return _FRAGS
    if headlen > offset and seg.head_frag and 1 + len(skb.frags) <= room:
        # the head's page becomes a frag from data + offset (its payload), then skb's frags;
        # delta = skb->truesize - SKB_DATA_ALIGN(sizeof(struct sk_buff)): only the struct stays
        delta = skb.truesize - state.sk_buff_aligned
        rest = 0
        for f in skb.frags:
            rest += f.truesize
        head = _RECORD(Frag, (seg.page, seg.page_offset + skb.data + offset, headlen - offset,
                              delta - rest))
        _add(held, (head, *skb.frags), payload, delta)
        return _HEAD_FRAG
    # merge: chained whole on frag_list after __skb_pull(offset) (eating into frags[0] when the
    # headers are not all linear); delta = skb->truesize
    frags = skb.frags
    if offset > headlen:
        eat = offset - headlen
        first = frags[0]  # first._replace(offset=offset + eat, size=size - eat)
        frags = (_RECORD(Frag, (first.page, first.offset + eat, first.size - eat,
                                first.truesize)), *frags[1:])
    held.chain(_RECORD(FragListSkb, (payload, skb.truesize, frags)))
    held.len += payload
    held.data_len += payload
    held.truesize += skb.truesize
    return _FRAG_LIST


def _add(held: _Held, frags: tuple[Frag, ...], payload: int, delta: int) -> None:
    """``done:`` p (and lp, the last frag_list member, when there is one) gain len, data_len
    and truesize; the frags go to lp."""
    # (one frag, a flow's segment mostly: an append, not a list's extend by a tuple, which
    # costs ~0.13k instructions more compiled)
    if held.members:  # lp gains them (put into its FragListSkb when p completes)
        held.lp_len += payload
        held.lp_truesize += delta
        if len(frags) == 1:
            held.lp_frags.append(frags[0])
        else:
            held.lp_frags.extend(frags)
    else:
        if len(frags) == 1:
            held.frags.append(frags[0])
        else:
            held.frags.extend(frags)
        held.nr_frags += len(frags)
    held.len += payload
    held.data_len += payload
    held.truesize += delta


def _complete(k: KernelProfile, held: _Held, flush: Flush) -> Delivered:
    """napi_gro_complete: NAPI_GRO_CB(skb)->count 1 (a lone skb, or on 6.1.0-6.1.6 one that
    merged GSO skbs counted as their gso_segs 0) leaves with gso_size 0 and nothing else done
    ("goto out": no inet_gro_complete, so the IP header keeps the first segment's length)
    [net/core/gro.c:napi_gro_complete @ 6.1.0]; an aggregate through inet/ipv6_gro_complete →
    tcp4/6_gro_complete → tcp_gro_complete: gso_type |= TCPV4/TCPV6 (+ FIXEDID for a fixed-ID
    flow, + TCP_ECN when its first segment has CWR), csum_start at the TCP header,
    csum_offset 16, CHECKSUM_PARTIAL, gso_segs = count."""
    count = held.count
    if count == 1:
        v = list(held.base) if len(held.frames) == 1 else held._merged()
        v[_GSO_SIZE] = 0
        return _RECORD(Delivered, (_RECORD(Skb, v), tuple(held.frames), flush, 1))
    h = held.headers
    if h.udp_len:
        return _complete_udp(held, held.skb(), flush, count)
    # "gso_type |=": a held GSO skb keeps its own bits (SKB_GSO_DODGY)
    own = held.base.gso_type
    gso_type = own | (SKB_GSO_TCPV6 if h.ipv6 else SKB_GSO_TCPV4)
    names = gso_type_names(gso_type) if own else _TCPV6_NAMES if h.ipv6 else _TCPV4_NAMES
    if held.fixed_id:
        gso_type |= SKB_GSO_TCP_FIXEDID_NEW if k.has(GRO_FIXEDID_BIT_30) else (
            SKB_GSO_TCP_FIXEDID_OLD)
        names += ("SKB_GSO_TCP_FIXEDID",)
    if h.flag_word & TCP_FLAG_CWR and not gso_type & SKB_GSO_TCP_ECN:
        gso_type |= SKB_GSO_TCP_ECN
        names += ("SKB_GSO_TCP_ECN",)
    # p with what the merges added (held._merged()) and what completing it sets, in one copy
    data, length = held.base.data, held.len
    tcp_header = data + h.network_len  # tcp_hdr(): where csum_start points
    if h.ipv6 and length - h.nhoff - 40 > 0xFFFF:
        # ipv6_gro_complete: a payload past IPV6_MAXPLEN gets the 8-byte hop-by-hop jumbo
        # header pushed in front of the TCP header (BIG TCP): data moves back 8 bytes
        data, length = data - 8, length + 8
    v = held._merged()
    v[_DATA] = data
    v[_LEN] = length
    v[_GSO_TYPE] = gso_type
    v[_GSO_TYPE_NAMES] = names
    v[_GSO_SEGS] = count
    v[_IP_SUMMED] = CHECKSUM_PARTIAL
    v[_CSUM_START] = tcp_header
    v[_CSUM_OFFSET] = TCP_CHECK_OFFSET
    return _RECORD(Delivered, (_RECORD(Skb, v), tuple(held.frames), flush, count))


def _complete_udp(held: _Held, skb: Skb, flush: Flush, count: int) -> Delivered:
    """udp4/6_gro_complete of an aggregate: fraglist: gso_type FRAGLIST | UDP_L4, gso_segs,
    __skb_incr_checksum_unnecessary (NONE becomes UNNECESSARY); else udp_gro_complete →
    udp_gro_complete_segment: CHECKSUM_PARTIAL at the UDP header (csum_offset 6), gso_segs,
    gso_type UDP_L4 [net/ipv4/udp_offload.c, net/ipv6/udp_offload.c @ 6.18.7]."""
    if held.flist:
        gso_type = SKB_GSO_FRAGLIST | SKB_GSO_UDP_L4
        return Delivered(skb._replace(gso_type=gso_type, gso_type_names=gso_type_names(gso_type),
                                      gso_segs=count, ip_summed=CHECKSUM_UNNECESSARY),
                         tuple(held.frames), flush, count)
    return Delivered(skb._replace(gso_type=SKB_GSO_UDP_L4,
                                  gso_type_names=gso_type_names(SKB_GSO_UDP_L4),
                                  gso_segs=count, ip_summed=CHECKSUM_PARTIAL,
                                  csum_start=skb.data + held.headers.network_len,
                                  csum_offset=UDP_CHECK_OFFSET),
                     tuple(held.frames), flush, count)
