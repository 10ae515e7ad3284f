"""`vnetrx trace` through click's CliRunner: output, JSON, and every bad input of issue 2."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli


def test_text_output_has_steps_map_skb_and_summary(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1000", "--mergeable", "--kernel", "6.1"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "virtio-mergeable on Linux 6.1.192" in out
    assert "drivers/net/virtio_net.c:page_to_skb @ 6.1.192" in out
    assert "skb_shared_info" in out and "next buffer" in out
    assert "truesize 1792" in out
    assert "Summary: build_skb" in out
    assert "\x1b[" not in out  # NO_COLOR / not a terminal: no escape codes


def test_text_output_5_12_copy(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1000", "--mergeable", "--kernel", "5.12"])
    assert result.exit_code == 0
    assert "Summary: copy · truesize 2304 · 14 bytes copied · 1 frag(s)" in result.stdout


def test_json_output(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1000", "--mergeable", "--kernel", "5.13",
                                 "--json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["schema"] == "vnetrx.trace/1"
    assert doc["kernel"]["name"] == "5.13.0"
    assert doc["input"]["frame_len"] == 1000 and doc["input"]["hdr_len"] == 12
    assert (doc["path"], doc["outcome"], doc["reason"]) == ("virtio-mergeable", "build_skb", None)
    skb = doc["skb"]
    assert (skb["len"], skb["data_len"], skb["truesize"], skb["nr_frags"]) == (986, 0, 1792, 0)
    assert (skb["mac_header"], skb["end"], skb["frags"]) == (12, 1216, [])
    assert doc["cost"] == {"allocations": 1, "bytes_copied": 0, "frags": 0}
    regions = doc["buffer"]["regions"]
    assert sum(r["size"] for r in regions) == doc["buffer"]["size"] == 1536
    assert {"function", "source", "summary", "values", "because"} <= set(doc["steps"][0])


def test_kernel_running_prints_what_it_read(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1000", "--kernel", "running", "--json"])
    if result.exit_code != 0:
        pytest.skip(f"running kernel not profiled here: {result.stderr.strip()}")
    doc = json.loads(result.stdout)
    assert doc["kernel"]["source"].startswith("running: release ")


def test_debian_release_string(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1000", "--kernel", "6.1.0-57-amd64", "--json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["kernel"]["name"] == "6.1.192"
    assert any("Debian ABI name" in n for n in doc["notes"])


BAD = [
    (["--len", "-1"], "-1 is out of range (valid: 0..65535"),
    (["--len", "-5"], "-5 is out of range (valid: 0..65535"),
    (["--len", "abc"], "'abc' is not a whole number (valid: 0..65535)"),
    (["--len", "65536"], "65536 is out of range (valid: 0..65535"),
    (["--len", "99999999999999999999"], "out of range (valid: 0..65535"),
    (["--len", "100", "--kernel", "9.99"], "no profile for kernel 9.99"),
    (["--len", "100", "--kernel", "nope"], "cannot read kernel version 'nope'"),
    (["--len", "100", "--kernel", "3.15"], "the virtio path is not modelled for kernel 3.15"),
    (["--len", "100", "--path", "tap", "--big"], "--guest-gso does not apply to --path tap"),
    (["--len", "100", "--hdr-len", "7"], "'7' is not one of '10', '12', '20', '24'"),
    (["--len", "100", "--hdr-len", "20", "--kernel", "5.15"], "needs 5.18 or later"),
    (["--len", "100", "--hdr-len", "10", "--mergeable"], "cannot go with MRG_RXBUF"),
    (["--len", "100", "--buf-len", "2048"], "--buf-len sets the mergeable buffer size"),
    (["--len", "100", "--mergeable", "--buf-len", "20"], "out of range (valid: 26..32768)"),
    (["--len", "100", "--mtu", "10"], "10 is out of range (valid: 68..65535"),
    ([], "give the frame length (--len N) or the frame itself (--frame FILE)"),
]


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_input_one_line_exit_2(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(cli, ["trace", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetrx: error: ")
    assert "Traceback" not in result.output
    assert result.stdout == ""


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_input_with_json_gives_json_error(runner: CliRunner, args: list[str],
                                              message: str) -> None:
    result = runner.invoke(cli, ["trace", *args, "--json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["schema"] == "vnetrx.error/1" and doc["exit_code"] == 2
    assert message in doc["error"] + (doc["hint"] or "")


def test_a_frame_of_length_0(runner: CliRunner) -> None:
    """--len 0: on the virtio path the device wrote the header alone (a short packet,
    rx_length_errors); on the tap path write(2) of the header alone fails with EINVAL on a TAP
    (no counter) and on a TUN (rx_dropped), as measured on 6.18.44."""
    doc = json.loads(runner.invoke(cli, ["trace", "--len", "0", "--json"]).stdout)
    assert (doc["outcome"], doc["reason"], doc["counter"]) == ("drop", "short_packet",
                                                               "rx_length_errors")
    assert doc["buffer"]["used"] == 12
    text = runner.invoke(cli, ["trace", "--len", "0"]).stdout
    assert "Summary: dropped (short_packet); rx_length_errors++" in text
    tap = runner.invoke(cli, ["trace", "--path", "tap", "--len", "0"])
    assert tap.exit_code == 0
    assert "write() fails with EINVAL (frame of 0 bytes below ETH_HLEN (14))" in tap.stdout
    tun = runner.invoke(cli, ["trace", "--path", "tap", "--tun", "--len", "0"])
    assert "write() fails with EINVAL (a TUN frame of 0 bytes has no IP version " \
        "(ip_version 0)); rx_dropped++" in tun.stdout
    rows = runner.invoke(cli, ["sweep", "--len", "0-1", "--jsonl"]).stdout.splitlines()
    assert [(r["frame_len"], r["reason"]) for r in map(json.loads, rows)] == [
        (0, "short_packet"), (1, "short_packet")]


def test_help_teaches(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--help"])
    assert result.exit_code == 0
    assert "vnetrx trace --len 1000 --mergeable" in result.stdout
    assert "--kernel" in result.stdout and "running" in result.stdout


def test_kernels_lists_profiles_and_changes(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["kernels", "--changes"])
    assert result.exit_code == 0
    assert "6.1.192" in result.stdout
    assert "fb32856b16ad" in result.stdout
    doc = json.loads(runner.invoke(cli, ["kernels", "--changes", "--json"]).stdout)
    assert "page_to_skb_build_skb" in [c["key"] for c in doc["changes"]]


def test_xdp_tx_json_has_outcome_and_read_back(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--path", "tap", "--len", "1000", "--xdp", "tx",
                                 "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["outcome"], doc["skb"]) == ("xdp_tx", None)
    assert doc["xdp_tx"] == {"len": 1010, "hdr": "00" * 10}
    assert doc["xdp"]["xdp_buff"] == {"headroom": 320, "len": 1000, "frame_sz": 1664,
                                      "tailroom": 24, "nr_frags": 0,
                                      "frags_size": 0, "meta_len": 0}
    assert doc["input"]["xdp"] == "tx"


def test_bare_xdp_is_pass(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--path", "tap", "--len", "1000", "--xdp"])
    assert result.exit_code == 0, result.output
    assert "native XDP_PASS" in result.stdout and "truesize 1920" in result.stdout


def test_xdp_drop_text_summary(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--path", "tap", "--len", "1000", "--xdp", "drop"])
    assert "Summary: XDP_DROP (native): dropped by the program · rx_dropped +1" in result.stdout


def test_unknown_xdp_action_is_a_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--path", "tap", "--len", "1000", "--xdp", "bounce"])
    assert result.exit_code == 2
    assert "bounce" in result.output and "redirect" in result.output
    result = runner.invoke(cli, ["verify", "tap", "--xdp", "pass,bounce"])
    assert result.exit_code == 2 and "not an XDP action" in result.output


def test_xdp_adjust_needs_xdp(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--path", "tap", "--len", "1000", "--xdp-adjust-head",
                                 "-10"])
    assert result.exit_code == 2 and "give --xdp ACTION too" in result.output
    result = runner.invoke(cli, ["verify", "tap", "--xdp-adjust-tail", "4"])
    assert result.exit_code == 2 and "give --xdp ACTIONS too" in result.output


def test_virtio_xdp_text_and_json(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1000", "--mergeable", "--xdp", "--kernel",
                                 "6.1"])
    assert result.exit_code == 0, result.output
    assert "native XDP_PASS" in result.stdout and "truesize 4352" in result.stdout
    assert "xdp headroom" in result.stdout  # the buffer map shows the 256 bytes
    result = runner.invoke(cli, ["trace", "--len", "1000", "--xdp", "tx", "--kernel", "6.18",
                                 "--json"])
    doc = json.loads(result.stdout)
    assert (doc["outcome"], doc["xdp_tx"]["len"]) == ("xdp_tx", 1012)  # 12-byte header pushed
    assert doc["xdp"]["driver_counters"]["tx_xdp_tx"] == 1
    assert doc["input"]["xdp"] == "tx"


def test_virtio_xdp_attach_refused_text(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1000", "--mergeable", "--mtu", "9000",
                                 "--xdp", "--kernel", "6.12"])
    assert result.exit_code == 0, result.output
    assert "attaching the XDP program fails with EINVAL" in result.stdout
    assert "MTU too large to enable XDP without frags" in result.stdout


def test_xdp_frags_is_virtio_only(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--path", "tap", "--len", "1000", "--xdp",
                                 "--xdp-frags"])
    assert result.exit_code == 2 and "--xdp-frags does not apply to --path tap" in result.output
