"""Kernels users run: release strings of distribution kernels and series vnetrx did not read
resolve through the change table, and say what they assumed."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.errors import UnknownProfileError
from vnetrx.kernel.registry import lookup

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
]


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
