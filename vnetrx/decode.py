"""``vnetrx decode``: a virtio_net_hdr (10, 12, 20 or 24 bytes), optionally followed by a frame,
decoded field by field and validated the way a tap write is (paths/vnet_hdr.py). Stdlib only.

Schema ledger:
  vnetrx.decode/1  first version: kernel, input, header, frame, csum, validation, notes.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from functools import cache
from typing import Any

from vnetrx.codec import kernel_to_dict
from vnetrx.errors import InputError
from vnetrx.kernel.changes import V1_HASH_SPLIT_HASH_VALUE, VNET_HDR_UDP_TUNNEL
from vnetrx.kernel.profile import KernelProfile
from vnetrx.layouts.virtio_net import (
    HDR_LENS,
    VIRTIO_NET_HDR_F,
    VIRTIO_NET_HDR_GSO,
    virtio_net_hdr_mrg_rxbuf,
    virtio_net_hdr_v1_hash,
    virtio_net_hdr_v1_hash_tunnel,
)
from vnetrx.layouts.virtio_net import virtio_net_hdr as virtio_net_hdr_layout
from vnetrx.paths.tun import MAX_FRAME_LEN, tun_rx_pad
from vnetrx.paths.vnet_hdr import GSO_ECN, NEEDS_CSUM, Verdict, VnetHdr, validate

DECODE_SCHEMA = "vnetrx.decode/1"
MAX_INPUT = max(HDR_LENS) + MAX_FRAME_LEN
HASH_REPORT = {
    0: "NONE",
    1: "IPv4",
    2: "TCPv4",
    3: "UDPv4",
    4: "IPv6",
    5: "TCPv6",
    6: "UDPv6",
    7: "IPv6_EX",
    8: "TCPv6_EX",
    9: "UDPv6_EX",
}  # include/uapi/linux/virtio_net.h VIRTIO_NET_HASH_REPORT_*
GSO_TUNNEL = {0x20: "UDP_TUNNEL_IPV4", 0x40: "UDP_TUNNEL_IPV6"}
ETHERTYPES = {0x0800: "IPv4", 0x86DD: "IPv6", 0x0806: "ARP", 0x8100: "802.1Q", 0x88A8: "802.1ad"}
IP_PROTOS = {6: "TCP", 17: "UDP", 1: "ICMP", 58: "ICMPv6"}
IPV6_EXT = {0: "hop-by-hop", 43: "routing", 60: "destination options", 44: "fragment"}


@dataclass(frozen=True)
class HeaderField:
    name: str  # dotted member path, e.g. "hdr.csum_start"
    offset: int
    size: int
    value: int
    meaning: str


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


@dataclass(frozen=True)
class CsumPlace:
    start: int
    offset: int
    start_in: str  # "the udp header (its first byte)"
    field: str | None  # "udp.check" when the 2 bytes are exactly a known field
    field_at: int
    explanation: str


@dataclass(frozen=True)
class Decoded:
    kernel: KernelProfile
    hdr_len: int
    struct: str
    raw_header: bytes
    fields: tuple[HeaderField, ...]
    hdr: VnetHdr
    flag_names: tuple[str, ...]
    flags_unknown: int
    gso_name: str
    frame: bytes | None
    frame_len: int | None  # the frame length validated (captured bytes, or --len)
    layers: tuple[Layer, ...]
    csum: CsumPlace | None
    verdict: Verdict | None
    notes: tuple[str, ...]


def parse_hex(text: str) -> bytes:
    """Hex text as people paste it: spaces, newlines, ':' '-' ',' separators, '0x' prefixes and
    strace's '\\x' escapes are all accepted."""
    cleaned = re.sub(r"0x|\\x|[\s:,\-]", "", text.strip(), flags=re.IGNORECASE)
    if not cleaned:
        raise InputError("no bytes given (pass hex digits, --file F or - for stdin)")
    bad = re.search(r"[^0-9a-fA-F]", cleaned)
    if bad:
        raise InputError(f"{bad.group()!r} is not a hex digit (give bytes as hex, e.g. 0100…)")
    if len(cleaned) % 2:
        raise InputError(f"odd number of hex digits ({len(cleaned)}): the last byte is incomplete")
    return bytes.fromhex(cleaned)


