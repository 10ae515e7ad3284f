"""The device options (vnetrx/cli/device_options.py): every command that takes one gives it the
same meaning, guest GSO has one name (--big is the same option under an old name), and an option
a command cannot honour is refused in one line that says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli

RUNNER = CliRunner()
LAB = Path(__file__).parent.parent / "data" / "lab"
COMMANDS = [["trace"], ["sweep"], ["replay"], ["observe"], ["xdp", "check"], ["lab", "virtio"]]


def _ok(args: list[str]) -> str:
    result = RUNNER.invoke(cli, args)
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


def _refused(args: list[str], text: str) -> None:
    result = RUNNER.invoke(cli, args)
    assert result.exit_code == 2, (args, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetrx: error: "), result.stderr
    assert text in lines[0], lines[0]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_names_guest_gso_once(command: list[str]) -> None:
    text = _ok([*command, "--help"])
    # lab virtio negotiates guest GSO with --mode big-gso/mergeable-gso and refuses the option
    assert ("--guest-gso" in text) is (command != ["lab", "virtio"])
    assert "--big" not in text.replace("big-gso", "")


@pytest.mark.parametrize("kernel", ["5.12", "6.1", "6.12", "7.3"])
@pytest.mark.parametrize("length", [60, 1514, 9014])
def test_trace_big_is_guest_gso(kernel: str, length: int) -> None:
    base = ["trace", "--len", str(length), "--kernel", kernel, "--json"]
    assert _ok([*base, "--big"]) == _ok([*base, "--guest-gso"])


def test_sweep_big_is_guest_gso() -> None:
    base = ["sweep", "--len", "1-9100:97", "--kernel", "6.1", "--jsonl"]
    assert _ok([*base, "--big"]) == _ok([*base, "--guest-gso"])


def test_guest_gso_with_mergeable_sizes_min_buf_len() -> None:
    # mergeable_min_buf_len (drivers/net/virtio_net.c @6.12): big_packets sizes for IP_MAX_MTU:
    # DIV_ROUND_UP(12 + 14 + 4 + 65535, 16) - 12 = 4086; without guest GSO, max_mtu 1400:
    # DIV_ROUND_UP(12 + 14 + 4 + 1400, 16) - 12 = 78, raised to GOOD_PACKET_LEN 1518.
    # get_mergeable_buf_len: ALIGN(12 + clamp(ewma, min_buf_len, 4096 - 12), 64).
    device = ["--mergeable", "--ring-size", "16", "--mtu", "1400", "--kernel", "6.12"]
    for gso, min_buf_len, size in (([], 1518, 1536), (["--guest-gso"], 4086, 4096),
                                   (["--big"], 4086, 4096)):
        replayed = json.loads(_ok(["replay", "--len", "60x3", *device, *gso, "--json"]))
        assert replayed["min_buf_len"] == min_buf_len
        traced = json.loads(_ok(["trace", "--len", "60", *device, *gso, "--json"]))
        assert traced["input"]["guest_gso"] is bool(gso)
        assert traced["buffers"][0]["size"] == size


def test_replay_big_is_guest_gso() -> None:
    # guest GSO without MRG_RXBUF is big mode, replayed alike whichever the spelling
    rows = {name: _ok(["replay", "--len", "60,9014", name, "--jsonl"])
            for name in ("--big", "--guest-gso")}
    assert rows["--big"] == rows["--guest-gso"]
    assert [json.loads(line)["buffers"] for line in rows["--big"].splitlines()] == [[], []]


def test_xdp_check_big_is_guest_gso() -> None:
    for kernel in ("6.1", "6.12"):
        base = ["xdp", "check", "--kernel", kernel, "--json"]
        assert _ok([*base, "--big"]) == _ok([*base, "--guest-gso"])
        doc = json.loads(_ok([*base, "--guest-gso"]))
        assert doc["device"]["mode"] == "big" and doc["runs"] is False  # big mode: never runs
        # MRG_RXBUF wins over guest GSO (virtnet_probe): mergeable mode, the program runs
        both = json.loads(_ok([*base, "--mergeable", "--big"]))
        assert both["device"]["mode"] == "mergeable" and both["runs"] is True


def _plain(tmp_path: Path, log: str) -> Path:
    lines = [x for x in (LAB / log).read_text().splitlines() if "napi_gro_receive_entry:" in x]
    out = tmp_path / "trace.txt"
    out.write_text("# tracer: nop\n" + "\n".join(lines) + "\n")
    return out


def test_observe_big_is_guest_gso(tmp_path: Path) -> None:
    trace = str(_plain(tmp_path, "mergeable-6.1.0-57-amd64.log"))
    base = ["observe", "--from-trace", trace, "--kernel", "6.1", "--json"]
    big = RUNNER.invoke(cli, [*base, "--big"])
    gso = RUNNER.invoke(cli, [*base, "--guest-gso"])
    assert big.stdout == gso.stdout and big.exit_code == gso.exit_code
    doc = json.loads(gso.stdout)
    assert doc["mode"] == "big" and "GUEST_TSO4" in doc["features"]
    both = RUNNER.invoke(cli, [*base, "--mergeable", "--guest-gso", "--buf-len", "1536"])
    doc = json.loads(both.stdout)
    assert doc["mode"] == "mergeable" and {"MRG_RXBUF", "GUEST_TSO4"} <= set(doc["features"])


@pytest.mark.parametrize(("args", "text"), [
    (["replay", "--len", "60", "--mergeable", "--buf-len", "1536"],
     "--buf-len does not apply to replay: each refill sizes its buffers from the EWMA"),
    (["xdp", "check", "--ring-size", "64"],
     "--ring-size does not apply to xdp check"),
    (["xdp", "check", "--buf-len", "1536"], "--buf-len does not apply to xdp check"),
    (["xdp", "check", "--path", "tap", "--big"],
     "--guest-gso describes a virtio-net device, not --path tap"),
    (["xdp", "check", "--path", "tap", "--mtu", "9000", "--mergeable"],
     "--mergeable, --mtu describe a virtio-net device, not --path tap"),
    (["xdp", "check", "--legacy", "--hdr-len", "12"], "does not go with --legacy"),
    (["xdp", "check", "--hdr-len", "10"], "--hdr-len 10 is the legacy header"),
    (["observe", "--from-trace", str(LAB / "small-6.1.0-57-amd64.log"), "--ring-size", "64"],
     "--ring-size does not apply to observe"),
    (["observe", "--dev", "vnxnope0", "--big"], "--guest-gso apply to --from-trace text only"),
    (["observe", "--from-trace", str(LAB / "small-6.1.0-57-amd64.log"), "--guest-gso"],
     "the lab log states the device's features: drop --guest-gso"),
    # observe's --buf-len reaches no core range check: the parser keeps its range
    (["observe", "--from-trace", str(LAB / "small-6.1.0-57-amd64.log"), "--buf-len", "0"],
     "0 is out of range (valid: 1..65536 bytes)"),
    (["lab", "virtio", "--mergeable"], "--mergeable does not apply to lab virtio: --mode"),
    (["lab", "virtio", "--big"], "--guest-gso does not apply to lab virtio: --mode big-gso"),
    (["lab", "virtio", "--hdr-len", "20"], "--hdr-len does not apply to lab virtio"),
    (["trace", "--len", "60", "--path", "tap", "--ring-size", "64"],
     "--ring-size does not apply to --path tap"),
    (["sweep", "--len", "60-70", "--path", "tap", "--guest-gso"],
     "--guest-gso do not apply to --path tap"),
])
def test_an_option_a_command_cannot_honour_is_refused_in_one_line(args: list[str],
                                                                  text: str) -> None:
    _refused(args, text)


def test_hdr_len_in_xdp_check_is_the_kernel_s() -> None:
    # vi->hdr_len 20 (HASH_REPORT) exists from 5.18: the same check as trace's
    _refused(["xdp", "check", "--hdr-len", "20", "--kernel", "5.15"], "needs 5.18 or later")
    _refused(["trace", "--len", "60", "--hdr-len", "20", "--kernel", "5.15"], "needs 5.18 or later")
    # add_recvbuf_small's slot (6.1, x86_64): SKB_DATA_ALIGN(hdr_len + VIRTNET_RX_PAD 64 +
    # GOOD_PACKET_LEN 1518 [+ XDP_PACKET_HEADROOM 256]) + shinfo 320; the device writes
    # hdr_len + 1518 bytes
    for hdr_len, slot, was, writes in (("12", 2176, 1920, 1530), ("20", 2240, 1984, 1538)):
        doc = json.loads(_ok(["xdp", "check", "--kernel", "6.1", "--hdr-len", hdr_len, "--json"]))
        how = {e["what"]: e["how"] for e in doc["effects"]}["rx buffers"]
        assert f"posts {slot}-byte slots (was {was})" in how
        assert f"writes up to {writes} bytes at +320" in how
