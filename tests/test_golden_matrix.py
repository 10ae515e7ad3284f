"""The fact sheet's worked examples (docs/kernel/virtio-net-rx.md §12.2-§12.5) in every profiled
kernel, one table per example, and a completeness run of every path on every profile.

A table row is what decides an example in a kernel: the outcome and reason, the skb fields sweep
rows carry (``row=True`` in vnetrx.model.SKB_FIELDS), the cost and the sizes of the rx buffers
used, read from ``vnetrx trace --json`` (the full traces of README's examples are in
tests/golden/trace/). Printed one kernel a line, so a diff names the kernel."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from tests.goldens import Golden
from tests.profiles import TAP, VIRTIO_AND_LTS_AS_TAGGED
from vnetrx.cli import cli
from vnetrx.engine import trace_tap
from vnetrx.kernel.registry import lookup
from vnetrx.model import SKB_FIELDS
from vnetrx.paths.tun import TapFrame, TapSetup

ROW_FIELDS = [f.name for f in SKB_FIELDS if f.row]
EXAMPLES = {
    "12.1-mergeable-1000": ["--len", "1000", "--mergeable"],
    "12.2-small-1000": ["--len", "1000"],
    "12.3-big-gso-1000": ["--len", "1000", "--big"],
    "12.4-mergeable-1514": ["--len", "1514", "--mergeable"],
    "12.4-mergeable-100": ["--len", "100", "--mergeable"],
    "12.4-mergeable-1514-21st-buffer": ["--len", "1514", "--mergeable", "--buffer-index", "20"],
}


def table_row(doc: dict[str, Any]) -> dict[str, Any]:
    """One kernel's row, from its trace document (the skb fields null when there is no skb)."""
    skb = doc["skb"] or {}
    return {
        "outcome": doc["outcome"],
        "reason": doc["reason"],
        **{name: skb.get(name) for name in ROW_FIELDS},
        "cost": doc["cost"],
        "buffers": [b["size"] for b in doc["buffers"]],
    }


def table_json(rows: dict[str, dict[str, Any]]) -> str:
    """A JSON object of kernel → row, one kernel a line."""
    return "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in rows.items()) + "\n}\n"


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_worked_example(runner: CliRunner, golden: Golden, example: str) -> None:
    rows = {}
    for kernel in VIRTIO_AND_LTS_AS_TAGGED:
        result = runner.invoke(cli, ["trace", *EXAMPLES[example], "--kernel", kernel, "--json"])
        assert result.exit_code == 0, result.output
        rows[kernel] = table_row(json.loads(result.stdout))
    golden(f"matrix/{example}.json", table_json(rows))


@pytest.mark.parametrize("kernel", TAP)
@pytest.mark.parametrize("variant", [{}, {"blocking": True}, {"vnet_hdr": False}])
def test_tap_completeness(kernel: str, variant: dict[str, bool]) -> None:
    """The tap path runs every length 1..65535 (stride 97 plus the edges) on every profile."""
    k = lookup(kernel)
    for frame_len in [*range(1, 65536, 97), 3456, 3457, 3712, 3713, 65535]:
        t = trace_tap(k, TapSetup(**variant), TapFrame(frame_len))
        assert t.outcome in ("build_skb", "alloc_skb", "error")
        assert (t.skb is None) == (t.outcome == "error")
