"""Golden traces for README's offload examples, and the stable windows of virtio_net_hdr_to_skb
as the command line shows them. Each case states the kernel fact it pins: the commit, the point
releases read in the stable trees (docs/kernel/offloads.md §8), and where a real kernel confirmed
it (`vnetrx lab virtio --offloads` on Debian 6.1.192 / 6.12.117, `verify tap --offloads` on
6.18.44)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from tests.goldens import NO_KERNEL_CHANGES, Golden
from vnetrx.cli import cli

TSO = ["--l4", "tcp4", "--gso", "tcpv4:1448"]


def trace(runner: CliRunner, *args: str) -> dict[str, Any]:
    result = runner.invoke(cli, ["trace", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


GOLDEN = {
    # a 9014-byte TSO frame in a 6.1 guest's big mode: the lab measured data_len 8960, gso_size
    # 1448, gso_type TCPV4|DODGY (0x3), CHECKSUM_PARTIAL
    "tso-9014-big-6.1": ["--len", "9014", "--big", *TSO, "--kernel", "6.1"],
    # the "missing check" window (e269d79c7d35, 6.6.44-45): 2950 = 2 × 1448 + 54, needed 54
    "tap-missing-check-6.6.44": ["--path", "tap", "--len", "2950", *TSO, "--kernel", "6.6.44"],
    "tso-valid-6.6.46": ["--len", "3000", "--mergeable", "--l4", "tcp4", "--csum", "valid",
                         "--gso", "tcpv4:1448", "--kernel", "6.6.46"],
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_offload_json(runner: CliRunner, golden: Golden, name: str) -> None:
    result = runner.invoke(cli, ["trace", *GOLDEN[name], "--json"])
    assert result.exit_code == 0, result.output
    golden(f"trace/offload-{name}.json", result.stdout, scrub=NO_KERNEL_CHANGES)


def test_tso_frame_in_a_6_1_guest(runner: CliRunner) -> None:
    doc = trace(runner, *GOLDEN["tso-9014-big-6.1"])
    skb = doc["skb"]
    assert (skb["len"], skb["data_len"], skb["headlen"]) == (9000, 8960, 40)
    assert (skb["ip_summed"], skb["gso_size"], skb["gso_type"]) == (3, 1448, 0x3)
    assert skb["gso_type_names"] == ["SKB_GSO_TCPV4", "SKB_GSO_DODGY"]
    assert doc["input"]["hdr"] == "01013600a80522001000" + "0000"  # 12 bytes, num_buffers 0


@pytest.mark.parametrize(("kernel", "errno"), [
    ("6.6.43", None), ("6.6.44", "EINVAL"), ("6.6.45", "EINVAL"), ("6.6.46", None),
    ("6.1.102", None), ("6.1.103", "EINVAL"), ("6.1.106", "EINVAL"), ("6.1.107", None),
    ("5.15.164", None), ("5.15.165", "EINVAL"), ("5.15.167", None), ("6.12", None),
])
def test_tailscale_window_on_tap_writes(runner: CliRunner, kernel: str,
                                        errno: str | None) -> None:
    """tailscale #13041: NEEDS_CSUM TSO writes refused by skb->len % gso_size."""
    doc = trace(runner, "--path", "tap", "--len", "2950", *TSO, "--kernel", kernel)
    assert doc["errno"] == errno
    if errno:
        assert doc["refused_by"]["because"] == ["vnet_hdr_missing_check"]
        assert "not above the 54 header bytes" in doc["reason"]


@pytest.mark.parametrize(("kernel", "dropped"), [
    ("6.6.45", False), ("6.6.46", True), ("6.6.51", True), ("6.6.52", False),
    ("6.1.106", False), ("6.1.107", True), ("6.1.110", True), ("6.1.111", False),
    ("5.15.167", True), ("5.15.168", False),
])
def test_tso_without_needs_csum_window_on_virtio(runner: CliRunner, kernel: str,
                                                 dropped: bool) -> None:
    """89add40066f9 tested csum_offset == 16 on TCP GSO frames without NEEDS_CSUM too, until
    6513eb3d3191: a DATA_VALID TSO frame from the host is dropped, rx_frame_errors++."""
    doc = trace(runner, *GOLDEN["tso-valid-6.6.46"][:-2], "--kernel", kernel)
    assert (doc["outcome"] == "drop") is dropped
    if dropped:
        assert (doc["reason"], doc["counter"]) == ("bad_gso", "rx_frame_errors")
        assert doc["refused_by"]["function"] == "virtio_net_hdr_to_skb"
    else:
        assert (doc["skb"]["ip_summed"], doc["skb"]["gso_size"]) == (1, 1448)


@pytest.mark.parametrize(("kernel", "gso_size"), [
    ("6.12.109", 1), ("6.12.110", 8), ("6.1.187", 1), ("6.1.188", 8), ("6.18", 1),
    ("6.18.52", 8),
])
def test_tcp_gso_size_clamp(runner: CliRunner, kernel: str, gso_size: int) -> None:
    """c27c449d455a raises a TCP gso_size below 8 to 8 (measured: 8 in the 6.1.192 and 6.12.117
    guests, 1 on the 6.18.44 host's tap)."""
    doc = trace(runner, "--path", "tap", "--len", "100", "--hdr", "01013600010022001000",
                "--kernel", kernel)
    assert doc["skb"]["gso_size"] == gso_size


def test_uso_before_and_after_6_2(runner: CliRunner) -> None:
    uso = ["--path", "tap", "--len", "3000", "--l4", "udp4", "--gso", "udp_l4:1472"]
    old = trace(runner, *uso, "--kernel", "6.1")
    assert old["errno"] == "EINVAL"
    assert "GSO_UDP_L4 (5) is accepted from 6.2" in old["reason"]
    new = trace(runner, *uso, "--kernel", "6.6")
    assert (new["skb"]["gso_size"], new["skb"]["gso_type_names"]) == (
        1472, ["SKB_GSO_DODGY", "SKB_GSO_UDP_L4"])


def test_diff_names_the_check_that_differs(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["diff", "--kernel", "6.6.43", "--kernel", "6.6.44", "--",
                                 "--len", "2950", "--mergeable", *TSO])
    assert result.exit_code == 0, result.output
    assert "First differing step" in result.stdout
    assert "net: missing check virtio" in result.stdout
    assert "bad_gso" in result.stdout
