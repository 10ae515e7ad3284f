"""Mirrors drivers/net/virtio_net.c's receive path: virtnet_probe's mode choice, receive_buf,
receive_small, receive_big, receive_mergeable and page_to_skb; no XDP program attached.

The decisions and numbers come from ``virtio_rx_plan`` (pure arithmetic); this module narrates
them: the cited steps, the buffer maps and the skb record.
Facts: ../shared/reference/virtio-rx.md §4 (dispatch), §6 (page_to_skb), §7-§9, appendix A.
"""

from __future__ import annotations

from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths import virtio_rx_plan as plans
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net_big import receive_big
from vnetrx.paths.virtio_net_common import SRC, RxResult
from vnetrx.paths.virtio_net_mergeable import receive_mergeable
from vnetrx.paths.virtio_net_small import receive_small
from vnetrx.paths.virtio_rx_plan import MAX_FRAME_LEN, VirtioRxSetup, resolve

__all__ = ["MAX_FRAME_LEN", "SRC", "RxResult", "VirtioRxSetup", "receive", "resolve"]


def receive(k: KernelProfile, s: VirtioRxSetup, log: StepLog) -> RxResult:
    """virtnet_probe's mode choice, then the device write and receive_buf's dispatch."""
    c = plans.config(k, s)
    p = plans.plan(k, c, s.frame_len)
    log.add(
        SRC,
        "virtnet_probe",
        f"{c.mode} receive buffers: "
        + (
            "VIRTIO_NET_F_MRG_RXBUF is negotiated"
            if s.mergeable
            else "no MRG_RXBUF; guest GSO or MTU > 1500 sets big_packets"
            if c.big_packets
            else "no MRG_RXBUF, no guest GSO, MTU <= 1500"
        ),
        mergeable_rx_bufs=s.mergeable,
        big_packets=c.big_packets,
        guest_gso=s.guest_gso,
        mtu=s.mtu,
        hdr_len=s.hdr_len,
    )
    if c.mode == "small":
        return receive_small(k, s, c, p, log)
    if c.mode == "big":
        return receive_big(k, s, c, p, log)
    return receive_mergeable(k, s, c, p, log)
