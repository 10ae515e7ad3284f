"""Each distribution's own .config preset: the Kconfig values that change vnetrx's numbers, and
the real config files they were read from. Pure data plus the choice of a preset for a
distribution kernel (vnetrx.kernel.distro says which distribution a release string is).

What a preset fixes is MAX_HEADER (include/linux/netdevice.h; vnetrx.kernel.build.max_header_of),
which sizes MAX_TCP_HEADER, GRO_MAX_HEAD and so the skbuff_small_head cache. Every config read
here also has CONFIG_X86_L1_CACHE_SHIFT=6 on x86_64 (64-byte lines, the BuildConfig default) and,
from 6.2 on, CONFIG_MAX_SKB_FRAGS=17 (the kernel's default, which vnetrx already uses): neither
differs between distributions. Page size differs on arm64 only (``page_size`` below).

Sources (each value below cites one of them):

* [deb] Debian's own packages, read with apt-get download (/boot/config-*):
  linux-image-6.1.0-57-amd64-unsigned 6.1.192-3, linux-image-6.1.0-57-cloud-amd64-unsigned
  6.1.192-3, linux-image-6.12.107+deb12-amd64-unsigned and
  linux-image-6.12.107+deb12-cloud-amd64-unsigned (bookworm-security).
* [khc] Distribution config files collected by a13xp0p0v/kernel-hardening-checker, directory
  kernel_hardening_checker/config_files/distros/, named per file with the commit that holds it;
  the gcp_projects_* files are the configs of Google Cloud's public images (GCE guests).
"""

from __future__ import annotations

from vnetrx.kernel.arches import MAX_HEADER_BY_CONFIG
from vnetrx.kernel.distro import Distro
from vnetrx.records import NamedTuple

# The symbols include/linux/netdevice.h reads for LL_MAX_HEADER and MAX_HEADER
SYMBOLS = ("WLAN", "MAC80211_MESH", "AX25", "HYPERV_NET", "NET_IPIP", "NET_IPGRE", "IPV6_SIT",
           "IPV6_TUNNEL")


class Preset(NamedTuple):
    """One distribution's (or flavour's) .config, as far as vnetrx's numbers depend on it."""

    name: str  # the --config choice
    title: str  # what it is, for notes: "Ubuntu generic"
    values: tuple[tuple[str, str], ...]  # SYMBOLS that are set: (symbol, "y" | "m")
    sources: str  # the config files the values were read from
    series: frozenset[tuple[int, int]] | None  # kernel series read; None: the distribution's all
    page_size: int = 4096  # PAGE_SIZE of that build
    arch: str = "x86_64"

    @property
    def max_header(self) -> int:
        return MAX_HEADER_BY_CONFIG[self.name]

    def symbols(self) -> str:
        """The values as a .config would say them: "WLAN=y, MAC80211_MESH=y, ..."."""
        return ", ".join(f"{k}={v}" for k, v in self.values)


_TUNNELS_M = (("NET_IPIP", "m"), ("NET_IPGRE", "m"), ("IPV6_SIT", "m"), ("IPV6_TUNNEL", "m"))
_KHC = "a13xp0p0v/kernel-hardening-checker config_files/distros/"

PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset(
        # [deb] config-6.1.0-57-amd64 (6.1.192-3) and config-6.12.107+deb12-amd64: WLAN=y,
        # MAC80211_MESH=y, AX25=m, HYPERV_NET=m, the four tunnels =m; the same in [khc]
        # Debian_13_Trixie_x86_64.config @6b73f7c4eb80 (6.12.43) and
        # Debian_12_Bookworm_aarch64.config @c59848d084c7 (6.1.129, 4 KiB pages)
        "debian", "Debian amd64/arm64",
        (("WLAN", "y"), ("MAC80211_MESH", "y"), ("AX25", "m"), ("HYPERV_NET", "m"), *_TUNNELS_M),
        "Debian's config-6.1.0-57-amd64 (6.1.192-3) and config-6.12.107+deb12-amd64",
        None),
    Preset(
        # [deb] config-6.1.0-57-cloud-amd64 (6.1.192-3), config-6.12.107+deb12-cloud-amd64:
        # "# CONFIG_WLAN is not set", no AX25, HYPERV_NET=m, the four tunnels =m; the same in
        # [khc] gcp_projects_debian-cloud_..._debian-12-bookworm-v20250415.config (6.1.133) and
        # ..._debian-11-bullseye-v20250415.config (5.10.234) @6bf6b0cd9107
        "debian-cloud", "Debian cloud-amd64",
        (("HYPERV_NET", "m"), *_TUNNELS_M),
        "Debian's config-6.1.0-57-cloud-amd64 (6.1.192-3) and "
        "config-6.12.107+deb12-cloud-amd64", None),
    Preset(
        # [khc] Ubuntu_22.04_LTS_Jammy_x86_64.config @c59848d084c7 ("Ubuntu 5.15.0-25.25-generic
        # 5.15.30"), Ubuntu_24.04_LTS_Noble_x86_64.config @07ef006bd54a ("Ubuntu
        # 6.8.0-31.31-generic 6.8.1"), Ubuntu_24.10_Oracular_x86_64 / Ubuntu_25.04_Plucky_x86_64
        # @c59848d084c7 (6.11, 6.14), Ubuntu_24.04_LTS_Noble_aarch64 @07ef006bd54a (4 KiB
        # pages): WLAN=y, MAC80211_MESH=y, AX25=m, HYPERV_NET=m, tunnels =m. The gcp flavour
        # has the same values: gcp_projects_ubuntu-os-cloud_..._ubuntu-2204-jammy-v20250430
        # ("Ubuntu 6.8.0-1028.30~22.04.1-gcp 6.8.12"), ..._ubuntu-2404-noble-amd64-v20250502a
        # ("Ubuntu 6.11.0-1014.14~24.04.1-gcp 6.11.11"), ..._ubuntu-2004-focal-v20250425
        # ("Ubuntu 5.15.0-1081.90~20.04.1-gcp 5.15.178") @6bf6b0cd9107
        "ubuntu", "Ubuntu generic (and gcp)",
        (("WLAN", "y"), ("MAC80211_MESH", "y"), ("AX25", "m"), ("HYPERV_NET", "m"), *_TUNNELS_M),
        "Ubuntu's 5.15.0-25-generic, 6.8.0-31-generic, 6.11 and 6.14 generic configs and the "
        "5.15/6.8/6.11 gcp configs of Google Cloud's Ubuntu images "
        f"({_KHC}Ubuntu_*, gcp_projects_ubuntu-os-cloud_*)", None),
    Preset(
        # [khc] azure_Azure_Linux_x86_64.config @e7935688603b ("Ubuntu 6.8.0-1021.25-azure
        # 6.8.12"): "# CONFIG_WLAN is not set", AX25=m, MAC80211_MESH=y, HYPERV_NET=m, tunnels =m
        # (LL_MAX_HEADER 128 through AX25 + MESH)
        "ubuntu-azure", "Ubuntu azure",
        (("MAC80211_MESH", "y"), ("AX25", "m"), ("HYPERV_NET", "m"), *_TUNNELS_M),
        f"Ubuntu's 6.8.0-1021.25-azure config ({_KHC}azure_Azure_Linux_x86_64.config)", None),
    Preset(
        # [khc] gcp_projects_rhel-cloud_..._rhel-8-v20250415 (4.18.0-553.50.1.el8_10),
        # ..._rhel-9-v20250415 (5.14.0-503.35.1.el9_5), the rhel-sap 8.4-9.4 images @6bf6b0cd9107;
        # CentOS_9_Stream_x86_64 @5e3ab3c938a8 (5.14.0-580.el9), CentOS_10_Stream_x86_64
        # @6b73f7c4eb80 (6.12.0-144.el10); aarch64 9/10 the same with 4 KiB pages
        # (CentOS_9_Stream_aarch64, CentOS_10_Stream_aarch64): WLAN=y, MAC80211_MESH not set,
        # AX25 not set, HYPERV_NET=m, tunnels =m
        "rhel", "RHEL/CentOS Stream 8-10 x86_64, 9-10 aarch64",
        (("WLAN", "y"), ("HYPERV_NET", "m"), *_TUNNELS_M),
        "RHEL 8.10 and 9.5 (Google Cloud images), CentOS Stream 9 and 10 configs "
        f"({_KHC}gcp_projects_rhel-cloud_*, CentOS_*_Stream_*)", None),
    Preset(
        # [khc] Alma_Linux_8_aarch64.config @c59848d084c7 (4.18.0-553.51.1.el8_10.aarch64):
        # CONFIG_ARM64_64K_PAGES=y, WLAN not set, HYPERV_NET=m, tunnels =m
        "rhel8-aarch64", "RHEL 8 aarch64",
        (("HYPERV_NET", "m"), *_TUNNELS_M),
        f"AlmaLinux 8.10's aarch64 config ({_KHC}Alma_Linux_8_aarch64.config)",
        frozenset({(4, 18)}), page_size=65536, arch="arm64"),
    Preset(
        # [khc] Fedora_41_Core_x86_64 @c59848d084c7 (6.11.4-301.fc41),
        # Fedora_42_Updates_x86_64 (6.17.5-200.fc42), Fedora_Rawhide_x86_64 @6b73f7c4eb80
        # (6.18.0-rc3): WLAN=y, MAC80211_MESH=y, AX25=m, HYPERV_NET=m, tunnels =m
        "fedora", "Fedora",
        (("WLAN", "y"), ("MAC80211_MESH", "y"), ("AX25", "m"), ("HYPERV_NET", "m"), *_TUNNELS_M),
        f"Fedora 41 (6.11.4-301.fc41), 42 (6.17.5) and Rawhide configs ({_KHC}Fedora_*)", None),
    Preset(
        # [khc] AmazonLinux2.config @35f90af9096a (4.14.165-133.209.amzn2.x86_64): WLAN not set,
        # AX25 not set, HYPERV_NET=m, tunnels =m
        "amzn2", "Amazon Linux 2 (kernel 4.14)",
        (("HYPERV_NET", "m"), *_TUNNELS_M),
        f"Amazon Linux 2's 4.14.165-133.209.amzn2 config ({_KHC}AmazonLinux2.config)",
        frozenset({(4, 14)})),
    Preset(
        # [khc] Azure_Linux_x86_64.config @6b73f7c4eb80 (6.6.104.2): HYPERV_NET=y, WLAN=y,
        # MAC80211_MESH not set, AX25 not set, tunnels =m
        "azurelinux", "Azure Linux 3.0 (kernel 6.6)",
        (("WLAN", "y"), ("HYPERV_NET", "y"), *_TUNNELS_M),
        f"Azure Linux 3.0's 6.6.104.2 config ({_KHC}Azure_Linux_x86_64.config)",
        frozenset({(6, 6)})),
    Preset(
        # [khc] cbl-mariner.config @35f90af9096a (5.10.52.1, CONFIG_LOCALVERSION="-3.cm1"):
        # WLAN=y, MAC80211_MESH not set, AX25 not set, HYPERV_NET=m, tunnels =m
        "cbl-mariner", "CBL-Mariner 1.0 (kernel 5.10)",
        (("WLAN", "y"), ("HYPERV_NET", "m"), *_TUNNELS_M),
        f"CBL-Mariner 1.0's 5.10.52.1-3.cm1 config ({_KHC}cbl-mariner.config)",
        frozenset({(5, 10)})),
    Preset(
        # [khc] gcp_projects_cos-cloud_..._cos-109-17800-436-106 (6.1.124), cos-113-18244-382-3
        # (6.1.134), cos-117-18613-164-124 (6.6.72), cos-121-18867-90-4 (6.6.87) @6bf6b0cd9107:
        # HYPERV_NET=y, WLAN not set, NET_IPIP=m, NET_IPGRE=m, IPV6_SIT not set, IPV6_TUNNEL=m
        "cos", "Container-Optimized OS 109-121",
        (("HYPERV_NET", "y"), ("NET_IPIP", "m"), ("NET_IPGRE", "m"), ("IPV6_TUNNEL", "m")),
        "COS 109, 113 (6.1) and 117, 121 (6.6) configs of Google Cloud's images "
        f"({_KHC}gcp_projects_cos-cloud_*)", frozenset({(6, 1), (6, 6)})),
    Preset(
        # /proc/config.gz of the reference machine's 6.18.44: no WLAN, HYPERV or tunnels
        "minimal", "no WLAN, Hyper-V or tunnels (the reference machine's 6.18.44)", (),
        "this machine's /proc/config.gz", None),
)}

