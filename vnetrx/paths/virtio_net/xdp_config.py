"""An XDP program attached to a virtio-net device: what this kernel's driver does with it
(``XdpConfig``), decided once per trace from the profile; paths/virtio_net/xdp.py reads it.
Imported only when a program is attached (setup.config), so traces without one do not pay for
it. Facts: docs/kernel/xdp-source-notes.md §A.
"""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.kernel.changes import (
    MERGEABLE_LEN_CHECK,
    VIRTIO_RECEIVE_XDP_SPLIT,
    VIRTIO_XDP_MULTI_BUF,
    VIRTIO_XDP_NEEDS_CSUM_DROP,
)
from vnetrx.kernel.constants import XDP_FRAME_SIZE, XDP_METALEN_MAX, XDP_PACKET_HEADROOM
from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths.skbuff import shinfo_size
from vnetrx.paths.virtio_net.setup import VirtioRxSetup
from vnetrx.paths.virtio_net.xdp_set import XdpAttach, XdpAttachSetup, virtnet_xdp_set
from vnetrx.paths.xdp import Meta, fwd_limit


@dataclass(frozen=True, slots=True)
class XdpConfig:
    """An attached program and what this kernel's driver does with it (paths/virtio_net/xdp.py
    reads these; docs/kernel/xdp-source-notes.md §A)."""

    action: str  # the verdict the program returns (ACTIONS)
    frags: bool  # loaded with BPF_F_XDP_HAS_FRAGS, on a kernel with multi-buffer XDP (6.3+)
    adjust_head: int
    adjust_tail: int
    attach: XdpAttach  # virtnet_xdp_set's answer
    headroom: int  # virtnet_get_headroom(): XDP_PACKET_HEADROOM (VIRTIO_XDP_HEADROOM ≤ 6.8)
    frame_struct: int  # sizeof(struct xdp_frame)
    small_slot: int  # add_recvbuf_small: SKB_DATA_ALIGN(hdr + PAD + 1518 + 256) + shinfo
    mrg_room: int  # add_recvbuf_mergeable: SKB_DATA_ALIGN(headroom + sizeof(shinfo))
    mrg_len: int  # get_mergeable_buf_len with room: PAGE_SIZE - room
    multi_buf: bool  # VIRTIO_XDP_MULTI_BUF (6.3): ctx truesize len + room, no hole, frags
    needs_csum_drop: bool  # VIRTIO_XDP_NEEDS_CSUM_DROP (6.10, 6.6.36): and DATA_VALID kept
    split: bool  # VIRTIO_RECEIVE_XDP_SPLIT (6.5): receive_small_xdp / receive_mergeable_xdp
    max_buffers: int  # virtnet_build_xdp_buff_mrg: MAX_SKB_FRAGS + 1
    len_check: bool  # MERGEABLE_LEN_CHECK: xdp_linearize_page's check_mergeable_len()
    meta: Meta  # bpf_xdp_adjust_meta: what the program asks, the limit; virtio supports it
    posted_before: bool  # the buffer has the pre-attach geometry (ctx headroom 0)
    fwd_limit: int  # xdp_ok_fwd_dev for a redirect to this device: mtu + ETH_HLEN + VLAN_HLEN


def xdp_config(k: KernelProfile, s: VirtioRxSetup, hdr: int, small_pad: int,
               good_packet_len: int) -> XdpConfig:
    """What attaching ``s.xdp`` means on ``k``."""
    assert s.xdp is not None
    attach = virtnet_xdp_set(k, XdpAttachSetup(s))
    headroom = k.value(XDP_PACKET_HEADROOM)
    sh = shinfo_size(k)
    # add_recvbuf_mergeable's tailroom is sizeof(struct skb_shared_info), not aligned: the same
    # 320 bytes on every profiled build (a multiple of SMP_CACHE_BYTES)
    room = k.skb_data_align(headroom + sh)
    return XdpConfig(
        action=s.xdp,
        frags=s.xdp_frags,
        adjust_head=s.xdp_adjust_head,
        adjust_tail=s.xdp_adjust_tail,
        attach=attach,
        headroom=headroom,
        frame_struct=k.value(XDP_FRAME_SIZE),
        small_slot=k.skb_data_align(hdr + small_pad + good_packet_len + headroom) + sh,
        mrg_room=room,
        mrg_len=k.build.page_size - room,
        multi_buf=k.has(VIRTIO_XDP_MULTI_BUF),
        needs_csum_drop=k.has(VIRTIO_XDP_NEEDS_CSUM_DROP),
        split=k.has(VIRTIO_RECEIVE_XDP_SPLIT),
        max_buffers=k.build.max_skb_frags + 1,
        len_check=k.has(MERGEABLE_LEN_CHECK),
        meta=Meta(s.xdp_meta, k.value(XDP_METALEN_MAX), True),
        posted_before=s.xdp_posted_before,
        fwd_limit=fwd_limit(s.mtu),
    )
