"""Each distribution's .config preset: MAX_HEADER from the real config files (the values cited in
vnetrx/kernel/presets.py), the preset a release string picks, and the numbers MAX_HEADER moves.

Expected MAX_HEADERs are worked by hand from include/linux/netdevice.h (@6.1.192, @6.12.117):
LL_MAX_HEADER 128 with HYPERV_NET=y, or with (WLAN=y or AX25=y/m) and MAC80211_MESH=y; 96 with
WLAN=y or AX25 alone; else 32; +48 when any of NET_IPIP, NET_IPGRE, IPV6_SIT, IPV6_TUNNEL is y/m.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.kernel.build import (
    MAX_HEADER_BY_CONFIG,
    BuildConfig,
    build_config,
    max_header_of,
)
from vnetrx.kernel.presets import PRESETS, SYMBOLS
from vnetrx.kernel.registry import default_config, lookup
from vnetrx.kernel.version import parse_release
from vnetrx.paths.skbuff import max_tcp_header, small_head_cache_size
from vnetrx.paths.tx import ip_output

# (preset, MAX_HEADER worked by hand from the values cited next to it in presets.py)
PRESET_VALUES = [
    ("debian", 176),  # WLAN=y, MESH=y: 128; tunnels=m: +48
    ("debian-cloud", 80),  # no WLAN/AX25, HYPERV_NET=m: 32; +48
    ("ubuntu", 176),  # as Debian amd64
    ("ubuntu-azure", 176),  # no WLAN, AX25=m + MESH=y: 128; +48
    ("rhel", 144),  # WLAN=y, no MESH: 96; +48
    ("rhel8-aarch64", 80),  # no WLAN: 32; +48
    ("fedora", 176),
    ("amzn2", 80),
    ("azurelinux", 176),  # HYPERV_NET=y: 128; +48
    ("cbl-mariner", 144),
    ("cos", 176),  # HYPERV_NET=y: 128; IPIP/GRE/IPV6_TUNNEL=m: +48
    ("minimal", 32),
]


@pytest.mark.parametrize(("name", "max_header"), PRESET_VALUES)
def test_each_preset_has_its_configs_max_header(name: str, max_header: int) -> None:
    preset = PRESETS[name]
    assert MAX_HEADER_BY_CONFIG[name] == preset.max_header == max_header
    assert max_header_of(dict(preset.values)) == max_header  # the cited symbols give it
    assert all(symbol in SYMBOLS and value in ("y", "m") for symbol, value in preset.values)
    assert preset.sources


def test_every_config_choice_is_a_preset() -> None:
    assert set(MAX_HEADER_BY_CONFIG) == set(PRESETS) == {name for name, _ in PRESET_VALUES}


# The uname -r strings of gro-vhost-captures.md §4.1 (and one per preset): (release, its
# distribution, the preset it picks, whether that distribution's own config was read for it,
# MAX_HEADER, MAX_TCP_HEADER, skbuff_small_head object size or None before 6.3).
# MAX_TCP_HEADER: 128 + MAX_HEADER before 5.15, L1_CACHE_ALIGN(128 + MAX_HEADER) from 5.15.
# Small head (6.3+): SKB_HEAD_ALIGN(X) = ALIGN(X, 64) + 320 (skb_shared_info, 17 frags), X =
# MAX_TCP_HEADER up to 6.13 (6.12.y before 6.12.100), max(MAX_TCP_HEADER, MAX_HEADER + 128 + 64)
# from 6.14 (6.12.100): MAX_HEADER 176 -> 640 / 704, 144 -> 640 / 704, 80 -> 576 / 640.
GOLDEN = [
    ("5.15.0-91-generic", "Ubuntu", "ubuntu", True, 176, 320, None),
    ("6.8.0-45-generic", "Ubuntu", "ubuntu", True, 176, 320, 640),
    ("6.8.0-1015-aws", "Ubuntu", "ubuntu", False, 176, 320, 640),  # aws config not read
    ("6.8.0-1010-azure", "Ubuntu", "ubuntu-azure", True, 176, 320, 640),
    ("6.8.0-1028-gcp", "Ubuntu", "ubuntu", True, 176, 320, 640),
    ("4.18.0-553.el8_10.x86_64", "RHEL 8.10", "rhel", True, 144, 272, None),
    ("4.18.0-553.el8_10.aarch64", "RHEL 8.10", "rhel8-aarch64", True, 80, 208, None),
    ("5.14.0-427.13.1.el9_4.x86_64", "RHEL 9.4", "rhel", True, 144, 272, None),
    ("6.12.0-55.9.1.el10_0.x86_64", "RHEL 10.0", "rhel", True, 144, 320, 640),
    ("5.10.237-230.949.amzn2.x86_64", "Amazon Linux 2", "debian", False, 176, 304, None),
    ("4.14.165-133.209.amzn2.x86_64", "Amazon Linux 2", "amzn2", True, 80, 208, None),
    ("6.1.109-118.189.amzn2023.x86_64", "Amazon Linux 2023", "debian", False, 176, 320, None),
    ("6.12.111-136.204.amzn2023.x86_64", "Amazon Linux 2023", "debian", False, 176, 320, 704),
    ("5.15.167.1-1.cm2", "CBL-Mariner 2.0", "debian", False, 176, 320, None),
    ("5.10.52.1-3.cm1", "CBL-Mariner 1.0", "cbl-mariner", True, 144, 272, None),
    ("6.6.145.2-1.azl3", "Azure Linux 3.0", "azurelinux", True, 176, 320, 640),
    ("6.18.38.1-1.azl3", "Azure Linux 3.0", "debian", False, 176, 320, 704),  # kernel-hwe
    ("6.1.100+", "Container-Optimized OS", "cos", True, 176, 320, None),
    ("5.15.100+", "Container-Optimized OS", "debian", False, 176, 320, None),  # COS 105
    ("6.1.0-57-amd64", "Debian", "debian", True, 176, 320, None),
    ("6.1.0-57-cloud-amd64", "Debian", "debian-cloud", True, 80, 256, None),
    ("6.12.38+deb13-amd64", "Debian", "debian", True, 176, 320, 640),
    ("6.12.117+deb12-cloud-amd64", "Debian", "debian-cloud", True, 80, 256, 640),
    ("6.11.4-301.fc41.x86_64", "Fedora 41", "fedora", True, 176, 320, 640),
]


@pytest.mark.parametrize(
    ("release", "distro", "preset", "read", "max_header", "mth", "small_head"), GOLDEN)
def test_distribution_kernel_gets_its_preset(
    release: str, distro: str, preset: str, read: bool, max_header: int, mth: int,
    small_head: int | None,
) -> None:
    parsed = parse_release(release)
    assert parsed.distro is not None and parsed.distro.name == distro
    assert default_config(release) == preset
    k = lookup(release)
    assert (k.build.config, k.build.max_header) == (preset, max_header)
    assert ip_output.max_tcp_header(k) == mth
    if small_head is not None:
        assert small_head_cache_size(k) == small_head
    else:
        assert k.version.series < (6, 3)
    config_notes = [n for n in k.notes if n.startswith("config:")]
    assert len(config_notes) == 1
    if read:
        assert config_notes[0].startswith(f"config: the {preset} preset") and "read from" in \
            config_notes[0]
    else:
        assert "not read" in config_notes[0] and "unverified" in config_notes[0]


def test_rx_max_tcp_header_is_cache_aligned_for_every_preset() -> None:
    """paths.skbuff.max_tcp_header (5.15+ form, used by the small-head cache) for each value."""
    assert [max_tcp_header(lookup("6.12", _build(n))) for n in ("debian", "rhel", "amzn2",
                                                                "minimal")] == [320, 320, 256, 192]


def _build(name: str) -> BuildConfig:
    return build_config(config=name)


def test_upstream_and_unknown_strings_keep_the_debian_preset() -> None:
    for release in ("6.1.192", "7.3", "6.6.0-1005-gke", "6.18.44-fc-v782"):
        assert default_config(release) == "debian"
        assert not any(n.startswith("config:") for n in lookup(release).notes)
    assert default_config(None) == default_config("running") == "debian"


def test_a_given_config_overrides_and_says_whose_it_replaced() -> None:
    k = lookup("5.14.0-427.13.1.el9_4.x86_64", _build("debian"))
    assert (k.build.config, k.build.max_header) == ("debian", 176)
    assert ip_output.max_tcp_header(k) == 304
    assert any(n == "config: the debian preset (MAX_HEADER 176) was asked for; RHEL 9.4's own "
               "is rhel (MAX_HEADER 144)" for n in k.notes)


@pytest.mark.parametrize(("release", "arch", "page"), [
    ("5.14.0-427.13.1.el9_4.aarch64+64k", "arm64", 64),  # kernel-64k: the name says 64 KiB
    ("4.18.0-553.el8_10.aarch64", "arm64", 64),  # RHEL 8 aarch64 is built with 64 KiB pages
    ("6.8.0-45-generic-64k", "arm64", 64),  # Ubuntu's generic-64k flavour
])
def test_a_string_naming_another_arch_or_page_size_says_so(release: str, arch: str,
                                                           page: int) -> None:
    notes = lookup(release).notes
    assert any(f"is an {arch} kernel: this profile is x86_64 (--arch {arch}" in n for n in notes)
    assert any(f"built with {page} KiB pages: this profile has 4 KiB (--page-size {page}k)" in n
               for n in notes)


def test_a_string_that_names_its_own_build_gets_no_arch_note() -> None:
    notes = " ".join(lookup("5.14.0-427.13.1.el9_4.x86_64").notes)
    assert "--arch" not in notes and "--page-size" not in notes


# --- CLI ------------------------------------------------------------------------------------


def test_trace_header_names_the_distribution_preset(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1000", "--mergeable", "--kernel",
                                 "6.12.0-55.9.1.el10_0.x86_64"])
    assert result.exit_code == 0, result.output
    assert "64-byte cache lines, rhel config; profile from 6.12.0-55.9.1.el10_0.x86_64)" in \
        result.output.splitlines()[0]


@pytest.mark.parametrize(("args", "config", "mth", "headroom"), [
    # headroom at xmit for a 64-byte TCP payload: MAX_TCP_HEADER - 32 (TCP, timestamps) - 20 - 14
    ([], "rhel", 272, 206),
    (["--config", "debian"], "debian", 304, 238),  # tx-headroom.md §5.3: 304 -> 238
    (["--config", "debian-cloud"], "debian-cloud", 208, 142),
])
def test_headroom_on_rhel8_moves_with_the_preset(runner: CliRunner, args: list[str],
                                                 config: str, mth: int, headroom: int) -> None:
    import json

    result = runner.invoke(cli, ["headroom", "--tcp", "--payload", "64", "--kernel",
                                 "4.18.0-553.el8_10.x86_64", "--json", *args])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert (doc["kernel"]["config"], doc["max_tcp_header"]) == (config, mth)
    assert doc["results"][0]["skbs"][0]["headroom"] == headroom


def test_an_unknown_preset_is_a_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--len", "100", "--config", "ubuntu-aws"])
    assert result.exit_code == 2
    assert "'ubuntu-aws' is not one of" in result.output and "'rhel'" in result.output


# --- --kernel running -----------------------------------------------------------------------


def _machine(tmp_path: Path, files: dict[str, str]) -> str:
    root = tmp_path / "root"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return str(root)


def test_running_reads_the_machines_config(tmp_path: Path) -> None:
    from vnetrx.live.running import running_profile

    # Ubuntu azure's values: no WLAN, AX25=m and MAC80211_MESH=y -> 128, tunnels -> 176
    root = _machine(tmp_path, {
        "proc/sys/kernel/osrelease": "6.8.0-1021-azure\n",
        "proc/config": "# CONFIG_WLAN is not set\nCONFIG_AX25=m\nCONFIG_MAC80211_MESH=y\n"
                       "CONFIG_HYPERV_NET=m\nCONFIG_NET_IPIP=m\n"})
    k = running_profile(root)
    assert (k.build.config, k.build.max_header) == ("running", 176)
    assert "MAX_HEADER 176 (config)" in k.source
    assert not any(n.startswith("config:") for n in k.notes)  # read, not assumed


def test_running_without_a_config_takes_the_distribution_preset_and_says_so(
        tmp_path: Path) -> None:
    from vnetrx.live.running import running_profile

    root = _machine(tmp_path, {"proc/sys/kernel/osrelease": "5.14.0-427.13.1.el9_4.x86_64\n"})
    k = running_profile(root)
    assert (k.build.config, k.build.max_header) == ("rhel", 144)
    assert "no .config readable" in k.source and "MAX_HEADER 144 from the rhel preset, " \
        "assumed" in k.source


def test_running_with_config_given_overrides_the_machines(tmp_path: Path) -> None:
    from vnetrx.live.running import running_profile

    root = _machine(tmp_path, {"proc/sys/kernel/osrelease": "6.18.44\n",
                               "proc/config": "# CONFIG_WLAN is not set\n",
                               "sys/kernel/slab/skbuff_small_head/object_size": "576\n"})
    k = running_profile(root)
    assert (k.build.max_header, small_head_cache_size(k)) == (32, 576)  # the machine's own
    k = running_profile(root, config="rhel")
    assert (k.build.config, k.build.max_header) == ("rhel", 144)
    assert "MAX_HEADER 32 (config)" in k.source
    assert "MAX_HEADER 144 from --config rhel in place of the machine's .config; " \
        "skbuff_small_head computed from it, not the slab's" in k.source
    # 6.18 (max() form): max(L1_CACHE_ALIGN(128 + 144) = 320, 144 + 128 + 64 = 336) -> 384 + 320
    assert small_head_cache_size(k) == 704


@pytest.mark.parametrize(("release", "small_head"), [
    # MAX_HEADER 80: MAX_TCP_HEADER form ALIGN(208, 64) + 320 = 576 up to 6.12.99; from 6.12.100
    # max(256, 80 + 128 + 64 = 272) -> 320 + 320 = 640
    ("6.12.99+deb12-cloud-amd64", 576),
    ("6.12.100+deb12-cloud-amd64", 640),
    # MAX_HEADER 176: 320 + 320 = 640, then max(320, 368) -> 384 + 320 = 704
    ("6.12.99+deb12-amd64", 640),
    ("6.12.100+deb12-amd64", 704),
])
def test_small_head_boundary_per_preset(release: str, small_head: int) -> None:
    assert small_head_cache_size(lookup(release)) == small_head


@pytest.mark.parametrize(("release", "preset"), [
    ("4.14.165-133.209.amzn2.x86_64", "amzn2"),  # the series its config was read on
    ("4.19.100-1.amzn2.x86_64", "debian"),  # the next series: not read
    ("6.6.104.2-1.azl3", "azurelinux"),
    ("6.5.1.1-1.azl3", "debian"),
    ("6.1.100+", "cos"),
    ("6.2.1+", "debian"),
    ("4.18.0-553.el8_10.aarch64", "rhel8-aarch64"),  # RHEL 8 only
    ("5.14.0-503.el9_5.aarch64", "rhel"),  # RHEL 9 aarch64: 4 KiB pages, the x86_64 values
])
def test_a_series_preset_stops_at_its_series(release: str, preset: str) -> None:
    assert default_config(release) == preset
