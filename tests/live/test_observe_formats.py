"""``vnetrx observe --from-trace`` on other tools' traces (issue 28 item 4): observe's reading of
a trace (observe_parse.parse_trace) and the CLI, on captures of this machine's eth0 (perf
script, perf 6.1's JSON, bpftrace running the program vnetrx prints) and on pwru and retis files
built from vnetrx's own recordings. The capture parsers themselves: tests/observed/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from tests import DATA as TESTS_DATA
from tests.observed.capture_files import pwru_json, records, retis_events
from vnetrx.cli import cli
from vnetrx.live import observe as core
from vnetrx.observed import captures
from vnetrx.schemas import schema

TRACES = TESTS_DATA / "traces"
RUNNER = CliRunner(env={"COLUMNS": "120", "NO_COLOR": "1"})
# /sys/class/net/eth0/device/features of the NIC the eth0-6.18.44-* captures come from
ETH0_FEATURES = (
    "11000101101110110000000000000100100000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000"
)
ETH0 = ["--features", ETH0_FEATURES, "--mtu", "1400", "--buf-len", "4096"]
GRO_ORACLE = TESTS_DATA / "gro" / "linux-6.18.44.json"


@pytest.fixture
def this_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--kernel running`` as the machine the eth0 captures come from: 6.18.44 with its
    "minimal" config (MAX_HEADER 32; tests/live/test_observe.py says why)."""
    import vnetrx.live.running
    from vnetrx.kernel.choice import BuildChoice, load_profile

    profile = load_profile("6.18.44", "minimal", BuildChoice("x86_64", "4k", None, None))
    monkeypatch.setattr(vnetrx.live.running, "running_profile", lambda: profile)


def observe_json(*args: str, code: int = 0) -> dict[str, Any]:
    result = RUNNER.invoke(cli, ["observe", "--json", *args])
    assert result.exit_code == code, (result.output, result.stderr)
    doc: dict[str, Any] = json.loads(result.stdout)
    Draft202012Validator(schema("observe")).validate(doc)
    return doc


def fails(args: list[str], code: int, text: str) -> str:
    result = RUNNER.invoke(cli, ["observe", *args])
    assert result.exit_code == code, (result.output, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetrx: error: "), result.stderr
    assert text in lines[0], lines[0]
    return lines[0]


# --- observe's reading of a trace -----------------------------------------------------------


def test_perf_script_real_capture() -> None:
    trace = core.parse_trace((TRACES / "eth0-6.18.44-perf-script.txt").read_text(), None)
    assert trace.format == "perf-script" and trace.probe == "napi_gro_receive_entry"
    assert len(trace.seen) == 25 and all(s.carried is None for s in trace.seen)
    assert "not compared: net:netif_receive_skb" in trace.notes[1]
    # the post-GRO lines are read too (len only) when they are all there is
    text = "\n".join(line for line in (TRACES / "eth0-6.18.44-perf-script.txt").read_text()
                     .splitlines() if "napi_gro_receive_entry" not in line)
    post = core.parse_trace(text, "eth0")
    assert post.probe == "net:netif_receive_skb" and post.stage == "post-gro"
    assert len(post.seen) == 25 and post.seen[0].carried == {"len"}
    assert post.seen[0].skb.len == 71


# --- the CLI --------------------------------------------------------------------------------


def test_cli_perf_script_of_eth0_agrees(this_kernel: None) -> None:
    doc = observe_json("--from-trace", str(TRACES / "eth0-6.18.44-perf-script.txt"),
                       "--kernel", "running", *ETH0)
    assert doc["capture"] == {"format": "perf-script", "probe": "napi_gro_receive_entry",
                              "stage": "pre-gro"}
    assert doc["counts"] == {"exact": 18, "consistent": 7, "mismatch": 0, "unmodelled": 0,
                             "unchecked": 0}
    assert all(f["not_in_capture"] == [] for f in doc["frames"])


def test_cli_tracefs_of_eth0(this_kernel: None, tmp_path: Path) -> None:
    """A tracefs instance's trace of eth0 (napi_gro_receive_entry and the post-GRO
    netif_receive_skb, ``gso_type=0x0`` as the kernel's vsnprintf prints it)."""
    path = TRACES / "eth0-6.18.44-tracefs.txt"
    doc = observe_json("--from-trace", str(path), "--kernel", "running", *ETH0)
    assert doc["capture"]["format"] == "tracefs" and len(doc["frames"]) == 21
    assert doc["counts"]["mismatch"] == 0 and doc["counts"]["unchecked"] == 0
    # its post-GRO lines alone: len only, after GRO: nothing is compared, and it says why
    post = tmp_path / "post.txt"
    post.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                            if "napi_gro_receive_entry" not in line))
    doc = observe_json("--from-trace", str(post), "--kernel", "running", *ETH0, code=1)
    assert doc["capture"] == {"format": "tracefs", "probe": "net:netif_receive_skb",
                              "stage": "post-gro"}
    assert doc["counts"]["unchecked"] == 21
    assert "without gso_size: it may be a GRO aggregate" in doc["frames"][0]["note"]


