"""``--kernel running``: the profile of the kernel this process runs on, from what it exposes
(vnetrx.kernel stays pure: this module reads the machine).

Reads (each optional except the release): ``uname -r``; ``/proc/version`` (Debian prints the real
point release there); the page size; the L1 line size from sysfs; skbuff_small_head's object size
from /sys/kernel/slab; CONFIG_MAX_SKB_FRAGS from /proc/config.gz or /boot/config-<release>.
"""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

from vnetrx.errors import VnetrxError
from vnetrx.kernel.build import MAX_HEADER_BY_CONFIG, BuildConfig, max_header_from_kconfig
from vnetrx.kernel.presets import preset_for
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import profile_for
from vnetrx.kernel.version import parse_release

# /proc/version (Debian): "... (gcc-12 (Debian 12.2.0-14) 12.2.0, ...) #1 SMP PREEMPT_DYNAMIC
# Debian 6.1.106-3 (2024-08-26)": the compiler's version comes first, so the point release is the
# "Debian X.Y.Z" of the kernel's own series
_DEBIAN_POINT = re.compile(r"Debian (\d+\.\d+\.\d+)")
# /proc/version_signature (Ubuntu): "Ubuntu <package version>-<flavour> <upstream X.Y.Z>", e.g.
# "Ubuntu 4.15.0-55.60~16.04.2-generic 4.15.18"; libbpf's get_kernel_version reads the same
# third field (tools/lib/bpf/libbpf.c:get_kernel_version, sscanf "%*s %*s %u.%u.%u")
_UBUNTU_POINT = re.compile(r"^Ubuntu \S+ (\d+\.\d+\.\d+)\s*$")


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def _kconfig(release: str) -> tuple[str | None, str]:
    data = None
    try:
        data = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode()
        return data, "/proc/config.gz"
    except OSError:
        pass
    path = f"/boot/config-{release}"
    return _read(path), path


def running_profile(root: str = "", config: str | None = None) -> KernelProfile:
    """Profile the running kernel. ``root`` prefixes every path (tests point it at a fake tree).

    MAX_HEADER comes from the machine's .config (/proc/config.gz, /boot/config-<release>) when
    one is readable; else from the release string's distribution preset (or debian), and the
    source says it was assumed. ``config`` (--config) replaces both, and the source says so."""
    release = (
        os.uname().release
        if not root
        else (_read(root + "/proc/sys/kernel/osrelease") or "").strip()
    )
    if not release:
        raise VnetrxError("cannot read the running kernel's release (uname -r)")
    parsed = parse_release(release)
    read: list[str] = [f"release {release} (uname -r)"]
    if not parsed.point_known:
        for path, pattern in (("/proc/version_signature", _UBUNTU_POINT),
                              ("/proc/version", _DEBIAN_POINT)):
            series = f"{parsed.version.major}.{parsed.version.minor}."
            point = next((m.group(1) for m in pattern.finditer(_read(root + path) or "")
                          if m.group(1).startswith(series)), None)
            if point is not None:
                distro = parsed.distro._replace(point_known=True) if parsed.distro else None
                parsed = parse_release(point)._replace(text=release, local="", distro=distro)
                read.append(f"point release {point} ({path})")
                break
    build = BuildConfig(page_size=os.sysconf("SC_PAGE_SIZE"), config="running")
    read.append(f"PAGE_SIZE {build.page_size} (sysconf)")
    line = _read(root + "/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
    if line and line.strip().isdigit():
        build = build._replace(l1_cache_bytes=int(line))
        read.append(f"L1 line {int(line)} (sysfs coherency_line_size)")
    small = _read(root + "/sys/kernel/slab/skbuff_small_head/object_size")
    if small and small.strip().isdigit():
        build = build._replace(small_head_observed=int(small))
        read.append(f"skbuff_small_head object {int(small)} (/sys/kernel/slab)")
    kconfig, config_path = (
        _kconfig(release) if not root else (_read(root + "/proc/config"), "config")
    )
    if kconfig:
        max_header = max_header_from_kconfig(kconfig)
        build = build._replace(max_header=max_header)
        read.append(f"MAX_HEADER {max_header} ({config_path})")
        frags = re.search(r"^CONFIG_MAX_SKB_FRAGS=(\d+)", kconfig, re.M)
        if frags:
            build = build._replace(max_skb_frags=int(frags.group(1)))
            read.append(f"CONFIG_MAX_SKB_FRAGS={frags.group(1)} ({config_path})")
    if config is not None:
        read.append(f"MAX_HEADER {MAX_HEADER_BY_CONFIG[config]} from --config {config}"
                    + (" in place of the machine's .config" if kconfig else "")
                    + ("; skbuff_small_head computed from it, not the slab's"
                       if build.small_head_observed is not None else ""))
        build = build._replace(config=config, max_header=MAX_HEADER_BY_CONFIG[config],
                               small_head_observed=None)
    elif not kconfig:
        name = preset_for(parsed.distro, parsed.version.series).preset.name
        build = build._replace(config=name, max_header=MAX_HEADER_BY_CONFIG[name])
        read.append(f"no .config readable (/proc/config.gz, /boot/config-{release}): "
                    f"MAX_HEADER {build.max_header} from the {name} preset, assumed")
    build = _btf_sizes(root + "/sys/kernel/btf/vmlinux", build, read)
    return profile_for(parsed, build, source="running: " + "; ".join(read))


def _btf_sizes(path: str, build: BuildConfig, read: list[str]) -> BuildConfig:
    """sizeof(struct sk_buff), sizeof(struct skb_shared_info) and MAX_SKB_FRAGS (the length of
    skb_shared_info.frags) from the kernel's own BTF; BTF's MAX_SKB_FRAGS wins over the config's,
    since it is what the kernel was compiled with.

    Without BTF (CONFIG_DEBUG_INFO_BTF=n) the BuildConfig defaults stay: only SKB_DATA_ALIGN of
    sk_buff (256 for any size 193..256) and the modelled skb_shared_info layout enter formulas.
    """
    if not os.path.exists(path):
        read.append("no BTF: sizeof(sk_buff) assumed 224 and skb_shared_info from the layout")
        return build
    from vnetrx.errors import LayoutError
    from vnetrx.layouts.btf import load_btf
    from vnetrx.layouts.btf_format import GrammarBtf

    try:
        btf = load_btf(path, reader=GrammarBtf)
        sk_buff, shinfo = btf.struct("sk_buff").size, btf.struct("skb_shared_info").size
        frags = btf.member("skb_shared_info", "frags")
        max_skb_frags = None if frags is None else btf.array_length(frags.type_id)
    except (LayoutError, KeyError) as exc:
        read.append(f"BTF unreadable ({exc}): sizeof(sk_buff) assumed 224")
        return build
    read.append(f"sizeof(sk_buff) {sk_buff}, sizeof(skb_shared_info) {shinfo} ({path})")
    build = build._replace(sk_buff_size=sk_buff)
    if max_skb_frags:
        if build.max_skb_frags and build.max_skb_frags != max_skb_frags:
            read.append(f"config says MAX_SKB_FRAGS {build.max_skb_frags}, BTF {max_skb_frags}")
        read.append(f"MAX_SKB_FRAGS {max_skb_frags} (BTF: skb_shared_info.frags)")
        build = build._replace(max_skb_frags=max_skb_frags)
    return build
