"""`vnetrx headroom` through click's CliRunner: text, JSON, goldens, and every bad input of issue 3."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.goldens import Golden, drop_json
from vnetrx.cli import cli


def invoke(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli, ["headroom", *args])
    return result.exit_code, result.stdout, result.stderr


def test_golden_udp(runner: CliRunner, golden: Golden) -> None:
    code, out, err = invoke(runner, "--udp")
    assert (code, err) == (0, "")
    golden("headroom/udp-default.txt", out)


def test_golden_udp_compare(runner: CliRunner, golden: Golden) -> None:
    code, out, err = invoke(runner, "--udp", "--kernel", "3.16", "--compare", "3.15")
    assert (code, err) == (0, "")
    golden("headroom/udp-3.16-compare-3.15.txt", out)


def test_golden_json_compare(runner: CliRunner, golden: Golden) -> None:
    code, out, _ = invoke(
        runner, "--kernel", "3.16", "--compare", "3.15", "--payload", "64,4096", "--json"
    )
    assert code == 0
    # both kernels' change keys left out, as in the trace goldens (tests/goldens.py)
    golden("headroom/udp-3.16-compare-3.15.json", out,
           scrub=drop_json("kernel.changes", "compare.kernel.changes"))


def test_text_table_and_picture(runner: CliRunner) -> None:
    code, out, _ = invoke(runner, "--kernel", "3.16", "--compare", "3.15")
    assert code == 0
    assert "Linux 3.16.0: needed_headroom 12 → hh_len (LL_RESERVED_SPACE) 32" in out
    assert "Linux 3.15.0: needed_headroom 0 → hh_len (LL_RESERVED_SPACE) 16" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("4096"))
    assert " ".join(row.split()) == "4096 3: 2×1514 1178 18 yes 3 3 2 no 6 3"
    assert "fits: the 12-byte header is written inline, 1 sg entry, 1 ring slot" in out
    assert "does not fit: 2 bytes of headroom < hdr_len 12, 2 sg entries, 1 ring slot" in out
    assert "drivers/net/virtio_net.c:xmit_skb @ 3.15.0" in out
    assert "\x1b[" not in out


def test_json_shape(runner: CliRunner) -> None:
    code, out, _ = invoke(
        runner, "--json", "--kernel", "3.15", "--payload", "64,4096", "--no-indirect"
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "vnetrx.headroom/1"
    assert doc["kernel"]["name"] == "3.15.0"
    assert doc["input"]["payloads"] == [64, 4096]
    assert doc["input"]["indirect"] is False
    assert doc["compare"] is None
    first, second = doc["results"]
    assert (first["needed_headroom"], first["hh_len"], first["hdr_len"]) == (0, 16, 12)
    skb = first["skbs"][0]
    keys = ("len", "headroom", "can_push", "sg_entries", "ring_slots")
    assert [skb[k] for k in keys] == [106, 2, False, 2, 2]
    assert (second["sg_entries_total"], second["ring_slots_total"]) == (6, 6)
    assert [s["len"] for s in second["skbs"]] == [1514, 1514, 1178]
    assert second["steps"][0]["source"] == "net/ipv4/ip_output.c:__ip_append_data @ 3.15.0"


def test_json_compare_and_options(runner: CliRunner) -> None:
    args = ("--json", "--ipv6", "--no-mergeable", "--kernel", "3.16", "--compare", "3.15")
    doc = json.loads(invoke(runner, *args, "--payload", "64")[1])
    assert doc["results"][0]["skbs"][0]["headroom"] == 26
    other = doc["compare"]
    assert other["kernel"]["name"] == "3.15.0"
    skb = other["results"][0]["skbs"][0]
    assert (skb["headroom"], skb["can_push"], other["results"][0]["hdr_len"]) == (10, True, 10)


def test_tcp_config_and_hdr_len(runner: CliRunner) -> None:
    doc = json.loads(
        invoke(runner, "--json", "--tcp", "--config", "debian-cloud", "--payload", "100")[1]
    )
    assert doc["max_tcp_header"] == 256
    assert doc["results"][0]["skbs"][0]["headroom"] == 190
    assert doc["input"]["config"] == "debian-cloud"
    doc = json.loads(invoke(runner, "--json", "--hdr-len", "24", "--payload", "64")[1])
    assert (doc["results"][0]["hh_len"], doc["results"][0]["skbs"][0]["headroom"]) == (48, 34)


def test_ufo_on_old_kernel_and_note_on_new(runner: CliRunner) -> None:
    code, out, _ = invoke(
        runner, "--ufo", "--payload", "4096", "--kernel", "4.13", "--compare", "4.14"
    )
    assert code == 0
    row = next(line for line in out.splitlines() if line.strip().startswith("4096"))
    assert "4096   4138 UFO / 3:" in row  # one GSO skb on 4.13, three fragments on 4.14
    assert row.split()[-8:] == ["18", "yes", "2", "1", "18", "yes", "3", "3"]
    assert "UFO was removed in 4.14" in out


def test_help_teaches(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["headroom", "--help"])
    assert result.exit_code == 0
    for text in ("Examples:", "--compare", "--hdr-len", "--ufo", "LL_RESERVED_SPACE"):
        assert text in result.stdout
    assert "6ebbc1a6383f" in result.stdout


BAD = [
    (["--payload", "0"], "payload 0 out of range for IPv4 UDP (valid: 1..65507 bytes)"),
    (["--payload", "65508"], "payload 65508 out of range for IPv4 UDP (valid: 1..65507 bytes)"),
    (["--payload", "64,abc"], "is not a comma-separated list of whole numbers"),
    (["--kernel", "9.9"], "no profile for kernel 9.9"),
    (["--compare", "banana"], "cannot read kernel version 'banana'"),
    (["--tcp", "--ufo"], "--ufo is UDP fragmentation offload: it does not apply to --tcp"),
    (["--hdr-len", "7"], "'7' is not one of '10', '12', '20', '24'"),
    (["--hdr-len", "12", "--mergeable"], "--hdr-len and --mergeable/--no-mergeable exclude"),
    (["--hdr-len", "20", "--kernel", "3.16"], "hdr_len 20 (VIRTIO_NET_F_HASH_REPORT) needs 5.18"),
    (["--mtu", "67"], "67 is out of range (valid: 68..16000 bytes)"),
    (["--ipv6", "--mtu", "1000"], "MTU 1000 out of range for IPv6 (valid: 1280..16000)"),
]


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_input_one_line_exit_2(runner: CliRunner, args: list[str], message: str) -> None:
    code, out, err = invoke(runner, *args)
    assert code == 2
    assert err.startswith("vnetrx: error: ")
    assert err.count("\n") == 1, err
    assert message in err
    assert "Traceback" not in err + out


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_input_json_error_object(runner: CliRunner, args: list[str], message: str) -> None:
    code, out, _ = invoke(runner, *args, "--json")
    assert code == 2
    doc = json.loads(out)
    assert doc["schema"] == "vnetrx.error/1"
    assert doc["exit_code"] == 2
    assert message in doc["error"]
