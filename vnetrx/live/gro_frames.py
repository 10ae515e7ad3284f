"""The bursts the GRO oracle writes into a tap: TCP segments over IPv4 or IPv6, built byte for
byte from a small JSON-able description (a ``burst``), so that a test rebuilds exactly the bytes
the data file says were written. Pure: no I/O.

A burst description (every key optional)::

    {"family": 4, "segments": 8, "payload": 1448,      # or a list, one length per segment
     "flows": 1,                  # segments go round-robin over this many flows (sport 40000+f)
     "psh": [k, ...],             # PSH on these segments (0-based)
     "fin": [...], "urg": [...], "cwr": [...], "syn": [...], "rst": [...],
     "seq_gap": {"at": k, "bytes": n},   # segment k's seq skips n bytes
     "timestamps": true, "tsval_change": [k, ...],   # TSval + 1 from segment k on
     "ipid": "inc" | "fixed",  "df": true,  "ttl": 64, "ttl_change": [k, ...],
     "window_change": [k, ...], "ack_change": [k, ...],
     "bad_tcp_csum": [k, ...], "bad_ip_csum": [k, ...],
     "tos_change": [k, ...],      # IPv4 TOS / IPv6 traffic class + 4 on segment k
     "df_change": [k, ...],       # DF flipped on segment k (IPv4)
     "flowlabel_change": [k, ...],  # IPv6 flow label + 1
     "ip_options": [k, ...],      # IPv4 header with 4 bytes of options (NOP x 3, EOL)
     "more_fragments": [k, ...],  # IPv4 MF set (a first fragment)
     "udp": [k, ...],             # segment k is a UDP datagram (same addresses, ports)
     "l4": "udp",                 # every segment a UDP datagram (a UDP flow: IDs increment)
     "other": [k, ...],           # segment k is a 60-byte non-IP frame (EtherType 0x88B5)
     "vlan": tci,                 # an 802.1Q tag (TPID 0x8100) with this TCI on every frame
     "vlan_change": [k, ...],     # TCI + 1 on segment k
     "untagged": [k, ...],        # segment k without the tag
     "exthdrs": [["hbh" | "dest" | "routing", size], ...],  # IPv6 extension headers, in
                                  # order (size a multiple of 8: PadN options / type 253)
     "exthdr_change": [k, ...],   # the first extension header's last byte + 1 on segment k
     "fragment": [k, ...],        # an IPv6 fragment header (offset 0, M set) on segment k
     "vnet": null | "data_valid" | "needs_csum" | "none",   # a 10-byte virtio_net_hdr
     "gso": {"at": k, "segments": n},    # segment k is one GSO frame of n x payload (vnet hdr)
     "split": [o1, o2, ...]}              # writev boundaries (IFF_NAPI_FRAGS)

Addresses are documentation prefixes (192.0.2.1 → 192.0.2.2, 2001:db8::1 → 2001:db8::2) and
the destination MAC is foreign (02:00:00:00:00:01): the namespace's stack drops what leaves GRO
as PACKET_OTHERHOST, nothing is answered or routed.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass
from typing import Any

DST_MAC = bytes.fromhex("020000000001")
SRC_MAC = bytes.fromhex("020000000002")
SADDR4, DADDR4 = bytes([192, 0, 2, 1]), bytes([192, 0, 2, 2])
SADDR6 = bytes.fromhex("20010db8000000000000000000000001")
DADDR6 = bytes.fromhex("20010db8000000000000000000000002")
SPORT, DPORT = 40000, 5001
SEQ0, ACK0, WINDOW = 1_000_000, 1, 502
TSVAL0, TSECR0 = 0x1000, 0x2000
FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80
# include/uapi/linux/virtio_net.h
VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_F_DATA_VALID = 1, 2
VIRTIO_NET_HDR_GSO_TCPV4, VIRTIO_NET_HDR_GSO_TCPV6 = 1, 4
VNET_HDR_LEN = 10

KEYS = {"family", "segments", "payload", "flows", "psh", "fin", "urg", "cwr", "syn", "rst",
        "seq_gap", "timestamps", "tsval_change", "ipid", "df", "ttl", "ttl_change",
        "window_change", "ack_change", "bad_tcp_csum", "bad_ip_csum", "vnet", "gso", "split",
        "tos_change", "df_change", "flowlabel_change", "ip_options", "more_fragments", "udp",
        "other", "vlan", "vlan_change", "untagged", "exthdrs", "exthdr_change", "fragment", "l4"}
# IPv6 next header values (include/uapi/linux/in6.h)
EXTHDR_TYPES = {"hbh": 0, "routing": 43, "dest": 60}
NEXTHDR_FRAGMENT = 44


@dataclass(frozen=True)
class Write:
    """One write(2)/writev(2): the Ethernet frame, the vnet header before it (or b""), and the
    iovec boundaries (offsets into header + frame)."""

    frame: bytes
    hdr: bytes
    split: tuple[int, ...]
    flow: int
    seq: int
    payload: int

    def iovecs(self) -> list[bytes]:
        data = self.hdr + self.frame
        cuts = (0, *self.split, len(data))
        return [data[a:b] for a, b in itertools.pairwise(cuts)]


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``."""
    if len(data) % 2:
        data += b"\0"
    total = int(sum(struct.unpack(f"!{len(data) // 2}H", data)))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _pseudo_sum(family: int, length: int, proto: int = 6) -> bytes:
    if family == 4:
        return SADDR4 + DADDR4 + struct.pack("!BBH", 0, proto, length)
    return SADDR6 + DADDR6 + struct.pack("!IxxxB", length, proto)


