"""``vnetrx trace --path vhost-rx`` and ``vnetrx replay --path vhost-rx`` (vnetrx/cli/
trace_vhost.py, replay_vhost.py): goldens of documented examples, the rows' stable keys, the
notes, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.goldens import NO_KERNEL_CHANGES, Golden
from vnetrx.cli import cli

TSO_FRAME = {"len": 65550, "l4": "tcp6", "hdr": "0104" + "4a00" + "9405" + "3600" + "1000"}


def _rows(runner: CliRunner, args: list[str]) -> list[dict[str, object]]:
    result = runner.invoke(cli, ["replay", "--path", "vhost-rx", "--jsonl", *args])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_golden_trace_json(runner: CliRunner, golden: Golden) -> None:
    """README's example: a 1514-byte frame into a mergeable guest on 6.12."""
    result = runner.invoke(cli, ["trace", "--path", "vhost-rx", "--len", "1514", "--l4", "tcp4",
                                 "--csum", "partial", "--mergeable", "--kernel", "6.12",
                                 "--json"])
    assert result.exit_code == 0, result.output
    golden("vhost_rx/mergeable-1514-partial-6.12.json", result.stdout, scrub=NO_KERNEL_CHANGES)


def test_golden_replay_documented_tso_example(runner: CliRunner, golden: Golden,
                                              tmp_path: Path) -> None:
    """offloads-xdp.md §4.4: a 65 550-byte TSO frame into 1536-byte buffers → 43 buffers, 42
    full, the last 1050 bytes, num_buffers 43; then a small frame."""
    frames = tmp_path / "frames.json"
    frames.write_text(json.dumps([TSO_FRAME, {"len": 60}]))
    result = runner.invoke(cli, ["replay", "--path", "vhost-rx", "--from", str(frames),
                                 "--mergeable", "--buf-len", "1536", "--uniform-buffers",
                                 "--kernel", "6.12", "--jsonl"])
    assert result.exit_code == 0, result.output
    golden("vhost_rx/tso-65550-uniform-1536-6.12.jsonl", result.stdout)
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert first["used"] == [1536] * 42 + [1050]
    assert first["hdr"] == "0104" "4a00" "9405" "3600" "1000" "2b00"  # num_buffers 43
    assert second["used"] == [72] and second["signal"] == "ring_empty"


def test_rows_keep_the_keys_the_lab_probe_reads(runner: CliRunner) -> None:
    rows = _rows(runner, ["--len", "1000,2000", "--kernel", "6.1"])
    kept, dropped = rows
    assert kept["used"] == [1012] and kept["hdr"] == "00" * 10 and not kept["discarded"]
    assert dropped["discarded"] is True and dropped["used"] == [] and dropped["hdr"] is None
    assert dropped["reason"] == "overrun" and dropped["guest"] is None


def test_no_tap_offload_segments_and_says_so(runner: CliRunner, tmp_path: Path) -> None:
    frames = tmp_path / "f.json"
    frames.write_text(json.dumps([{"len": 3000, "l4": "tcp4", "hdr": "0101360"
                                   "0a805220010" "00"}]))
    result = runner.invoke(cli, ["replay", "--path", "vhost-rx", "--from", str(frames),
                                 "--mergeable", "--no-tap-offload", "--kernel", "6.12",
                                 "--jsonl"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["len"] for r in rows] == [1502, 1502, 104]  # 54 + 1448, 54 + 1448, 54 + 50
    assert {r["segmented"] for r in rows} == {"tap_no_tso"}
    assert "segmented by the host stack before the tap" in result.stderr
    assert "--no-tap-offload" in result.stderr


def test_trace_text_cites_the_kernel(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--path", "vhost-rx", "--len", "1000",
                                 "--kernel", "6.18"])
    assert result.exit_code == 0, result.output
    assert "drivers/vhost/net.c:get_rx_bufs @ 6.18.44" in result.stdout
    # small mode, VERSION_1: num_buffers written from 6.14
    assert "because: vhost_num_buffers_version_1" in result.stdout


def test_trace_big_is_guest_gso(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--path", "vhost-rx", "--len", "20000", "--big",
                                 "--kernel", "6.12", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["vhost"]["mode"] == "big"
    assert doc["packets"][0]["chains"] == [12 + 18 * 4096 - 32]


@pytest.mark.parametrize(("args", "message"), [
    (["trace", "--path", "vhost-rx", "--len", "100", "--xdp", "pass"],
     "--xdp does not apply to --path vhost-rx"),
    (["trace", "--path", "vhost-rx", "--len", "100", "--hdr", "00" * 11],
     "--hdr has 11 bytes"),
    (["trace", "--path", "vhost-rx", "--len", "100", "--buf-len", "1536"],
     "needs --mergeable"),
    (["trace", "--path", "vhost-rx", "--len", "3000", "--l4", "udp4", "--gso", "udp:1400",
      "--mergeable"], "gso_type 3 (UFO)"),
    (["trace", "--len", "100", "--no-tap-offload"],
     "--no-tap-offload does not apply to --path virtio"),
    (["trace", "--path", "tap", "--len", "100", "--vlan"], "--vlan does not apply to --path tap"),
    (["sweep", "--path", "vhost-rx", "--len", "60-100"], "vnetrx sweep does not model it"),
    (["replay", "--len", "60", "--no-tap-offload"], "--no-tap-offload applies to --path vhost-rx"),
    (["replay", "--len", "60", "--mergeable", "--buf-len", "2048"],
     "--buf-len does not apply to replay"),
    (["replay", "--path", "vhost-rx", "--len", "60", "--batch", "3"],
     "--batch does not apply to --path vhost-rx"),
    (["replay", "--path", "vhost-rx", "--len", "0"], "length 0 out of range (valid: 1..65589"),
    (["replay", "--path", "vhost-rx"], "exactly one of --len LIST and --from FILE"),
])
def test_one_line_errors(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(cli, args)
    assert result.exit_code in (1, 2), result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetrx: error: "), result.stderr
    assert message in lines[0], lines[0]


@pytest.mark.parametrize(("content", "message"), [
    ('[{"len": 100, "colour": 1}]', "unknown key(s) colour (valid: len, l4, hdr, tcp_options, "
     "vlan, frame)"),
    ('[{"len": 100, "frame": "5254"}]', "\"len\" 100 is not the frame's 2 bytes"),
    ('[{"frame": "52x4"}]', "\"frame\" is not hex"),
    ('[{"len": 100, "l4": "sctp"}]', "\"l4\" 'sctp' is not one of"),
    ('[{"len": 100, "hdr": "00000000000000000000000000"}]', "(valid: 0..10 bytes)"),
    ('[{"len": 30, "l4": "tcp4"}]', "(valid: 54..65535)"),
    ('[{"len": 100, "vlan": 1}]', "\"vlan\" must be true or false"),
    ("[]", "expected a non-empty JSON array"),
    ('[{"len": 3000, "l4": "tcp4", "hdr": "00013600a805"}]', "set NEEDS_CSUM"),
])
def test_frame_file_errors(runner: CliRunner, tmp_path: Path, content: str,
                           message: str) -> None:
    frames = tmp_path / "f.json"
    frames.write_text(content)
    result = runner.invoke(cli, ["replay", "--path", "vhost-rx", "--from", str(frames),
                                 "--mergeable", "--jsonl"])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