def test_cli_bpftrace_of_eth0_agrees_with_offsets(this_kernel: None) -> None:
    doc = observe_json("--from-trace", str(TRACES / "eth0-6.18.44-bpftrace.json"),
                       "--kernel", "running", *ETH0)
    assert doc["capture"]["format"] == "bpftrace" and doc["counts"]["mismatch"] == 0
    assert doc["counts"]["exact"] + doc["counts"]["consistent"] == 21
    first = doc["frames"][0]
    # compared on the offsets from skb->head too, which the tracepoint alone lacks
    assert first["observed"]["data"] == 78 == first["predicted"]["data"]
    assert first["observed"]["end"] == 256 == first["predicted"]["end"]


def test_cli_pwru_json_agrees_and_says_what_is_missing(this_kernel: None,
                                                       tmp_path: Path) -> None:
    path = pwru_json(tmp_path / "p.json")
    doc = observe_json("--from-trace", str(path), "--kernel", "running", *ETH0)
    assert doc["capture"] == {"format": "pwru-json", "probe": "gro_receive_skb",
                              "stage": "pre-gro"}
    assert len(doc["frames"]) == 300 and doc["counts"]["mismatch"] == 0
    # complete dumps: a member they leave out is 0, so every tracepoint field is there
    assert doc["frames"][0]["not_in_capture"] == []
    assert any("ip_rcv_core" in n for n in doc["notes"])
    # without --output-skb / --output-skb-shared-info: only len, so nothing is compared
    bare = observe_json("--from-trace", str(pwru_json(tmp_path / "b.json", skb=False,
                                                      shinfo=False)),
                        "--kernel", "running", *ETH0, code=1)
    assert bare["counts"]["unchecked"] == 300 and bare["match"] is False
    assert set(bare["frames"][0]["not_in_capture"]) == {
        "data_len", "truesize", "nr_frags", "ip_summed", "gso_size", "gso_type", "hash",
        "l4_hash"}
    assert {f["agreement"] for f in bare["frames"]} == {"unchecked"}
    # --output-skb without --output-skb-shared-info: a frame over the MTU (1400 + 14) is a GSO
    # frame whose header cannot be inferred without gso_size: not compared; the rest are
    half = observe_json("--from-trace", str(pwru_json(tmp_path / "h.json", shinfo=False)),
                        "--kernel", "running", *ETH0)
    for frame in half["frames"]:
        if frame["frame_len"] > 1414:
            assert frame["agreement"] == "unchecked", frame
            assert "no gso_size/gso_type" in frame["note"]
        else:
            assert frame["agreement"] in ("exact", "consistent"), frame
    assert half["counts"]["unchecked"] == sum(r["len"] + 14 > 1414 for r in records("entry"))


