"""The kernel's numbers, declared once.

Two kinds:

* protocol facts that no kernel release changes (the Ethernet header is 14 bytes): plain
  module constants, each with the header that defines it;
* the kernel's own tunables, macros and limits (``GOOD_COPY_LEN``, ``UDP_MAX_SEGMENTS``…):
  ``Constant`` rows with a value per version. Code reads them with ``KernelProfile.value()``
  (the virtio receive path through ``paths.virtio_net.setup.Config``, where they are resolved
  once). A kernel whose only difference is a number is one more entry in ``since`` here, plus
  its series in ``registry.SERIES``.

A value keyed by a ``Change`` follows that change's mainline releases and stable backports; a
value keyed by a ``KernelVersion`` applies from that release on (every later series too).
Sources: docs/kernel/skbuff.md §2, docs/kernel/virtio-net-rx.md §3-§5, docs/kernel/tun-tap.md.
"""

from __future__ import annotations

from typing import Final, Union

from vnetrx.kernel.changes import (
    TUN_ALLOC_SKB_BIG_PAGED,
    TUN_BUILD_SKB_XDP_HEADROOM_LIMIT,
    UDP_MAX_SEGMENTS_128,
    XDP_METADATA_252,
    Change,
)
from vnetrx.kernel.version import KernelVersion
from vnetrx.records import NamedTuple

# --- protocol facts ---------------------------------------------------------------------
ETH_HLEN: Final = 14  # include/uapi/linux/if_ether.h
ETH_DATA_LEN: Final = 1500  # include/uapi/linux/if_ether.h
VLAN_HLEN: Final = 4  # include/linux/if_vlan.h
IP_MAX_MTU: Final = 0xFFFF  # include/net/ip.h
INT_MAX: Final = 2**31 - 1
U16_MAX: Final = 0xFFFF

Since = Union[Change, KernelVersion]  # noqa: UP007  (a runtime alias: py3.10 needs Union)


class Constant(NamedTuple):
    """One of the kernel's numbers, with the value it has in each modelled release."""

    name: str  # as the kernel spells it
    source: str  # where it is defined
    default: int  # the value in every modelled kernel before the first ``since`` entry
    since: tuple[tuple[Since, int], ...] = ()  # (from this change or release on, value), oldest first
    note: str = ""


