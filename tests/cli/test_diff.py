"""`vnetrx diff` and the build/buffer options of `vnetrx trace`, through CliRunner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli


def test_diff_seed_patch_names_page_to_skb(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["diff", "--kernel", "5.12", "--kernel", "5.13", "--",
                                 "--len", "1000", "--mergeable"])
    assert result.exit_code == 0, result.output
    assert "First differing step: #7" in result.stdout
    assert "A  page_to_skb: 5.12.0 has no build_skb path" in result.stdout
    assert "B  page_to_skb: build_skb" in result.stdout
    assert " skb.truesize " in result.stdout and "2304" in result.stdout and "1792" in result.stdout


def test_diff_json(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["diff", "--kernel", "5.12", "--kernel", "5.13", "--json", "--",
                                 "--len", "1000", "--mergeable"])
    doc = json.loads(result.stdout)
    assert doc["schema"] == "vnetrx.diff/1" and doc["same"] is False
    assert doc["results_same"] is False  # truesize and outcome differ
    assert doc["first_difference"]["a"]["function"] == "page_to_skb"
    fields = {f["field"]: (f["a"], f["b"]) for f in doc["fields"]}
    assert fields["skb.truesize"] == (2304, 1792)
    assert fields["outcome"] == ("copy", "build_skb")
    assert doc["a"]["kernel"]["name"] == "5.12.0" and doc["b"]["kernel"]["name"] == "5.13.0"


def test_diff_two_option_sets(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["diff", "--json", "--", "--len", "1514", "--mergeable", "--kernel",
                                 "6.1", "--", "--len", "1514", "--mergeable", "--kernel", "6.1",
                                 "--buffer-index", "20"])
    doc = json.loads(result.stdout)
    fields = {f["field"]: (f["a"], f["b"]) for f in doc["fields"]}
    assert fields["outcome"] == ("copy", "build_skb")
    assert fields["buffer.size"] == (1536, 2048)


def test_diff_only_the_steps_differ(runner: CliRunner) -> None:
    # a 100-byte frame is copied on both (len <= GOOD_COPY_LEN): 5.12 narrates "no build_skb
    # path" where 5.13 narrates the copy branch of page_to_skb; every result field agrees
    args = ["diff", "--kernel", "5.12", "--kernel", "5.13", "--", "--len", "100", "--mergeable"]
    doc = json.loads(runner.invoke(cli, [*args[:1], "--json", *args[1:]]).stdout)
    assert (doc["same"], doc["results_same"], doc["fields"]) == (False, True, [])
    assert doc["first_difference"]["a"]["function"] == "page_to_skb"
    text = runner.invoke(cli, args).stdout
    assert "The results are the same (every result field agrees); only the steps differ." in text
    assert "First differing step: #7" in text and "Results that differ" not in text


def test_diff_same(runner: CliRunner) -> None:
    # 6.1.0 and 6.1.192 differ only where a 1000-byte mergeable frame does not go (big mode's
    # length check, virtio_net_hdr_to_skb's checks)
    result = runner.invoke(cli, ["diff", "--kernel", "6.1.0", "--kernel", "6.1.192", "--",
                                 "--len", "1000", "--mergeable"])
    assert result.exit_code == 0
    assert "The two traces are the same." in result.stdout
    assert "only the steps differ" not in result.stdout
    doc = json.loads(runner.invoke(cli, ["diff", "--json", "--kernel", "6.1.0", "--kernel",
                                         "6.1.192", "--", "--len", "1000", "--mergeable"]).stdout)
    assert (doc["same"], doc["results_same"]) == (True, True)


@pytest.mark.parametrize(("args", "message"), [
    (["diff"], "give the trace options after `--`"),
    (["diff", "--kernel", "5.12", "--kernel", "5.13", "--kernel", "6.1", "--", "--len", "1"],
     "at most twice"),
    (["diff", "--", "--len", "65536"], "out of range (valid: 0..65535"),
])
def test_diff_bad_input(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(cli, args)
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_trace_arm64_64k(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1514", "--mergeable", "--arch", "arm64",
                                 "--page-size", "64k", "--kernel", "6.1", "--json"])
    doc = json.loads(result.stdout)
    assert (doc["kernel"]["arch"], doc["kernel"]["page_size"], doc["kernel"]["max_skb_frags"]) == (
        "arm64", 65536, 16)
    assert doc["skb"]["truesize"] == 768 + 1536  # kmalloc-512 head: no small page frag on 64K


def test_trace_buffer_index(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1000", "--mergeable", "--kernel", "7.3",
                                 "--buffer-index", "1", "--json"])
    doc = json.loads(result.stdout)
    assert (doc["buffer"]["page"], doc["buffer"]["page_offset"], doc["buffer"]["size"]) == (
        "pool0", 1536, 2560)
    assert doc["skb"]["truesize"] == 2816 and doc["input"]["buffer_index"] == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--page-size", "64k"], "x86_64 has 4 KiB pages only"),
    (["--arch", "arm64", "--cache-line", "128"], "arm64's L1_CACHE_SHIFT is 6"),
    (["--max-skb-frags", "30", "--kernel", "6.1"], "CONFIG_MAX_SKB_FRAGS exists from 6.4"),
    (["--max-skb-frags", "50"], "50 is out of range (valid: 17..45 frags)"),
    (["--kernel", "running", "--arch", "arm64"], "--kernel running reads the build"),
    (["--buffer-index", "300"], "buffer index 300 out of range (valid: 0..255)"),
    (["--big", "--buffer-index", "2"], "--buffer-index applies to small and mergeable"),
])
def test_build_option_errors(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(cli, ["trace", "--len", "1000", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_lazy_commands_are_listed(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["--help"])
    for name in ("diff", "headroom", "kernels", "layout", "trace", "verify"):
        assert f"  {name} " in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--", "--len", "1000"], "nothing to compare"),
    (["--kernel", "6.1", "--", "--len", "1000", "--kernel", "6.12"], "not both"),
    (["--", "--len", "100", "--json"], "--json is diff's own option"),
    (["--", "--len", "100", "--svg", "x.svg", "--", "--len", "200"], "--svg is diff's own"),
])
def test_inner_options_are_not_silently_ignored(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["diff", *args])
    assert result.exit_code == 2 and message in result.output


def test_the_same_options_twice_are_the_same() -> None:
    result = CliRunner().invoke(cli, ["diff", "--", "--len", "100", "--", "--len", "100"])
    assert result.exit_code == 0 and "The two traces are the same." in result.stdout
