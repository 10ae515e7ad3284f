"""The virtio-net header of a tap write: how tun_get_user reads it (drivers/net/tun_vnet.h's
__tun_vnet_hdr_get where VNET_HDR_UDP_TUNNEL is present), and what virtio_net_hdr_to_skb
(include/linux/virtio_net.h) does with it once the skb exists. Only GSO_NONE with NEEDS_CSUM /
DATA_VALID is modelled."""

from __future__ import annotations

from vnetrx.errors import UnsupportedError
from vnetrx.kernel.changes import VNET_HDR_UDP_TUNNEL
from vnetrx.kernel.profile import KernelProfile
from vnetrx.layouts.virtio_net import virtio_net_hdr
from vnetrx.model import Skb
from vnetrx.paths.steps import StepLog
from vnetrx.paths.tun.setup import SRC, TapSetup
from vnetrx.paths.virtio_net_hdr import VnetHdr, csum_hdr_len

VIRTIO_NET_HDR_F_NEEDS_CSUM = 1  # include/uapi/linux/virtio_net.h
VIRTIO_NET_HDR_F_DATA_VALID = 2


def vnet_hdr_size() -> int:
    """sizeof(struct virtio_net_hdr): tun_set_iff's default vnet_hdr_sz."""
    return virtio_net_hdr().size


def decode_hdr(raw: bytes) -> VnetHdr:
    return VnetHdr(**virtio_net_hdr().parse(raw))


def check_modelled(h: VnetHdr) -> None:
    if h.gso_type != 0:
        raise UnsupportedError(
            f"vnet header gso_type {h.gso_type:#x}: GSO writes are not modelled yet (only "
            "VIRTIO_NET_HDR_GSO_NONE)"
        )
    if h.flags & ~(VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID):
        raise UnsupportedError(
            f"vnet header flags {h.flags:#x}: only NEEDS_CSUM (1) and DATA_VALID (2) are modelled"
        )


def vnet_hdr_get(k: KernelProfile, s: TapSetup, hdr: VnetHdr, log: StepLog) -> int:
    """Read the vnet header; NEEDS_CSUM raises hdr_len to cover the checksum field."""
    assert s.vnet_hdr_sz is not None
    where, function = SRC, "tun_get_user"
    if k.has(VNET_HDR_UDP_TUNNEL):
        where, function = "drivers/net/tun_vnet.h", "__tun_vnet_hdr_get"
    parsed = 24 if k.has(VNET_HDR_UDP_TUNNEL) and s.vnet_hdr_sz >= 24 else vnet_hdr_size()
    hdr_len = csum_hdr_len(hdr)  # tun_get_user's NEEDS_CSUM fix-up (16-bit)
    log.add(
        where,
        function,
        f"read {parsed} header bytes, skip the rest of vnet_hdr_sz ({s.vnet_hdr_sz}); "
        + (
            "NEEDS_CSUM: hdr_len = max(hdr_len, csum_start + csum_offset + 2)"
            if hdr.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM
            else "no NEEDS_CSUM: hdr_len as written"
        ),
        because=(VNET_HDR_UDP_TUNNEL,) if parsed == 24 else (),
        flags=hdr.flags,
        gso_type=hdr.gso_type,
        hdr_len=hdr_len,
        gso_size=hdr.gso_size,
        csum_start=hdr.csum_start,
        csum_offset=hdr.csum_offset,
        len=s.frame_len,
    )
    return hdr_len


def vnet_hdr_to_skb(hdr: VnetHdr, skb: Skb, log: StepLog) -> None:
    """virtio_net_hdr_to_skb (include/linux/virtio_net.h), called before eth_type_trans. The
    modelled cases (GSO_NONE with NEEDS_CSUM or DATA_VALID, checked by check_modelled) succeed;
    what is not modelled raises UnsupportedError."""
    if hdr.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM:
        needed = hdr.csum_start + hdr.csum_offset + 2
        if needed > skb.headlen:
            raise UnsupportedError(
                f"NEEDS_CSUM over {needed} bytes but only {skb.headlen} are linear: the "
                "pskb_may_pull() that follows is not modelled"
            )
        log.add(
            "include/linux/virtio_net.h",
            "virtio_net_hdr_to_skb",
            "NEEDS_CSUM: skb_partial_csum_set(csum_start, csum_offset) → CHECKSUM_PARTIAL "
            "(csum_start counts from the Ethernet header on TAP)",
            csum_start=hdr.csum_start,
            csum_offset=hdr.csum_offset,
            ip_summed="CHECKSUM_PARTIAL",
        )
        return
    valid = bool(hdr.flags & VIRTIO_NET_HDR_F_DATA_VALID)
    log.add(
        "include/linux/virtio_net.h",
        "virtio_net_hdr_to_skb",
        "DATA_VALID: CHECKSUM_UNNECESSARY"
        if valid
        else "no flags and GSO_NONE: nothing to set (CHECKSUM_NONE)",
        flags=hdr.flags,
        gso_type=hdr.gso_type,
        ip_summed="CHECKSUM_UNNECESSARY" if valid else "CHECKSUM_NONE",
    )