def test_cli_retis_pre_gro_never_counts_truesize(this_kernel: None, tmp_path: Path) -> None:
    path = retis_events(tmp_path / "r.json", "entry", "net:napi_gro_receive_entry")
    doc = observe_json("--from-trace", str(path), "--kernel", "running", *ETH0)
    assert doc["capture"]["stage"] == "pre-gro" and doc["counts"]["mismatch"] == 0
    for frame in doc["frames"]:
        assert "truesize" in frame["not_in_capture"] and "truesize" not in frame["observed"]
    assert any("not in the capture (never counted as agreement): " in n and "truesize" in n
               for n in doc["notes"])


def test_cli_retis_post_gro(this_kernel: None, tmp_path: Path) -> None:
    path = retis_events(tmp_path / "r.json", "delivered", "net:netif_receive_skb")
    # after GRO the capture cannot say what eth0 is: asked for in one line
    fails(["--from-trace", str(path), "--kernel", "running"], 2,
          "say what eth0 is (--tap, or the virtio_net device's --features BITS")
    doc = observe_json("--from-trace", str(path), "--kernel", "running", *ETH0, code=1)
    assert doc["capture"]["stage"] == "post-gro" and doc["match"] is False
    # data_len and ip_summed recorded, but GRO may change them; no truesize: what is left is
    # what the prediction starts from, so nothing is compared (and nothing counts as agreeing)
    assert doc["counts"]["unchecked"] == 300
    for frame in doc["frames"]:
        assert "data_len" in frame["not_compared"] and "ip_summed" in frame["not_compared"]
        assert "truesize" in frame["not_in_capture"]
        assert "nothing to compare" in frame["note"]


def test_cli_post_gro_with_truesize_compares_what_gro_leaves(this_kernel: None,
                                                             tmp_path: Path) -> None:
    """pwru at __netif_receive_skb (after GRO) of the recording's delivered skbs: GRO's header
    pull changed data_len and tail of some (6752 → 6740 bytes in frags for a 6806-byte frame),
    so those are not compared; truesize and the offsets are, and agree."""
    path = pwru_json(tmp_path / "p.json", kind="delivered", funcs=("__netif_receive_skb",))
    doc = observe_json("--from-trace", str(path), "--kernel", "running", *ETH0)
    assert doc["capture"] == {"format": "pwru-json", "probe": "__netif_receive_skb",
                              "stage": "post-gro"}
    assert doc["counts"]["mismatch"] == 0 and doc["counts"]["unchecked"] == 0
    pulled = [f for f in doc["frames"] if f["observed"]["len"] == 6792
              and f["observed"]["data_len"] == 6740]
    assert pulled and pulled[0]["not_compared"] == ["data_len", "nr_frags", "ip_summed", "hash",
                                                    "l4_hash", "tail"]
    assert pulled[0]["predicted"]["data_len"] == 6752  # what virtio_net built, pre-GRO
    assert pulled[0]["observed"]["truesize"] == pulled[0]["predicted"]["truesize"] == 9024


def test_cli_retis_aggregate_is_not_compared(tmp_path: Path) -> None:
    """Real GRO aggregates of an IFF_NAPI tap on 6.18.44 (tools/gro_oracle.py), as retis would
    record them at net:netif_receive_skb: gso_segs shows the merge."""
    doc = json.loads(GRO_ORACLE.read_text())
    case = next(c for c in doc["cases"] if c["name"] == "seg8")
    (out,) = [s for s in case["observed"]["skbs"] if s["gso_segs"] == 8]
    event = {"kernel": {"symbol": "net:netif_receive_skb", "probe_type": "raw_tracepoint"},
             "dev": {"name": "vnx0", "ifindex": 7},
             "skb": {"meta": {"len": out["len"], "data_len": out["data_len"], "hash": 0,
                              "ip_summed": out["ip_summed"]},
                     "gso": {"flags": 0, "frags": out["nr_frags"], "size": out["gso_size"],
                             "segs": out["gso_segs"], "type": out["gso_type"]}}}
    single = {"kernel": event["kernel"], "dev": event["dev"],
              "skb": {"meta": {"len": 986, "data_len": 0, "hash": 0, "ip_summed": 0}}}
    path = tmp_path / "agg.json"
    path.write_text(json.dumps({"common": {"timestamp": 1}, "startup": {}}) + "\n"
                    + json.dumps(event) + "\n" + json.dumps(single) + "\n")
    result = observe_json("--from-trace", str(path), "--tap", "--kernel", "6.18")
    aggregate, lone = result["frames"]
    assert aggregate["agreement"] == "unchecked" and aggregate["match"] is None
    assert "a GRO aggregate of 8 segments" in aggregate["note"]
    assert lone["agreement"] == "exact"  # a 1000-byte write: compared (len, data_len, gso)
    assert any("IFF_NAPI" in n for n in result["notes"])


