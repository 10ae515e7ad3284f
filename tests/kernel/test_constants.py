"""vnetrx/kernel/constants.py and KernelProfile.value(): each number as the kernel defines it,
in the releases that define it that way."""

from __future__ import annotations

import pytest

from vnetrx.kernel.changes import TUN_ALLOC_SKB_BIG_PAGED
from vnetrx.kernel.constants import (
    CONSTANTS,
    GOOD_COPY_LEN,
    GOOD_PACKET_LEN,
    NAPI_POLL_WEIGHT,
    SKB_FRAG_PAGE_BYTES,
    TUN_ALLOC_MAX_PAGE_ORDER,
    TUN_BUILD_XDP_HEADROOM,
    XDP_PACKET_HEADROOM,
    Constant,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import SERIES, lookup
from vnetrx.kernel.version import v


@pytest.mark.parametrize("series", SERIES, ids=lambda s: s.name)
def test_fixed_numbers(series: object) -> None:
    """drivers/net/virtio_net.c (every release read, 5.12.9 … 7.3.4): GOOD_PACKET_LEN = ETH_HLEN
    + VLAN_HLEN + ETH_DATA_LEN = 1518, GOOD_COPY_LEN 128; include/uapi/linux/bpf.h
    XDP_PACKET_HEADROOM 256; netdevice.h NAPI_POLL_WEIGHT 64; sock.h: 32 KiB page frags."""
    k = lookup(series.name)  # type: ignore[attr-defined]
    assert (k.value(GOOD_PACKET_LEN), k.value(GOOD_COPY_LEN), k.value(XDP_PACKET_HEADROOM),
            k.value(NAPI_POLL_WEIGHT), k.value(SKB_FRAG_PAGE_BYTES)) == (1518, 128, 256, 64, 32768)


@pytest.mark.parametrize(("kernel", "counted"), [
    # 59eeb2329405 (6.5; stable 6.1.46, here 6.1.192): tun_can_build_skb counts 256 bytes of XDP
    # headroom whether or not a program is attached (docs/kernel/tun-tap.md §5)
    ("5.15", 0), ("6.1.0", 0), ("6.1", 256), ("6.6", 256), ("6.18", 256),
])
def test_tun_build_counts_the_xdp_headroom(kernel: str, counted: int) -> None:
    assert lookup(kernel).value(TUN_BUILD_XDP_HEADROOM) == counted


@pytest.mark.parametrize(("kernel", "order"), [("6.1", 0), ("6.6", 3), ("7.3", 3)])
def test_tun_alloc_page_order(kernel: str, order: int) -> None:
    """ce7c7fef1473 (6.6): tun_alloc_skb's frags up to PAGE_ALLOC_COSTLY_ORDER (3)."""
    assert lookup(kernel).value(TUN_ALLOC_MAX_PAGE_ORDER) == order


def test_a_value_keyed_by_a_release_applies_from_it_on() -> None:
    """A kernel whose only difference is a number is a ``since`` entry keyed by its release."""
    bigger = Constant("GOOD_COPY_LEN", "drivers/net/virtio_net.c", 128, since=((v("7.3"), 256),))
    assert KernelProfile(v("7.2.13"))._value_of(bigger) == 128
    assert KernelProfile(v("7.3.0"))._value_of(bigger) == 256
    assert KernelProfile(v("8.0"))._value_of(bigger) == 256
    keyed = Constant("x", "y", 0, since=((TUN_ALLOC_SKB_BIG_PAGED, 3),))
    assert KernelProfile(v("6.5"))._value_of(keyed) == 0
    assert KernelProfile(v("6.6"))._value_of(keyed) == 3


def test_names_are_unique() -> None:
    assert len({c.name for c in CONSTANTS}) == len(CONSTANTS)
