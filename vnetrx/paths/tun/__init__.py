"""drivers/net/tun.c, the write path: one module per stage.

=========  ===================================================================================
setup      the device (``TapSetup``), a write (``TapFrame``), tun.c's constants
get_user   tun_chr_write_iter → tun_get_user: the front checks, the path choice, delivery
vnet_hdr   reading the virtio_net_hdr (__tun_vnet_hdr_get) and virtio_net_hdr_to_skb's effect
build      tun_can_build_skb, tun_build_skb (current->task_frag + build_skb)
alloc      tun_alloc_skb: sock_alloc_send_pskb, alloc_skb_with_frags, the copy
xdp        an attached program: native in tun_build_skb (tun_xdp_act), generic on an skb
=========  ===================================================================================
"""

from __future__ import annotations

from vnetrx.paths.tun.build import FRAG_SOURCES, build_limit
from vnetrx.paths.tun.get_user import (
    MAX_FRAME_LEN,
    TapPlan,
    check_frame_len,
    check_tap_frame,
    check_tap_setup,
    for_write,
    good_linear,
    receive,
    tap_config,
    tap_plan,
)
from vnetrx.paths.tun.setup import INT_MAX, SRC, TapConfig, TapFrame, TapSetup, tun_rx_pad
from vnetrx.paths.tun.vnet_hdr import decode_hdr, vnet_hdr_size
from vnetrx.paths.xdp import ACTIONS as XDP_ACTIONS

__all__ = [
    "FRAG_SOURCES",
    "INT_MAX",
    "MAX_FRAME_LEN",
    "SRC",
    "XDP_ACTIONS",
    "TapConfig",
    "TapFrame",
    "TapPlan",
    "TapSetup",
    "build_limit",
    "check_frame_len",
    "check_tap_frame",
    "check_tap_setup",
    "decode_hdr",
    "for_write",
    "good_linear",
    "receive",
    "tap_config",
    "tap_plan",
    "tun_rx_pad",
    "vnet_hdr_size",
]