# Ubuntu flavours whose own .config was read (the others take the generic values, noted)
_UBUNTU_READ = {"generic": "ubuntu", "gcp": "ubuntu", "azure": "ubuntu-azure"}


class Choice(NamedTuple):
    """The preset a distribution kernel gets, and whether its own .config was read for it."""

    preset: Preset
    read: bool  # the distribution's (flavour's) config for this series was read
    why: str  # when not read: what was assumed instead, and why


def preset_for(distro: Distro | None, series: tuple[int, int]) -> Choice:
    """The .config preset a release string of ``distro`` (series ``series``) gets by default:
    its own where one was read, else the debian preset (or the distribution's generic one),
    with the reason."""
    debian = PRESETS["debian"]
    if distro is None:
        return Choice(debian, False, "")
    key, flavour = distro.key, distro.flavour
    if key == "debian":
        cloud = flavour.startswith("cloud-")
        return Choice(PRESETS["debian-cloud" if cloud else "debian"], True, "")
    if key == "ubuntu":
        name = _UBUNTU_READ.get(flavour)
        if name is not None:
            return Choice(PRESETS[name], True, "")
        return Choice(PRESETS["ubuntu"], False,
                      f"the {flavour} flavour's .config was not read: the generic flavour's "
                      "values are assumed")
    if key == "rhel":
        if distro.arch == "arm64" and series == (4, 18):
            return Choice(PRESETS["rhel8-aarch64"], True, "")
        if distro.flavour == "64k":
            return Choice(PRESETS["rhel"], False,
                          "the kernel-64k build's .config was not read: the x86_64 values are "
                          "assumed")
        return Choice(PRESETS["rhel"], True, "")
    if key == "fedora":
        return Choice(PRESETS["fedora"], True, "")
    own = {"amzn2": "amzn2", "azl3": "azurelinux", "cm1": "cbl-mariner", "cos": "cos"}.get(
        distro.release or key)
    if own is not None:
        preset = PRESETS[own]
        if preset.series is None or series in preset.series:
            return Choice(preset, True, "")
        read = ", ".join(f"{a}.{b}" for a, b in sorted(preset.series))
        return Choice(debian, False,
                      f"the .config of this {series[0]}.{series[1]} kernel was not read, only "
                      f"that of its {read} kernels (--config {own}, MAX_HEADER "
                      f"{preset.max_header}): the debian preset is assumed")
    return Choice(debian, False, "its .config was not read: the debian preset is assumed")
