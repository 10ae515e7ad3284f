"""virtio-net headers: include/uapi/linux/virtio_net.h, and drivers/net/virtio_net.c's padded_vnet_hdr.

Sizes confirmed against the running 6.18.44 kernel's BTF (docs/kernel/virtio-net-rx.md §3.1, Appendix B).
``__virtio16`` is little-endian with VIRTIO_F_VERSION_1 and guest-native (little-endian on x86_64
and arm64) for legacy devices, so ``Int16ul`` is right for every profiled platform.
"""

from __future__ import annotations

from functools import cache

from vnetrx.layouts.base import Layout, Member, chars, nested, u8, u16, u32, u64

UAPI = "include/uapi/linux/virtio_net.h"

# Flag and GSO type names (include/uapi/linux/virtio_net.h @6.18).
VIRTIO_NET_HDR_F = {1: "NEEDS_CSUM", 2: "DATA_VALID", 4: "RSC_INFO", 8: "UDP_TUNNEL_CSUM"}
VIRTIO_NET_HDR_GSO = {0: "NONE", 1: "TCPV4", 3: "UDP", 4: "TCPV6", 5: "UDP_L4", 0x80: "ECN"}

_HDR_MEMBERS = (
    u8("flags", "__u8: VIRTIO_NET_HDR_F_* bits"),
    u8("gso_type", "__u8: VIRTIO_NET_HDR_GSO_* (| ECN 0x80)"),
    u16("hdr_len", "__virtio16: Ethernet + IP + TCP/UDP header length"),
    u16("gso_size", "__virtio16: bytes to append to hdr_len per segment"),
    u16("csum_start", "__virtio16: position to start checksumming from"),
    u16("csum_offset", "__virtio16: offset after csum_start to place the checksum"),
)
_NUM_BUFFERS = u16("num_buffers", "__virtio16: number of merged rx buffers")


@cache
def virtio_net_hdr() -> Layout:
    return Layout.of("virtio_net_hdr", _HDR_MEMBERS, source=UAPI)


@cache
def virtio_net_hdr_mrg_rxbuf() -> Layout:
    """struct virtio_net_hdr_mrg_rxbuf { struct virtio_net_hdr hdr; __virtio16 num_buffers; }"""
    members = (nested("hdr", virtio_net_hdr(), "struct virtio_net_hdr"), _NUM_BUFFERS)
    return Layout.of("virtio_net_hdr_mrg_rxbuf", members, source=UAPI)


@cache
def virtio_net_hdr_v1() -> Layout:
    return Layout.of("virtio_net_hdr_v1", (*_HDR_MEMBERS, _NUM_BUFFERS), source=UAPI)


def _hash_members(split_hash_value: bool) -> tuple[Member, ...]:
    # 6.18 split the le32 hash_value into two le16 halves so that the struct's alignment is 2
    # ("virtio_net: fix alignment for virtio_net_hdr_v1_hash"); the size stays 20.
    value = (
        (
            u16("hash_value_lo", "__le16: RSS hash, low half"),
            u16("hash_value_hi", "__le16: RSS hash, high half"),
        )
        if split_hash_value
        else (u32("hash_value", "__le32: RSS hash value"),)
    )
    return (
        *value,
        u16("hash_report", "__le16: VIRTIO_NET_HASH_REPORT_*"),
        u16("padding", "__le16"),
    )


@cache
def virtio_net_hdr_v1_hash(split_hash_value: bool = True) -> Layout:
    """struct virtio_net_hdr_v1_hash { struct virtio_net_hdr_v1 hdr; hash…; hash_report; padding; }"""
    v1 = virtio_net_hdr_v1()
    members = (nested("hdr", v1, "struct virtio_net_hdr_v1"), *_hash_members(split_hash_value))
    return Layout.of("virtio_net_hdr_v1_hash", members, source=UAPI)


@cache
def virtio_net_hdr_v1_hash_tunnel() -> Layout:
    members = (
        nested("hash_hdr", virtio_net_hdr_v1_hash(), "struct virtio_net_hdr_v1_hash"),
        u16("outer_th_offset", "__le16: outer transport header offset"),
        u16("inner_nh_offset", "__le16: inner network header offset"),
    )
    return Layout.of("virtio_net_hdr_v1_hash_tunnel", members, source=UAPI)


@cache
def padded_vnet_hdr(v1_hash: bool) -> Layout:
    """struct padded_vnet_hdr (drivers/net/virtio_net.c): the big-mode header slot.

    Up to 5.17: virtio_net_hdr_mrg_rxbuf + padding[4] = 16 bytes. From 5.18 ("Fixed padded vheader
    to use v1 with hash", c1ddc42da2b2): virtio_net_hdr_v1_hash + padding[12] = 32 bytes.
    """
    inner = virtio_net_hdr_v1_hash(False) if v1_hash else virtio_net_hdr_mrg_rxbuf()
    members = (
        nested("hdr", inner, f"struct {inner.name}: the header the device writes"),
        chars("padding", 16 - inner.size % 16, "char[]: keeps the frame 16-byte aligned"),
    )
    return Layout.of("padded_vnet_hdr", members, source="drivers/net/virtio_net.c")


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
    members = (
        u64("addr", "dma_addr_t"),
        u32("ref", "u32"),
        u16("len", "u16"),
        u16("need_sync", "u16"),
    )
    return Layout.of("virtnet_rq_dma", members, source="drivers/net/virtio_net.c")
