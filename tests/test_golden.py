"""Golden traces for the examples in README.md (JSON for all, text for two). The JSON goldens
leave out the kernel's change keys (tests/goldens.py NO_KERNEL_CHANGES)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.goldens import NO_KERNEL_CHANGES, Golden
from vnetrx.cli import cli

EXAMPLES = {
    "mergeable-1000-default": ["--len", "1000", "--mergeable"],
    "mergeable-1000-5.12": ["--len", "1000", "--mergeable", "--kernel", "5.12"],
    "mergeable-1000-5.13": ["--len", "1000", "--mergeable", "--kernel", "5.13"],
    "small-1000-6.1": ["--len", "1000", "--kernel", "6.1"],
    "big-mtu9000-1000-6.1": ["--len", "1000", "--mtu", "9000", "--kernel", "6.1"],
    "mergeable-1400-6.1": ["--len", "1400", "--mergeable", "--kernel", "6.1"],
    "mergeable-8000-6.1-ewma1000": ["--len", "8000", "--mergeable", "--kernel", "6.1",
                                    "--ewma", "1000"],
    # a guest's 1000-byte frame on the host: vhost_net_build_xdp's batch into tun_xdp_one
    "vhost-tx-1000-6.12": ["--path", "vhost-tx", "--len", "1000", "--kernel", "6.12"],
    # a VXLAN-wrapped TSO frame behind the 24-byte UDP-tunnel header (6.17+): gso_type 0x403
    "tap-vxlan4-tso-3000-6.18": ["--path", "tap", "--len", "3000", "--l4", "tcp4", "--gso",
                                 "tcpv4:1448", "--tunnel", "ipv4", "--vnet-hdr-sz", "24",
                                 "--kernel", "6.18"],
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_golden_json(runner: CliRunner, golden: Golden, name: str) -> None:
    result = runner.invoke(cli, ["trace", *EXAMPLES[name], "--json"])
    assert result.exit_code == 0, result.output
    golden(f"trace/{name}.json", result.stdout, scrub=NO_KERNEL_CHANGES)


@pytest.mark.parametrize("name", ["mergeable-1000-default", "mergeable-1000-5.12",
                                  "vhost-tx-1000-6.12"])
def test_golden_text(runner: CliRunner, golden: Golden, name: str) -> None:
    result = runner.invoke(cli, ["trace", *EXAMPLES[name]])
    assert result.exit_code == 0, result.output
    golden(f"trace/{name}.txt", result.stdout)
