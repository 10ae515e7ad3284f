"""The offload frames ``vnetrx lab virtio --offloads`` sends: real TCP/UDP frames over IPv4/IPv6
behind the virtio_net_hdr a host writes (NEEDS_CSUM, DATA_VALID, GSO), and headers the guest's
virtio_net_hdr_to_skb refuses (a drop counted in rx_frame_errors). Lengths are distinct: the
guest's events are matched to frames by length. Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass, replace

from vnetrx.packet import GSO_TYPES, build_frame, headers_of, offload_header
from vnetrx.paths.virtio_net_hdr import NEEDS_CSUM, VnetHdr


@dataclass(frozen=True)
class OffloadFrame:
    length: int
    l4: str
    tcp_options: int
    hdr: VnetHdr
    what: str  # a few words for the report

    def frame(self) -> bytes:
        return build_frame(self.length, self.l4, self.tcp_options)

    def hdr_bytes(self) -> bytes:
        return self.hdr.to_bytes(10)


def _built(length: int, l4: str, csum: str | None, gso: str | None, what: str,
           tcp_options: int = 0) -> OffloadFrame:
    gso_spec = None
    if gso is not None:
        name, size = gso.split(":")
        gso_spec = (GSO_TYPES[name], int(size))
    return OffloadFrame(length, l4, tcp_options,
                        offload_header(headers_of(l4, tcp_options), csum, gso_spec), what)


def offload_frames() -> tuple[OffloadFrame, ...]:
    """Accepted headers first (every kind of frame a host sends), then refused ones."""
    good = _built(3000, "tcp4", "partial", "tcpv4:1448", "")
    frames = [
        _built(1000, "tcp4", "partial", None, "TCPv4, NEEDS_CSUM"),
        _built(1001, "tcp4", "valid", None, "TCPv4, DATA_VALID"),
        _built(1002, "udp4", "partial", None, "UDPv4, NEEDS_CSUM"),
        _built(1003, "tcp6", "partial", None, "TCPv6, NEEDS_CSUM"),
        _built(1004, "udp6", "valid", None, "UDPv6, DATA_VALID"),
        _built(1514, "tcp4", "partial", None, "TCPv4 1514, NEEDS_CSUM"),
        _built(1400, "tcp4", "partial", "tcpv4:1448", "TCPv4 GSO, payload below gso_size"),
        _built(9014, "tcp4", "partial", "tcpv4:1448", "TCPv4 GSO (TSO)"),
        _built(9015, "tcp6", "partial", "tcpv6:1428", "TCPv6 GSO"),
        _built(9016, "tcp4", "partial", "tcpv4:1448", "TCPv4 GSO, timestamps", 12),
        _built(3000, "tcp4", "valid", "tcpv4:1448", "TCPv4 GSO, DATA_VALID, no NEEDS_CSUM"),
        _built(4000, "udp4", "partial", "udp:1472", "UFO"),
        _built(2950, "tcp4", "partial", "tcpv4:1448", "TCPv4 GSO, remainder 54"),
        _built(20000, "tcp4", "partial", "tcpv4:1448", "TCPv4 GSO 20000"),
        _built(65000, "tcp4", "partial", "tcpv4:1448", "TCPv4 GSO 64 KiB"),
        replace(_built(100, "tcp4", "partial", "tcpv4:1448", "TCP gso_size 1"),
                hdr=good.hdr._replace(gso_size=1)),
        _built(5000, "udp4", "partial", "udp_l4:1472", "USO (GSO_UDP_L4)"),
        OffloadFrame(3001, "tcp4", 0, good.hdr._replace(gso_type=7), "unknown gso_type 7"),
        OffloadFrame(3002, "tcp4", 0, good.hdr._replace(gso_size=0), "gso_size 0"),
        OffloadFrame(3003, "tcp4", 0, good.hdr._replace(csum_offset=6), "TCP GSO, csum_offset 6"),
        OffloadFrame(3004, "tcp4", 0, good.hdr._replace(gso_size=0xFFFF), "GSO_BY_FRAGS"),
        OffloadFrame(3005, "tcp4", 0, good.hdr._replace(csum_start=2990), "csum past the end"),
        OffloadFrame(3006, "tcp4", 0, VnetHdr(NEEDS_CSUM, 0, 0, 0, 10, 6),
                     "csum_start 10 (inside the IP header)"),
        OffloadFrame(3007, "tcp4", 0, good.hdr._replace(gso_type=0x80), "the ECN bit alone"),
    ]
    return tuple(frames)
