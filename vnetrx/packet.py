"""Frames with real headers, and the virtio_net_hdr a sender would put in front of them.

``build_frame`` lays out Ethernet + IPv4 (20 B) / IPv6 (40 B) + TCP (20 B + options) / UDP (8 B)
and payload, cut to the frame length; ``read_frame`` takes a frame's bytes from a file (raw, or the
first packet of a pcap/pcapng capture). ``offload_header`` builds the header the kernel's senders
write for such a frame (``--csum``, ``--gso``): NEEDS_CSUM with csum_start at the transport header
and csum_offset at its checksum field (what virtio_net_hdr_from_skb writes for CHECKSUM_PARTIAL),
DATA_VALID, and a GSO type and size with hdr_len covering the headers. Pure: no click, no rich.
"""

from __future__ import annotations

import struct
from typing import Final

from vnetrx.errors import InputError
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.paths.virtio_net_hdr import (
    DATA_VALID,
    GSO_ECN,
    GSO_NONE,
    GSO_TCPV4,
    GSO_TCPV6,
    GSO_UDP,
    GSO_UDP_L4,
    GSO_UDP_TUNNEL_IPV4,
    GSO_UDP_TUNNEL_IPV6,
    IPHDR_LEN,
    IPV6HDR_LEN,
    NEEDS_CSUM,
    TCP_CSUM_OFFSET,
    TCPHDR_LEN,
    UDP_CSUM_OFFSET,
    UDP_TUNNEL_CSUM,
    UDPHDR_LEN,
    VnetHdr,
)
from vnetrx.records import NamedTuple

L4_CHOICES: Final = ("tcp4", "tcp6", "udp4", "udp6")
CSUM_CHOICES: Final = ("partial", "valid", "none")
GSO_TYPES: Final = {"tcpv4": GSO_TCPV4, "tcpv6": GSO_TCPV6, "udp": GSO_UDP, "udp_l4": GSO_UDP_L4}
MAX_TCP_OPTIONS: Final = 40  # a TCP header is at most 60 bytes (data offset 15)
ETH_P_IP: Final = 0x0800
ETH_P_IPV6: Final = 0x86DD
# Locally administered MACs and documentation addresses (RFC 5737 192.0.2.0/24, RFC 3849
# 2001:db8::/32): a built frame is addressed to nobody (vnetrx.live writes them into its own tap,
# where the stack drops them as PACKET_OTHERHOST after the tracepoint)
_MAC_DST: Final = bytes.fromhex("020000000001")
_MAC_SRC: Final = bytes.fromhex("020000000002")
_IP4_SRC: Final = bytes([192, 0, 2, 1])
_IP4_DST: Final = bytes([192, 0, 2, 2])
_IP6_SRC: Final = bytes.fromhex("20010db8000000000000000000000001")
_IP6_DST: Final = bytes.fromhex("20010db8000000000000000000000002")


class Headers(NamedTuple):
    """Where a frame's headers are: what csum_start and hdr_len are computed from."""

    l4: str | None  # "tcp4" | "tcp6" | "udp4" | "udp6"; None: not an IP frame vnetrx knows
    transport: int  # offset of the TCP/UDP header from the frame's first byte
    transport_len: int  # the TCP header with its options, or the UDP header
    network: int = ETH_HLEN  # offset of the IP header (after the Ethernet header and any tags)

    @property
    def tcp(self) -> bool:
        return self.l4 in ("tcp4", "tcp6")

    @property
    def ipv6(self) -> bool:
        return self.l4 in ("tcp6", "udp6")

    @property
    def end(self) -> int:
        """Bytes of Ethernet + IP + TCP/UDP headers."""
        return self.transport + self.transport_len


def headers_of(l4: str, tcp_options: int = 0) -> Headers:
    """The header layout ``build_frame`` gives ``l4``."""
    if l4 not in L4_CHOICES:
        raise InputError(f"--l4 {l4!r} is not one of {', '.join(L4_CHOICES)}")
    if not 0 <= tcp_options <= MAX_TCP_OPTIONS or tcp_options % 4:
        raise InputError(
            f"--tcp-options {tcp_options} out of range (valid: 0..{MAX_TCP_OPTIONS}, "
            "a multiple of 4)"
        )
    if tcp_options and not l4.startswith("tcp"):
        raise InputError("--tcp-options needs a TCP frame (--l4 tcp4 or tcp6)")
    ip_len = IPV6HDR_LEN if l4.endswith("6") else IPHDR_LEN
    l4_len = TCPHDR_LEN + tcp_options if l4.startswith("tcp") else UDPHDR_LEN
    return Headers(l4, ETH_HLEN + ip_len, l4_len)


