"""`vnetrx trace --load FILE`: a saved `trace --json` document printed again, by the same
renderers, and every way the file or the command line can be wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.test_golden import EXAMPLES as README_EXAMPLES
from vnetrx.cli import cli

GOLDEN_TRACES = Path(__file__).resolve().parents[1] / "golden" / "trace"

SAVED = [
    ["--len", "1000", "--mergeable"],
    ["--len", "1000", "--mergeable", "--kernel", "5.12"],
    ["--len", "2000", "--kernel", "6.1"],  # a drop
    ["--len", "1000", "--mtu", "9000", "--kernel", "6.1"],
    ["--len", "9014", "--big", "--l4", "tcp4", "--gso", "tcpv4:1448", "--kernel", "6.1"],
    ["--len", "3000", "--mergeable", "--l4", "tcp4", "--csum", "valid", "--gso", "tcpv4:1448",
     "--kernel", "6.6.46"],  # refused header
    ["--len", "65535", "--mergeable", "--buffer-index", "1", "--ewma", "1000", "--kernel", "7.3"],
    ["--len", "1000", "--kernel", "6.1.0-57-amd64"],  # notes
    ["--len", "1000", "--mergeable", "--arch", "arm64", "--page-size", "64k", "--kernel", "6.1"],
    ["--path", "tap", "--len", "1000"],
    ["--path", "tap", "--len", "9000", "--blocking", "--kernel", "6.1"],
    ["--path", "tap", "--len", "5"],
    ["--path", "tap", "--len", "1514", "--frag-source", "full-page"],
    ["--len", "1000", "--xdp", "tx", "--kernel", "6.18"],
    ["--len", "9014", "--mergeable", "--mtu", "9000", "--xdp", "pass", "--xdp-frags", "--kernel",
     "6.12"],
    ["--len", "3600", "--mergeable", "--mtu", "4000", "--xdp", "pass", "--kernel", "6.1"],
    ["--len", "1000", "--mergeable", "--mtu", "9000", "--xdp", "pass", "--kernel", "6.12"],
    ["--path", "tap", "--len", "1000", "--xdp", "tx"],
    ["--path", "tap", "--len", "2000", "--xdp", "redirect"],
    ["--path", "tap", "--len", "9000", "--xdp", "pass", "--xdp-meta", "8"],
    ["--path", "vhost-tx", "--len", "1000", "--kernel", "6.1"],  # batched, struct tun_xdp_hdr
    ["--path", "vhost-tx", "--len", "3637"],  # -ENOSPC: tun_get_user
    ["--path", "vhost-tx", "--len", "1000", "--hdr", "010000000000f503100000"],  # stalls
    ["--path", "vhost-tx", "--len", "1000", "--xdp", "drop"],
]


def saved(runner: CliRunner, args: list[str]) -> str:
    result = runner.invoke(cli, ["trace", *args, "--json"])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("args", SAVED, ids=" ".join)
def test_a_loaded_trace_prints_as_the_trace_did(runner: CliRunner, args: list[str]) -> None:
    """`vnetrx trace ARGS` and `vnetrx trace ARGS --json | vnetrx trace --load -` print the same
    text; `--load - --json` prints the document again, byte for byte."""
    document = saved(runner, args)
    direct = runner.invoke(cli, ["trace", *args])
    assert direct.exit_code == 0
    loaded = runner.invoke(cli, ["trace", "--load", "-"], input=document)
    assert loaded.exit_code == 0, loaded.output
    assert loaded.stdout == direct.stdout
    again = runner.invoke(cli, ["trace", "--load", "-", "--json"], input=document)
    assert again.exit_code == 0, again.output
    assert again.stdout == document


@pytest.mark.parametrize("name", ["mergeable-1000-default", "mergeable-1000-5.12"])
def test_a_loaded_trace_prints_the_golden_text(runner: CliRunner, tmp_path: Path,
                                               name: str) -> None:
    saved_file = tmp_path / "t.json"
    saved_file.write_text(saved(runner, README_EXAMPLES[name]))
    result = runner.invoke(cli, ["trace", "--load", str(saved_file)])
    assert result.exit_code == 0, result.output
    assert result.stdout == (GOLDEN_TRACES / f"{name}.txt").read_text()


def test_load_takes_the_picture_options(runner: CliRunner, tmp_path: Path) -> None:
    svg = tmp_path / "t.svg"
    result = runner.invoke(cli, ["trace", "--load", "-", "--svg", str(svg)],
                           input=saved(runner, ["--len", "1000"]))
    assert result.exit_code == 0, result.output
    assert svg.read_text().startswith("<svg") and "virtio-small" in svg.read_text()


def test_diff_compares_two_saved_traces(runner: CliRunner, tmp_path: Path) -> None:
    """`vnetrx diff` runs its sides through trace's options, --load among them."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(saved(runner, ["--len", "1000", "--mergeable", "--kernel", "5.12"]))
    b.write_text(saved(runner, ["--len", "1000", "--mergeable", "--kernel", "5.13"]))
    loaded = runner.invoke(cli, ["diff", "--json", "--", "--load", str(a), "--", "--load",
                                 str(b)])
    direct = runner.invoke(cli, ["diff", "--json", "--kernel", "5.12", "--kernel", "5.13", "--",
                                 "--len", "1000", "--mergeable"])
    assert loaded.exit_code == direct.exit_code == 0
    assert loaded.stdout == direct.stdout
    assert json.loads(loaded.stdout)["fields"][0] == {"field": "outcome", "a": "copy",
                                                      "b": "build_skb"}


