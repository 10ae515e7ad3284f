"""`vnetrx sweep`: rows equal full traces, the fact sheet's ranges, and the CLI formats."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import TAP
from tests.profiles import VIRTIO as KERNELS
from vnetrx.cli import cli
from vnetrx.engine import trace_tap, trace_virtio
from vnetrx.errors import VnetrxError
from vnetrx.kernel.changes import VIRTIO_XDP_MULTI_BUF
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import lookup
from vnetrx.model import Trace
from vnetrx.paths import virtio_net
from vnetrx.paths.tun import TapFrame, TapSetup
from vnetrx.paths.virtio_net import RxFrame, VirtioRxSetup
from vnetrx.paths.virtio_net_hdr import VnetHdr
from vnetrx.sweep import Row, collapse, tap_rows, virtio_rows

MODES = [{"mergeable": True}, {"guest_gso": True}, {"mtu": 9000}, {},
         {"mergeable": True, "buffer_index": 20}, {"mergeable": True, "ewma": 1000}]


@given(kernel=st.sampled_from(KERNELS), mode=st.sampled_from(MODES),
       lengths=st.lists(st.integers(1, 65535), min_size=1, max_size=20))
def test_counted_frags_equal_walked_frags(kernel: str, mode: dict[str, object],
                                          lengths: list[int]) -> None:
    """Sweeps count frags arithmetically (contiguity runs in mergeable mode, pages in big
    mode); the narration walks the buffers one by one as the kernel's loop does. Two
    computations of the same skb: every field must agree."""
    k = lookup(kernel)
    device = {name: value for name, value in mode.items() if name != "buffer_index"}
    c = virtio_net.for_frame(virtio_net.config(k, virtio_net.check_virtio_setup(
        k, VirtioRxSetup(**device))),  # type: ignore[arg-type]
        RxFrame(0, buffer_index=int(mode.get("buffer_index", 0))))  # type: ignore[call-overload]
    for frame_len in lengths:
        counted = virtio_net.deliver(c, virtio_net.plan(c, frame_len, detail=False)).skb
        walked = virtio_net.deliver(c, virtio_net.plan(c, frame_len, detail=True)).skb
        if walked is None:
            assert counted is None
            continue
        assert counted is not None
        assert counted._replace(frags=(), frag_list=()) == walked._replace(frags=(), frag_list=())
        assert walked.nr_frags == len(walked.frags)


def test_fact_sheet_ranges_6_1_mergeable() -> None:
    spans = collapse(virtio_rows(lookup("6.1"), VirtioRxSetup(mergeable=True),
                                 range(60, 1515)))
    assert [(s.first, s.last, s.what, s.truesize) for s in spans] == [
        (60, 128, "copy all", 1280),
        (129, 1204, "build_skb", 1792),
        (1205, 1514, "copy 14 B + 1 frag(s)", 2816),
    ]


def test_small_mode_ranges() -> None:
    spans = collapse(virtio_rows(lookup("5.15"), VirtioRxSetup(), range(1, 2000)))
    assert [(s.first, s.last, s.what) for s in spans] == [
        (1, 13, "drop (short_packet)"), (14, 1518, "build_skb"),
        (1519, 1999, "drop (len_exceeds_max_size)")]


def test_cli_text(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["sweep", "--len", "60-1514", "--mergeable", "--kernel", "6.1"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "129–1204" in out and "1205–1514" in out and "60–128" in out
    assert "truesize per packet (max 2816)" in out


def test_cli_two_kernels(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["sweep", "--len", "1000", "--mergeable", "--kernel", "5.12",
                                 "--kernel", "5.13", "--json"])
    doc = json.loads(result.stdout)
    assert doc["schema"] == "vnetrx.sweep/1"
    assert [(r["kernel"], r["what"], r["truesize"]) for r in doc["ranges"]] == [
        ("5.12.0", "copy 14 B + 1 frag(s)", 2304), ("5.13.0", "build_skb", 1792)]


def test_cli_jsonl_streams_one_line_per_length(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["sweep", "--len", "1-300:7", "--big", "--kernel", "6.1",
                                 "--jsonl"])
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == len(range(1, 301, 7)) + 1  # a range always ends on its upper bound
    assert lines[0]["outcome"] == "drop" and lines[0]["cost"] is None
    last = lines[-1]
    assert (last["frame_len"], last["outcome"], last["truesize"]) == (300, "build_skb", 4352)
    assert last["cost"] == {"allocations": 1, "bytes_copied": 0, "frags": 0}


def test_cli_csv(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["sweep", "--len", "1000,1400", "--mergeable", "--kernel", "6.1",
                                 "--csv"])
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["frame_len"], r["outcome"], r["truesize"]) for r in rows] == [
        ("1000", "build_skb", "1792"), ("1400", "copy", "2816")]


def test_cli_tap_path(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["sweep", "--len", "3455-3458", "--path", "tap", "--kernel",
                                 "6.18", "--json"])
    doc = json.loads(result.stdout)
    assert [(r["first"], r["last"], r["what"]) for r in doc["ranges"]] == [
        (3455, 3456, "build_skb"), (3457, 3458, "alloc_skb")]


@pytest.mark.parametrize(("args", "message"), [
    (["--len", "0-65536"], "length 65536 out of range (valid: 0..65535)"),
    (["--len", "10-5"], "bad range"),
    (["--len", "abc"], "cannot read length 'abc'"),
    (["--len", "1-10", "--jsonl", "--csv"], "choose one of --jsonl, --csv and --json"),
    (["--len", "1-10", "--blocking"], "--blocking do not apply to --path virtio"),
    (["--len", "1-10", "--kernel", "9.9"], "no profile for kernel 9.9"),
])
def test_cli_bad_input(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(cli, ["sweep", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_weights_give_the_totals_of_a_length_mix(tmp_path: object) -> None:
    """6.1 mergeable, a steady stream of each length: 60 bytes are copied whole (truesize 1280,
    two allocations, 60 bytes copied), 1000 bytes build_skb in a 1536-byte buffer (truesize
    1792, one allocation) — the fact sheet's ranges above."""
    from pathlib import Path

    path = Path(str(tmp_path)) / "mix.txt"
    path.write_text("60x3,1000")
    runner = CliRunner()
    doc = json.loads(runner.invoke(cli, ["sweep", "--weights", str(path), "--mergeable",
                                         "--kernel", "6.1", "--json"]).stdout)
    totals = doc["kernels"]["6.1.192"]
    assert (totals["frames"], totals["frame_bytes"], totals["build_skb"], totals["copy"]) == (
        4, 1180, 1, 3)
    assert (totals["allocations"], totals["bytes_copied"]) == (7, 180)
    assert totals["truesize"] == {"sum": 3 * 1280 + 1792, "min": 1280, "median": 1280,
                                  "p99": 1792, "max": 1792}
    text = runner.invoke(cli, ["sweep", "--weights", str(path), "--mergeable", "--kernel", "6.1"])
    assert text.stdout.startswith("Linux 6.1.192: 4 frames, 1180 bytes; 4 skbs (25.0% build_skb)")
    bad = runner.invoke(cli, ["sweep", "--weights", str(path), "--len", "60", "--mergeable"])
    assert bad.exit_code == 2 and "exactly one of --len LIST and --weights FILE" in bad.stderr


