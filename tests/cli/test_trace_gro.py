"""vnetrx trace --gro: a TCP flow through virtio-net's receive path and GRO, from the CLI."""

from __future__ import annotations

import json

from click.testing import CliRunner

from vnetrx.cli import cli

RUNNER = CliRunner(env={"COLUMNS": "160"})


def _run(args: list[str]) -> tuple[int, str, str]:
    result = RUNNER.invoke(cli, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_a_6_12_mergeable_flow_of_47_segments() -> None:
    code, out, err = _run(["trace", "--len", "1514", "--l4", "tcp4", "--tcp-options", "12",
                           "--mergeable", "--gro", "--segments", "47", "--kernel", "6.12",
                           "--json"])
    assert code == 0, err
    doc = json.loads(out)
    first, second = doc["delivered"]
    # 52 + 45 * 1448 = 65212; the 46th would reach 66660 >= 65536
    assert first["frames"] == list(range(45)) and first["flush"] == "e2big"
    assert first["skb"]["len"] == 65212 and first["skb"]["gso_segs"] == 45
    assert first["skb"]["nr_frags"] == 17 and len(first["skb"]["frag_list"]) == 2
    assert second["frames"] == [45, 46] and second["flush"] == "poll_end"
    # the 21st and 42nd buffers of a 32 KiB page_frag page absorb the page's leftover 512 B
    # (vnetrx trace --buffer-index 20): buffer 41 is long enough for build_skb
    assert doc["segments"][41]["outcome"] == "build_skb"
    assert doc["steps"][41]["how"] == "head_frag"
    assert doc["totals"]["skbs"] == 2 and doc["totals"]["payload"] == 47 * 1448


def test_text_names_every_step_and_skb() -> None:
    code, out, _ = _run(["trace", "--len", "300", "--l4", "tcp6", "--gro", "--segments", "3"])
    assert code == 0
    assert "head_frag: its page-fragment head became a frag" in out
    assert "skb 1: frames 0-2 (3 segments)" in out and "SKB_GSO_TCPV6" in out
    assert "totals: 3 segments → 1 skb(s)" in out


def test_gro_needs_a_tcp_frame_and_the_virtio_path() -> None:
    code, _, err = _run(["trace", "--len", "300", "--gro"])
    assert code == 2 and "--gro needs a TCP frame" in err
    code, _, err = _run(["trace", "--len", "300", "--l4", "udp4", "--gro"])
    assert code == 2 and "GRO merges TCP segments" in err
    code, _, err = _run(["trace", "--path", "tap", "--len", "300", "--l4", "tcp4", "--gro"])
    assert code == 2 and "IFF_NAPI" in err
    code, _, err = _run(["trace", "--len", "300", "--segments", "3"])
    assert code == 2 and "--segments goes with --gro" in err
    code, _, err = _run(["trace", "--len", "300", "--l4", "tcp4", "--gro", "--segments", "0"])
    assert code == 2 and "(valid: 1..4096 segments)" in err


def test_a_segment_the_driver_drops_is_named() -> None:
    code, _, err = _run(["trace", "--len", "2000", "--l4", "tcp4", "--gro", "--kernel", "6.1"])
    assert code == 2 and "segment 0 does not reach GRO: drop" in err
