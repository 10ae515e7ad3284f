"""Golden traces of the fact sheet's worked examples (docs/kernel/virtio-net-rx.md §12.2-§12.5) in every profiled
kernel, and a completeness run of every path on every profile."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.engine import trace_tap
from vnetrx.kernel.registry import SERIES, lookup
from vnetrx.paths.tun import TapSetup

VIRTIO = [s.name for s in SERIES if "virtio" in s.paths] + ["6.1.0", "6.12.0"]
TAP = [s.name for s in SERIES if "tap" in s.paths]
EXAMPLES = {
    "12.1-mergeable-1000": ["--len", "1000", "--mergeable"],
    "12.2-small-1000": ["--len", "1000"],
    "12.3-big-gso-1000": ["--len", "1000", "--big"],
    "12.4-mergeable-1514": ["--len", "1514", "--mergeable"],
    "12.4-mergeable-100": ["--len", "100", "--mergeable"],
    "12.4-mergeable-1514-21st-buffer": ["--len", "1514", "--mergeable", "--buffer-index", "20"],
}


@pytest.mark.parametrize("kernel", VIRTIO)
@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_worked_example(runner: CliRunner, golden: Callable[[str, str], None], kernel: str,
                        example: str) -> None:
    result = runner.invoke(cli, ["trace", *EXAMPLES[example], "--kernel", kernel, "--json"])
    assert result.exit_code == 0, result.output
    golden(f"matrix/{kernel}/{example}.json", result.stdout)


@pytest.mark.parametrize("kernel", TAP)
@pytest.mark.parametrize("variant", [{}, {"blocking": True}, {"vnet_hdr": False}])
def test_tap_completeness(kernel: str, variant: dict[str, bool]) -> None:
    """The tap path runs every length 1..65535 (stride 97 plus the edges) on every profile."""
    k = lookup(kernel)
    for frame_len in [*range(1, 65536, 97), 3456, 3457, 3712, 3713, 65535]:
        t = trace_tap(k, TapSetup(frame_len=frame_len, **variant))
        assert t.outcome in ("build_skb", "alloc_skb", "error")
        assert (t.skb is None) == (t.outcome == "error")
