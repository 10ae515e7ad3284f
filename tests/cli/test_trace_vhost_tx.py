"""`vnetrx trace --path vhost-tx` (and `sweep`, `diff` on it): the JSON keys the lab's guest
probe reads and every way the options can be wrong (the golden of the documented example:
tests/test_golden.py, vhost-tx-1000-6.12)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli


def run(runner: CliRunner, *args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(cli, ["trace", "--path", "vhost-tx", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_the_keys_the_guest_probe_compares(runner: CliRunner) -> None:
    """path, skb len/data_len/truesize/nr_frags and outcome at stable places (the lab's
    vhost probe checks them against 6.1 and 6.12 guests)."""
    doc = run(runner, "--len", "1000", "--kernel", "6.1")
    assert (doc["path"], doc["outcome"], doc["vhost"]["path"], doc["vhost"]["reason"]) == (
        "vhost-tx", "build_skb", "batch", "batched")
    skb = doc["skb"]
    assert (skb["len"], skb["data_len"], skb["truesize"], skb["nr_frags"]) == (986, 0, 1728, 0)
    assert doc["vhost"]["buffer"] == {"pad": 128, "headroom": 0, "buflen": 1472,
                                      "page_size": 4096, "max_frame": 3636, "hdr_offset": 4}
    over = run(runner, "--len", "3637", "--kernel", "6.1")
    assert (over["vhost"]["path"], over["vhost"]["reason"]) == ("tun_get_user", "enospc")
    assert over["skb"]["len"] == 3623


def test_a_refused_header_is_an_outcome_not_an_exit_code(runner: CliRunner) -> None:
    stalled = run(runner, "--len", "1000", "--hdr", "010000000000f503100000")
    assert (stalled["outcome"], stalled["reason"], stalled["errno"], stalled["skb"]) == (
        "error", "hdr_len_exceeds_len", "EINVAL", None)
    assert stalled["vhost"]["stalled"] is True
    dropped = run(runner, "--len", "1000", "--l4", "tcp4", "--csum", "none", "--gso",
                  "tcpv4:1448", "--kernel", "6.6.46")
    assert (dropped["outcome"], dropped["reason"], dropped["counter"]) == (
        "drop", "bad_gso", "rx_frame_errors")
    assert dropped["refused_by"]["function"] == "virtio_net_hdr_to_skb"


def test_check_exits_3_when_no_skb_reaches_the_stack(runner: CliRunner) -> None:
    """--check: EXIT_CHECK (3) as for the other paths."""
    assert runner.invoke(cli, ["trace", "--path", "vhost-tx", "--len", "13", "--check"]
                         ).exit_code == 3
    assert runner.invoke(cli, ["trace", "--path", "vhost-tx", "--len", "14", "--check"]
                         ).exit_code == 0


def test_sndbuf_and_zcopy_and_napi(runner: CliRunner) -> None:
    doc = run(runner, "--len", "1000", "--sndbuf", "65536")
    assert (doc["vhost"]["path"], doc["vhost"]["reason"], doc["vhost"]["buffer"]) == (
        "tun_get_user", "sndbuf", None)
    doc = run(runner, "--len", "100", "--zcopy")
    assert (doc["vhost"]["path"], doc["vhost"]["reason"]) == ("tun_get_user", "zerocopy")
    doc = run(runner, "--len", "1000", "--iff-napi")
    assert doc["vhost"]["delivery"] == "napi_gro_receive"


def test_text_names_the_road(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--path", "vhost-tx", "--len", "3637"])
    assert result.exit_code == 0
    assert "Summary: vhost-net: tun_get_user (enospc) · alloc_skb" in result.stdout
    assert "drivers/vhost/net.c:vhost_net_build_xdp @ 7.3.4" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--len", "1000", "--blocking"], "--blocking does not apply to --path vhost-tx"),
        (["--len", "1000", "--mergeable"], "--mergeable does not apply to --path vhost-tx"),
        (["--len", "1000", "--xdp", "pass", "--xdp-meta", "8"],
         "--xdp-meta does not apply to --path vhost-tx"),
        (["--len", "1000", "--vnet-hdr-sz", "11"], "valid: 10 without MRG_RXBUF/VERSION_1, 12"),
        (["--len", "1000", "--zcopy", "--zcopy-offset", "4096"], "valid: 0..4095"),
        (["--len", "1000", "--zcopy-offset", "8"], "give --zcopy too"),
        (["--len", "1000", "--zcopy", "--xdp", "pass"], "not modelled"),
        (["--len", "13", "--kernel", "6.1.0"], "CVE-2024-41091"),
        (["--len", "1000", "--kernel", "4.14"], "added in 4.20"),
        (["--len", "65536"], "65535"),
        (["--len", "1000", "--sndbuf", "0"], "0"),
        (["--len", "1000", "--l4", "tcp4", "--gso", "tcpv4:1448", "--xdp", "drop"],
         "generic XDP"),
        (["--len", "1000", "--l4", "tcp4", "--gro"], "--gro does not apply to --path vhost-tx"),
    ],
)
def test_bad_input_is_one_line(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(cli, ["trace", "--path", "vhost-tx", *args])
    assert result.exit_code in (1, 2), result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetrx: error: "), result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize("option", ["--zcopy", "--iff-napi"])
@pytest.mark.parametrize("path", ["virtio", "tap"])
def test_the_vhost_options_are_refused_elsewhere(runner: CliRunner, option: str,
                                                 path: str) -> None:
    result = runner.invoke(cli, ["trace", "--path", path, "--len", "1000", option])
    assert result.exit_code == 2
    assert f"does not apply to --path {path}" in result.stderr


def test_sweep_carries_the_road(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["sweep", "--path", "vhost-tx", "--len", "3635-3638",
                                 "--kernel", "6.12", "--jsonl"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["frame_len"], r["outcome"], r["truesize"]) for r in rows] == [
        (3635, "build_skb", 4352), (3636, "build_skb", 4352), (3637, "alloc_skb", 4352),
        (3638, "alloc_skb", 4352)]
    assert [r["cost"]["allocations"] for r in rows] == [1, 1, 2, 2]
    bad = runner.invoke(cli, ["sweep", "--path", "vhost-tx", "--len", "10-20", "--blocking"])
    assert bad.exit_code == 2 and "--blocking do not apply to --path vhost-tx" in bad.stderr


def test_diff_names_the_vhost_fields(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["diff", "--kernel", "6.6", "--kernel", "6.18", "--json", "--",
                                 "--path", "vhost-tx", "--len", "1000"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    fields = {f["field"]: (f["a"], f["b"]) for f in doc["fields"]}
    assert fields["vhost.page_frag"] == ("vhost_net_page_frag_refill", "page_frag_alloc_align")
    assert fields["vhost.buffer.hdr_offset"] == (4, 0)
    assert "skb.truesize" not in fields
