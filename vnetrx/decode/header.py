"""The virtio_net_hdr itself, for ``vnetrx decode``: which struct a header length selects, its
fields read with their offsets, and what each field's value means (flag and GSO type names,
hash report types, where csum_start/csum_offset point)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from vnetrx.decode.csum import CsumPlace
from vnetrx.kernel.changes import V1_HASH_SPLIT_HASH_VALUE
from vnetrx.kernel.profile import KernelProfile
from vnetrx.layouts.virtio_net import (
    VIRTIO_NET_HDR_F,
    VIRTIO_NET_HDR_GSO,
    virtio_net_hdr_mrg_rxbuf,
    virtio_net_hdr_v1_hash,
    virtio_net_hdr_v1_hash_tunnel,
)
from vnetrx.layouts.virtio_net import virtio_net_hdr as virtio_net_hdr_layout
from vnetrx.paths.virtio_net_hdr import GSO_ECN, NEEDS_CSUM, VnetHdr

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


@dataclass(frozen=True)
class HeaderField:
    name: str  # dotted member path, e.g. "hdr.csum_start"
    offset: int
    size: int
    value: int
    meaning: str


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


def header_layout(k: KernelProfile, hdr_len: int) -> Any:
    """The struct a header of ``hdr_len`` bytes is: virtio_net_hdr, _mrg_rxbuf, _v1_hash or
    _v1_hash_tunnel."""
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


def read_header(layout: Any, raw: bytes) -> tuple[dict[str, int], VnetHdr]:
    """Every field's value by dotted name, and the struct virtio_net_hdr part a tap reads."""
    values = _flatten(layout.parse(raw))
    base = {name.rsplit(".", 1)[-1]: values[name] for name in values}
    hdr = VnetHdr(
        base["flags"],
        base["gso_type"],
        base["hdr_len"],
        base["gso_size"],
        base["csum_start"],
        base["csum_offset"],
        outer_th_offset=base.get("outer_th_offset"),
        inner_nh_offset=base.get("inner_nh_offset"),
    )
    return values, hdr


def header_fields(
    layout: Any, values: dict[str, int], hdr: VnetHdr, csum: CsumPlace | None
) -> tuple[HeaderField, ...]:
    """The layout's fields in order, each with its offset, size, value and meaning."""
    return tuple(
        HeaderField(
            f.name,
            f.offset,
            f.size,
            values[f.name],
            field_meaning(f.name, values[f.name], hdr, csum),
        )
        for f in _leaves(layout)
    )


def field_meaning(name: str, value: int, hdr: VnetHdr, csum: CsumPlace | None) -> str:
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