def flag_names(flags: int) -> tuple[tuple[str, ...], int]:
    names = tuple(name for bit, name in sorted(VIRTIO_NET_HDR_F.items()) if flags & bit)
    known = sum(VIRTIO_NET_HDR_F)
    return names, flags & ~known & 0xFF


def gso_name(gso_type: int) -> str:
    base = gso_type & ~GSO_ECN & ~0x60 & 0xFF
    parts = [VIRTIO_NET_HDR_GSO.get(base, f"unknown({base})")]
    parts += [name for bit, name in GSO_TUNNEL.items() if gso_type & bit]
    if gso_type & GSO_ECN:
        parts.append("ECN")
    return " | ".join(parts)


@cache
def _leaves(layout: Any) -> tuple[Any, ...]:
    return tuple(layout.leaves())


def _layout(k: KernelProfile, hdr_len: int) -> Any:
    if hdr_len == 10:
        return virtio_net_hdr_layout()
    if hdr_len == 12:
        return virtio_net_hdr_mrg_rxbuf()
    if hdr_len == 20:
        return virtio_net_hdr_v1_hash(k.has(V1_HASH_SPLIT_HASH_VALUE))
    return virtio_net_hdr_v1_hash_tunnel()


def _flatten(parsed: dict[str, Any], prefix: str = "") -> dict[str, int]:
    out: dict[str, int] = {}
    for key, value in parsed.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = int(value)
    return out


def decode(
    k: KernelProfile, data: bytes, hdr_len: int = 10, frame_len: int | None = None
) -> Decoded:
    """Decode ``data`` = header + optional frame; validate when the frame length is known."""
    if hdr_len not in HDR_LENS:
        raise InputError(
            f"header length {hdr_len} unknown (valid: {', '.join(map(str, HDR_LENS))})"
        )
    if len(data) < hdr_len:
        raise InputError(
            f"{len(data)} byte(s) given, a {hdr_len}-byte virtio_net_hdr needs {hdr_len} "
            "(truncated input)"
        )
    if len(data) > MAX_INPUT:
        raise InputError(f"{len(data)} bytes given; at most {hdr_len} + {MAX_FRAME_LEN} decode")
    layout = _layout(k, hdr_len)
    raw, frame_bytes = data[:hdr_len], data[hdr_len:]
    frame = frame_bytes or None
    if frame_len is not None:
        if not 0 <= frame_len <= MAX_FRAME_LEN:
            raise InputError(f"frame length {frame_len} out of range (valid: 0..{MAX_FRAME_LEN})")
        if frame_len < len(frame_bytes):
            raise InputError(
                f"--len {frame_len} is shorter than the {len(frame_bytes)} frame bytes given "
                "(--len gives the written length when only a prefix was captured)"
            )
    elif frame is not None:
        frame_len = len(frame_bytes)
    values = _flatten(layout.parse(raw))
    base = {name.rsplit(".", 1)[-1]: values[name] for name in values}
    hdr = VnetHdr(
        base["flags"],
        base["gso_type"],
        base["hdr_len"],
        base["gso_size"],
        base["csum_start"],
        base["csum_offset"],
    )
    names, unknown = flag_names(hdr.flags)
    layers, frame_notes = parse_frame(frame or b"")
    csum = csum_place(hdr, layers, frame_len) if hdr.flags & NEEDS_CSUM else None
    notes = list(frame_notes)
    verdict = None
    if frame_len is None:
        notes.append("no frame bytes and no --len: the frame-dependent checks were not run")
    else:
        verdict = validate(k, hdr, frame_len, headroom=tun_rx_pad(k))
    if frame is not None and frame_len is not None and frame_len > len(frame):
        notes.append(f"{len(frame)} of {frame_len} frame bytes given: the rest is assumed")
    if hdr_len > 10:
        notes.append(
            f"a tap write with vnet_hdr_sz {hdr_len} reads "
            + (
                "24 header bytes (UDP tunnel fields)"
                if hdr_len == 24 and k.has(VNET_HDR_UDP_TUNNEL)
                else "only the first 10 bytes (struct virtio_net_hdr)"
            )
            + f" and skips the rest (drivers/net/tun.c:tun_get_user @ {k.name})"
        )
    notes.append(
        "multi-byte fields read little-endian (VIRTIO_F_VERSION_1, or legacy on x86 and "
        "arm64; a tap with TUNSETVNETBE would read them big-endian)"
    )
    fields = tuple(
        HeaderField(
            f.name, f.offset, f.size, values[f.name], _meaning(f.name, values[f.name], hdr, csum)
        )
        for f in _leaves(layout)
    )
    return Decoded(
        k,
        hdr_len,
        layout.name,
        bytes(raw),
        fields,
        hdr,
        names,
        unknown,
        gso_name(hdr.gso_type),
        frame,
        frame_len,
        layers,
        csum,
        verdict,
        tuple(notes),
    )


