"""Ctrl-C and SIGTERM keep what was computed: replay and sweep end at a clean frame/length
boundary, print (or write as valid JSON / JSONL) exactly what came before, and exit 130.

In-process tests raise the signal at a known frame (``os.kill`` of our own pid from inside the
input iterator), so the expected counts are exact; one subprocess test sends a real SIGINT to a
``replay --from -`` that is waiting for more input on a pipe."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from tests import ROOT
from vnetrx.cli import cli
from vnetrx.schemas import schema
from vnetrx.stop import StopOnSignal


def _run(monkeypatch: pytest.MonkeyPatch, at: int, args: list[str],
         signum: int = signal.SIGINT) -> Any:
    """Invoke ``args`` with ``signum`` raised when the command's StopOnSignal hands out item
    ``at`` (a frame of a replay, a length of a sweep)."""
    real = StopOnSignal.items

    def items(self: StopOnSignal, iterable: Iterable[Any]) -> Iterator[Any]:
        def signalling() -> Iterator[Any]:
            for index, item in enumerate(iterable):
                if index == at:
                    os.kill(os.getpid(), signum)
                yield item

        return real(self, signalling())

    monkeypatch.setattr(StopOnSignal, "items", items)
    return CliRunner().invoke(cli, args)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_replay_jsonl_keeps_whole_rows_before_the_signal(
    monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    result = _run(monkeypatch, 700, ["replay", "--len", "1000x5000", "--mergeable",
                                                 "--jsonl"], signum)
    assert result.exit_code == 130, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["index"] for r in rows] == list(range(700))  # the frame the signal hit is not in
    validator = Draft202012Validator(schema("replay-row"))
    for row in rows[:5]:
        validator.validate(row)
    assert result.stderr.strip() == "vnetrx: interrupted (the output covers the frames before it)"


def test_replay_summary_json_counts_the_frames_before_the_signal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = _run(monkeypatch, 1234,
                  ["replay", "--len", "1000x5000", "--mergeable", "--summary", "--json"])
    assert result.exit_code == 130
    doc = json.loads(result.stdout)
    Draft202012Validator(schema("replay-summary")).validate(doc)
    # 1234 frames of 1000 bytes, every one a build_skb in a mergeable buffer
    assert doc["interrupted"] is True and doc["frames"] == 1234
    assert doc["frame_bytes"] == 1_234_000 and doc["skbs"] == 1234
    assert "covers 1,234 frames" in result.stderr


def test_replay_json_document_holds_the_frames_before_the_signal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = _run(monkeypatch, 40, ["replay", "--len", "60x200", "--json"])
    assert result.exit_code == 130
    doc = json.loads(result.stdout)
    Draft202012Validator(schema("replay")).validate(doc)
    assert doc["interrupted"] is True and len(doc["frames"]) == 40


def test_replay_text_prints_the_totals_of_the_frames_before_the_signal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = _run(monkeypatch, 300, ["replay", "--len", "1000x5000", "--mergeable",
                                                 "--summary"])
    assert result.exit_code == 130
    assert result.stdout.startswith("totals: 300 frames, 300000 bytes; 300 skbs")


def test_a_signal_before_the_first_frame_is_an_interrupt_not_an_empty_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = _run(monkeypatch, 0, ["replay", "--len", "1000x50", "--jsonl"])
    assert result.exit_code == 130 and result.stdout == ""
    assert "no frames" not in result.stderr


def test_sweep_json_ranges_cover_the_lengths_before_the_signal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = _run(monkeypatch, 1000, ["sweep", "--len", "1-9000", "--mergeable",
                                                 "--kernel", "6.1", "--json"])
    assert result.exit_code == 130
    doc = json.loads(result.stdout)
    Draft202012Validator(schema("sweep")).validate(doc)
    assert doc["interrupted"] is True
    assert max(r["last"] for r in doc["ranges"]) == 1000  # lengths 1..1000, then the signal
    assert sum(r["count"] for r in doc["ranges"]) == 1000


def test_sweep_jsonl_stops_on_a_whole_line(monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(monkeypatch, 2500, ["sweep", "--len", "1-65535", "--jsonl"])
    assert result.exit_code == 130
    lines = result.stdout.splitlines()
    assert len(lines) == 2500 and json.loads(lines[-1])["frame_len"] == 2500


@pytest.mark.parametrize("path", [
    ["--path", "tap"],  # the tap write path
    ["--mergeable", "--xdp", "pass"],  # virtio-net with an XDP program
    ["--path", "tap", "--xdp", "drop"],  # tun's XDP
])
def test_every_sweep_path_stops_on_a_whole_line(monkeypatch: pytest.MonkeyPatch,
                                                path: list[str]) -> None:
    """Each sweep path reads its lengths one at a time: the signal at length 301 ends it after
    300 lines (a compiled build once drained the lengths first and ran to the end)."""
    result = _run(monkeypatch, 300, ["sweep", "--len", "1-65535", *path, "--jsonl"])
    assert result.exit_code == 130, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 300 and json.loads(lines[-1])["frame_len"] == 300


def test_second_signal_raises() -> None:
    stop = StopOnSignal()
    with stop:
        os.kill(os.getpid(), signal.SIGINT)
        seen = stop.signal
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            second = "absorbed"
        except KeyboardInterrupt:
            second = "raised"
    assert seen == signal.SIGINT and second == "raised"
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_real_sigint_to_a_replay_waiting_on_stdin() -> None:
    """``tcpdump -w - | vnetrx replay --from - ...`` style: frames arrive on a pipe that stays
    open; SIGINT ends the replay at the next frame with every row before it written."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "vnetrx", "replay", "--from", "-", "--mergeable", "--jsonl"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    assert proc.stdin is not None
    record = struct.pack("<IIII", 0, 0, 1000, 1000) + bytes(1000)  # a classic pcap record
    # 40 frames: their bytes and rows fit the pipes, so neither side waits on the other
    proc.stdin.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + record * 40)
    proc.stdin.flush()
    time.sleep(2.0)  # start-up, 40 frames, then it waits for more input
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.stdin.write(record)  # the next frame: the replay sees the signal and ends
    proc.stdin.flush()
    out, err = proc.communicate(timeout=30)
    rows = [json.loads(line) for line in out.decode().splitlines()]
    assert proc.returncode == 130, err
    assert len(rows) == 40 and all(r["frame_len"] == 1000 for r in rows)
    assert b"Traceback" not in err
