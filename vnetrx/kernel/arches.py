"""What an architecture and a config preset fix, as plain data (no imports: the fast
``vnetrx layout`` entry reads the default cache line from here without loading dataclasses)."""

from __future__ import annotations

DEFAULT_ARCH = "x86_64"

# MAX_HEADER (include/linux/netdevice.h) = LL_MAX_HEADER (+48 with IPIP/GRE/SIT/IPv6 tunnels).
# LL_MAX_HEADER is 128 with HYPERV_NET=y or WLAN+MAC80211_MESH, 96 with WLAN or AX25, else 32.
# Values per config preset: docs/kernel/skbuff.md §4.6 and docs/kernel/tx-headroom.md §5.2.
MAX_HEADER_BY_CONFIG: dict[str, int] = {
    "debian": 176,  # Debian amd64: WLAN=y, MAC80211_MESH=y (LL_MAX_HEADER 128), tunnels=m (+48)
    "debian-cloud": 80,  # Debian cloud-amd64: no WLAN (32), tunnels=m (+48)
    "minimal": 32,  # no WLAN/HYPERV/tunnels (this machine's 6.18.44 config)
}
# CONFIG_VLAN_8021Q y or m: net/8021q/Makefile builds vlan_core.o in (obj-$(subst m,y,...)),
# and its fs_initcall vlan_offload_init registers vlan_gro_receive for ETH_P_8021Q and
# ETH_P_8021AD. Debian amd64 and cloud-amd64 6.1.0-57 and 6.12.x configs: =m; this machine's
# 6.18.44 (/proc/config.gz): not set.
VLAN_8021Q_BY_CONFIG: dict[str, bool] = {"debian": True, "debian-cloud": True, "minimal": False}


ARCHES: dict[str, dict[str, int]] = {
    # arch/x86/include/asm/cache.h (L1_CACHE_SHIFT = CONFIG_X86_L1_CACHE_SHIFT = 6 for
    # GENERIC_CPU), asm/processor.h (NET_IP_ALIGN 0)
    "x86_64": {"l1_cache_bytes": 64, "net_ip_align": 0, "page_pool_frag_align": 8},
    # arch/arm64/include/asm/cache.h @6.1/@6.12/@7.3: L1_CACHE_SHIFT 6, ARCH_DMA_MINALIGN 128;
    # asm/processor.h: NET_IP_ALIGN 0 (for 5.12-5.15 the cache line was not checked: assumed 64)
    "arm64": {"l1_cache_bytes": 64, "net_ip_align": 0, "page_pool_frag_align": 128},
}
PAGE_SIZES = {"4k": 4096, "16k": 16384, "64k": 65536}