def _meaning(name: str, value: int, hdr: VnetHdr, csum: CsumPlace | None) -> str:
    leaf = name.rsplit(".", 1)[-1]
    if leaf == "flags":
        names, unknown = flag_names(value)
        text = " | ".join(f"VIRTIO_NET_HDR_F_{n}" for n in names) or "none"
        return text + (f" + unknown bits {unknown:#04x}" if unknown else "")
    if leaf == "gso_type":
        return f"VIRTIO_NET_HDR_GSO_{gso_name(value).replace(' | ', ' | VIRTIO_NET_HDR_GSO_')}"
    if leaf == "hdr_len":
        return "bytes of Ethernet + IP + L4 headers (tun's linear part); 0 = not given"
    if leaf == "gso_size":
        return "no segmentation" if hdr.gso_type == 0 else f"segment payload (MSS) {value}"
    if leaf == "csum_start":
        if not hdr.flags & NEEDS_CSUM:
            return "unused (no NEEDS_CSUM)"
        return csum.start_in if csum else f"frame byte {value}"
    if leaf == "csum_offset":
        if not hdr.flags & NEEDS_CSUM:
            return "unused (no NEEDS_CSUM)"
        return csum.explanation if csum else f"checksum at frame byte {hdr.csum_start + value}"
    if leaf == "num_buffers":
        return "merged rx buffers (set by the device on receive; a tap write ignores it)"
    if leaf in ("hash_value", "hash_value_lo", "hash_value_hi"):
        return "RSS hash (receive only)"
    if leaf == "hash_report":
        return f"VIRTIO_NET_HASH_REPORT_{HASH_REPORT.get(value, f'unknown({value})')}"
    if leaf == "outer_th_offset":
        return "outer transport header offset (UDP tunnel GSO)"
    if leaf == "inner_nh_offset":
        return "inner network header offset (UDP tunnel GSO)"
    return ""


def _mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def _ip4(b: bytes) -> str:
    return ".".join(str(x) for x in b)


def _ip6(b: bytes) -> str:
    groups = [f"{int.from_bytes(b[i : i + 2], 'big'):x}" for i in range(0, 16, 2)]
    return ":".join(groups)


