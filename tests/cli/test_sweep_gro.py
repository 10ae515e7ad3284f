"""vnetrx sweep --gro: a flow per length, one row each (vnetrx/sweep_gro.py). The boundaries are
skb_gro_receive's: -E2BIG once p->len + len >= 65536 (p->len from the IP header: 40 bytes of
IPv4 and TCP headers plus the payload merged so far)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from jsonschema import Draft202012Validator

from vnetrx.cli import cli
from vnetrx.schemas import schema

RUNNER = CliRunner(env={"COLUMNS": "160"})


def rows(args: list[str]) -> list[dict[str, object]]:
    result = RUNNER.invoke(cli, ["sweep", *args, "--gro", "--jsonl"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    validator = Draft202012Validator(schema("sweep-gro-row"))
    for line in lines:
        validator.validate(line)
    return lines


def test_the_64_kib_limit_by_the_byte() -> None:
    # 1509-byte frames carry 1455 bytes: 40 + 45 x 1455 = 65,515 < 65,536, all 45 merge;
    # 1510-byte frames carry 1456: 40 + 44 x 1456 + 1456 = 65,560 >= 65,536 at the 45th
    got = rows(["--len", "1509,1510", "--l4", "tcp4", "--mergeable", "--segments", "45",
                "--kernel", "6.12"])
    assert [(r["frame_len"], r["first_segs"], r["first_len"], r["first_flush"], r["skbs"])
            for r in got] == [(1509, 45, 65515, "poll_end", 1), (1510, 44, 64104, "e2big", 2)]
    assert [r["payload"] for r in got] == [45 * 1455, 45 * 1456]


def test_each_row_is_the_flow_trace_gro_prints() -> None:
    args = ["--len", "1000", "--l4", "tcp4", "--mergeable", "--segments", "45"]
    for kernel in ("5.12", "5.13"):
        row = rows([*args, "--kernel", kernel])[0]
        trace = json.loads(RUNNER.invoke(cli, ["trace", *args, "--gro", "--kernel", kernel,
                                               "--json"]).stdout)
        first = trace["delivered"][0]
        assert (row["skbs"], row["first_truesize"], row["truesize_after"], row["payload"]) == (
            trace["totals"]["skbs"], first["skb"]["truesize"], trace["totals"]["truesize"],
            trace["totals"]["payload"])
        assert row["truesize_per_payload_byte"] == trace["totals"]["truesize_per_payload_byte"]


def test_tap_writes_and_kernels_side_by_side() -> None:
    got = rows(["--len", "1514", "--l4", "tcp4", "--path", "tap", "--napi", "timeout",
                "--segments", "8", "--kernel", "6.1", "--kernel", "6.18"])
    assert [(r["kernel"][:4], r["skbs"], r["first_segs"], r["first_len"]) for r in got] == [
        ("6.1.", 1, 8, 40 + 8 * 1460), ("6.18", 1, 8, 40 + 8 * 1460)]


def test_text_and_csv() -> None:
    args = ["sweep", "--len", "1509,1510", "--l4", "tcp4", "--mergeable", "--gro",
            "--segments", "45", "--kernel", "6.12"]
    text = RUNNER.invoke(cli, args)
    assert text.exit_code == 0 and "a TCP flow of 45 segment(s) of each length" in text.stdout
    assert "65515" in text.stdout and "e2big" in text.stdout
    table = RUNNER.invoke(cli, [*args, "--csv"]).stdout.splitlines()
    assert table[0].startswith("frame_len,kernel,segments,skbs") and len(table) == 3


def test_flow_options_without_gro_and_gro_with_other_outputs_are_refused() -> None:
    for args, message in (
        (["--len", "1514", "--l4", "tcp4", "--segments", "8"], "add --gro"),
        (["--len", "1514", "--l4", "tcp4", "--gro", "--json"], "not --weights, --json"),
        (["--len", "1514", "--l4", "tcp4", "--gro", "--napi", "timeout"],
         "--napi applies to --path tap"),
        (["--len", "1514", "--gro"], "--gro needs a TCP frame"),
    ):
        result = RUNNER.invoke(cli, ["sweep", *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr, (args, result.stderr)
