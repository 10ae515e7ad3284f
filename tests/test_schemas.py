"""Every --json output validates against `vnetrx schema NAME` (jsonschema, draft 2020-12), for
several representative invocations per command; the schemas themselves are valid and strict
enough to reject a wrong document."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from vnetrx.cli import cli
from vnetrx.schemas import names, schema

LAB = Path(__file__).parent / "data" / "lab"
RUNNER = CliRunner(env={"COLUMNS": "100", "NO_COLOR": "1"})
UDP = (
    struct.pack("<BBHHHH", 1, 0, 0, 0, 34, 6)
    + bytes.fromhex("0200000000010200000000020800")
    + bytes.fromhex("4500001c00004000401100000a0000010a000002")
    + struct.pack("!HHHH", 1, 2, 12, 0)
    + b"abcd"
).hex()

INVOCATIONS: list[tuple[str, list[str], int]] = [
    ("vhost-rx", ["trace", "--path", "vhost-rx", "--len", "1514", "--mergeable"], 0),
    ("vhost-rx", ["trace", "--path", "vhost-rx", "--len", "65535", "--l4", "tcp4", "--gso",
                  "tcpv4:1448", "--mergeable", "--buf-len", "1536", "--kernel", "6.1"], 0),
    ("vhost-rx", ["trace", "--path", "vhost-rx", "--len", "2000", "--kernel", "6.12"], 0),
    ("vhost-rx", ["trace", "--path", "vhost-rx", "--len", "9000", "--l4", "tcp4", "--gso",
                  "tcpv4:1448", "--no-tap-offload", "--mtu", "9000", "--kernel", "6.18"], 0),
    ("trace", ["trace", "--len", "1000", "--mergeable"], 0),
    ("trace", ["trace", "--len", "1000", "--mergeable", "--kernel", "5.12"], 0),
    ("trace", ["trace", "--len", "9000", "--mtu", "9000", "--kernel", "6.1"], 0),
    ("trace", ["trace", "--len", "2000", "--kernel", "6.1"], 0),  # small mode: a drop
    ("trace", ["trace", "--path", "tap", "--len", "1000"], 0),
    ("trace", ["trace", "--path", "vhost-tx", "--len", "1000"], 0),
    ("trace", ["trace", "--path", "vhost-tx", "--len", "3637", "--kernel", "6.1"], 0),
    ("trace", ["trace", "--path", "vhost-tx", "--len", "0"], 0),  # tun_xdp_one: short frame
    ("trace", ["trace", "--path", "vhost-tx", "--len", "1000", "--hdr",
               "010000000000f503100000"], 0),  # vhost_net_build_xdp: -EINVAL
    ("trace", ["trace", "--path", "vhost-tx", "--len", "1000", "--xdp", "tx"], 0),
    # a VXLAN-wrapped TSO write behind the 24-byte UDP-tunnel header (6.17+)
    ("trace", ["trace", "--path", "tap", "--len", "3000", "--l4", "tcp4", "--gso", "tcpv4:1448",
               "--tunnel", "ipv6+csum", "--vnet-hdr-sz", "24", "--kernel", "6.18"], 0),
    ("trace", ["trace", "--path", "vhost-tx", "--len", "1000", "--vnet-hdr-sz", "24",
               "--kernel", "6.18"], 0),
    ("sweep", ["sweep", "--len", "3630-3640", "--path", "vhost-tx", "--json"], 0),
    ("trace", ["trace", "--path", "tap", "--len", "5"], 0),  # write() fails: EINVAL
    ("trace", ["trace", "--path", "tap", "--len", "9000", "--blocking", "--kernel", "6.1"], 0),
    ("trace", ["trace", "--path", "tap", "--len", "1000", "--xdp", "tx"], 0),
    ("xdp-check", ["xdp", "check", "--mergeable", "--mtu", "9000", "--kernel", "6.12",
                   "--json"], 0),
    ("xdp-check", ["xdp", "check", "--big", "--kernel", "6.1", "--json"], 0),
    ("xdp-check", ["xdp", "check", "--path", "tap", "--json"], 0),
    ("sweep", ["sweep", "--len", "1500-1530", "--path", "tap", "--xdp", "redirect", "--json"], 0),
    ("trace", ["trace", "--path", "tap", "--len", "2000", "--xdp", "redirect"], 0),
    ("trace", ["trace", "--path", "tap", "--len", "9000", "--xdp", "pass"], 0),
    ("trace", ["trace", "--path", "tap", "--len", "9000", "--xdp", "tx", "--kernel", "6.1"], 0),
    ("trace", ["trace", "--len", "1000", "--xdp", "tx", "--kernel", "6.18"], 0),  # virtio small
    ("trace", ["trace", "--len", "9014", "--mergeable", "--mtu", "9000", "--xdp", "pass",
               "--xdp-frags", "--kernel", "6.12"], 0),
    ("trace", ["trace", "--len", "3600", "--mergeable", "--mtu", "4000", "--xdp", "pass",
               "--kernel", "6.1"], 0),  # dropped by xdp_linearize_page
    ("trace", ["trace", "--len", "1000", "--mergeable", "--mtu", "9000", "--xdp", "pass",
               "--kernel", "6.12"], 0),  # the attach is refused
    ("trace", ["trace", "--len", "1000", "--mergeable", "--xdp", "drop", "--kernel", "6.1"], 0),
    ("trace", ["trace", "--len", "1000", "--xdp", "tx", "--xdp-adjust-head", "-205",
               "--kernel", "6.12"], 0),  # tx_failed: EOVERFLOW, xdp_tx_drops
    ("trace", ["trace", "--len", "1000", "--xdp", "pass", "--xdp-posted-before", "--kernel",
               "6.12"], 0),  # copied into a fresh page first
    ("trace", ["trace", "--len", "1000", "--mergeable", "--xdp", "redirect", "--kernel", "7.3"],
     0),
    ("trace", ["trace", "--path", "tap", "--len", "1000", "--xdp", "aborted", "--xdp-meta", "8"],
     0),
    ("sweep", ["sweep", "--len", "3500-3520", "--mergeable", "--xdp", "pass", "--kernel", "6.1",
               "--json"], 0),
    ("diff", ["diff", "--kernel", "5.12", "--kernel", "5.13", "--", "--len", "1000",
              "--mergeable"], 0),
    ("diff", ["diff", "--", "--len", "100", "--", "--len", "100"], 0),  # the same trace twice
    ("diff", ["diff", "--", "--path", "tap", "--len", "1000", "--", "--path", "tap", "--len",
              "1000", "--blocking"], 0),
    ("gro", ["trace", "--len", "1514", "--l4", "tcp4", "--mergeable", "--gro", "--segments",
             "47", "--kernel", "6.12"], 0),  # frags, frag_list, -E2BIG, a lone skb after it
    ("gro", ["trace", "--len", "300", "--l4", "tcp6", "--gro", "--segments", "3",
             "--kernel", "5.12"], 0),  # small mode: heads stolen as frags
    ("gro-diff", ["diff", "--kernel", "5.12", "--kernel", "5.13", "--", "--len", "1000",
                  "--l4", "tcp4", "--mergeable", "--gro", "--segments", "45"], 0),
    ("headroom", ["headroom"], 0),
    ("headroom", ["headroom", "--kernel", "3.16", "--compare", "3.15"], 0),
    ("headroom", ["headroom", "--tcp", "--ipv6", "--payload", "100,9000"], 0),
    ("headroom", ["headroom", "--kernel", "3.15", "--ufo", "--payload", "4096"], 0),
    ("layout", ["layout", "skb_shared_info"], 0),
    ("layout", ["layout", "virtio_net_hdr_v1_hash", "--kernel", "6.12"], 0),
    ("layout-list", ["layout", "--list"], 0),
    ("kernels", ["kernels"], 0),
    ("kernels", ["kernels", "--changes"], 0),
    ("decode", ["decode", UDP], 0),
    ("decode", ["decode", UDP, "--kernel", "5.15"], 0),  # not modelled: validation.modelled
    ("decode", ["decode", "01050000e80322000600", "--len", "3000", "--kernel", "6.1"], 0),
    ("decode", ["decode", "00" * 12, "--hdr-len", "12"], 0),  # header only: validation null
    ("decode", ["decode", "00" * 24 + "ff" * 30, "--hdr-len", "24", "--kernel", "7.3"], 0),
    ("sweep", ["sweep", "--len", "60-1514", "--mergeable", "--kernel", "6.1"], 0),
    ("sweep", ["sweep", "--len", "1-3000:7", "--kernel", "6.1", "--kernel", "5.12"], 0),  # drops
    ("sweep", ["sweep", "--len", "1-4000:3", "--path", "tap", "--blocking"], 0),  # EINVAL rows
    ("observe", ["observe", "--from-trace", str(LAB / "mergeable-6.1.0-57-amd64.log")], 0),
    ("observe", ["observe", "--from-trace", str(LAB / "big-6.12.117+deb12-amd64.log")], 0),
    ("observe-gro", ["observe", "--from-recording",
                     str(LAB.parent / "observe" / "eth0-6.18.44-gro-download.json")], 0),
    ("replay", ["replay", "--len", "60x11,9014,9018", "--mergeable", "--mtu", "9000",
                "--kernel", "6.12", "--json"], 0),
    ("replay", ["replay", "--len", "60,1514,100", "--kernel", "6.1", "--json"], 0),  # small
    ("replay-summary", ["replay", "--len", "60x11,9014,9018,10", "--mergeable", "--mtu", "9000",
                        "--summary", "--json"], 0),
    ("sweep-summary", ["sweep", "--weights", str(LAB.parent / "replay" / "length-mix.txt"),
                       "--mergeable", "--mtu", "9000", "--kernel", "6.1", "--kernel", "6.12",
                       "--json"], 0),
    ("replay", ["replay", "--len", "60x40", "--mergeable", "--guest-gso", "--ring-size", "32",
                "--mtu", "1400", "--kernel", "7.3", "--json"], 0),  # page_pool, a refill
    ("lab", ["lab", "virtio", "--from-log", str(LAB / "mergeable-6.1.0-57-amd64.log"),
             "--json"], 0),
    ("lab", ["lab", "virtio", "--from-log", str(LAB / "big-6.12.117+deb12-amd64.log"),
             "--json"], 0),
    ("lab", ["lab", "virtio", "--from-log",
             str(LAB.parent / "lab_vhost_user" / "big-gso-6.1.0-57-amd64.log"), "--json"], 0),
    ("lab", ["lab", "virtio", "--from-log",
             str(LAB.parent / "lab_xdp" / "mergeable-drop-6.1.0-57-amd64.log"), "--json"], 0),
    ("lab-vhost", ["lab", "vhost", "--from-log",
                   str(LAB.parent / "vhost" / "linux-6.1.0-57-amd64.log"), "--from-log",
                   str(LAB.parent / "vhost" / "linux-6.12.117+deb12-amd64.log"), "--json",
                   "--no-predict"], 0),
    ("error", ["trace", "--len", "65536"], 2),
    ("error", ["trace", "--len", "100", "--kernel", "2.6"], 2),
    ("error", ["headroom", "--payload", "x"], 2),
    ("error", ["decode", "0100"], 2),
    ("error", ["diff", "--kernel", "1", "--kernel", "2", "--kernel", "3", "--", "--len", "1"], 2),
]


def check(name: str, doc: Any) -> None:
    Draft202012Validator(schema(name)).validate(doc)


@pytest.mark.parametrize("name", names())
def test_schema_is_valid_draft_2020_12(name: str) -> None:
    Draft202012Validator.check_schema(schema(name))
    assert schema(name)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize(("name", "args", "code"), INVOCATIONS, ids=lambda x: str(x)[:40])
def test_json_output_matches_schema(name: str, args: list[str], code: int) -> None:
    # --json right after the command (before diff's `--`), unless the invocation has it already
    argv = args if "--json" in args else [args[0], "--json", *args[1:]]
    result = RUNNER.invoke(cli, argv)
    assert result.exit_code == code, result.output
    check(name, json.loads(result.stdout))


@pytest.mark.parametrize("args", [
    ["--len", "60-1514", "--mergeable", "--kernel", "6.1"],
    ["--len", "1500-1530", "--kernel", "6.1", "--kernel", "5.13"],  # small mode drops
    ["--len", "1-100", "--path", "tap", "--kernel", "6.1"],  # failed writes
    ["--len", "1500-1530", "--path", "tap", "--xdp", "redirect"],  # XDP outcomes
])
def test_sweep_jsonl_lines_match_schema(args: list[str]) -> None:
    result = RUNNER.invoke(cli, ["sweep", "--jsonl", *args])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    validator = Draft202012Validator(schema("sweep-row"))
    for line in lines:
        validator.validate(json.loads(line))
    outcomes = {json.loads(line)["outcome"] for line in lines}
    assert len(outcomes) >= 2, outcomes  # each invocation crosses a boundary


@pytest.mark.parametrize("args", [
    ["--len", "60x70,2000,9000", "--kernel", "6.12"],  # small: a discard, signals
    ["--len", "60,65550", "--mergeable", "--buf-len", "1536", "--kernel", "6.1"],
    ["--len", "60,20000", "--mtu", "9000", "--no-tap-offload", "--kernel", "6.18"],  # big
    # VIRTIO_F_IN_ORDER (6.17+): used_elems in every row
    ["--len", "60x70,3000", "--mergeable", "--buf-len", "1536", "--in-order", "--kernel", "6.18"],
])
def test_vhost_rx_jsonl_lines_match_schema(args: list[str]) -> None:
    result = RUNNER.invoke(cli, ["replay", "--path", "vhost-rx", "--jsonl", *args])
    assert result.exit_code == 0, result.output
    validator = Draft202012Validator(schema("vhost-rx-row"))
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    for line in lines:
        validator.validate(line)
    assert len({line["discarded"] for line in lines} | {line["signal"] for line in lines}) >= 2


def test_every_json_command_is_covered() -> None:
    covered = {name for name, _, _ in INVOCATIONS} | {
        "verify", "layout-check", "sweep-row", "replay-frame", "replay-row", "replay-gro-row",
        "vhost-rx-row", "sweep-gro-row", "verify-gro",  # in their own tests: test_sweep_gro,
        "vhost-tx-row", "lab-gro"}  # test_verify_gro, test_replay_vhost_tx, test_lab_gro*
    assert covered == set(names())


def test_schema_command_prints_each_schema() -> None:
    for name in names():
        result = RUNNER.invoke(cli, ["schema", name])
        assert result.exit_code == 0
        assert json.loads(result.stdout) == schema(name)
    listed = RUNNER.invoke(cli, ["schema"])
    assert listed.stdout.split() == names()
    bad = RUNNER.invoke(cli, ["schema", "nope"])
    assert bad.exit_code == 2
    assert "Invalid value for '[NAME]'" in bad.stderr or "'nope' is not one of" in bad.stderr


def test_schemas_reject_wrong_documents() -> None:
    """The schemas are not vacuous: a changed key, type or value is caught."""
    doc = json.loads(RUNNER.invoke(cli, ["trace", "--len", "1000", "--json"]).stdout)
    check("trace", doc)
    for broken in (
        {**doc, "extra": 1},
        {**doc, "outcome": "teleported"},
        {**doc, "skb": {**doc["skb"], "truesize": "1792"}},
        {k: v for k, v in doc.items() if k != "cost"},
    ):
        with pytest.raises(ValidationError):
            check("trace", broken)
    with pytest.raises(ValidationError):
        check("decode", doc)
    err = {"schema": "vnetrx.error/1", "error": "x", "hint": None, "exit_code": 3}
    with pytest.raises(ValidationError):
        check("error", err)


def test_schemas_reject_wrong_xdp_documents() -> None:
    """The XDP part (model.XDP_FIELDS) is as strict: its enums, nested objects and counters."""
    doc = json.loads(RUNNER.invoke(cli, ["trace", "--len", "1000", "--xdp", "tx", "--kernel",
                                         "6.18", "--json"]).stdout)
    check("trace", doc)
    xdp = doc["xdp"]
    counters = {k: v for k, v in xdp["driver_counters"].items() if k != "rx_drops"}
    for broken in (
        {**doc, "xdp": {**xdp, "mode": "hybrid"}},
        {**doc, "xdp": {**xdp, "action": "XDP_FOO"}},
        {**doc, "xdp": {**xdp, "result": "bounced"}},
        {**doc, "xdp": {**xdp, "refused": "because"}},
        {**doc, "xdp": {**xdp, "xdp_buff": {**xdp["xdp_buff"], "extra": 1}}},
        {**doc, "xdp": {**xdp, "counters": {**xdp["counters"], "rx_dropped": -1}}},
        {**doc, "xdp": {**xdp, "driver_counters": counters}},
        {**doc, "xdp": {k: v for k, v in xdp.items() if k != "ran"}},
        {**doc, "xdp_tx": {**doc["xdp_tx"], "len": None}},
        {**doc, "path": "virtio"},
    ):
        with pytest.raises(ValidationError):
            check("trace", broken)


def test_verify_report_matches_schema() -> None:
    """The verify document, built offline from a plan and synthetic observations."""
    from dataclasses import replace

    from vnetrx.kernel.registry import lookup
    from vnetrx.live.verify import compare, observed_of, plan, report
    from vnetrx.observed.rx_event import RxEvent
    from vnetrx.observed.tap_write import WriteCase, WriteResult

    k = lookup("6.18")
    checks = plan(k, [WriteCase(60), WriteCase(9000, blocking=True), WriteCase(13)])
    done = [replace(checks[0], observed=observed_of(WriteResult(70, None, (
        RxEvent("vnx1", 46, 0, 704, 0, 0, 0),))))]
    done[0] = replace(done[0], fields=compare(done[0].predicted, done[0].observed or {}))
    doc = report(k, done + checks[1:])
    check("verify", doc)
    assert doc["total"] == 3


def test_layout_check_matches_schema() -> None:
    from pathlib import Path

    if not Path("/sys/kernel/btf/vmlinux").exists():
        pytest.skip("no /sys/kernel/btf/vmlinux on this machine")
    result = RUNNER.invoke(cli, ["layout", "--check", "--btf", "running", "--kernel", "running",
                                 "--json"])
    assert result.exit_code in (0, 1), result.output
    check("layout-check", json.loads(result.stdout))


@pytest.mark.parametrize(("extra", "name"), [
    ([], "replay-row"), (["--detail"], "replay-frame"),
    (["--xdp", "pass"], "replay-row"), (["--xdp", "tx", "--detail"], "replay-frame")])
def test_replay_jsonl_lines_match_schema(extra: list[str], name: str) -> None:
    result = RUNNER.invoke(cli, ["replay", "--len", "60x11,9014,9018,10,1600", "--mergeable",
                                 "--mtu", "4000" if "--xdp" in extra else "9000", "--kernel",
                                 "6.1", "--jsonl", *extra])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 15
    validator = Draft202012Validator(schema(name))
    for line in lines:
        validator.validate(json.loads(line))
