"""``vnetrx observe --gro`` offline: a real recording of this machine's eth0 (virtio_net,
6.18.44) during a package download replayed through the comparison, the tap oracle's bursts
(tests/data/gro, recorded from the same kernel) turned into record streams, and the reasons a
poll is not predicted."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from vnetrx.cli import cli
from vnetrx.kernel.registry import lookup, profile_for
from vnetrx.kernel.version import parse_release
from vnetrx.live import gro_frames
from vnetrx.live import observe_gro as og
from vnetrx.schemas import schema

DATA = Path(__file__).parents[1] / "data"
ETH0 = DATA / "observe" / "eth0-6.18.44-gro-download.json"
# the machine that recorded both files: 6.18.44, MAX_HEADER 32, a 576-byte skbuff_small_head
KERNEL = profile_for(parse_release("6.18.44"), lookup("6.18.44").build._replace(
    config="running", max_header=32, small_head_observed=576), source="tests/data")
RUNNER = CliRunner()


def eth0() -> tuple[og.Recording, og.NapiFacts]:
    recording, facts, kernel = og.recording_from_dict(json.loads(ETH0.read_text()))
    assert kernel == "6.18.44"
    return recording, facts


# --- the real eth0 recording -------------------------------------------------------------


def test_the_eth0_download_replays_exactly() -> None:
    recording, facts = eth0()
    assert (facts.gro_flush_timeout, facts.napi_defer_hard_irqs, facts.hz) == (0, 0, 250)
    report = og.analyse(KERNEL, facts, recording)
    assert (report.inputs, report.outputs, report.polls) == (300, 300, 209)
    assert (len(report.compared), report.matches, report.mismatches) == (299, 299, 0)
    assert report.match
    # the first poll on the CPU began before the window: its one skb is not predicted
    assert [(s.inputs, s.reason) for s in report.skipped] == [
        (1, "the poll began before the window (its first skbs were not recorded)")]


def test_a_gso_skb_with_40_linear_bytes_leaves_with_its_tcp_options_pulled() -> None:
    """Host TSO skbs (gso_size 1348, DODGY) are flushed by GRO, but tcp_gro_pull_header has
    pulled the 12 bytes of TCP options out of frags[0] first: headlen 40 → 52, data_len
    64716 → 64704, truesize and the three frags unchanged (numbers as recorded)."""
    recording, facts = eth0()
    records = recording.records
    entry = next(r for r in records if r["kind"] == "entry" and r["len"] == 64756
                 and r["nr_frags"] == 3)
    out = next(r for r in records if r["kind"] == "delivered" and r["skb"] == entry["skb"]
               and r["len"] == 64756)
    assert (entry["headlen"], entry["data_len"], entry["truesize"]) == (40, 64716, 66336)
    assert (out["headlen"], out["data_len"], out["truesize"], out["nr_frags"]) == (
        52, 64704, 66336, 3)
    report = og.analyse(KERNEL, facts, recording)
    gso = [c for c in report.compared if c.observed and c.observed["gso_size"] == 1348]
    # every gso_size 1348 input of the recording (173 of the 300), each its own output
    assert len(gso) == sum(r["kind"] == "entry" and r["gso_size"] == 1348 for r in records) == 173
    assert all(c.predicted == c.observed for c in gso)
    assert {c.flush for c in gso} == {"not_held"}


def _delivered_of_input(records: list[dict[str, Any]], index: int) -> dict[str, Any]:
    entry = [r for r in records if r["kind"] == "entry"][index]
    at = records.index(entry)
    return next(r for r in records[at:] if r["kind"] == "delivered" and r["skb"] == entry["skb"])


@pytest.mark.parametrize(("field", "delta", "differ"), [
    ("truesize", 1, ("truesize",)),
    ("gso_segs", 2, ("gso_segs",)),
    ("ip_summed", -2, ("ip_summed",)),
])
def test_a_changed_output_is_a_mismatch(field: str, delta: int, differ: tuple[str, ...]) -> None:
    recording, facts = eth0()
    records = copy.deepcopy(list(recording.records))
    _delivered_of_input(records, 10)[field] += delta
    report = og.analyse(KERNEL, facts, og.Recording(tuple(records)))
    assert (report.matches, report.mismatches) == (298, 1)
    assert not report.match
    (bad,) = [c for c in report.compared if not c.match]
    assert bad.differ == differ
    assert bad.frames == (10,)


def test_lost_records_void_the_match() -> None:
    recording, facts = eth0()
    lost = og.Recording(recording.records, lost=3)
    report = og.analyse(KERNEL, facts, lost)
    assert not report.match  # lost records void the check
    assert report.notes[0] == "3 records were lost (the BPF queue was full): the match is void"


def test_gro_flush_timeout_is_not_guessed() -> None:
    recording, facts = eth0()
    timeout = og.NapiFacts(**{**facts.__dict__, "gro_flush_timeout": 20000})
    report = og.analyse(KERNEL, timeout, recording)
    assert report.compared == ()
    assert report.match  # nothing to compare is not a failure
    assert sum(s.inputs for s in report.skipped) == 300
    assert all("gro_flush_timeout 20000" in s.reason for s in report.skipped)


def test_hz_1000_budget_polls_are_skipped() -> None:
    records: list[dict[str, Any]] = [{"kind": "poll", "cpu": 0, "work": 0, "budget": 64}]
    recording, _ = eth0()
    entry = next(r for r in recording.records if r["kind"] == "entry" and r["len"] == 884)
    for i in range(64):
        records += [{**entry, "cpu": 0, "skb": 100 + i}, {"kind": "exit", "cpu": 0, "ret": 3},
                    {**entry, "kind": "delivered", "cpu": 0, "skb": 100 + i}]
    records.append({"kind": "poll", "cpu": 0, "work": 64, "budget": 64})
    facts = og.NapiFacts("eth0", hz=1000)
    report = og.analyse(KERNEL, facts, og.Recording(tuple(records)))
    assert report.compared == ()
    assert report.skipped[0].reason.startswith("a poll that used its whole budget with HZ 1000")
    at250 = og.analyse(KERNEL, og.NapiFacts("eth0", hz=250), og.Recording(tuple(records)))
    assert (len(at250.compared), at250.matches) == (64, 64)


def test_a_merge_into_an_skb_held_before_the_poll_is_skipped() -> None:
    recording, _ = eth0()
    entry = next(r for r in recording.records if r["kind"] == "entry" and r["len"] == 884)
    records = [{"kind": "poll", "cpu": 1, "work": 0, "budget": 64},
               {**entry, "skb": 7}, {"kind": "exit", "cpu": 1, "ret": 1},
               {"kind": "poll", "cpu": 1, "work": 1, "budget": 64}]
    report = og.analyse(KERNEL, og.NapiFacts("eth0"), og.Recording(tuple(records)))
    assert [s.reason for s in report.skipped] == [
        "input 0 merged into an skb held before this poll"]


def test_a_normal_skb_delivered_before_its_exit_is_its_own_output() -> None:
    """gro_normal_batch (8) reached inside gro_receive_skb: net:netif_receive_skb fires before
    napi_gro_receive_exit (seen on eth0)."""
    recording, _ = eth0()
    entry = next(r for r in recording.records if r["kind"] == "entry" and r["len"] == 884)
    records = [{"kind": "poll", "cpu": 1, "work": 0, "budget": 64},
               {**entry, "skb": 7}, {**entry, "kind": "delivered", "skb": 7},
               {"kind": "exit", "cpu": 1, "ret": 3},
               {"kind": "poll", "cpu": 1, "work": 1, "budget": 64}]
    report = og.analyse(KERNEL, og.NapiFacts("eth0"), og.Recording(tuple(records)))
    assert [(c.frames, c.match) for c in report.compared] == [((0,), True)]


def test_the_window_ends_at_poll_boundaries() -> None:
    def e(cpu: int, skb: int) -> dict[str, Any]:
        return {"kind": "entry", "cpu": cpu, "skb": skb}

    def d(cpu: int, skb: int) -> dict[str, Any]:
        return {"kind": "delivered", "cpu": cpu, "skb": skb}

    poll1 = {"kind": "poll", "cpu": 1, "work": 2, "budget": 64}
    x = {"kind": "exit", "cpu": 1, "ret": 3}
    records = [e(1, 1), x, e(1, 2), x, d(1, 1), {"kind": "member", "index": 0}, poll1,
               d(1, 2), e(1, 3), x, d(1, 3), poll1]
    # count 1: the poll under way (inputs 1 and 2) ends whole; input 3's poll is dropped, the
    # late delivery of input 2 (a budget flush after napi_poll) is kept
    assert og.cut(records, 1) == tuple(records[:8])
    assert og.cut(records, 3) == tuple(records)


# --- the tap oracle's bursts, as records --------------------------------------------------


ORACLE = json.loads((DATA / "gro" / "linux-6.18.44.json").read_text())["cases"]


def _usable(case: dict[str, Any]) -> bool:
    tap = case["tap"]
    obs = case["observed"]
    return (not tap["napi_frags"] and tap["gro"] and tap["gro_max_size"] is None
            and tap["gro_ipv4_max_size"] is None and len(obs["inputs"]) < 64
            and all(isinstance(w, int) for w in obs["writes"])
            and all(s["frames"] is not None for s in obs["skbs"]))


def as_records(case: dict[str, Any]) -> list[dict[str, Any]]:
    """A burst as observe --gro would record it. One GRO run (the flush timeout or the pinned
    NAPI thread made it one): every input's entry and exit in one poll, then the outputs in the
    order they left GRO, each with its head input's skb address and its frag_list members.
    IFF_NAPI with no timeout: a poll per write, its output delivered in it."""
    writes = gro_frames.build(case["burst"])
    obs = case["observed"]
    tap = case["tap"]
    per_write = not tap["gro_flush_timeout"] and not tap["threaded"]
    verdicts = {v: k for k, v in og.VERDICTS.items()}
    records: list[dict[str, Any]] = [{"kind": "poll", "cpu": 0, "work": 0, "budget": 64}]

    def delivered(skb: dict[str, Any]) -> list[dict[str, Any]]:
        return [{**{k: skb[k] for k in og.COMPARED if k != "frag_list"},
                 "kind": "delivered", "cpu": 0, "skb": 1000 + skb["frames"][0], "packet": "",
                 "mac": ""},
                *({"kind": "member", "index": j} for j in range(skb["frag_list"]["count"]))]

    for i, item in enumerate(obs["inputs"]):
        frame = writes[item["write"]].frame
        records.append({
            **{k: item[k] for k in og.SKB_KEYS if k in item}, "kind": "entry", "cpu": 0,
            "skb": 1000 + i, "tail": item["data"] + item["headlen"],
            "end": item["data"] + item["headlen"], "mac_header": item["data"] - 14,
            "frags": [{"len": n, "offset": 0} for n in item["frags"]], "hash": 0,
            "mac": frame[:14].hex(), "packet": frame[14:94].hex()})
        records.append({"kind": "exit", "cpu": 0, "ret": verdicts[item["verdict"]]})
        if per_write:
            for skb in obs["skbs"]:
                if skb["frames"][0] == i:
                    records += delivered(skb)
            records.append({"kind": "poll", "cpu": 0, "work": 1, "budget": 64})
    if not per_write:
        for skb in obs["skbs"]:
            records += delivered(skb)
        records.append({"kind": "poll", "cpu": 0, "work": len(obs["inputs"]), "budget": 64})
    return records


def test_the_tap_oracle_bursts_match_through_observe() -> None:
    """Every kernel-recorded burst that is one GRO run (or a poll per write) under 64 inputs:
    merges into the head frag, frags and frag_list, flushes, eviction, IPv6, flows passing by
    — each output's fields and the inputs it carries, as the 6.18.44 kernel delivered them.
    Except a bad TCP checksum on a CHECKSUM_NONE skb: GRO sums the payload, which observe
    does not record, so it assumes the sum right (a note says so) and mispredicts."""
    cases = [c for c in ORACLE if _usable(c)]
    wrong: dict[str, list[tuple[int, ...]]] = {}
    merged = kernel_merged = 0
    for case in cases:
        report = og.analyse(KERNEL, og.NapiFacts("tap"), og.Recording(tuple(as_records(case))))
        assert report.skipped == (), (case["name"], report.skipped)
        bad = [c.frames for c in report.compared if not c.match]
        if bad:
            wrong[case["name"]] = bad
            continue
        assert len(report.compared) == len(case["observed"]["skbs"])
        merged += sum(len(c.frames) > 1 for c in report.compared)
        kernel_merged += sum(len(s["frames"]) > 1 for s in case["observed"]["skbs"])
    assert len(cases) == 105
    assert sorted(wrong) == ["bad-tcp-csum3", "bad-tcp-csum3-threaded-pinned"]
    assert merged == kernel_merged == 142  # aggregates of 2 or more inputs, all matched


# --- the CLI --------------------------------------------------------------------------------


def test_cli_checks_a_saved_recording(tmp_path: Path) -> None:
    result = RUNNER.invoke(cli, ["observe", "--from-recording", str(ETH0), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    Draft202012Validator(schema("observe-gro")).validate(doc)
    assert doc["counts"] == {"inputs": 300, "outputs": 300, "polls": 209, "compared": 299,
                             "matches": 299, "mismatches": 0, "skipped_polls": 1,
                             "skipped_inputs": 1, "lost_records": 0}
    text = RUNNER.invoke(cli, ["observe", "--from-recording", str(ETH0)])
    assert text.exit_code == 0
    assert "300 skbs entered GRO, 300 left it in 209 polls; 299 compared: 299 ✓, 0 ✗" in \
        text.stdout
    bad = json.loads(ETH0.read_text())
    _delivered_of_input(bad["records"], 10)["truesize"] += 1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    mismatch = RUNNER.invoke(cli, ["observe", "--from-recording", str(path), "--json"])
    assert mismatch.exit_code == 1
    assert json.loads(mismatch.stdout)["counts"]["mismatches"] == 1


@pytest.mark.parametrize(("args", "code", "message"), [
    (["observe", "--save-recording", "x.json", "--dev", "eth0"], 2,
     "--save-recording goes with a live --gro run"),
    (["observe", "--gro"], 2, "give --dev NAME (or --from-recording FILE)"),
    (["observe", "--gro", "--from-trace", "t.txt", "--dev", "eth0"], 2,
     "--gro reads a live device or --from-recording, not --from-trace"),
    (["observe", "--from-recording", str(ETH0), "--mergeable"], 2,
     "--mergeable apply to --from-trace text only"),
    (["observe", "--from-recording", str(ETH0), "--dev", "eth1"], 1,
     "recorded eth0, not eth1"),
])
def test_cli_refusals(args: list[str], code: int, message: str) -> None:
    result = RUNNER.invoke(cli, args)
    assert result.exit_code == code
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 or code == 2


def test_cli_refuses_a_file_that_is_no_recording(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"schema": "vnetrx.observe/1"}')
    result = RUNNER.invoke(cli, ["observe", "--from-recording", str(path)])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        'vnetrx: error: not a GRO recording (no "schema": "vnetrx.gro-recording/1")')


@pytest.mark.parametrize(("index", "field", "value", "message"), [
    (1, "packet", "45zz", "packet is not hex bytes"),  # found by tools/fuzz_inputs.py --texts
    (1, "len", "71", "len is '71', not a whole number"),
    (1, "truesize", True, "truesize is True, not a whole number"),
    (1, "frags", [{"len": 1}], "frags is not a list of {len, offset}"),
    (0, "work", None, "work is None, not a whole number"),
    (0, "kind", "exitt", "unknown kind 'exitt'"),
])
def test_a_damaged_recording_is_one_line(tmp_path: Path, index: int, field: str, value: Any,
                                         message: str) -> None:
    """A recording edited or cut by hand is refused where it is read, naming the record and
    the field, never a traceback from deep in the comparison."""
    doc = json.loads(ETH0.read_text())
    kinds = ["poll", "entry"]
    record = next(r for r in doc["records"] if r["kind"] == kinds[index])
    at = doc["records"].index(record)
    record[field] = value
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc))
    result = RUNNER.invoke(cli, ["observe", "--from-recording", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().startswith(f"vnetrx: error: record {at}")
    assert message in result.stderr


# --- what a saved recording keeps, and the facts read -----------------------------------------


def test_a_saved_recording_keeps_headers_only_and_no_kernel_addresses() -> None:
    recording, facts = eth0()
    frame = gro_frames.build({"segments": 1})[0].frame
    net = frame[14:94]
    assert og.headers_only(net) == net[:52]  # IPv4 20 + TCP 32
    # whole records (a recording is checked when read back), as the probe's
    skb = next(r for r in recording.records if r["kind"] == "entry")
    records = [{**skb, "kind": "entry", "skb": 0xFFFF888118563400, "packet": net.hex(),
                "mac": "", "ktime": 5, "tid": 3},
               {**skb, "kind": "delivered", "skb": 0xFFFF888118563400, "packet": "", "mac": ""},
               {**skb, "kind": "entry", "skb": 0xFFFF888118563600, "packet": "", "mac": ""}]
    doc = og.recording_to_dict(og.Recording(tuple(records)), facts, "6.18.44")
    assert [r["skb"] for r in doc["records"]] == [1, 1, 2]
    first = doc["records"][0]
    assert (first["kind"], first["skb"], first["packet"], first["mac"]) == (
        "entry", 1, net[:52].hex(), "")
    assert "ktime" not in first and "tid" not in first
    again = og.recording_from_dict(json.loads(og.recording_text(doc)))
    assert again == (og.Recording(tuple(doc["records"])), facts, "6.18.44")
    # the saved eth0 file: no packet past its headers
    for r in recording.records:
        if "packet" in r:
            raw = bytes.fromhex(r["packet"])
            assert og.headers_only(raw) == raw


def test_napi_facts_are_read_from_sysfs_proc_and_the_config(tmp_path: Path) -> None:
    net = tmp_path / "sys/class/net/eth0"
    (net / "queues/rx-0").mkdir(parents=True)
    (net / "gro_flush_timeout").write_text("20000\n")
    (net / "napi_defer_hard_irqs").write_text("2\n")
    (net / "threaded").write_text("0\n")
    (net / "queues/rx-0/rps_cpus").write_text("00000000,00000002\n")
    core = tmp_path / "proc/sys/net/core"
    core.mkdir(parents=True)
    (core / "busy_read").write_text("50\n")
    (core / "busy_poll").write_text("0\n")
    import gzip

    (tmp_path / "proc/config.gz").write_bytes(gzip.compress(b"CONFIG_HZ_1000=y\nCONFIG_HZ=1000\n"))
    facts = og.read_napi_facts("eth0", str(tmp_path))
    assert facts == og.NapiFacts("eth0", 20000, 2, 0, 1000, 50, 0, True, True)
    assert facts.not_modelled() is not None and "gro_flush_timeout 20000" in facts.not_modelled()
    (net / "gro_flush_timeout").write_text("0\n")
    (net / "napi_defer_hard_irqs").write_text("0\n")
    assert og.read_napi_facts("eth0", str(tmp_path)).not_modelled() is None
    (net / "gro_flush_timeout").unlink()
    assert og.read_napi_facts("eth0", str(tmp_path)).not_modelled() == (
        "gro_flush_timeout / napi_defer_hard_irqs unreadable: the NAPI mode is unknown")


def test_nothing_to_compare_passes(tmp_path: Path) -> None:
    """A window with no whole poll (an idle device): exit 0, said in words."""
    doc = json.loads(ETH0.read_text())
    doc["records"] = doc["records"][:1]  # one napi_poll with no work
    path = tmp_path / "idle.json"
    path.write_text(json.dumps(doc))
    result = RUNNER.invoke(cli, ["observe", "--from-recording", str(path)])
    assert result.exit_code == 0
    assert "nothing to compare: no whole poll with inputs in the window" in result.stdout
    assert "0 skbs entered GRO, 0 left it in 1 polls; 0 compared: 0 ✓, 0 ✗" in result.stdout
