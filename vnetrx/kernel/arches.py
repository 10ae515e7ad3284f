"""What an architecture and a config preset fix, as plain data (no imports: the fast
``vnetrx layout`` entry reads the default cache line from here without loading dataclasses)."""

from __future__ import annotations

DEFAULT_ARCH = "x86_64"

# MAX_HEADER (include/linux/netdevice.h) = LL_MAX_HEADER (+48 with IPIP/GRE/SIT/IPv6 tunnels).
# LL_MAX_HEADER is 128 with HYPERV_NET=y, or with WLAN=y or AX25 (y/m) plus MAC80211_MESH=y; 96
# with WLAN=y or AX25 alone; else 32. Values per .config preset: the Kconfig symbols behind each
# number, and the real config files they were read from, are in vnetrx/kernel/presets.py.
MAX_HEADER_BY_CONFIG: dict[str, int] = {
    "debian": 176,  # Debian amd64/arm64: WLAN=y, MAC80211_MESH=y (LL_MAX_HEADER 128), tunnels=m
    "debian-cloud": 80,  # Debian cloud-amd64: no WLAN (32), tunnels=m (+48)
    "ubuntu": 176,  # Ubuntu generic (and gcp): WLAN=y, MAC80211_MESH=y, tunnels=m
    "ubuntu-azure": 176,  # Ubuntu azure: no WLAN, but AX25=m with MAC80211_MESH=y (128), tunnels=m
    "rhel": 144,  # RHEL 8-10/CentOS Stream x86_64 (and 9/10 aarch64): WLAN=y, no MESH (96), +48
    "rhel8-aarch64": 80,  # RHEL 8 aarch64 (64 KiB pages): no WLAN (32), tunnels=m
    "fedora": 176,  # Fedora: WLAN=y, MAC80211_MESH=y, tunnels=m
    "amzn2": 80,  # Amazon Linux 2, kernel 4.14: no WLAN (32), tunnels=m
    "azurelinux": 176,  # Azure Linux 3.0, kernel 6.6: HYPERV_NET=y (128), tunnels=m
    "cbl-mariner": 144,  # CBL-Mariner 1.0, kernel 5.10: WLAN=y, no MESH (96), tunnels=m
    "cos": 176,  # Container-Optimized OS 109-121: HYPERV_NET=y (128), IPIP/IPV6_TUNNEL=m
    "minimal": 32,  # no WLAN/HYPERV/tunnels (this machine's 6.18.44 config)
}


ARCHES: dict[str, dict[str, int]] = {
    # arch/x86/include/asm/cache.h (L1_CACHE_SHIFT = CONFIG_X86_L1_CACHE_SHIFT = 6 for
    # GENERIC_CPU), asm/processor.h (NET_IP_ALIGN 0)
    "x86_64": {"l1_cache_bytes": 64, "net_ip_align": 0, "page_pool_frag_align": 8},
    # arch/arm64/include/asm/cache.h @6.1/@6.12/@7.3: L1_CACHE_SHIFT 6, ARCH_DMA_MINALIGN 128;
    # asm/processor.h: NET_IP_ALIGN 0 (for 5.12-5.15 the cache line was not checked: assumed 64)
    "arm64": {"l1_cache_bytes": 64, "net_ip_align": 0, "page_pool_frag_align": 128},
}
PAGE_SIZES = {"4k": 4096, "16k": 16384, "64k": 65536}
