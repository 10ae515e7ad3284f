"""Build configuration: the axis of a kernel that ``.config`` and the architecture decide."""

from __future__ import annotations

import re

# Plain data, importable without dataclasses (the fast `vnetrx layout` entry reads it).
from vnetrx.kernel.arches import (
    ARCHES,
    DEFAULT_ARCH,
    MAX_HEADER_BY_CONFIG,
    PAGE_SIZES,
    VLAN_8021Q_BY_CONFIG,
)
from vnetrx.records import NamedTuple

__all__ = [
    "ARCHES",
    "DEFAULT_ARCH",
    "MAX_HEADER_BY_CONFIG",
    "PAGE_SIZES",
    "BuildConfig",
    "build_config",
    "max_header_from_kconfig",
    "vlan_8021q_from_kconfig",
]


class BuildConfig(NamedTuple):
    """What the architecture and ``.config`` fix. Defaults: x86_64, 4 KiB pages, Debian config."""

    arch: str = DEFAULT_ARCH
    page_size: int = 4096  # PAGE_SIZE
    # L1_CACHE_BYTES = SMP_CACHE_BYTES (CONFIG_X86_L1_CACHE_SHIFT=6)
    l1_cache_bytes: int = ARCHES[DEFAULT_ARCH]["l1_cache_bytes"]
    net_ip_align: int = 0  # NET_IP_ALIGN: 0 on x86 and arm64 (asm/processor.h); 2 elsewhere
    # MAX_SKB_FRAGS; 0 = the kernel's own default, resolved by KernelProfile: before 6.4
    # max(16, 65536 / PAGE_SIZE + 1), from 6.4 CONFIG_MAX_SKB_FRAGS (17 by default)
    max_skb_frags: int = 0
    # page_pool_alloc_frag alignment: max(dma_get_cache_alignment(), alignof(skb_shared_info));
    # 8 on x86, ARCH_DMA_MINALIGN = 128 on arm64 (net/core/page_pool.c @7.3.4)
    page_pool_frag_align: int = 8
    # sizeof(struct sk_buff): 224 in 6.18.44's BTF. Only SKB_DATA_ALIGN of it (256) enters any
    # formula, and that holds for every size 193..256, which covers all profiled kernels.
    sk_buff_size: int = 224
    config: str = "debian"  # which preset MAX_HEADER (and so the small-head cache) comes from
    max_header: int = MAX_HEADER_BY_CONFIG["debian"]
    # skbuff_small_head object size when it was read off a running kernel (/sys/kernel/slab);
    # None: computed from max_header by the version's SKB_SMALL_HEAD_CACHE_SIZE formula.
    small_head_observed: int | None = None
    # CONFIG_VLAN_8021Q y or m: vlan_gro_receive is registered (VLAN_8021Q_BY_CONFIG)
    vlan_8021q: bool = True


def build_config(
    arch: str = DEFAULT_ARCH,
    page_size: int = 4096,
    l1_cache_bytes: int | None = None,
    max_skb_frags: int = 0,
    config: str = "debian",
) -> BuildConfig:
    """A build for ``arch`` with its defaults, overridden where given."""
    defaults = ARCHES[arch]
    return BuildConfig(
        arch=arch,
        page_size=page_size,
        l1_cache_bytes=l1_cache_bytes or defaults["l1_cache_bytes"],
        net_ip_align=defaults["net_ip_align"],
        max_skb_frags=max_skb_frags,
        page_pool_frag_align=defaults["page_pool_frag_align"],
        config=config,
        max_header=MAX_HEADER_BY_CONFIG[config],
        vlan_8021q=VLAN_8021Q_BY_CONFIG[config],
    )


def vlan_8021q_from_kconfig(config: str) -> bool:
    """CONFIG_VLAN_8021Q=y or =m: vlan_core.o (vlan_gro_receive) is built in."""
    return re.search(r"^CONFIG_VLAN_8021Q=[ym]", config, re.M) is not None


def max_header_from_kconfig(config: str) -> int:
    """MAX_HEADER as include/linux/netdevice.h computes it from the .config."""

    def on(name: str, modules: bool = False) -> bool:
        value = re.search(rf"^CONFIG_{name}=([ym])", config, re.M)
        return value is not None and (value.group(1) == "y" or modules)

    if on("HYPERV_NET") or (on("WLAN") and on("MAC80211_MESH")):
        ll_max_header = 128
    elif on("WLAN") or on("AX25", modules=True):
        ll_max_header = 96
    else:
        ll_max_header = 32
    tunnels = any(on(t, modules=True) for t in ("NET_IPIP", "NET_IPGRE", "IPV6_SIT", "IPV6_TUNNEL"))
    return ll_max_header + (48 if tunnels else 0)
