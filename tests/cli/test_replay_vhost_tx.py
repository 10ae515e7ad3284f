"""vnetrx replay --path vhost-tx: the stream model's rows through the CLI (the model itself is
checked against real guests in tests/paths/vhost/test_tx_stream.py), their schema, the totals,
the stall note and the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from vnetrx.cli import cli
from vnetrx.schemas import schema

RUNNER = CliRunner(env={"COLUMNS": "140"})


def rows(args: list[str]) -> list[dict[str, object]]:
    result = RUNNER.invoke(cli, ["replay", "--path", "vhost-tx", *args, "--jsonl"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    validator = Draft202012Validator(schema("vhost-tx-row"))
    for line in lines:
        validator.validate(line)
    return lines


def test_a_frame_over_the_buffer_between_two_batched_ones() -> None:
    # as the real 6.1.192 guest's vhost-net did (tests/data/vhost, tx-burst-1000-4000-1000):
    # the first batch is flushed before the 4000-byte frame goes through tun_get_user alone
    got = rows(["--len", "1000,4000,1000", "--kernel", "6.1"])
    assert [(r["road"], r["call"], r["batch"], r["offset"], r["update"]) for r in got] == [
        ("batch", 0, 1, 0, 0), ("tun_get_user", 1, None, None, 1), ("batch", 2, 1, 1472, 1)]


def test_json_frames_with_their_headers(tmp_path: Path) -> None:
    path = tmp_path / "frames.json"
    path.write_text(json.dumps([1000, {"len": 3000, "hdr": "01013600a80522001000"},
                                {"len": 60, "hdr": "00" * 12}]))
    got = rows(["--from", str(path), "--kernel", "6.12"])
    assert [(r["len"], r["road"], r["batch"]) for r in got] == [
        (1000, "batch", 3), (3000, "batch", 3), (60, "batch", 3)]
    skb = got[1]["skb"]
    assert isinstance(skb, dict) and skb["truesize"] == 3776  # tx-gso-3000 on 6.12.117


def test_a_finite_sndbuf_never_batches() -> None:
    got = rows(["--len", "1000x3", "--sndbuf", "65536"])
    assert [(r["road"], r["reason"], r["call"], r["batch"]) for r in got] == [
        ("tun_get_user", "sndbuf", i, None) for i in range(3)]


def test_text_totals_and_the_stall_note(tmp_path: Path) -> None:
    path = tmp_path / "stall.json"
    path.write_text(json.dumps([1000, {"len": 100, "hdr": "010000000000e8031000"}, 1000]))
    result = RUNNER.invoke(cli, ["replay", "--path", "vhost-tx", "--from", str(path),
                                 "--kernel", "6.12"])
    assert result.exit_code == 0, result.output
    assert "totals: 2 frame(s), 1 batched; 1 sendmsg call(s)" in result.stdout
    assert "stalled" in result.stdout
    assert "frame 1 stalls the guest's TX queue" in result.stderr
    assert "the 1 frame(s) after it are never sent" in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--len", "1000", "--mergeable"], "--mergeable does not apply to --path vhost-tx"),
    (["--len", "1000", "--gro"], "--gro does not apply to --path vhost-tx"),
    (["--len", "1000", "--jsonl", "--summary"], "--summary prints the totals only"),
    (["--len", "70000"], "65535"),
])
def test_refusals(args: list[str], message: str) -> None:
    result = RUNNER.invoke(cli, ["replay", "--path", "vhost-tx", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_bad_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    for body, message in (([{"len": 10, "size": 1}], "unknown key(s) size"),
                          ([{"len": 10, "hdr": "0011"}], "\"hdr\" has 2 bytes"),
                          ([], "non-empty JSON array")):
        path.write_text(json.dumps(body))
        result = RUNNER.invoke(cli, ["replay", "--path", "vhost-tx", "--from", str(path)])
        assert result.exit_code == 2 and message in result.stderr, result.output