def parse_frame(frame: bytes) -> tuple[tuple[Layer, ...], tuple[str, ...]]:
    """Ethernet (+ VLAN tags), IPv4/IPv6 (+ extension headers), TCP/UDP: fields with offsets.
    A header cut short ends the walk with a note; nothing here raises on odd bytes."""
    layers: list[Layer] = []
    notes: list[str] = []
    if not frame:
        return (), ()
    n = len(frame)

    def short(what: str, at: int, need: int) -> None:
        notes.append(f"frame ends inside the {what} header ({n - at} of {need} bytes at {at})")

    if n < 14:
        short("Ethernet", 0, 14)
        return tuple(layers), tuple(notes)
    ethertype = struct.unpack_from("!H", frame, 12)[0]
    layers.append(
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
        if n < at + 4:
            short("VLAN", at, 4)
            return tuple(layers), tuple(notes)
        tci, ethertype = struct.unpack_from("!HH", frame, at)
        layers.append(
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
    proto: int | None = None
    if ethertype == 0x0800:
        if n < at + 20:
            short("IPv4", at, 20)
            return tuple(layers), tuple(notes)
        vihl, _tos, total, _ident, frag, ttl, proto, check = struct.unpack_from(
            "!BBHHHBBH", frame, at
        )
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
        layers.append(
            Layer(
                "ipv4",
                at,
                max(ihl, 20),
                f"{_ip4(frame[at + 12 : at + 16])} → {_ip4(frame[at + 16 : at + 20])}, "
                f"proto {proto} ({IP_PROTOS.get(proto, 'other')}), tot_len {total}, "
                f"ihl {ihl}",
                fields,
            )
        )
        if vihl >> 4 != 4 or ihl < 20:
            notes.append(f"IPv4 header at {at} is malformed (version {vihl >> 4}, ihl {ihl})")
            return tuple(layers), tuple(notes)
        if frag & 0x1FFF:
            notes.append("IPv4 fragment with a non-zero offset: no transport header")
            return tuple(layers), tuple(notes)
        if n < at + ihl:
            short("IPv4 options of the", at, ihl)
            return tuple(layers), tuple(notes)
        at += ihl
    elif ethertype == 0x86DD:
        if n < at + 40:
            short("IPv6", at, 40)
            return tuple(layers), tuple(notes)
        plen, proto, hops = struct.unpack_from("!HBB", frame, at + 4)
        src, dst = _ip6(frame[at + 8 : at + 24]), _ip6(frame[at + 24 : at + 40])
        layers.append(
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
        at += 40
        while proto in IPV6_EXT:
            if n < at + 8:
                short(f"IPv6 {IPV6_EXT[proto]}", at, 8)
                return tuple(layers), tuple(notes)
            nxt, ext_len = frame[at], frame[at + 1]
            size = 8 if proto == 44 else (ext_len + 1) * 8
            layers.append(
                Layer(
                    "ipv6-ext",
                    at,
                    size,
                    f"{IPV6_EXT[proto]} header, next {nxt}",
                    (FrameField("ipv6ext.nexthdr", at, 1, nxt),),
                )
            )
            if proto == 44 and struct.unpack_from("!H", frame, at + 2)[0] >> 3:
                notes.append("IPv6 fragment with a non-zero offset: no transport header")
                return tuple(layers), tuple(notes)
            proto, at = nxt, at + size
    else:
        if n > at:
            layers.append(
                Layer("payload", at, n - at, f"{n - at} bytes of EtherType {ethertype:#06x}", ())
            )
        return tuple(layers), tuple(notes)
    if proto == 6:
        if n < at + 20:
            short("TCP", at, 20)
            return tuple(layers), tuple(notes)
        sport, dport, seq, ack, doff_flags, window, check = struct.unpack_from(
            "!HHIIHHH", frame, at
        )
        doff = (doff_flags >> 12) * 4
        flag_bits = "".join(c for i, c in enumerate("FSRPAUEC") if doff_flags & (1 << i))
        layers.append(
            Layer(
                "tcp",
                at,
                max(doff, 20),
                f"port {sport} → {dport}, seq {seq}, flags [{flag_bits}], doff {doff}",
                (
                    FrameField("tcp.source", at, 2, sport),
                    FrameField("tcp.dest", at + 2, 2, dport),
                    FrameField("tcp.seq", at + 4, 4, seq),
                    FrameField("tcp.ack_seq", at + 8, 4, ack),
                    FrameField("tcp.doff_flags", at + 12, 2, doff_flags),
                    FrameField("tcp.window", at + 14, 2, window),
                    FrameField("tcp.check", at + 16, 2, check),
                    FrameField(
                        "tcp.urg_ptr", at + 18, 2, struct.unpack_from("!H", frame, at + 18)[0]
                    ),
                ),
            )
        )
        at += max(doff, 20)
    elif proto == 17:
        if n < at + 8:
            short("UDP", at, 8)
            return tuple(layers), tuple(notes)
        sport, dport, ulen, check = struct.unpack_from("!HHHH", frame, at)
        layers.append(
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
        at += 8
    if n > at:
        layers.append(Layer("payload", at, n - at, f"{n - at} bytes", ()))
    return tuple(layers), tuple(notes)


def csum_place(hdr: VnetHdr, layers: tuple[Layer, ...], frame_len: int | None) -> CsumPlace:
    """Where csum_start and csum_start + csum_offset fall in the frame, in header terms."""
    start, at = hdr.csum_start, hdr.csum_start + hdr.csum_offset
    layer = next((x for x in layers if x.offset <= start < x.offset + x.length), None)
    if not layers:
        start_in = f"frame byte {start} (no frame bytes given to name it)"
    elif layer is None:
        where = (
            "past the frame"
            if frame_len is not None and start >= frame_len
            else ("beyond the decoded headers")
        )
        start_in = f"frame byte {start}: {where}"
    elif layer.offset == start:
        start_in = f"frame byte {start}: the first byte of the {layer.name} header"
    else:
        start_in = f"frame byte {start}: {start - layer.offset} bytes into the {layer.name} header"
    field = next((f.name for x in layers for f in x.fields if f.offset == at and f.size == 2), None)
    if field is not None:
        text = f"checksum at frame bytes {at}..{at + 1} = {field}"
        expected = {"tcp": 16, "udp": 6}.get(field.split(".")[0])
        if (
            expected is not None
            and field.endswith(".check")
            and layer is not None
            and layer.name != field.split(".")[0]
        ):
            text += f" (but csum_start is not the {field.split('.')[0]} header)"
    else:
        inside = next(
            (f for x in layers for f in x.fields if f.offset <= at < f.offset + f.size), None
        )
        beyond = frame_len is not None and at + 2 > frame_len
        text = f"checksum at frame bytes {at}..{at + 1}: " + (
            "past the end of the frame"
            if beyond
            else f"overlaps {inside.name} (not a checksum field)"
            if inside is not None
            else "in the payload, not a header checksum field"
            if layers
            else "no frame bytes to name it"
        )
    return CsumPlace(start, hdr.csum_offset, start_in, field, at, text)


def decoded_to_dict(d: Decoded) -> dict[str, Any]:
    v = d.verdict
    return {
        "schema": DECODE_SCHEMA,
        "kernel": kernel_to_dict(d.kernel),
        "input": {
            "hdr_len": d.hdr_len,
            "header_hex": d.raw_header.hex(),
            "frame_bytes": 0 if d.frame is None else len(d.frame),
            "frame_len": d.frame_len,
        },
        "header": {
            "struct": d.struct,
            "size": d.hdr_len,
            "fields": [
                {
                    "name": f.name,
                    "offset": f.offset,
                    "size": f.size,
                    "value": f.value,
                    "meaning": f.meaning,
                }
                for f in d.fields
            ],
            "flags": {
                "value": d.hdr.flags,
                "names": list(d.flag_names),
                "unknown": d.flags_unknown,
            },
            "gso_type": {
                "value": d.hdr.gso_type,
                "name": d.gso_name,
                "ecn": bool(d.hdr.gso_type & GSO_ECN),
            },
        },
        "frame": None
        if d.frame is None
        else {
            "bytes": len(d.frame),
            "layers": [
                {
                    "name": x.name,
                    "offset": x.offset,
                    "length": x.length,
                    "summary": x.summary,
                    "fields": [
                        {"name": f.name, "offset": f.offset, "size": f.size, "value": f.value}
                        for f in x.fields
                    ],
                }
                for x in d.layers
            ],
        },
        "csum": None
        if d.csum is None
        else {
            "start": d.csum.start,
            "offset": d.csum.offset,
            "start_in": d.csum.start_in,
            "field": d.csum.field,
            "field_at": d.csum.field_at,
            "explanation": d.csum.explanation,
        },
        "validation": None
        if v is None
        else {
            "modelled": v.modelled,
            "accepted": v.accepted,
            "errno": v.errno,
            "function": v.function,
            "reason": v.reason,
            "hdr_len": v.hdr_len,
            "gso": v.gso,
            "checks": [
                {
                    "source": c.source,
                    "function": c.function,
                    "test": c.test,
                    "ok": c.ok,
                    "detail": c.detail,
                    "because": list(c.because),
                }
                for c in v.checks
            ],
        },
        "notes": list(d.notes),
    }
