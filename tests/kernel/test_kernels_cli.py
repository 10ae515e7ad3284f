"""`vnetrx kernels`: the change table in version order, filtered by two kernels, and in JSON; its
golden, the one place the table is pinned."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tests.goldens import Golden
from vnetrx.cli import cli


def test_golden_change_table(runner: CliRunner, golden: Golden) -> None:
    """Every change vnetrx models and the releases that carry it, pinned once: the trace goldens
    leave out their kernel's change keys (tests/goldens.py NO_KERNEL_CHANGES), so a new entry
    rewrites this file, not every trace of a kernel that has it."""
    result = runner.invoke(cli, ["kernels", "--changes", "--json"])
    assert result.exit_code == 0, result.output
    golden("kernels/changes.json", result.stdout)


def test_between_5_12_and_5_13_is_the_build_skb_release() -> None:
    result = CliRunner().invoke(cli, ["kernels", "--between", "5.12..5.13"])
    assert result.exit_code == 0
    keys = [line.split()[1] for line in result.stdout.splitlines() if line[:1].isdigit()]
    assert keys == ["page_to_skb_build_skb", "virtio_xdp_shared_tx_queues"]


def test_between_two_point_releases_shows_the_stable_backport() -> None:
    result = CliRunner().invoke(cli, ["kernels", "--between", "6.1.75..6.1.76", "--json"])
    doc = json.loads(result.stdout)
    assert [c["key"] for c in doc["changes"]] == ["tun_xdp_act_stats"]


def test_changes_are_in_version_order() -> None:
    doc = json.loads(CliRunner().invoke(cli, ["kernels", "--json"]).stdout)
    firsts = []
    for c in doc["changes"]:
        first = c["since"] or min(w["first"] for w in c["stable"]) if (c["since"] or c["stable"]) \
            else None
        if first is not None:
            firsts.append(tuple(int(x) for x in first.split(".")) + (0,) * (3 - first.count(".") - 1))
    assert firsts == sorted(firsts) and len(firsts) > 30


def test_bad_between() -> None:
    result = CliRunner().invoke(cli, ["kernels", "--between", "6.1"])
    assert result.exit_code == 2 and "is not A..B" in result.output


def test_the_dodgy_gso_gro_window_is_6_1_0_to_6_1_6() -> None:
    # 5eddb24901ee is in 6.1.0 and not in 6.0.19 (net/core/gro.c as read); 7871f54e3dee in
    # 6.1.7 and not in 6.1.6 (the 6.1.y history read release by release)
    def keys(between: str) -> list[str]:
        result = CliRunner().invoke(cli, ["kernels", "--between", between, "--json"])
        assert result.exit_code == 0, result.output
        return [c["key"] for c in json.loads(result.stdout)["changes"]]

    assert "gro_gso_tcp_aggregated" in keys("6.0.19..6.1.0")
    assert keys("6.1.6..6.1.7") == ["gro_dodgy_flush"]
    assert "gro_dodgy_flush" not in keys("6.1.0..6.1.6")