GOOD_PACKET_LEN = Constant(
    "GOOD_PACKET_LEN",
    "drivers/net/virtio_net.c",
    ETH_HLEN + VLAN_HLEN + ETH_DATA_LEN,  # 1518
    note="ETH_HLEN + VLAN_HLEN + ETH_DATA_LEN: the frame a small-mode buffer holds",
)
GOOD_COPY_LEN = Constant(
    "GOOD_COPY_LEN",
    "drivers/net/virtio_net.c",
    128,
    note="page_to_skb copies frames up to this length, and napi_alloc_skb()s this much head",
)
SKB_FRAG_PAGE_BYTES = Constant(
    "32768 (SKB_FRAG_PAGE_ORDER = get_order(32768))",
    "net/core/sock.c (include/net/sock.h from 6.x)",
    32768,
    note="the size of a page_frag page (sk_page_frag, rq->alloc_frag) on 4 KiB pages",
)
XDP_PACKET_HEADROOM = Constant(
    "XDP_PACKET_HEADROOM",
    "include/uapi/linux/bpf.h",
    256,
    note="VIRTIO_XDP_HEADROOM in virtio_net.c up to 6.11 has the same value",
)
XDP_FRAME_SIZE = Constant(
    "sizeof(struct xdp_frame)",
    "include/net/xdp.h",
    32,
    since=((KernelVersion(5, 18, None), 40),),
    note="40 with the flags member of the 5.18 multi-buffer XDP series; read: 32 in 5.15.0, 40 "
    "in 6.1.192, 6.12.117 and on 6.18.44 (pahole); the exact first release of 40 is inferred",
)
XDP_METALEN_MAX = Constant(
    "the largest metadata xdp_metalen_invalid() allows",
    "include/net/xdp.h",
    32,
    since=((XDP_METADATA_252, 252),),
    note="(metalen & 3) || metalen > 32, then !IS_ALIGNED(metalen, 4) || metalen > "
    "type_max(skb_shared_info.meta_len) (255)",
)
NAPI_POLL_WEIGHT = Constant(
    "NAPI_POLL_WEIGHT",
    "include/linux/netdevice.h",
    64,
    note="virtio_net's napi_weight module parameter defaults to it",
)
PAGE_ALLOC_COSTLY_ORDER = Constant("PAGE_ALLOC_COSTLY_ORDER", "include/linux/mmzone.h", 3)
TUN_BUILD_XDP_HEADROOM = Constant(
    "XDP_PACKET_HEADROOM in tun_can_build_skb's size test",
    "drivers/net/tun.c:tun_can_build_skb",
    0,
    since=((TUN_BUILD_SKB_XDP_HEADROOM_LIMIT, 256),),
    note="counted whether or not a program is attached (59eeb2329405)",
)
TUN_ALLOC_MAX_PAGE_ORDER = Constant(
    "the largest page order tun_alloc_skb's frags may use",
    "drivers/net/tun.c:tun_alloc_skb",
    0,
    since=((TUN_ALLOC_SKB_BIG_PAGED, PAGE_ALLOC_COSTLY_ORDER.default),),
    note="order-0 pages before ce7c7fef1473; PAGE_ALLOC_COSTLY_ORDER after",
)
UDP_MAX_SEGMENTS = Constant(
    "UDP_MAX_SEGMENTS",
    "include/linux/udp.h",
    64,
    since=((UDP_MAX_SEGMENTS_128, 128),),
    note="(1 << 6UL), then (1 << 7UL): the most segments a USO skb may carry",
)
TCP_MIN_GSO_SIZE = Constant(
    "TCP_MIN_GSO_SIZE",
    "include/net/tcp.h",
    8,
    note="TCP_MIN_SND_MSS (48) - MAX_TCP_OPTION_SPACE (40)",
)

VHOST_NET_BATCH = Constant(
    "VHOST_NET_BATCH",
    "drivers/vhost/net.c",
    64,
    note="the xdp_buffs handle_tx_copy batches before vhost_tx_batch sends them (and the "
    "ptr_ring batch handle_rx consumes)",
)
VHOST_NET_WEIGHT = Constant(
    "VHOST_NET_WEIGHT",
    "drivers/vhost/net.c",
    0x80000,
    note="bytes handle_tx/handle_rx move before vhost_exceeds_weight requeues the work",
)
VHOST_NET_PKT_WEIGHT = Constant(
    "VHOST_NET_PKT_WEIGHT",
    "drivers/vhost/net.c",
    256,
    note="packets handle_tx/handle_rx move before vhost_exceeds_weight requeues the work",
)
VHOST_GOODCOPY_LEN = Constant(
    "VHOST_GOODCOPY_LEN",
    "drivers/vhost/net.c",
    256,
    note="handle_tx_zerocopy copies shorter frames; longer ones are sent zerocopy",
)

CONSTANTS: tuple[Constant, ...] = (
    GOOD_PACKET_LEN,
    GOOD_COPY_LEN,
    SKB_FRAG_PAGE_BYTES,
    XDP_PACKET_HEADROOM,
    XDP_FRAME_SIZE,
    XDP_METALEN_MAX,
    NAPI_POLL_WEIGHT,
    PAGE_ALLOC_COSTLY_ORDER,
    TUN_BUILD_XDP_HEADROOM,
    TUN_ALLOC_MAX_PAGE_ORDER,
    UDP_MAX_SEGMENTS,
    TCP_MIN_GSO_SIZE,
    VHOST_NET_BATCH,
    VHOST_NET_WEIGHT,
    VHOST_NET_PKT_WEIGHT,
    VHOST_GOODCOPY_LEN,
)
