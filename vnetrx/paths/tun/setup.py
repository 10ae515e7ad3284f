"""What the modules mirroring drivers/net/tun.c's write path share: the request (``TapSetup``),
the resolved device (``TapConfig``) and tun.c's constants. Used by get_user, vnet_hdr, build and
alloc."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from vnetrx.kernel.constants import INT_MAX
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Received, Refusal
from vnetrx.paths.virtio_net_hdr import HdrRules, VnetHdr

if TYPE_CHECKING:
    from vnetrx.paths.tun.alloc import AllocRules
    from vnetrx.paths.tun.build import BuildRules
    from vnetrx.paths.tun.vnet_hdr import FrontRules
from vnetrx.records import NamedTuple

SRC: Final = "drivers/net/tun.c"
SKBUFF_SRC: Final = "net/core/skbuff.c"
SOCK_SRC: Final = "net/core/sock.c"
__all__ = ["INT_MAX", "SKBUFF_SRC", "SOCK_SRC", "SRC", "TapConfig", "TapFrame", "TapSetup",
           "error", "tun_rx_pad"]


class TapSetup(NamedTuple):
    """A tun/tap fd opened with IFF_NO_PI: the device, apart from what is written to it
    (``TapFrame``), so one setup serves every write of a sweep or a replay. ``None`` fields get
    kernel defaults."""

    tun: bool = False  # IFF_TUN instead of IFF_TAP
    blocking: bool = False  # the fd lacks O_NONBLOCK
    sndbuf: int | None = None  # TUNSETSNDBUF; None → INT_MAX (tun_chr_open @4.14.5, @6.18.3)
    vnet_hdr: bool = True  # IFF_VNET_HDR
    vnet_hdr_sz: int | None = None  # TUNSETVNETHDRSZ; None → sizeof(struct virtio_net_hdr)
    xdp: str | None = None  # an attached XDP program's verdict: pass, drop, tx, redirect, aborted
    xdp_adjust_head: int = 0  # the program calls bpf_xdp_adjust_head(ctx, N) first (< 0: grow)
    xdp_adjust_tail: int = 0  # then bpf_xdp_adjust_tail(ctx, N) (> 0: grow)
    frag_source: str | None = None  # what-if: where tun_build_skb's buffer comes from
    # the program calls bpf_xdp_adjust_meta(ctx, -N) after adjust_head: N bytes of metadata
    xdp_meta: int = 0
    # the frame's bytes when known (--l4, --frame): a USO-in-UDP-tunnel header's inner IP
    # version is read from them (virtio_net_hdr_tnl_to_skb); None: a frame of zeros
    frame: bytes | None = None


class TapFrame(NamedTuple):
    """One write(2) to the fd, apart from the device: the frame's length (after the vnet
    header) and the vnet header bytes written in front of it."""

    len: int
    hdr: bytes | None = None  # None → zeros (without IFF_VNET_HDR: no header at all)


class TapConfig(NamedTuple):
    """A tap device on one kernel, resolved once (get_user.tap_config): the checked request and
    every per-kernel value a write's stages read, as virtio_net's ``Config`` is for a receive
    queue. A sweep makes one and decides each length with it."""

    profile: KernelProfile
    setup: TapSetup  # checked, the defaults tun_set_iff gives filled in
    # the write (``for_write``; ``tap_config`` gives a zeroed header): its vnet header as written
    # (zero-padded to vnet_hdr_sz; None without IFF_VNET_HDR), as read, and what tun_get_user
    # compares its length with
    written: bytes | None
    hdr: VnetHdr  # zeros without IFF_VNET_HDR
    front: FrontRules
    rules: HdrRules  # this kernel's virtio_net_hdr_to_skb
    tunnel: bool  # UDP-tunnel GSO negotiated: 6.17+ with vnet_hdr_sz >= 24
    rx_pad: int  # TUN_RX_PAD = NET_IP_ALIGN + NET_SKB_PAD
    align: int  # tun->align = NET_SKB_PAD, + NET_IP_ALIGN on a TAP
    good_linear: int  # SKB_MAX_HEAD(align)
    shinfo: int  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
    page_size: int
    cache_bytes: int  # SMP_CACHE_BYTES: SKB_DATA_ALIGN's alignment
    sk_buff_aligned: int  # SKB_DATA_ALIGN(sizeof(struct sk_buff))
    build: BuildRules  # tun_can_build_skb's and tun_build_skb's (build.build_rules)
    alloc: AllocRules  # tun_alloc_skb's and alloc_skb_with_frags' (alloc.alloc_rules)

    @property
    def kernel(self) -> str:
        return self.profile.name


def error(reason: str, errno: str = "EINVAL", counter: str | None = None,
          refused_by: Refusal | None = None) -> Received:
    """A write that fails: write(2) returns -``errno``."""
    return Received("tap", "error", reason, None, (), None, None, errno, counter, refused_by)


def tun_rx_pad(k: KernelProfile) -> int:
    """TUN_RX_PAD = NET_IP_ALIGN + NET_SKB_PAD (tun.c @4.14.5 … @7.3.4)."""
    return k.build.net_ip_align + k.net_skb_pad
