"""drivers/net/tun.c:set_offload: which TUNSETOFFLOAD flag sets a tap takes (the rest is
refused with EINVAL, "a way to test for new features": any flag left over). Read @6.17.0 and
@6.18.9; the kernels before 6.17 are the same function without the UDP-tunnel clause
(288f30435132) and, before 6.2, without the USO clause (399e0827642f)."""

from __future__ import annotations

from typing import Final

from vnetrx.kernel.changes import TUN_UDP_TUNNEL_GSO, TUN_USO
from vnetrx.kernel.profile import KernelProfile
from vnetrx.records import NamedTuple

# include/uapi/linux/if_tun.h
TUN_F_CSUM: Final = 0x01
TUN_F_TSO4: Final = 0x02
TUN_F_TSO6: Final = 0x04
TUN_F_TSO_ECN: Final = 0x08
TUN_F_UFO: Final = 0x10
TUN_F_USO4: Final = 0x20
TUN_F_USO6: Final = 0x40
TUN_F_UDP_TUNNEL_GSO: Final = 0x080
TUN_F_UDP_TUNNEL_GSO_CSUM: Final = 0x100
TUNSETOFFLOAD_MAX: Final = 0x1FF  # the flags vnetrx lets a check ask for


class Offload(NamedTuple):
    """set_offload's answer: the NETIF_F_* names it asks netdev_update_features for, or the
    flags left over (EINVAL)."""

    flags: int
    features: tuple[str, ...]
    left: int  # flags no clause took: non-zero → -EINVAL, nothing changes

    @property
    def errno(self) -> str | None:
        return "EINVAL" if self.left else None


def set_offload(k: KernelProfile, flags: int) -> Offload:
    """tun.c:set_offload(tun, arg) on kernel ``k``."""
    arg, features = flags, []
    if arg & TUN_F_CSUM:
        features.append("NETIF_F_HW_CSUM")
        arg &= ~TUN_F_CSUM
        if arg & (TUN_F_TSO4 | TUN_F_TSO6):
            if arg & TUN_F_TSO_ECN:
                features.append("NETIF_F_TSO_ECN")
                arg &= ~TUN_F_TSO_ECN
            if arg & TUN_F_TSO4:
                features.append("NETIF_F_TSO")
            if arg & TUN_F_TSO6:
                features.append("NETIF_F_TSO6")
            arg &= ~(TUN_F_TSO4 | TUN_F_TSO6)
        arg &= ~TUN_F_UFO
        # "TODO: for now USO4 and USO6 should work simultaneously"
        if k.has(TUN_USO) and arg & TUN_F_USO4 and arg & TUN_F_USO6:
            features.append("NETIF_F_GSO_UDP_L4")
            arg &= ~(TUN_F_USO4 | TUN_F_USO6)
        # "Tunnel offload is allowed only if some plain offload is available, too."
        plain = {"NETIF_F_GSO_UDP_L4", "NETIF_F_TSO", "NETIF_F_TSO6"}  # PLAIN_GSO
        if k.has(TUN_UDP_TUNNEL_GSO) and plain & set(features) and arg & TUN_F_UDP_TUNNEL_GSO:
            features.append("NETIF_F_GSO_UDP_TUNNEL")
            if arg & TUN_F_UDP_TUNNEL_GSO_CSUM:
                features.append("NETIF_F_GSO_UDP_TUNNEL_CSUM")
            arg &= ~(TUN_F_UDP_TUNNEL_GSO | TUN_F_UDP_TUNNEL_GSO_CSUM)
    return Offload(flags, tuple(features), arg)