def _headers_text(h: Headers) -> str:
    ip = "IPv6 40" if h.ipv6 else "IPv4 20"
    l4 = (f"TCP {h.transport_len}" if h.tcp else "UDP 8")
    return f"Ethernet {ETH_HLEN} + {ip} + {l4}"


def check_fits(length: int, l4: str, tcp_options: int = 0, max_len: int = 0xFFFF) -> Headers:
    """The headers of the ``l4`` frame asked for (``--l4``, or the one ``--gso``/``--csum
    partial`` imply), refusing a frame length too short to hold them: such a frame carries no
    whole TCP/UDP header (``build_frame`` cuts it) and so is not the frame asked for. (The
    frames vnetrx writes itself, e.g. verify's offload cases, call ``build_frame``.)"""
    h = headers_of(l4, tcp_options)
    if length < h.end:
        options = f" with {tcp_options} option bytes" if tcp_options else ""
        raise InputError(
            f"--len {length} is too short for a {l4} frame{options}: its headers take "
            f"{h.end} bytes ({_headers_text(h)}) (valid: {h.end}..{max_len})",
            hint="leave out --l4, --gso and --csum partial for a frame of any length, of no "
            "particular protocol")
    return h


def build_frame(length: int, l4: str, tcp_options: int = 0) -> bytes:
    """Ethernet + IP + TCP/UDP + zero payload, ``length`` bytes in all (cut when shorter than the
    headers). Lengths and the IP version are right; checksums are 0 (the offload's to fill)."""
    h = headers_of(l4, tcp_options)
    ip_payload = max(length - h.transport, 0)
    if h.ipv6:
        ip = struct.pack("!IHBB16s16s", 6 << 28, min(ip_payload, 0xFFFF), 6 if h.tcp else 17, 64,
                         _IP6_SRC, _IP6_DST)
    else:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, min(h.transport - ETH_HLEN + ip_payload,
                                                        0xFFFF), 0, 0x4000, 64,
                         6 if h.tcp else 17, 0, _IP4_SRC, _IP4_DST)
    if h.tcp:
        l4_hdr = struct.pack("!HHIIBBHHH", 40000, 5201, 1, 1, (h.transport_len // 4) << 4, 0x10,
                             65535, 0, 0) + bytes(h.transport_len - TCPHDR_LEN)
    else:
        l4_hdr = struct.pack("!HHHH", 40000, 5201, min(max(length - h.transport, 0), 0xFFFF), 0)
    eth = _MAC_DST + _MAC_SRC + struct.pack("!H", ETH_P_IPV6 if h.ipv6 else ETH_P_IP)
    frame = eth + ip + l4_hdr
    return (frame + bytes(max(length - len(frame), 0)))[:length]


def find_headers(frame: bytes) -> Headers:
    """The transport header of a frame read from a file (Ethernet, 802.1Q/ad tags, IPv4 with
    options, IPv6 with extension headers: decode's walk)."""
    from vnetrx.decode.frame import parse_frame

    layers, _ = parse_frame(frame)
    for layer in layers:
        if layer.name in ("tcp", "udp"):
            ipv6 = any(x.name == "ipv6" for x in layers)
            l4 = layer.name + ("6" if ipv6 else "4")
            return Headers(l4, layer.offset, layer.length)
    return Headers(None, 0, 0)


# the VLAN tags transport_key steps over (Final: compiled, constants, not a dict lookup by name
# at every use: transport_key runs per frame of an --offload replay)
ETH_P_8021Q: Final = 0x8100
ETH_P_8021AD: Final = 0x88A8
# transport_key's l4 codes (0: no transport), and the Headers each key stands for
_L4_CODES: Final = (None, "tcp4", "tcp6", "udp4", "udp6")
_NO_TRANSPORT: Final = Headers(None, 0, 0)


def transport_key(frame: bytes) -> int:
    """``transport_of``'s answer as one int, read with byte indexing alone (a replay's
    ``--offload`` asks it of every frame; ``headers_of_key`` turns it into the ``Headers``):
    0 for no transport, else the l4 code (1 tcp4, 2 tcp6, 3 udp4, 4 udp6) in bits 0-2, the
    network header's offset in bits 3-7 (14, 18 or 22), the transport header's length in bits
    8-13 (20-60) and its offset from bit 14 on."""
    size = len(frame)
    if size < 14:
        return 0
    at = 12
    ethertype = frame[12] << 8 | frame[13]
    for _n in range(2):  # up to two 802.1Q / 802.1ad tags (`_n`: compiled, `_` is boxed)
        if (ethertype != ETH_P_8021Q and ethertype != ETH_P_8021AD) or size < at + 6:
            break
        at += 4
        ethertype = frame[at] << 8 | frame[at + 1]
    at += 2
    if ethertype == ETH_P_IP and size >= at + 20:
        l3 = (frame[at] & 0x0F) * 4
        proto = frame[at + 9]
        # the flags' MF bit and the fragment offset (frag_off & 0x3FFF): a fragment
        if l3 < 20 or frame[at + 6] & 0x3F or frame[at + 7]:
            return 0
        code = 1
    elif ethertype == ETH_P_IPV6 and size >= at + 40:
        proto, l3, code = frame[at + 6], IPV6HDR_LEN, 2
    else:
        return 0
    start = at + l3
    if proto == 6 and size >= start + 13:
        tcp_len = (frame[start + 12] >> 4) * 4
        return start << 14 | (tcp_len if tcp_len > TCPHDR_LEN else TCPHDR_LEN) << 8 | at << 3 | code
    if proto == 17:
        return start << 14 | UDPHDR_LEN << 8 | at << 3 | (code + 2)
    return 0


def headers_of_key(key: int) -> Headers:
    """The ``Headers`` a ``transport_key`` stands for."""
    if not key:
        return _NO_TRANSPORT
    return Headers(_L4_CODES[key & 7], key >> 14, key >> 8 & 0x3F, key >> 3 & 0x1F)


def transport_of(frame: bytes) -> Headers:
    """Where a captured frame's TCP/UDP header is, read fast (replays call it per frame):
    Ethernet, up to two 802.1Q/802.1ad tags, IPv4 with options or IPv6 (a TCP or UDP next
    header directly; extension headers and IPv4 fragments are not followed: no transport)."""
    return headers_of_key(transport_key(frame))


OFFLOAD_CHOICES: Final = ("none", "auto", "auto-valid")


def capture_header(h: Headers, length: int, mtu: int, mss: int | None, mode: str
                   ) -> VnetHdr | None:
    """The virtio_net_hdr a host writes for a TCP/UDP frame it captured on its tap (``--offload
    auto``): NEEDS_CSUM at the transport header (``auto``: what a host's own stack sends; with
    ``auto-valid`` DATA_VALID, what traffic the host received and GRO merged arrives with), and
    for a frame longer than the MTU plus its Ethernet header a GSO type (TCPV4/TCPV6 or
    UDP_L4) with gso_size ``mss`` or what the MTU leaves after the IP and L4 headers. None for
    frames that are not TCP/UDP."""
    if h.l4 is None:
        return None
    gso = None
    if length - h.network > mtu:  # more than one packet's worth: a GSO frame
        gso_type = (GSO_TCPV6 if h.ipv6 else GSO_TCPV4) if h.tcp else GSO_UDP_L4
        gso = (gso_type, mss or max(1, mtu - (h.transport - h.network) - h.transport_len))
    if mode == "auto-valid":
        # virtio_net_hdr_from_skb of a CHECKSUM_UNNECESSARY skb: DATA_VALID, the GSO fields as
        # the skb has them (what a host forwards after its NIC's GRO)
        if gso is None:
            return VnetHdr(DATA_VALID, GSO_NONE, 0, 0, 0, 0)
        return VnetHdr(DATA_VALID, gso[0], h.end, gso[1], 0, 0)
    return offload_header(h, "partial", gso)


# CaptureDeriver's bound on the headers it keeps (a bound on memory: a capture's flows share a
# handful; frames whose headers all differ are each derived again past it)
HEADERS_KEPT: Final = 4096
# the bytes of a frame a deriver is given (when nothing else reads them): what transport_key
# reads at most (Ethernet's 14, two VLAN tags' 8, a 60-byte IPv4 header, TCP's data offset
# 12 bytes in: 95 bytes; tests/test_packet.py checks the longest). No more: a replay copies them
# out of each captured frame, and a longer copy touches more of the capture's memory.
TRANSPORT_HEAD: Final = 96
# a frame read for its length and transport_key alone, as one int: key << KEY_SHIFT | length
# (capture.read_keyed; a wire length is a pcap record's 32 bits)
KEY_SHIFT: Final = 32
_LENGTH_MASK: Final = (1 << KEY_SHIFT) - 1


def _over(key: int, length: int, mtu: int) -> int:
    """What ``capture_header`` reads of a TCP/UDP frame, as one int: its ``transport_key``,
    then whether it is longer than the MTU past its network header (the header's one use of
    the length: GSO or not)."""
    return key << 1 | (length - (key >> 3 & 0x1F) > mtu)


class CaptureDeriver:
    """``capture_header`` for each frame of a replayed capture: called as ``derive(length,
    captured bytes)``, or ``pairs`` of a list of frames read as ``transport_key << KEY_SHIFT |
    length``. The header reads only where the frame's headers are (``transport_key``) and
    whether the frame is longer than the MTU, so each such pair is made once and shared by the
    frames that have it: a frame whose headers were seen costs its few byte reads and one
    dict lookup."""

    def __init__(self, mode: str, mtu: int, mss: int | None) -> None:
        self.mode = mode
        self.mtu = mtu
        self.mss = mss
        self.made: dict[int, VnetHdr] = {}

    def __call__(self, length: int, data: bytes) -> VnetHdr | None:
        key = transport_key(data)
        if not key:  # no TCP/UDP header: no virtio_net_hdr, whatever the length
            return None
        return self.of_key(key, length)

    def of_key(self, key: int, length: int) -> VnetHdr:
        """The header of a TCP/UDP frame (``key``: its nonzero ``transport_key``)."""
        return self._made(_over(key, length, self.mtu), length)

    def _made(self, over: int, length: int) -> VnetHdr:
        """The header of frames with this key and side of the MTU (``over``), made once."""
        hdr = self.made.get(over)
        if hdr is None:
            if len(self.made) >= HEADERS_KEPT:
                self.made.clear()
            made_hdr = capture_header(headers_of_key(over >> 1), length, self.mtu, self.mss,
                                      self.mode)
            assert made_hdr is not None  # a TCP/UDP frame always gets one
            hdr = self.made[over] = made_hdr
        return hdr

    def pairs(self, keyed: list[int]) -> list[tuple[int, VnetHdr | None]]:
        """Each frame's (length, header) of frames read as ``key << KEY_SHIFT | length``
        (a frame like the one before it, the commonest case, takes that one's header)."""
        out: list[tuple[int, VnetHdr | None]] = []
        mtu = self.mtu
        last_over = 0
        last: VnetHdr | None = None
        for item in keyed:
            length = item & _LENGTH_MASK
            key = item >> KEY_SHIFT
            if not key:
                out.append((length, None))
                continue
            over = _over(key, length, mtu)
            if over != last_over or last is None:
                last, last_over = self._made(over, length), over
            out.append((length, last))
        return out


def read_frame(path: str) -> bytes:
    """A frame's bytes: the first packet of a pcap/pcapng capture, or the file as it is. A
    regular file only (a FIFO, /dev/zero: refused before any read), of which at most a frame's
    65535 bytes (+1, to refuse more) or a capture's first record are read."""
    from vnetrx.files import open_input
    from vnetrx.replay.capture import is_capture, read_capture

    stream = open_input(path, "--frame")
    try:
        if is_capture(stream.peek(4)[:4]):  # type: ignore[attr-defined]
            first = next(read_capture(stream, path), None)
            if first is None:
                raise InputError(f"{path}: the capture holds no packets")
            if len(first.data) < first.length:
                raise InputError(
                    f"{path}: the capture holds {len(first.data)} of the first frame's "
                    f"{first.length} bytes (its snaplen cut it); --frame needs all of them"
                )
            return bytes(first.data)  # (copied by the reader: bytes, returned as they are)
        data = stream.read(MAX_FRAME + 1)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        stream.close()
    if not data:
        raise InputError(f"{path} is empty")
    if len(data) > MAX_FRAME:
        raise InputError(f"{path} holds more than {MAX_FRAME} bytes: a frame is at most "
                         f"{MAX_FRAME}")
    return data


MAX_FRAME: Final = 65535


def parse_gso(text: str) -> tuple[int, int]:
    """``tcpv4:1448``, ``tcpv6:1428+ecn``, ``udp:1472``, ``udp_l4:1472`` → (gso_type, gso_size)."""
    spec = text.strip().lower()
    ecn = spec.endswith("+ecn")
    spec = spec.removesuffix("+ecn")
    name, _, size_text = spec.partition(":")
    # ASCII digits only ("²".isdigit() is true), and no more than 5 of them before int()
    if name not in GSO_TYPES or not (size_text.isascii() and size_text.isdigit()):
        raise InputError(
            f"--gso {text!r}: expected TYPE:SIZE[+ecn] with TYPE one of "
            f"{', '.join(GSO_TYPES)} (e.g. tcpv4:1448)"
        )
    size = int(size_text) if len(size_text) <= 5 else 1 << 20
    if not 1 <= size <= 0xFFFF:
        shown = size_text if len(size_text) <= 12 else f"{size_text[:12]}... ({len(size_text)} digits)"
        raise InputError(f"--gso size {shown} out of range (valid: 1..65535)")
    return GSO_TYPES[name] | (GSO_ECN if ecn else 0), size


def offload_header(
    headers: Headers | None, csum: str | None, gso: tuple[int, int] | None
) -> VnetHdr:
    """The header a sender writes: NEEDS_CSUM → csum_start at the transport header, csum_offset
    at its check field (16 TCP, 6 UDP); DATA_VALID for ``valid``; a GSO type and size with hdr_len
    = the headers' length. GSO without ``csum`` means NEEDS_CSUM, as every GSO sender does.
    ``valid`` and ``none`` without GSO need no headers (None: the frame is only a length)."""
    if csum is None:
        csum = "partial" if gso is not None else "none"
    if csum not in CSUM_CHOICES:
        raise InputError(f"--csum {csum!r} is not one of {', '.join(CSUM_CHOICES)}")
    flags, start, offset = 0, 0, 0
    if csum == "partial":
        if headers is None or headers.l4 is None:
            raise InputError(
                "--csum partial needs a TCP or UDP frame (--l4, or a --frame with one): "
                "csum_start is the transport header's offset"
            )
        flags = NEEDS_CSUM
        start = headers.transport
        offset = TCP_CSUM_OFFSET if headers.tcp else UDP_CSUM_OFFSET
    elif csum == "valid":
        flags = DATA_VALID
    gso_type, gso_size = gso if gso is not None else (GSO_NONE, 0)
    if gso is not None and headers is None:
        raise InputError("--gso needs the frame's headers (--l4 or --frame): hdr_len is their length")
    hdr_len = headers.end if gso is not None and headers is not None else 0
    return VnetHdr(flags, gso_type, hdr_len, gso_size, start, offset)


def gso_l4(gso_type: int) -> str:
    """The --l4 a GSO type implies when none is given."""
    base = gso_type & ~GSO_ECN
    return {GSO_TCPV4: "tcp4", GSO_TCPV6: "tcp6"}.get(base, "udp4")


def ones_complement_sum(data: bytes, start: int = 0) -> int:
    """The 16-bit one's complement sum of ``data`` (RFC 1071), folded; ``start`` adds a sum."""
    if len(data) % 2:
        data += b"\0"
    total: int = start + sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def tcp_flow_frames(template: bytes, headers: Headers, count: int) -> list[bytes]:
    """``count`` segments of one TCP flow shaped like ``template`` (a TCP frame whose headers
    are ``headers``): sequence numbers following each other, IPv4 IDs incrementing (DF as the
    template has it), IP and TCP checksums right. What a Linux sender's bulk flow looks like."""
    if not headers.tcp:
        raise InputError("a TCP flow needs a TCP frame")
    net, tcp = headers.network, headers.transport
    payload = len(template) - headers.end
    out = []
    seq0, ip_id0 = struct.unpack_from("!I", template, tcp + 4)[0], 0
    if not headers.ipv6:
        ip_id0 = struct.unpack_from("!H", template, net + 4)[0]
    for i in range(count):
        frame = bytearray(template)
        struct.pack_into("!I", frame, tcp + 4, (seq0 + i * payload) & 0xFFFFFFFF)
        struct.pack_into("!H", frame, tcp + 16, 0)
        if headers.ipv6:
            pseudo = bytes(frame[net + 8:net + 40]) + struct.pack("!IxxxB", len(frame) - tcp, 6)
        else:
            struct.pack_into("!H", frame, net + 4, (ip_id0 + i) & 0xFFFF)
            struct.pack_into("!H", frame, net + 10, 0)
            struct.pack_into("!H", frame, net + 10,
                             0xFFFF - ones_complement_sum(bytes(frame[net:tcp])))
            pseudo = bytes(frame[net + 12:net + 20]) + struct.pack("!BBH", 0, 6, len(frame) - tcp)
        check = 0xFFFF - ones_complement_sum(bytes(frame[tcp:]), ones_complement_sum(pseudo))
        struct.pack_into("!H", frame, tcp + 16, check)
        out.append(bytes(frame))
    return out


# --- UDP tunnels (--tunnel): VXLAN over UDP, the 24-byte virtio_net_hdr_v1_hash_tunnel -------
TUNNEL_CHOICES: Final = ("ipv4", "ipv6")  # the outer IP version
VXLAN_PORT: Final = 4789  # IANA's VXLAN port (the outer UDP destination)
VXLAN_HLEN: Final = 8


class Tunnel(NamedTuple):
    """A frame wrapped in VXLAN over UDP: where the outer headers end."""

    outer_ipv6: bool
    csum: bool  # VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM: the outer UDP checksum is offloaded too

    @property
    def outer_th(self) -> int:
        """outer_th_offset: the outer UDP header, after Ethernet and the outer IP header."""
        return ETH_HLEN + (IPV6HDR_LEN if self.outer_ipv6 else IPHDR_LEN)

    @property
    def inner_mac(self) -> int:
        """The inner Ethernet header: after the outer UDP and VXLAN headers."""
        return self.outer_th + UDPHDR_LEN + VXLAN_HLEN

    @property
    def inner_nh(self) -> int:
        """inner_nh_offset: the inner IP header."""
        return self.inner_mac + ETH_HLEN


def parse_tunnel(text: str) -> Tunnel:
    """``ipv4``, ``ipv6``, ``ipv4+csum`` → the outer IP version and the tunnel csum flag."""
    spec = text.strip().lower()
    csum = spec.endswith("+csum")
    name = spec.removesuffix("+csum")
    if name not in TUNNEL_CHOICES:
        raise InputError(f"--tunnel {text!r}: expected ipv4 or ipv6, optionally +csum "
                         "(e.g. ipv4+csum)")
    return Tunnel(name == "ipv6", csum)


def tunnel_headers(t: Tunnel, inner: Headers) -> Headers:
    """The inner frame's headers as offsets in the encapsulated frame."""
    return inner._replace(transport=t.inner_mac + inner.transport,
                          network=t.inner_mac + inner.network)


def build_tunnel_frame(length: int, t: Tunnel, l4: str, tcp_options: int = 0) -> bytes:
    """Outer Ethernet + IPv4/IPv6 + UDP (dport 4789) + VXLAN (flags I, VNI 1) around
    ``build_frame(l4)``, ``length`` bytes in all; lengths right, checksums 0."""
    inner = build_frame(max(length - t.inner_mac, 0), l4, tcp_options)
    udp_len = min(UDPHDR_LEN + VXLAN_HLEN + len(inner), 0xFFFF)
    if t.outer_ipv6:
        ip = struct.pack("!IHBB16s16s", 6 << 28, udp_len, 17, 64, _IP6_SRC, _IP6_DST)
    else:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, min(IPHDR_LEN + udp_len, 0xFFFF), 0, 0x4000,
                         64, 17, 0, _IP4_SRC, _IP4_DST)
    udp = struct.pack("!HHHH", 40001, VXLAN_PORT, udp_len, 0)
    vxlan = struct.pack("!II", 0x08000000, 1 << 8)
    eth = _MAC_DST + _MAC_SRC + struct.pack("!H", ETH_P_IPV6 if t.outer_ipv6 else ETH_P_IP)
    return (eth + ip + udp + vxlan + inner)[:length]


def tunnel_header(h: VnetHdr, t: Tunnel) -> VnetHdr:
    """The 24-byte header a sender writes for a tunnelled frame (virtio_net_hdr_tnl_from_skb's
    fields): gso_type |= UDP_TUNNEL_IPV4/IPV6, flags |= UDP_TUNNEL_CSUM with +csum, and the
    outer transport / inner network header offsets."""
    return h._replace(
        gso_type=h.gso_type | (GSO_UDP_TUNNEL_IPV6 if t.outer_ipv6 else GSO_UDP_TUNNEL_IPV4),
        flags=h.flags | (UDP_TUNNEL_CSUM if t.csum else 0),
        outer_th_offset=t.outer_th, inner_nh_offset=t.inner_nh)