CLASHES = [
    (["--len", "100"], "--len describes a new one"),
    (["--mergeable"], "--mergeable describes a new one"),
    (["--path", "tap"], "--path describes a new one"),
    (["--kernel", "6.1"], "--kernel describes a new one"),
    (["--arch", "arm64"], "--arch describes a new one"),
    (["--xdp", "tx", "--mtu", "1400"], "--mtu, --xdp describe a new one"),
    (["--hdr", "01"], "--hdr describes a new one"),
]


@pytest.mark.parametrize(("extra", "message"), CLASHES, ids=lambda x: str(x)[:30])
def test_load_with_trace_options_is_a_usage_error(runner: CliRunner, extra: list[str],
                                                  message: str) -> None:
    document = saved(runner, ["--len", "1000"])
    result = runner.invoke(cli, ["trace", "--load", "-", *extra], input=document)
    assert result.exit_code == 2
    assert result.stderr == f"vnetrx: error: --load prints a saved trace: {message} (drop " + (
        "them" if ", " in message else "it") + ", or drop --load)\n"
    assert result.stdout == ""
    as_json = runner.invoke(cli, ["trace", "--load", "-", "--json", *extra], input=document)
    assert as_json.exit_code == 2
    assert message in json.loads(as_json.stdout)["error"]


def edited_document(runner: CliRunner, edit: str) -> str:
    doc = json.loads(saved(runner, ["--len", "1000", "--mergeable", "--kernel", "6.1"]))
    if edit == "schema":
        doc["schema"] = "vnetrx.trace/2"
    elif edit == "diff":
        doc = {"schema": "vnetrx.diff/1", "same": True}
    elif edit == "missing":
        del doc["skb"]["truesize"]
    elif edit == "type":
        doc["cost"]["frags"] = "none"
    elif edit == "changes":
        doc["kernel"]["changes"] = doc["kernel"]["changes"][1:]
    elif edit == "running":
        doc["kernel"]["config"] = "running"
    return json.dumps(doc)


BAD_DOCUMENTS = [
    ("", "standard input is empty"),
    ("{", "standard input: not valid JSON (Expecting property name enclosed in double quotes, "
     "line 1)"),
    (b"\xff\xfe{}", "standard input: not a JSON document (not UTF-8 text)"),
    ("[1, 2]", "standard input: the document is [1, 2], not a JSON object"),
    ("[" * 100000, "standard input: not a JSON document vnetrx reads (nested too deeply)"),
    ("schema", "standard input: schema vnetrx.trace/2 is another version of the trace document: "
     "this vnetrx reads vnetrx.trace/1"),
    ("diff", "standard input: a vnetrx.diff/1 document, not a trace (vnetrx.trace/1) (a diff's "
     "traces are its a and b: jq .a FILE | vnetrx trace --load -)"),
    ("missing", "standard input: skb.truesize is missing"),
    ("type", "standard input: cost.frags is \"none\", not a whole number (0 or more)"),
    ("changes", "standard input: kernel.changes are not this vnetrx's for 6.1.192: the document "
     "lacks "),
    ("running", "standard input: kernel 6.1.192 was profiled on the machine that wrote the trace "
     "(--kernel running)"),
]


@pytest.mark.parametrize(("document", "message"), BAD_DOCUMENTS, ids=lambda x: str(x)[:20])
def test_bad_documents_are_one_line_errors(runner: CliRunner, document: str | bytes,
                                           message: str) -> None:
    text = edited_document(runner, document) if document in {
        "schema", "diff", "missing", "type", "changes", "running"} else document
    result = runner.invoke(cli, ["trace", "--load", "-"], input=text)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetrx: error: "), result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.output and result.stdout == ""
    as_json = runner.invoke(cli, ["trace", "--load", "-", "--json"], input=text)
    assert as_json.exit_code == 2
    error = json.loads(as_json.stdout)
    assert error["schema"] == "vnetrx.error/1" and error["exit_code"] == 2
    assert message in f"{error['error']} ({error['hint']})"


def test_bad_files(runner: CliRunner, tmp_path: Path) -> None:
    missing = runner.invoke(cli, ["trace", "--load", str(tmp_path / "none.json")])
    assert missing.exit_code == 2
    assert missing.stderr == f"vnetrx: error: cannot read {tmp_path / 'none.json'}: No such " \
                             "file or directory\n"
    folder = runner.invoke(cli, ["trace", "--load", str(tmp_path)])
    assert folder.exit_code == 2
    assert "it is a directory, not a regular file" in folder.stderr
    named = tmp_path / "t.json"
    named.write_text("{}")
    result = runner.invoke(cli, ["trace", "--load", str(named)])
    assert result.exit_code == 2
    assert result.stderr == f'vnetrx: error: {named}: not a vnetrx trace: no "schema" key (a ' \
                            'trace has "schema": "vnetrx.trace/1")\n'


def test_help_teaches_load(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["trace", "--help"])
    assert result.exit_code == 0
    assert "--load FILE" in result.stdout
    assert "vnetrx trace --len 1000 --mergeable --json > t.json" in result.stdout
    assert "vnetrx trace --load t.json" in result.stdout