def test_jsonl_lines_are_the_rows_json() -> None:
    """sweep --jsonl writes each row's JSON directly; it must be json.dumps of row_to_dict."""
    from vnetrx.paths.tun import TapSetup
    from vnetrx.sweep import row_line, row_to_dict, tap_rows

    for kernel in ("5.12", "6.1", "7.3"):
        for row in virtio_rows(lookup(kernel), VirtioRxSetup(mergeable=True),
                               range(1, 65536, 97)):
            assert row_line(row) == json.dumps(row_to_dict(row))
    for row in tap_rows(lookup("6.1"), TapSetup(), range(1, 3000, 113)):
        assert row_line(row) == json.dumps(row_to_dict(row))


def test_xdp_rows_come_from_the_xdp_path() -> None:
    # mergeable with a program, 6.1: one 3520-byte buffer holds 12 + 3508; longer frames span
    # two and xdp_linearize_page drops them (docs/kernel/xdp-source-notes.md §A.4)
    setup = VirtioRxSetup(mergeable=True, xdp="pass")
    spans = collapse(virtio_rows(lookup("6.1"), setup, range(3500, 3521)))
    assert [(s.first, s.last, s.outcome, s.reason, s.truesize) for s in spans] == [
        (3500, 3508, "build_skb", None, 4352), (3509, 3520, "xdp_drop", "xdp_linearize", None)]


