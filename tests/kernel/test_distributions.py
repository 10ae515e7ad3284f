"""Kernels users run: release strings of distribution kernels and series vnetrx did not read
resolve through the change table, and say what they assumed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.errors import UnknownProfileError
from vnetrx.kernel.build import BuildConfig
from vnetrx.kernel.registry import lookup
from vnetrx.kernel.version import parse_release

# (uname -r of a real distribution kernel, the upstream version vnetrx models it as)
RELEASES = [
    ("5.15.0-119-generic", "5.15.0"),  # Ubuntu 22.04: ABI name, the point release unknown
    ("6.8.0-45-generic", "6.8.0"),  # Ubuntu 24.04
    ("5.10.0-32-amd64", "5.10.0"),  # Debian 11
    ("6.1.0-25-amd64", "6.1.192"),  # Debian 12: a read series, its checked point release
    ("6.12.38+deb13-amd64", "6.12.38"),  # Debian 13: the point release is in the name
    ("4.18.0-553.el8_10.x86_64", "4.18.0"),  # RHEL 8
    ("5.14.0-427.13.1.el9_4.x86_64", "5.14.0"),  # RHEL 9
    ("6.11.4-301.fc41.x86_64", "6.11.4"),  # Fedora 41
    ("5.10.225-213.878.amzn2.x86_64", "5.10.225"),  # Amazon Linux 2
    ("6.1.102-111.182.amzn2023.x86_64", "6.1.102"),  # Amazon Linux 2023
    ("6.12.0-55.9.1.el10_0.x86_64", "6.12.0"),  # RHEL 10: nominal base, not 6.12's 117
    ("6.6.145.2-1.azl3", "6.6.145"),  # Azure Linux 3.0: upstream 6.6.145 + Azure's .2
    ("6.1.100+", "6.1.100"),  # Container-Optimized OS
]

# The strings of gro-vhost-captures.md §4.1 (and the ones above): (uname -r, distribution,
# upstream version, whether the string carries the point release)
SCHEMES = [
    ("6.1.0-57-amd64", "Debian", "6.1", False),
    ("5.10.0-32-amd64", "Debian", "5.10", False),
    ("6.1.0-57-cloud-amd64", "Debian", "6.1", False),
    ("6.12.38+deb13-amd64", "Debian", "6.12.38", True),
    ("6.12.117+deb12-amd64", "Debian", "6.12.117", True),
    ("5.15.0-91-generic", "Ubuntu", "5.15", False),
    ("6.8.0-45-generic", "Ubuntu", "6.8", False),
    ("6.8.0-1015-aws", "Ubuntu", "6.8", False),
    ("6.8.0-1010-azure", "Ubuntu", "6.8", False),
    ("4.18.0-553.el8_10.x86_64", "RHEL 8.10", "4.18", False),
    ("5.14.0-427.13.1.el9_4.x86_64", "RHEL 9.4", "5.14", False),
    ("6.12.0-55.9.1.el10_0.x86_64", "RHEL 10.0", "6.12", False),
    ("5.10.237-230.949.amzn2.x86_64", "Amazon Linux 2", "5.10.237", True),
    ("6.1.109-118.189.amzn2023.x86_64", "Amazon Linux 2023", "6.1.109", True),
    ("6.12.111-136.204.amzn2023.x86_64", "Amazon Linux 2023", "6.12.111", True),
    ("5.15.167.1-1.cm2", "CBL-Mariner 2.0", "5.15.167", True),
    ("6.6.145.2-1.azl3", "Azure Linux 3.0", "6.6.145", True),
    ("6.18.38.1-1.azl3", "Azure Linux 3.0", "6.18.38", True),
    ("6.1.100+", "Container-Optimized OS", "6.1.100", True),
    ("6.11.4-301.fc41.x86_64", "Fedora 41", "6.11.4", True),
]


@pytest.mark.parametrize(("release", "name", "version", "point_known"), SCHEMES)
def test_each_distribution_scheme_is_recognised(release: str, name: str, version: str,
                                                point_known: bool) -> None:
    parsed = parse_release(release)
    assert parsed.distro is not None and parsed.distro.name == name
    assert (str(parsed.version), parsed.point_known) == (version, point_known)


@pytest.mark.parametrize(("release", "version", "point_known"), [
    ("6.6.0-1005-gke", "6.6", False),  # no Ubuntu series is 6.6 (23.10 is 6.5, 24.04 6.8)
    ("6.9.0-1-generic", "6.9", False),  # nor 6.9
    ("5.15.0-91-custom", "5.15", False),  # an ABI number, no flavour Ubuntu or Debian ships
    ("6.1.5-57-amd64", "6.1.5", True),  # a Debian flavour after a non-.0 point: not Debian's
    ("5.15.0-200.131.27.el9uek.x86_64", "5.15", False),  # Oracle UEK: not RHEL's scheme
    ("6.18.44-fc-v782", "6.18.44", True),  # this machine's own build
    ("6.1.192", "6.1.192", True),  # upstream
    ("4.19.0", "4.19.0", True),
    ("7.9", "7.9", False),
])
def test_what_is_not_a_distribution_scheme(release: str, version: str, point_known: bool
                                           ) -> None:
    parsed = parse_release(release)
    assert parsed.distro is None
    assert (str(parsed.version), parsed.point_known) == (version, point_known)


def test_an_ubuntu_kernel_says_what_it_assumed() -> None:
    notes = lookup("5.15.0-91-generic").notes
    assert notes[0].startswith("5.15.0-91-generic is an Ubuntu ABI name: its upstream point "
                               "release is not in it; assumed 5.15.0")
    assert "Debian" not in " ".join(notes)
    assert any("Ubuntu kernel (ABI 91, flavour generic)" in n and "backports" in n
               for n in notes)
    assert any("/proc/version_signature" in n for n in notes)
    assert any(n.startswith("config: the ubuntu preset, Ubuntu generic (and gcp) (MAX_HEADER "
                            "176: WLAN=y, MAC80211_MESH=y, AX25=m") for n in notes)
    minimal = lookup("5.15.0-91-generic", BuildConfig(config="minimal", max_header=32)).notes
    # a preset the user chose: said, with the distribution's own
    assert [n for n in minimal if n.startswith("config:")] == [
        "config: the minimal preset (MAX_HEADER 32) was asked for; Ubuntu's own is ubuntu "
        "(MAX_HEADER 176)"]


@pytest.mark.parametrize("release", ["4.19.0", "7.9", "6.1.192", "5.14"])
def test_an_upstream_version_gets_no_distribution_notes(release: str) -> None:
    notes = " ".join(lookup(release).notes)
    assert "backports the change table cannot know" not in notes
    assert "vendor" not in notes and "config:" not in notes


def test_rhel_is_nominal() -> None:
    k = lookup("6.12.0-55.9.1.el10_0.x86_64")
    assert k.name == "6.12.0"  # the base as tagged, not the 6.12.117 a bare 6.12 means
    assert any("RHEL 10.0 kernel" in n and "6.12 is nominal" in n for n in k.notes)
    assert any("BTF" in n for n in k.notes)
    assert not any("does not say its upstream point release" in n
                   for n in lookup("5.14.0-427.13.1.el9_4.x86_64").notes)


def test_debian_cloud_flavour_gets_its_preset() -> None:
    cloud = lookup("6.1.0-57-cloud-amd64")
    assert (cloud.build.config, cloud.build.max_header) == ("debian-cloud", 80)
    assert any(n.startswith("config: the debian-cloud preset, Debian cloud-amd64 (MAX_HEADER 80")
               for n in cloud.notes)
    generic = lookup("6.1.0-57-amd64")
    assert (generic.build.config, generic.build.max_header) == ("debian", 176)
    assert not any("debian-cloud" in n for n in generic.notes)
    asked = lookup("6.1.0-57-cloud-amd64", BuildConfig()).notes  # --config debian
    assert "config: the debian preset (MAX_HEADER 176) was asked for; Debian's own is " \
        "debian-cloud (MAX_HEADER 80)" in asked


def test_an_unknown_vendor_abi_name_says_so() -> None:
    notes = lookup("6.6.0-1005-gke").notes
    assert notes[0].startswith("6.6.0-1005-gke is an ABI name of no vendor scheme vnetrx "
                               "knows")
    assert any("a vendor kernel carries backports" in n for n in notes)


def _machine(tmp_path: Path, files: dict[str, str]) -> str:
    root = tmp_path / "root"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return str(root)


def test_running_ubuntu_reads_version_signature(tmp_path: Path) -> None:
    from vnetrx.live.running import running_profile

    root = _machine(tmp_path, {
        "proc/sys/kernel/osrelease": "4.15.0-55-generic\n",
        # a real one (a 16.04 HWE kernel, quoted on linux-media)
        "proc/version_signature": "Ubuntu 4.15.0-55.60~16.04.2-generic 4.15.18\n",
        "proc/version": "Linux version 4.15.0-55-generic (buildd@lgw01-amd64-037) #60~16.04.2"
                        "-Ubuntu SMP\n"})
    k = running_profile(root)
    assert k.name == "4.15.18"
    assert "point release 4.15.18 (/proc/version_signature)" in k.source
    assert any("Ubuntu kernel (ABI 55, flavour generic)" in n for n in k.notes)
    assert not any("version_signature gives" in n for n in k.notes)  # it was read


def test_running_debian_reads_proc_version(tmp_path: Path) -> None:
    from vnetrx.live.running import running_profile

    root = _machine(tmp_path, {
        "proc/sys/kernel/osrelease": "6.1.0-25-amd64\n",
        "proc/version": "Linux version 6.1.0-25-amd64 (debian-kernel@lists.debian.org) "
                        "(gcc-12 (Debian 12.2.0-14) 12.2.0) #1 SMP PREEMPT_DYNAMIC Debian "
                        "6.1.106-3 (2024-08-26)\n"})
    k = running_profile(root)
    assert k.name == "6.1.106"
    assert "point release 6.1.106 (/proc/version)" in k.source


@pytest.mark.parametrize(("release", "version"), RELEASES)
def test_distribution_release_strings_resolve(release: str, version: str) -> None:
    k = lookup(release)
    assert k.name == version


@pytest.mark.parametrize("release", [r for r, _ in RELEASES])
def test_trace_answers_with_its_assumptions(runner: CliRunner, release: str) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1000", "--mergeable", "--kernel", release,
                                 "--json"])
    assert result.exit_code == 0, result.output


def test_an_unread_series_lists_the_changes_it_assumed() -> None:
    """6.8 lies between 6.6 and 6.12: of the changes released in 6.7..6.12, 9181d6f8a2bb (6.8)
    is taken as present and 89add40066f9 (6.11) as absent."""
    k = lookup("6.8.0-45-generic")
    assert "vnet_hdr_nh_min_len" in k.change_keys
    assert "vnet_hdr_tcp_csum_offset" not in k.change_keys
    first = k.notes[0]
    assert "between the series vnetrx read, 6.6 and 6.12" in first
    present, absent = first.split("assumed present ")[1].split("; assumed absent ")
    assert "vnet_hdr_nh_min_len" in present.split(", ")
    assert "tun_xdp_act_stats" in present.split(", ")  # f1084c427f55, v6.8
    assert "vnet_hdr_tcp_csum_offset" in absent.split(", ")
    assert "generic_xdp_multi_buf" in absent.split(", ")  # e6d5dbdd20aa, v6.9
    assert any("does not say its upstream point release" in n for n in k.notes)
    assert any("backports" in n for n in k.notes)


def test_a_kernel_before_5_12_uses_the_oldest_receive_path_and_says_so() -> None:
    k = lookup("5.10.0-32-amd64")
    assert any("before 5.12 was not read" in n for n in k.notes)


@pytest.mark.parametrize("text", ["8.0", "3.14", "2.6.32"])
def test_out_of_range_versions_are_refused(text: str) -> None:
    with pytest.raises(UnknownProfileError, match=r"vnetrx models 3\.15 to 7\.x"):
        lookup(text)


def test_a_huge_number_is_not_a_version() -> None:
    with pytest.raises(UnknownProfileError, match="cannot read kernel version"):
        lookup("6." + "9" * 5000)