def _fold(data: bytes) -> int:
    """The one's complement sum (not inverted)."""
    return ~checksum(data) & 0xFFFF


def tcp_segment(family: int, *, sport: int, seq: int, ack: int, flags: int, window: int,
                options: bytes, payload: bytes, ipid: int, df: bool, ttl: int,
                bad_tcp: bool = False, bad_ip: bool = False, partial: bool = False,
                tos: int = 0, flowlabel: int = 0, ip_options: bool = False,
                more_fragments: bool = False, udp: bool = False, vlan: int | None = None,
                exthdrs: tuple[tuple[str, int], ...] = (), exthdr_change: bool = False,
                fragment: bool = False) -> bytes:
    """An Ethernet frame with one TCP segment (``udp``: a UDP datagram with the payload);
    ``partial``: the TCP checksum field holds the pseudo-header sum only (what a sender with
    NEEDS_CSUM leaves); ``vlan``: an 802.1Q tag with this TCI; ``exthdrs`` (IPv6): extension
    headers before it, ``fragment`` a fragment header after them."""
    proto = 17 if udp else 6
    if udp:
        l4 = struct.pack("!HHHH", sport, DPORT, 8 + len(payload), 0) + payload
        csum_at = 6
    else:
        doff = (20 + len(options)) // 4
        l4 = struct.pack("!HHIIBBHHH", sport, DPORT, seq, ack, doff << 4, flags, window, 0, 0)
        l4 += options + payload
        csum_at = 16
    pseudo = _pseudo_sum(family, len(l4), proto)
    if partial:
        csum = _fold(pseudo)
    else:
        csum = checksum(pseudo + l4)
        if bad_tcp:
            csum ^= 0x5555
    l4 = l4[:csum_at] + struct.pack("!H", csum) + l4[csum_at + 2:]
    if family == 4:
        opts = b"\x01\x01\x01\x00" if ip_options else b""
        frag = (0x4000 if df else 0) | (0x2000 if more_fragments else 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x40 | (5 + len(opts) // 4), tos,
                         20 + len(opts) + len(l4), ipid & 0xFFFF, frag, ttl, proto, 0,
                         SADDR4, DADDR4) + opts
        ip_csum = checksum(ip) ^ (0x1111 if bad_ip else 0)
        ip = ip[:10] + struct.pack("!H", ip_csum) + ip[12:]
        ethertype = 0x0800
    else:
        chain = [(EXTHDR_TYPES[kind], size) for kind, size in exthdrs]
        if fragment:
            chain.append((NEXTHDR_FRAGMENT, 8))
        ext = b""
        for i, (kind, size) in enumerate(chain):
            nexthdr = chain[i + 1][0] if i + 1 < len(chain) else proto
            if kind == NEXTHDR_FRAGMENT:  # offset 0, M set: a first fragment
                body = struct.pack("!BBHI", nexthdr, 0, 1, 0x1234)
            elif kind == 43:  # a routing header of type 253 (RFC 4727), segments left 0
                body = struct.pack("!BBBB", nexthdr, size // 8 - 1, 253, 0).ljust(size, b"\0")
            else:  # hop-by-hop / destination options: one PadN option filling it
                body = struct.pack("!BBBB", nexthdr, size // 8 - 1, 1, size - 4).ljust(size,
                                                                                       b"\0")
            if i == 0 and exthdr_change:
                body = body[:-1] + bytes([(body[-1] + 1) & 0xFF])
            ext += body
        first = chain[0][0] if chain else proto
        ip = struct.pack("!IHBB16s16s", 6 << 28 | tos << 20 | flowlabel, len(ext) + len(l4),
                         first, ttl, SADDR6, DADDR6) + ext
        ethertype = 0x86DD
    l2 = struct.pack("!H", ethertype)
    if vlan is not None:
        l2 = struct.pack("!HHH", 0x8100, vlan, ethertype)
    return DST_MAC + SRC_MAC + l2 + ip + l4


def vnet_header(flags: int = 0, gso_type: int = 0, hdr_len: int = 0, gso_size: int = 0,
                csum_start: int = 0, csum_offset: int = 0) -> bytes:
    """struct virtio_net_hdr, little endian (a tap's default)."""
    return struct.pack("<BBHHHH", flags, gso_type, hdr_len, gso_size, csum_start, csum_offset)


def _at(spec: dict[str, Any], key: str) -> set[int]:
    return set(spec.get(key, ()))


def _payload(length: int, seq: int) -> bytes:
    """Deterministic payload bytes (a function of the sequence number)."""
    return bytes((seq + i) & 0xFF for i in range(length))


def _vlan(spec: dict[str, Any], k: int) -> int | None:
    """Segment k's TCI (None: untagged)."""
    if spec.get("vlan") is None or k in _at(spec, "untagged"):
        return None
    return int(spec["vlan"]) + (1 if k in _at(spec, "vlan_change") else 0)


def build(spec: dict[str, Any]) -> list[Write]:
    """The writes of a burst description (ValueError on an unknown key)."""
    unknown = set(spec) - KEYS
    if unknown:
        raise ValueError(f"unknown burst keys {sorted(unknown)}")
    family = spec.get("family", 4)
    count = spec.get("segments", 1)
    lengths = spec.get("payload", 1448)
    lengths = [lengths] * count if isinstance(lengths, int) else list(lengths)
    if len(lengths) != count:
        raise ValueError("payload list length differs from segments")
    flows = spec.get("flows", 1)
    seq = [SEQ0] * flows
    ipid = [0x100 * (f + 1) for f in range(flows)]
    gso = spec.get("gso")
    gap = spec.get("seq_gap")
    stamps = spec.get("timestamps", True)
    vnet = spec.get("vnet")
    split = tuple(spec.get("split", ()))
    tsval_from = min(_at(spec, "tsval_change"), default=None)
    writes = []
    for k in range(count):
        f = k % flows
        if gap and gap["at"] == k:
            seq[f] += gap["bytes"]
        flags = ACK
        for key, bit in (("psh", PSH), ("fin", FIN), ("urg", URG), ("cwr", CWR), ("syn", SYN),
                         ("rst", RST)):
            if k in _at(spec, key):
                flags |= bit
        tsval = TSVAL0 + (1 if tsval_from is not None and k >= tsval_from else 0)
        options = (b"\x01\x01\x08\x0a" + struct.pack("!II", tsval, TSECR0)) if stamps else b""
        n_seg = gso["segments"] if gso and gso["at"] == k else 1
        length = lengths[k] * n_seg
        data = _payload(length, seq[f])
        partial = vnet == "needs_csum" or n_seg > 1
        if k in _at(spec, "other"):
            frame = (DST_MAC + SRC_MAC + struct.pack("!H", 0x88B5)).ljust(60, b"\0")
            hdr = vnet_header() if vnet is not None or gso else b""
            writes.append(Write(frame, hdr, split, f, seq[f], 0))
            continue
        frame = tcp_segment(
            family, sport=SPORT + f, seq=seq[f],
            ack=ACK0 + (1 if k in _at(spec, "ack_change") else 0), flags=flags,
            window=WINDOW + (1 if k in _at(spec, "window_change") else 0), options=options,
            payload=data, ipid=ipid[f],
            df=spec.get("df", True) != (k in _at(spec, "df_change")),
            ttl=spec.get("ttl", 64) - (1 if k in _at(spec, "ttl_change") else 0),
            bad_tcp=k in _at(spec, "bad_tcp_csum"), bad_ip=k in _at(spec, "bad_ip_csum"),
            partial=partial, tos=4 if k in _at(spec, "tos_change") else 0,
            flowlabel=1 if k in _at(spec, "flowlabel_change") else 0,
            ip_options=k in _at(spec, "ip_options"),
            more_fragments=k in _at(spec, "more_fragments"),
            udp=k in _at(spec, "udp") or spec.get("l4") == "udp",
            vlan=_vlan(spec, k), exthdrs=tuple((kind, size) for kind, size in
                                               spec.get("exthdrs", ())),
            exthdr_change=k in _at(spec, "exthdr_change"), fragment=k in _at(spec, "fragment"))
        # the bytes from the Ethernet header's end to the TCP header (IP options not counted)
        l3 = ((20 if family == 4 else 40) + (4 if _vlan(spec, k) is not None else 0)
              + sum(size for _, size in spec.get("exthdrs", ()))
              + (8 if k in _at(spec, "fragment") else 0))
        hdr = b""
        if vnet is not None or gso:
            flag = {"data_valid": VIRTIO_NET_HDR_F_DATA_VALID,
                    "needs_csum": VIRTIO_NET_HDR_F_NEEDS_CSUM}.get(vnet or "", 0)
            if n_seg > 1:
                gso_type = VIRTIO_NET_HDR_GSO_TCPV4 if family == 4 else VIRTIO_NET_HDR_GSO_TCPV6
                hdr = vnet_header(VIRTIO_NET_HDR_F_NEEDS_CSUM, gso_type,
                                  14 + l3 + 20 + len(options), lengths[k], 14 + l3, 16)
            elif flag == VIRTIO_NET_HDR_F_NEEDS_CSUM:
                hdr = vnet_header(flag, 0, 0, 0, 14 + l3, 16)
            else:
                hdr = vnet_header(flag)
        writes.append(Write(frame, hdr, split, f, seq[f], length))
        if k in _at(spec, "udp"):  # the TCP flow goes on as if it were not there
            continue
        seq[f] = (seq[f] + length) & 0xFFFFFFFF
        if spec.get("ipid", "inc") == "inc":
            ipid[f] += n_seg
    return writes
