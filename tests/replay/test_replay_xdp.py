"""`vnetrx replay --xdp`: the ring posted with the XDP geometry (4096-byte mergeable slots, the
device writing 3520 bytes at +256; 2176-byte small slots), every frame decided by its trace.
Checked against a real Debian 6.12.117 guest's frames (tests/data/lab_xdp)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.kernel.registry import lookup
from vnetrx.lab.run import recheck_log
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.replay import RingConfig, replay

LAB = Path(__file__).parent.parent / "data" / "lab_xdp"


def test_mergeable_slots_and_outcomes_6_12() -> None:
    r = replay(lookup("6.12"), RingConfig(VirtioRxSetup(mergeable=True, xdp="pass")),
               (60, 1000, 3508, 3509, 9014, 1514))
    rows = [(f.decision.outcome, f.decision.reason, len(f.buffers), f.buffers[0].buf.offset,
             None if f.decision.skb is None else f.decision.skb.truesize) for f in r.frames]
    assert rows == [
        ("build_skb", None, 1, 0, 4352),
        ("build_skb", None, 1, 4096, 4352),
        ("build_skb", None, 1, 8192, 4352),  # 12 + 3508 = one 3520-byte buffer
        ("xdp_drop", "xdp_linearize", 2, 12288, None),
        ("xdp_drop", "xdp_linearize", 3, 20480, None),
        ("build_skb", None, 1, 0, 4352),  # slot 8: 8 slots of 4096 per 32 KiB page, a new page
    ]
    assert r.initial_fill.buf_len == 4096


def test_small_slots() -> None:
    r = replay(lookup("6.12"), RingConfig(VirtioRxSetup(mergeable=False, xdp="drop")), (60, 1000))
    assert [(f.decision.outcome, f.buffers[0].buf.len, f.buffers[0].buf.offset) for f in r.frames] == [
        ("xdp_drop", 2176, 0), ("xdp_drop", 2176, 2176)]


def test_replay_reproduces_a_real_guest() -> None:
    """The lab run's frames, replayed through the ring: every skb the 6.12.117 guest built."""
    text = (LAB / "mergeable-pass-frags-6.12.117+deb12-amd64.log").read_text()
    report = recheck_log(text, None)
    lengths = tuple(f.frame_len for f in report.frames)
    r = replay(lookup("6.12.117"), RingConfig(
        VirtioRxSetup(mergeable=True, xdp="pass", xdp_frags=True)),
               lengths)
    for frame, record in zip(report.frames, r.frames, strict=True):
        seen = frame.observed
        if seen["outcome"] == "drop":
            assert record.decision.skb is None, frame.frame_len
            continue
        assert record.decision.skb is not None, frame.frame_len
        skb = record.decision.skb
        got = (skb.len, skb.data_len, skb.truesize, skb.nr_frags)
        assert got == (seen["len"], seen["data_len"], seen["truesize"], seen["nr_frags"])


@pytest.mark.parametrize("args", [["--jsonl"], ["--summary", "--json"], []])
def test_cli(args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["replay", "--len", "60,3509", "--mergeable", "--xdp",
                                      "pass", "--kernel", "6.1", *args])
    assert result.exit_code == 0, result.output
    assert "xdp_linearize" in result.output or '"xdp_drop"' in result.output
