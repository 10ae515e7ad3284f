"""The frame and header options of trace, sweep and verify (vnetrx/cli/frame_options.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.packet import build_frame


def run(runner: CliRunner, *args: str) -> dict[str, object]:
    result = runner.invoke(cli, ["trace", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_hdr_on_the_virtio_path(runner: CliRunner) -> None:
    """NEEDS_CSUM at 34 + 16 on a 1514-byte frame in a 6.12 mergeable buffer: the copy path
    pulls 38 more bytes (52 linear, 38 after eth_type_trans), truesize unchanged at 2816
    (docs/kernel/offloads.md §6.4; the 6.12 guest measured data_len 1462 for it)."""
    doc = run(runner, "--len", "1514", "--mergeable", "--hdr", "01000000000022001000",
              "--kernel", "6.12")
    skb = doc["skb"]
    assert isinstance(skb, dict)
    assert (skb["headlen"], skb["data_len"], skb["truesize"]) == (38, 1462, 2816)
    assert (skb["ip_summed"], skb["csum_offset"]) == (3, 16)


def test_csum_valid_is_checksum_unnecessary_on_virtio_and_ignored_on_tap(
        runner: CliRunner) -> None:
    virtio = run(runner, "--len", "1000", "--mergeable", "--l4", "tcp4", "--csum", "valid")
    tap = run(runner, "--path", "tap", "--len", "1000", "--l4", "tcp4", "--csum", "valid")
    assert virtio["skb"]["ip_summed"] == 1  # type: ignore[index]
    assert tap["skb"]["ip_summed"] == 0  # type: ignore[index]


def test_frame_file_gives_the_length_and_the_transport_header(
        runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "frame.bin"
    path.write_bytes(build_frame(3000, "tcp6"))
    doc = run(runner, "--frame", str(path), "--gso", "tcpv6:1428", "--mergeable")
    assert doc["input"]["frame_len"] == 3000  # type: ignore[index]
    # csum_start 54 (IPv6), csum_offset 16, hdr_len 74: 01 04 4a00 9405 3600 1000
    assert str(doc["input"]["hdr"]).startswith("01044a0094053600100")  # type: ignore[index]
    assert doc["skb"]["gso_type_names"] == ["SKB_GSO_DODGY", "SKB_GSO_TCPV6"]  # type: ignore[index]


@pytest.mark.parametrize(("args", "message"), [
    (["--len", "100", "--hdr", "01", "--gso", "tcpv4:1448"], "use one way"),
    (["--len", "100", "--csum", "partial"], "--csum partial needs to know where"),
    (["--len", "100", "--tcp-options", "12"], "--tcp-options needs --l4"),
    (["--len", "100", "--l4", "udp4", "--tcp-options", "12"], "needs a TCP frame"),
    (["--len", "100", "--gso", "tcpv9:1"], "expected TYPE:SIZE"),
    (["--len", "100", "--hdr", "00" * 13], "more than the 12-byte header"),
    (["--frame", "/nonexistent/frame"], "cannot read"),
])
def test_bad_frame_options_are_one_line_usage_errors(
        runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(cli, ["trace", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("args", "message"), [
    (["trace", "--len", "10", "--l4", "tcp4"], "--len 10 is too short for a tcp4 frame: its "
     "headers take 54 bytes (Ethernet 14 + IPv4 20 + TCP 20) (valid: 54..65535)"),
    (["trace", "--len", "53", "--l4", "tcp4", "--path", "tap"], "--len 53 is too short"),
    (["trace", "--len", "85", "--l4", "tcp6", "--tcp-options", "12"],
     "too short for a tcp6 frame with 12 option bytes: its headers take 86 bytes"),
    (["trace", "--len", "1", "--gso", "tcpv4:1448"], "too short for a tcp4 frame"),  # implied
    (["trace", "--len", "41", "--csum", "partial", "--l4", "udp4"], "(valid: 42..65535)"),
    (["sweep", "--len", "53-60", "--l4", "tcp4"], "--len 53 is too short"),  # the shortest
])
def test_a_frame_too_short_for_its_headers_is_refused(
        runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_frame_of_just_its_headers_is_traced(runner: CliRunner) -> None:
    doc = json.loads(runner.invoke(cli, ["trace", "--len", "54", "--l4", "tcp4", "--json"]).stdout)
    assert doc["input"]["frame_len"] == 54 and doc["outcome"] != "drop"
    rows = runner.invoke(cli, ["sweep", "--len", "54-55", "--l4", "tcp4", "--jsonl"]).stdout
    assert [json.loads(line)["frame_len"] for line in rows.splitlines()] == [54, 55]


def test_frame_and_len_must_agree(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(build_frame(100, "udp4"))
    result = runner.invoke(cli, ["trace", "--frame", str(path), "--len", "99"])
    assert result.exit_code == 2 and "disagrees" in result.stderr


def test_sweep_takes_a_header_but_not_a_frame(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["sweep", "--len", "1440-1460", "--mergeable", "--l4", "tcp4",
                                 "--gso", "tcpv4:1448", "--kernel", "6.6.44", "--jsonl"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    by_len = {row["frame_len"]: row for row in rows}
    # "missing check" (6.6.44): a NEEDS_CSUM frame shorter than gso_size is refused
    assert (by_len[1447]["outcome"], by_len[1447]["reason"]) == ("drop", "bad_gso")
    assert by_len[1448]["outcome"] == "copy" and by_len[1448]["gso_size"] == 0  # too small
    path = tmp_path / "f.bin"
    path.write_bytes(build_frame(100, "udp4"))
    bad = runner.invoke(cli, ["sweep", "--len", "1-10", "--frame", str(path)])
    assert bad.exit_code == 2 and "sweep lengths with --l4" in bad.stderr
