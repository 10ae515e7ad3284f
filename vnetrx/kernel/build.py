"""Build configuration: the axis of a kernel that ``.config`` and the architecture decide."""

from __future__ import annotations

from dataclasses import dataclass

# MAX_HEADER (include/linux/netdevice.h) = LL_MAX_HEADER (+48 with IPIP/GRE/SIT/IPv6 tunnels).
# LL_MAX_HEADER is 128 with HYPERV_NET=y or WLAN+MAC80211_MESH, 96 with WLAN or AX25, else 32.
# Values per config preset: virtio-rx.md §2.2 and tap-and-tx-headroom.md §B.4.
MAX_HEADER_BY_CONFIG: dict[str, int] = {
    "debian": 176,  # Debian amd64: WLAN=y, MAC80211_MESH=y (LL_MAX_HEADER 128), tunnels=m (+48)
    "debian-cloud": 80,  # Debian cloud-amd64: no WLAN (32), tunnels=m (+48)
    "minimal": 32,  # no WLAN/HYPERV/tunnels (this machine's 6.18.44 config)
}


@dataclass(frozen=True)
class BuildConfig:
    """What the architecture and ``.config`` fix. Defaults: x86_64, 4 KiB pages, Debian config."""

    arch: str = "x86_64"
    page_size: int = 4096  # PAGE_SIZE
    l1_cache_bytes: int = 64  # L1_CACHE_BYTES = SMP_CACHE_BYTES (CONFIG_X86_L1_CACHE_SHIFT=6)
    net_ip_align: int = 0  # NET_IP_ALIGN: 0 on x86 and arm64 (asm/processor.h); 2 elsewhere
    max_skb_frags: int = 17  # MAX_SKB_FRAGS (CONFIG_MAX_SKB_FRAGS from 6.4, default 17)
    # sizeof(struct sk_buff): 224 in 6.18.44's BTF. Only SKB_DATA_ALIGN of it (256) enters any
    # formula, and that holds for every size 193..256, which covers all profiled kernels.
    sk_buff_size: int = 224
    config: str = "debian"  # which preset MAX_HEADER (and so the small-head cache) comes from
    max_header: int = MAX_HEADER_BY_CONFIG["debian"]
    # skbuff_small_head object size when it was read off a running kernel (/sys/kernel/slab);
    # None: computed from max_header by the version's SKB_SMALL_HEAD_CACHE_SIZE formula.
    small_head_observed: int | None = None
