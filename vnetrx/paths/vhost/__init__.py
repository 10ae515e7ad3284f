"""drivers/vhost/net.c: vhost-net, the host side of a guest's virtio-net queues.

====  =========================================================================================
tx    handle_tx: vhost_net_build_xdp's batch into tun_xdp_one, or sendmsg → tun_get_user
rx    handle_rx: the tap's frames into the guest's rx ring (get_rx_bufs, num_buffers)
====  =========================================================================================
"""

from __future__ import annotations

from vnetrx.paths.vhost.tx import (
    MAX_FRAME_LEN,
    SOCK_HLENS,
    Drop,
    Road,
    VhostTxConfig,
    VhostTxPlan,
    VhostTxSetup,
    Why,
    check_frame_len,
    for_tx_frame,
    receive,
    vhost_tx_config,
    vhost_tx_plan,
)

__all__ = [
    "MAX_FRAME_LEN",
    "SOCK_HLENS",
    "Drop",
    "Road",
    "VhostTxConfig",
    "VhostTxPlan",
    "VhostTxSetup",
    "Why",
    "check_frame_len",
    "for_tx_frame",
    "receive",
    "vhost_tx_config",
    "vhost_tx_plan",
]