XDP_SETUPS = [
    {"xdp": "pass"}, {"xdp": "tx"}, {"xdp": "drop", "hdr": "01"},
    {"mergeable": True, "xdp": "pass"}, {"mergeable": True, "xdp": "redirect"},
    {"mergeable": True, "xdp": "pass", "xdp_frags": True},
    {"mergeable": True, "xdp": "tx", "xdp_adjust_head": -64, "xdp_adjust_tail": 40},
    {"mergeable": True, "xdp": "pass", "xdp_posted_before": True},
    {"xdp": "pass", "xdp_posted_before": True, "xdp_meta": 8},
    {"mergeable": True, "xdp": "drop", "xdp_posted_before": True, "xdp_frags": True},
]


def _traced_row(t: Trace) -> tuple[object, ...]:
    """What a sweep row holds, read from a full (narrated) trace."""
    frame_len = dict(t.input)["frame_len"]
    if t.skb is None or t.cost is None:
        return (frame_len, t.outcome, t.errno or t.reason, None, None, None, len(t.buffers) or 1)
    return (frame_len, t.outcome, None, t.skb, t.cost.allocations, t.cost.bytes_copied,
            len(t.buffers) or 1)


def _trace_all(k: KernelProfile, s: VirtioRxSetup, like: RxFrame, lengths: list[int]) -> None:
    for n in lengths:
        trace_virtio(k, s, like._replace(len=n))


def _row(r: Row) -> tuple[object, ...]:
    return (r.frame_len, r.outcome, r.reason, r.skb, r.allocations, r.bytes_copied, r.buffers)


@given(kernel=st.sampled_from(KERNELS), setup=st.sampled_from(XDP_SETUPS),
       lengths=st.lists(st.integers(1, 65535), min_size=1, max_size=12))
def test_xdp_rows_equal_full_traces(kernel: str, setup: dict[str, object],
                                    lengths: list[int]) -> None:
    """An XDP sweep reads receive_buf's decisions (xdp_received) and makes its rows itself; a
    trace narrates the same decisions and makes its result (model.Received, the engine): each row
    must carry what the trace reports (outcome, reason or errno, skb, cost, buffers). The
    decisions themselves are pinned by the goldens and the fact-sheet tests."""
    k = lookup(kernel)
    if setup.get("xdp_frags") and not k.has(VIRTIO_XDP_MULTI_BUF):
        return  # --xdp-frags needs multi-buffer XDP (6.3): a usage error there
    device = {name: value for name, value in setup.items() if name != "hdr"}
    s = VirtioRxSetup(**device)  # type: ignore[arg-type]
    like = RxFrame(0, VnetHdr.from_bytes(bytes.fromhex(str(setup["hdr"])))
                   if "hdr" in setup else None)
    try:
        rows = list(virtio_rows(k, s, lengths, like))
    except VnetrxError as exc:  # a setup this kernel refuses, or a case vnetrx does not model
        with pytest.raises(VnetrxError, match=re.escape(exc.message[:40])):
            _trace_all(k, s, like, lengths)
        return
    assert [_row(r) for r in rows] == [_traced_row(trace_virtio(k, s, like._replace(len=n)))
                                       for n in lengths]


TAP_SETUPS = [
    {}, {"blocking": True}, {"sndbuf": 65536}, {"vnet_hdr": False}, {"vnet_hdr_sz": 12},
    {"tun": True}, {"xdp": "pass"}, {"xdp": "tx", "xdp_adjust_head": -32},
    {"xdp": "redirect"}, {"xdp": "drop", "blocking": True}, {"xdp": "pass", "xdp_meta": 16},
    {"hdr": bytes.fromhex("01000000000022001000")}, {"hdr": bytes.fromhex("0101360000052200")},
    {"hdr": bytes.fromhex("01013600a8052200100000000000")},
]


@given(kernel=st.sampled_from(TAP), setup=st.sampled_from(TAP_SETUPS),
       lengths=st.lists(st.integers(1, 65535), min_size=1, max_size=12))
def test_tap_rows_equal_full_traces(kernel: str, setup: dict[str, object],
                                    lengths: list[int]) -> None:
    """A tap sweep reads tun_get_user's plan (tap_plan) and makes its rows itself; a trace
    narrates the same plan into a Received: each row must carry what the trace reports."""
    k = lookup(kernel)
    s = TapSetup(**{n: v for n, v in setup.items() if n != "hdr"})  # type: ignore[arg-type]
    like = TapFrame(0, setup.get("hdr"))  # type: ignore[arg-type]
    try:
        rows = list(tap_rows(k, s, lengths, like))
    except VnetrxError:
        with pytest.raises(VnetrxError):
            trace_tap(k, s, like._replace(len=lengths[0]))
        return
    assert [_row(r) for r in rows] == [_traced_row(trace_tap(k, s, like._replace(len=n)))
                                       for n in lengths]