def test_cli_text_output(this_kernel: None, tmp_path: Path) -> None:
    path = retis_events(tmp_path / "r.json", "entry", "net:napi_gro_receive_entry")
    result = RUNNER.invoke(cli, ["observe", "--from-trace", str(path), "--kernel", "running",
                                 *ETH0, "--count", "5"])
    assert result.exit_code == 0, result.output
    assert "read from retis events (retis collect -o, NDJSON): 300 skbs at " \
           "net:napi_gro_receive_entry, before GRO" in result.stdout
    assert "not in the capture (never counted as agreement): truesize" in result.stdout
    bare = pwru_json(tmp_path / "b.json", skb=False, shinfo=False)
    result = RUNNER.invoke(cli, ["observe", "--from-trace", str(bare), "--kernel", "running",
                                 *ETH0, "--count", "3"])
    assert result.exit_code == 1
    assert "no skb compared; 3 not compared (nothing comparable in the capture)" in result.stdout
    assert "pwru records the skb's fields with --output-skb" in result.stdout


def test_cli_bpftrace_script() -> None:
    result = RUNNER.invoke(cli, ["observe", "--bpftrace-script", "--dev", "eth0"])
    assert result.exit_code == 0 and result.stdout == captures.bpftrace_script("eth0")
    fails(["--bpftrace-script", "--from-trace", "x"], 2, "--bpftrace-script prints a program")
    fails(["--bpftrace-script", "--dev", 'a"b'], 2, "not a name a bpftrace string can hold")


def test_cli_bad_input(tmp_path: Path) -> None:
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("60\n1514\n")
    line = fails(["--from-trace", str(lengths)], 2, "not a trace vnetrx reads")
    for name in ("tracefs text", "`perf script` text", "`perf data convert --to-json`",
                 "pwru text", "pwru --output-json", "retis events", "bpftrace output"):
        assert name in line
    fails(["--from-trace", str(TRACES / "eth0-6.18.44-perf-6.1-convert.json")], 1,
          "carry no tracepoint fields")
    fails(["--from-trace", str(TRACES / "pwru-502.txt")], 1,
          "pwru text with no skb at napi_gro_receive, netif_receive_skb or __netif_receive_skb "
          "(it has __iptunnel_pull_header)")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"common": {}, "startup": {}}) + "\n{not json\n")
    fails(["--from-trace", str(broken)], 2, "line 2 is not JSON")
    fails(["--from-trace", str(TRACES / "eth0-6.18.44-bpftrace.json"), "--tap", "--mergeable"],
          2, "--tap and --mergeable")
    fails(["--tap", "--dev", "eth0"], 2, "--tap describes the device of a --from-trace")
    # a pre-GRO capture without options: a featureless virtio device, and the report says so
    doc = observe_json("--from-trace", str(TRACES / "eth0-6.18.44-bpftrace.json"),
                       "--kernel", "6.18", code=1)
    assert doc["mode"] == "small" and any("no virtio features given" in n for n in doc["notes"])
    result = RUNNER.invoke(cli, ["observe", "--json", "--from-trace", str(lengths)])
    doc = json.loads(result.stdout)
    Draft202012Validator(schema("error")).validate(doc)
    assert doc["exit_code"] == 2 and "not a trace vnetrx reads" in doc["error"]
