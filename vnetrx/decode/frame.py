"""The frame after a virtio_net_hdr, for ``vnetrx decode``: Ethernet (+ VLAN tags), IPv4/IPv6
(+ extension headers), TCP/UDP, walked header by header into layers of fields with their
offsets (what csum_start and csum_offset are then named against). Stdlib only; nothing here
raises on odd bytes."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

ETHERTYPES = {0x0800: "IPv4", 0x86DD: "IPv6", 0x0806: "ARP", 0x8100: "802.1Q", 0x88A8: "802.1ad"}
IP_PROTOS = {6: "TCP", 17: "UDP", 1: "ICMP", 58: "ICMPv6"}
IPV6_EXT = {0: "hop-by-hop", 43: "routing", 60: "destination options", 44: "fragment"}


@dataclass(frozen=True)
class FrameField:
    name: str  # "udp.check"
    offset: int  # from the frame's first byte
    size: int
    value: int | str


@dataclass(frozen=True)
class Layer:
    name: str  # ethernet, vlan, ipv4, ipv6, tcp, udp, payload
    offset: int
    length: int
    summary: str
    fields: tuple[FrameField, ...]


def _mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def _ip4(b: bytes) -> str:
    return ".".join(str(x) for x in b)


def _ip6(b: bytes) -> str:
    groups = [f"{int.from_bytes(b[i : i + 2], 'big'):x}" for i in range(0, 16, 2)]
    return ":".join(groups)


@dataclass
class _Walk:
    """One walk over a frame: the layers found so far and the notes on where it stopped."""

    frame: bytes
    layers: list[Layer] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def fits(self, what: str, at: int, need: int) -> bool:
        """Whether ``need`` header bytes are there at ``at``; if not, a note says so."""
        n = len(self.frame)
        if n < at + need:
            self.notes.append(
                f"frame ends inside the {what} header ({n - at} of {need} bytes at {at})"
            )
            return False
        return True

    def done(self) -> tuple[tuple[Layer, ...], tuple[str, ...]]:
        return tuple(self.layers), tuple(self.notes)


def parse_frame(frame: bytes) -> tuple[tuple[Layer, ...], tuple[str, ...]]:
    """Ethernet (+ VLAN tags), IPv4/IPv6 (+ extension headers), TCP/UDP: fields with offsets.
    A header cut short ends the walk with a note; nothing here raises on odd bytes."""
    if not frame:
        return (), ()
    walk = _Walk(frame)
    link = _ethernet(walk)
    if link is None:
        return walk.done()
    at, ethertype = link
    network: tuple[int, int] | None
    if ethertype == 0x0800:
        network = _ipv4(walk, at)
    elif ethertype == 0x86DD:
        network = _ipv6(walk, at)
    else:
        _payload(walk, at, f"{len(frame) - at} bytes of EtherType {ethertype:#06x}")
        return walk.done()
    if network is None:
        return walk.done()
    proto, at = network
    end: int | None = at
    if proto == 6:
        end = _tcp(walk, at)
    elif proto == 17:
        end = _udp(walk, at)
    if end is not None:
        _payload(walk, end, f"{len(frame) - end} bytes")
    return walk.done()


def _payload(walk: _Walk, at: int, summary: str) -> None:
    """Whatever follows the last decoded header, when anything does."""
    n = len(walk.frame)
    if n > at:
        walk.layers.append(Layer("payload", at, n - at, summary, ()))


def _ethernet(walk: _Walk) -> tuple[int, int] | None:
    """The Ethernet header and any VLAN tags: (offset after them, the inner EtherType)."""
    frame = walk.frame
    if not walk.fits("Ethernet", 0, 14):
        return None
    ethertype = struct.unpack_from("!H", frame, 12)[0]
    walk.layers.append(
        Layer(
            "ethernet",
            0,
            14,
            f"{_mac(frame[6:12])} → {_mac(frame[0:6])}, type {ethertype:#06x} "
            f"({ETHERTYPES.get(ethertype, 'other')})",
            (
                FrameField("eth.dst", 0, 6, _mac(frame[0:6])),
                FrameField("eth.src", 6, 6, _mac(frame[6:12])),
                FrameField("eth.type", 12, 2, ethertype),
            ),
        )
    )
    at = 14
    while ethertype in (0x8100, 0x88A8):
        if not walk.fits("VLAN", at, 4):
            return None
        tci, ethertype = struct.unpack_from("!HH", frame, at)
        walk.layers.append(
            Layer(
                "vlan",
                at,
                4,
                f"VLAN {tci & 0xFFF} (pcp {tci >> 13}), type "
                f"{ethertype:#06x} ({ETHERTYPES.get(ethertype, 'other')})",
                (FrameField("vlan.tci", at, 2, tci), FrameField("vlan.type", at + 2, 2, ethertype)),
            )
        )
        at += 4
    return at, ethertype


def _ipv4(walk: _Walk, at: int) -> tuple[int, int] | None:
    """The IPv4 header (with options): (protocol, offset of the transport header), or None when
    no transport header follows (malformed, a later fragment, or cut short)."""
    frame, notes = walk.frame, walk.notes
    if not walk.fits("IPv4", at, 20):
        return None
    vihl, _tos, total, _ident, frag, ttl, proto, check = struct.unpack_from("!BBHHHBBH", frame, at)
    ihl = (vihl & 0xF) * 4
    fields = (
        FrameField("ipv4.version_ihl", at, 1, vihl),
        FrameField("ipv4.tot_len", at + 2, 2, total),
        FrameField("ipv4.frag_off", at + 6, 2, frag),
        FrameField("ipv4.ttl", at + 8, 1, ttl),
        FrameField("ipv4.protocol", at + 9, 1, proto),
        FrameField("ipv4.check", at + 10, 2, check),
        FrameField("ipv4.saddr", at + 12, 4, _ip4(frame[at + 12 : at + 16])),
        FrameField("ipv4.daddr", at + 16, 4, _ip4(frame[at + 16 : at + 20])),
    )
    walk.layers.append(
        Layer(
            "ipv4",
            at,
            max(ihl, 20),
            f"{_ip4(frame[at + 12 : at + 16])} → {_ip4(frame[at + 16 : at + 20])}, "
            f"proto {proto} ({IP_PROTOS.get(proto, 'other')}), tot_len {total}, "
            f"ihl {vihl & 0xF} ({ihl} bytes)",
            fields,
        )
    )
    if vihl >> 4 != 4 or ihl < 20:
        notes.append(f"IPv4 header at {at} is malformed (version {vihl >> 4}, ihl "
                     f"{vihl & 0xF}: {ihl} bytes)")
        return None
    if frag & 0x1FFF:
        notes.append("IPv4 fragment with a non-zero offset: no transport header")
        return None
    if not walk.fits("IPv4 options of the", at, ihl):
        return None
    return proto, at + ihl


def _ipv6(walk: _Walk, at: int) -> tuple[int, int] | None:
    """The IPv6 header and its extension headers: (the last next-header value, offset of the
    transport header), or None when no transport header follows."""
    frame = walk.frame
    if not walk.fits("IPv6", at, 40):
        return None
    plen, proto, hops = struct.unpack_from("!HBB", frame, at + 4)
    src, dst = _ip6(frame[at + 8 : at + 24]), _ip6(frame[at + 24 : at + 40])
    walk.layers.append(
        Layer(
            "ipv6",
            at,
            40,
            f"{src} → {dst}, next header {proto} "
            f"({IP_PROTOS.get(proto, IPV6_EXT.get(proto, 'other'))}), "
            f"payload_len {plen}",
            (
                FrameField("ipv6.payload_len", at + 4, 2, plen),
                FrameField("ipv6.nexthdr", at + 6, 1, proto),
                FrameField("ipv6.hop_limit", at + 7, 1, hops),
                FrameField("ipv6.saddr", at + 8, 16, src),
                FrameField("ipv6.daddr", at + 24, 16, dst),
            ),
        )
    )
    return _ipv6_extensions(walk, proto, at + 40)


def _ipv6_extensions(walk: _Walk, proto: int, at: int) -> tuple[int, int] | None:
    """Hop-by-hop, routing, destination options and fragment headers, in chain order."""
    frame = walk.frame
    while proto in IPV6_EXT:
        if not walk.fits(f"IPv6 {IPV6_EXT[proto]}", at, 8):
            return None
        nxt, ext_len = frame[at], frame[at + 1]
        size = 8 if proto == 44 else (ext_len + 1) * 8
        walk.layers.append(
            Layer(
                "ipv6-ext",
                at,
                size,
                f"{IPV6_EXT[proto]} header, next {nxt}",
                (FrameField("ipv6ext.nexthdr", at, 1, nxt),),
            )
        )
        if proto == 44 and struct.unpack_from("!H", frame, at + 2)[0] >> 3:
            walk.notes.append("IPv6 fragment with a non-zero offset: no transport header")
            return None
        proto, at = nxt, at + size
    return proto, at


def _tcp(walk: _Walk, at: int) -> int | None:
    """The TCP header: the offset after it (data offset, at least 20), None if cut short."""
    frame = walk.frame
    if not walk.fits("TCP", at, 20):
        return None
    sport, dport, seq, ack, doff_flags, window, check = struct.unpack_from("!HHIIHHH", frame, at)
    doff: int = (doff_flags >> 12) * 4
    flag_bits = "".join(c for i, c in enumerate("FSRPAUEC") if doff_flags & (1 << i))
    walk.layers.append(
        Layer(
            "tcp",
            at,
            max(doff, 20),
            f"port {sport} → {dport}, seq {seq}, flags [{flag_bits}], doff {doff_flags >> 12} "
            f"({doff} bytes)",
            (
                FrameField("tcp.source", at, 2, sport),
                FrameField("tcp.dest", at + 2, 2, dport),
                FrameField("tcp.seq", at + 4, 4, seq),
                FrameField("tcp.ack_seq", at + 8, 4, ack),
                FrameField("tcp.doff_flags", at + 12, 2, doff_flags),
                FrameField("tcp.window", at + 14, 2, window),
                FrameField("tcp.check", at + 16, 2, check),
                FrameField("tcp.urg_ptr", at + 18, 2, struct.unpack_from("!H", frame, at + 18)[0]),
            ),
        )
    )
    return at + max(doff, 20)


def _udp(walk: _Walk, at: int) -> int | None:
    """The UDP header: the offset after it, None if cut short."""
    if not walk.fits("UDP", at, 8):
        return None
    sport, dport, ulen, check = struct.unpack_from("!HHHH", walk.frame, at)
    walk.layers.append(
        Layer(
            "udp",
            at,
            8,
            f"port {sport} → {dport}, len {ulen}",
            (
                FrameField("udp.source", at, 2, sport),
                FrameField("udp.dest", at + 2, 2, dport),
                FrameField("udp.len", at + 4, 2, ulen),
                FrameField("udp.check", at + 6, 2, check),
            ),
        )
    )
    return at + 8
