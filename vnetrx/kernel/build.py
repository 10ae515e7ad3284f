"""Build configuration: the axis of a kernel that ``.config`` and the architecture decide."""

from __future__ import annotations

import re
from collections.abc import Mapping

# Plain data, importable without dataclasses (the fast `vnetrx layout` entry reads it).
from vnetrx.kernel.arches import ARCHES, DEFAULT_ARCH, MAX_HEADER_BY_CONFIG, PAGE_SIZES
from vnetrx.records import NamedTuple

__all__ = [
    "ARCHES",
    "DEFAULT_ARCH",
    "MAX_HEADER_BY_CONFIG",
    "PAGE_SIZES",
    "BuildConfig",
    "build_config",
    "max_header_from_kconfig",
    "max_header_of",
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
    )


def max_header_from_kconfig(config: str) -> int:
    """MAX_HEADER as include/linux/netdevice.h computes it from the .config text."""
    values = dict(re.findall(r"^CONFIG_(\w+)=(\S+)", config, re.M))
    return max_header_of(values)


def max_header_of(values: Mapping[str, str]) -> int:
    """MAX_HEADER from Kconfig values (symbol without CONFIG_ -> "y", "m"; absent: not set),
    as include/linux/netdevice.h @6.1.192/@6.12.117 computes it:

        #if defined(CONFIG_HYPERV_NET)                        -> LL_MAX_HEADER 128
        #elif defined(CONFIG_WLAN) || IS_ENABLED(CONFIG_AX25)
        # if defined(CONFIG_MAC80211_MESH)                    -> 128
        # else                                                -> 96
        #else                                                 -> 32
        MAX_HEADER = LL_MAX_HEADER + 48 if any of NET_IPIP, NET_IPGRE, IPV6_SIT, IPV6_TUNNEL
                     IS_ENABLED (y or m)

    defined() is true for =y only (a module defines CONFIG_X_MODULE): a modular HYPERV_NET does
    not count. WLAN and MAC80211_MESH are bool symbols. (The HYPERV_NET clause is absent
    @3.16.0; every preset with HYPERV_NET=y is a 6.x kernel.)"""

    def on(name: str, modules: bool = False) -> bool:
        value = values.get(name)
        return value == "y" or (modules and value == "m")

    if on("HYPERV_NET"):
        ll_max_header = 128
    elif on("WLAN") or on("AX25", modules=True):
        ll_max_header = 128 if on("MAC80211_MESH") else 96
    else:
        ll_max_header = 32
    tunnels = any(on(t, modules=True) for t in ("NET_IPIP", "NET_IPGRE", "IPV6_SIT", "IPV6_TUNNEL"))
    return ll_max_header + (48 if tunnels else 0)
