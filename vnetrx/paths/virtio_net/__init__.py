"""drivers/net/virtio_net.c, receive side: one module per stage, plan and narration together.

=================  ===========================================================================
setup              virtnet_probe: the negotiated setup, its checks, the per-kernel ``Config``
buffers            add_recvbuf_* sizes, get_mergeable_buf_len, THE page_frag / page_pool carver
plan               the ``Plan`` one frame gets and the reasons it records
receive_buf        the short-packet guard, the dispatch, virtio_net_hdr_to_skb, eth_type_trans
page_to_skb        build_skb around the buffer, or napi_alloc_skb and a copy
small / big        receive_small, receive_big (with add_recvbuf_small / _big)
mergeable, frags   receive_mergeable (with add_recvbuf_mergeable) and its loop over buffers
virtqueue          what the device writes into the posted buffers
=================  ===========================================================================
"""

from __future__ import annotations

from typing import Final

from vnetrx.paths.virtio_net.receive_buf import deliver, plan, planner, receive
from vnetrx.paths.virtio_net.setup import (
    MAX_FRAME_LEN,
    Config,
    RxFrame,
    VirtioRxSetup,
    check_frame_len,
    check_rx_frame,
    check_virtio_setup,
    config,
    for_frame,
)

SRC: Final = "drivers/net/virtio_net.c"

__all__ = [
    "MAX_FRAME_LEN",
    "SRC",
    "Config",
    "RxFrame",
    "VirtioRxSetup",
    "check_frame_len",
    "check_rx_frame",
    "check_virtio_setup",
    "config",
    "deliver",
    "for_frame",
    "plan",
    "planner",
    "receive",
]
