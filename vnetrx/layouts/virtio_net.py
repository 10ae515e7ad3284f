"""virtio-net headers: include/uapi/linux/virtio_net.h, and drivers/net/virtio_net.c's padded_vnet_hdr.

Sizes confirmed against the running 6.18.44 kernel's BTF (docs/kernel/virtio-net-rx.md §3.1, Appendix B).
``__virtio16`` is little-endian with VIRTIO_F_VERSION_1 and guest-native (little-endian on x86_64
and arm64) for legacy devices, so ``Int16ul`` is right for every profiled platform.
"""

from __future__ import annotations

from functools import cache

from construct import Bytes, Int8ul, Int16ul, Int32ul, Int64ul, Struct

from vnetrx.layouts.base import Layout

UAPI = "include/uapi/linux/virtio_net.h"

# Flag and GSO type names (include/uapi/linux/virtio_net.h @6.18).
VIRTIO_NET_HDR_F = {1: "NEEDS_CSUM", 2: "DATA_VALID", 4: "RSC_INFO", 8: "UDP_TUNNEL_CSUM"}
VIRTIO_NET_HDR_GSO = {0: "NONE", 1: "TCPV4", 3: "UDP", 4: "TCPV6", 5: "UDP_L4", 0x80: "ECN"}

_HDR_MEMBERS = (
    "flags" / Int8ul * "__u8: VIRTIO_NET_HDR_F_* bits",
    "gso_type" / Int8ul * "__u8: VIRTIO_NET_HDR_GSO_* (| ECN 0x80)",
    "hdr_len" / Int16ul * "__virtio16: Ethernet + IP + TCP/UDP header length",
    "gso_size" / Int16ul * "__virtio16: bytes to append to hdr_len per segment",
    "csum_start" / Int16ul * "__virtio16: position to start checksumming from",
    "csum_offset" / Int16ul * "__virtio16: offset after csum_start to place the checksum",
)
_NUM_BUFFERS = "num_buffers" / Int16ul * "__virtio16: number of merged rx buffers"


@cache
def virtio_net_hdr() -> Layout:
    return Layout.of("virtio_net_hdr", Struct(*_HDR_MEMBERS), source=UAPI)


@cache
def virtio_net_hdr_mrg_rxbuf() -> Layout:
    """struct virtio_net_hdr_mrg_rxbuf { struct virtio_net_hdr hdr; __virtio16 num_buffers; }"""
    struct = Struct("hdr" / Struct(*_HDR_MEMBERS) * "struct virtio_net_hdr", _NUM_BUFFERS)
    return Layout.of("virtio_net_hdr_mrg_rxbuf", struct, source=UAPI)


@cache
def virtio_net_hdr_v1() -> Layout:
    return Layout.of("virtio_net_hdr_v1", Struct(*_HDR_MEMBERS, _NUM_BUFFERS), source=UAPI)


def _hash_members(split_hash_value: bool) -> tuple[object, ...]:
    # 6.18 split the le32 hash_value into two le16 halves so that the struct's alignment is 2
    # ("virtio_net: fix alignment for virtio_net_hdr_v1_hash"); the size stays 20.
    value = (
        (
            "hash_value_lo" / Int16ul * "__le16: RSS hash, low half",
            "hash_value_hi" / Int16ul * "__le16: RSS hash, high half",
        )
        if split_hash_value
        else ("hash_value" / Int32ul * "__le32: RSS hash value",)
    )
    return (
        *value,
        "hash_report" / Int16ul * "__le16: VIRTIO_NET_HASH_REPORT_*",
        "padding" / Int16ul * "__le16",
    )


@cache
def virtio_net_hdr_v1_hash(split_hash_value: bool = True) -> Layout:
    """struct virtio_net_hdr_v1_hash { struct virtio_net_hdr_v1 hdr; hash…; hash_report; padding; }"""
    v1 = virtio_net_hdr_v1()
    members = ("hdr" / v1._struct * "struct virtio_net_hdr_v1", *_hash_members(split_hash_value))
    return Layout.of("virtio_net_hdr_v1_hash", Struct(*members), source=UAPI)


@cache
def virtio_net_hdr_v1_hash_tunnel() -> Layout:
    members = (
        "hash_hdr" / virtio_net_hdr_v1_hash()._struct * "struct virtio_net_hdr_v1_hash",
        "outer_th_offset" / Int16ul * "__le16: outer transport header offset",
        "inner_nh_offset" / Int16ul * "__le16: inner network header offset",
    )
    return Layout.of("virtio_net_hdr_v1_hash_tunnel", Struct(*members), source=UAPI)


@cache
def padded_vnet_hdr(v1_hash: bool) -> Layout:
    """struct padded_vnet_hdr (drivers/net/virtio_net.c): the big-mode header slot.

    Up to 5.17: virtio_net_hdr_mrg_rxbuf + padding[4] = 16 bytes. From 5.18 ("Fixed padded vheader
    to use v1 with hash", c1ddc42da2b2): virtio_net_hdr_v1_hash + padding[12] = 32 bytes.
    """
    inner = virtio_net_hdr_v1_hash(False) if v1_hash else virtio_net_hdr_mrg_rxbuf()
    struct = Struct(
        "hdr" / inner._struct * f"struct {inner.name}: the header the device writes",
        "padding" / Bytes(16 - inner.size % 16) * "char[]: keeps the frame 16-byte aligned",
    )
    return Layout.of("padded_vnet_hdr", struct, source="drivers/net/virtio_net.c")


def rx_header_for(hdr_len: int) -> Layout:
    """The header struct the device writes for a given vi->hdr_len (virtnet_probe)."""
    by_len = {
        virtio_net_hdr().size: virtio_net_hdr(),
        virtio_net_hdr_mrg_rxbuf().size: virtio_net_hdr_mrg_rxbuf(),
        virtio_net_hdr_v1_hash().size: virtio_net_hdr_v1_hash(),
        virtio_net_hdr_v1_hash_tunnel().size: virtio_net_hdr_v1_hash_tunnel(),
    }
    return by_len[hdr_len]


HDR_LENS: tuple[int, ...] = (10, 12, 20, 24)


@cache
def virtnet_rq_dma() -> Layout:
    """struct virtnet_rq_dma (drivers/net/virtio_net.c @6.6+): heads every premapped rx page."""
    struct = Struct(
        "addr" / Int64ul * "dma_addr_t",
        "ref" / Int32ul * "u32",
        "len" / Int16ul * "u16",
        "need_sync" / Int16ul * "u16",
    )
    return Layout.of("virtnet_rq_dma", struct, source="drivers/net/virtio_net.c")
