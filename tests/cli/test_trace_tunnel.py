"""``trace --tunnel`` (tap and virtio) and ``--udp-tunnel`` through the CLI: the 24-byte header
vnetrx builds for a VXLAN-wrapped frame, and the one-line refusals."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli

TAP = ["trace", "--path", "tap", "--len", "3000", "--l4", "tcp4", "--gso", "tcpv4:1448",
       "--kernel", "6.18"]


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_tap_tunnel_write() -> None:
    code, out = _run(*TAP, "--tunnel", "ipv4", "--vnet-hdr-sz", "24", "--json")
    assert code == 0
    doc = json.loads(out)
    # 14 + 20 + 8 + 8 + 14 + 20: csum_start 84; outer UDP at 34, inner IP at 64
    assert doc["input"]["hdr"] == "01216800a805540010000000000000000000000022004000"
    assert doc["skb"]["gso_type"] == 0x403 and doc["skb"]["gso_size"] == 1448
    tunnel = [s for s in doc["steps"] if s["function"] == "virtio_net_hdr_tnl_to_skb"]
    assert tunnel and "encapsulation 1" in tunnel[-1]["summary"]


def test_tap_tunnel_ipv6_csum() -> None:
    code, out = _run(*TAP, "--tunnel", "ipv6+csum", "--vnet-hdr-sz", "24", "--json")
    assert code == 0
    assert json.loads(out)["skb"]["gso_type"] == 0x803  # SKB_GSO_UDP_TUNNEL_CSUM


@pytest.mark.parametrize(("args", "message"), [
    (["--tunnel", "ipv5", "--vnet-hdr-sz", "24"], "expected ipv4 or ipv6"),
    (["--tunnel", "ipv4"], "more than the 10-byte vnet header"),  # tun's default vnet_hdr_sz
])
def test_tap_tunnel_refusals(args: list[str], message: str) -> None:
    code, out = _run(*TAP, *args)
    assert code == 2 and message in out and len(out.strip().splitlines()) == 1


def test_tunnel_and_hdr_exclude_each_other() -> None:
    code, out = _run("trace", "--path", "tap", "--len", "3000", "--l4", "tcp4", "--tunnel",
                     "ipv4", "--vnet-hdr-sz", "24", "--hdr", "00")
    assert code == 2 and "--tunnel builds the frame" in out


def test_tunnel_frame_too_short() -> None:
    """VXLAN over IPv4 takes 50 outer bytes before the inner Ethernet + IPv4 + TCP (54)."""
    code, out = _run("trace", "--path", "tap", "--len", "103", "--l4", "tcp4", "--tunnel",
                     "ipv4", "--vnet-hdr-sz", "24")
    assert code == 2 and "(valid: 104..65535" in out
    assert _run("trace", "--path", "tap", "--len", "104", "--l4", "tcp4", "--tunnel", "ipv4",
                "--vnet-hdr-sz", "24")[0] == 0


def test_virtio_udp_tunnel_option() -> None:
    base = ["trace", "--len", "3000", "--mergeable", "--l4", "tcp4", "--gso", "tcpv4:1448",
            "--tunnel", "ipv4", "--json"]
    code, out = _run(*base, "--udp-tunnel", "gso", "--kernel", "6.18")
    assert code == 0 and json.loads(out)["skb"]["gso_type"] == 0x403
    code, out = _run(*base, "--udp-tunnel", "gso", "--kernel", "6.16.9")
    assert code == 2 and "valid: --kernel 6.17 or later" in out
    code, out = _run("trace", "--path", "tap", "--len", "100", "--udp-tunnel", "gso")
    assert code == 2 and "--udp-tunnel" in out
