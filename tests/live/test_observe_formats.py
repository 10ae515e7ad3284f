"""``vnetrx observe --from-trace`` on other tools' traces (issue 28 item 4): format detection,
the parsers on real samples (pwru's and retis's own, quoted whole in tests/data/traces/README.md)
and on captures of this machine's eth0 (perf script, perf 6.1's JSON, bpftrace running the
program vnetrx prints), pwru and retis files built from vnetrx's own recordings, and the CLI."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from tests import DATA as TESTS_DATA
from vnetrx.cli import cli
from vnetrx.live import observe as core
from vnetrx.observed import captures
from vnetrx.observed.captures import CaptureError, btf_members, detect, parse
from vnetrx.schemas import schema

TRACES = TESTS_DATA / "traces"
RUNNER = CliRunner(env={"COLUMNS": "120", "NO_COLOR": "1"})
# /sys/class/net/eth0/device/features of the NIC the eth0-6.18.44-* captures come from
ETH0_FEATURES = (
    "11000101101110110000000000000100100000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000"
)
ETH0 = ["--features", ETH0_FEATURES, "--mtu", "1400", "--buf-len", "4096"]
RECORDING = TESTS_DATA / "observe" / "eth0-6.18.44-gro-download.json"
GRO_ORACLE = TESTS_DATA / "gro" / "linux-6.18.44.json"
# the opening of bpf_snprintf_btf's own documentation of its default output (kernel commit
# "bpf: add bpf_snprintf_btf helper", 2020): zero members omitted, pointers hashed
BTF_DOC_DUMP = """(struct sk_buff){
 .transport_header = (__u16)65535,
 .mac_header = (__u16)65535,
 .end = (sk_buff_data_t)192,
 .head = (unsigned char *)0x000000007524fd8b,
 .data = (unsigned char *)0x000000007524fd8b,
 .truesize = (unsigned int)768,
 .users = (refcount_t){
  .refs = (atomic_t){
   .counter = (int)1,
  },
 },
}"""


@pytest.fixture
def this_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--kernel running`` as the machine the eth0 captures come from: 6.18.44 with its
    "minimal" config (MAX_HEADER 32; tests/live/test_observe.py says why)."""
    import vnetrx.live.running
    from vnetrx.cli.options import BuildChoice, load_profile

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


# --- files in other tools' shapes, built from vnetrx's own recordings -----------------------


def _records(kind: str) -> list[dict[str, Any]]:
    doc = json.loads(RECORDING.read_text())
    return [r for r in doc["records"] if r["kind"] == kind]


def _skb_dump(r: dict[str, Any]) -> str:
    """A sk_buff as bpf_snprintf_btf prints it with flags 0: members in struct order, zero
    ones left out, pointers hashed, bitfields in hex, protocol as the raw __be16."""
    members = [
        " (union){", "  .dev = (struct net_device *)0x00000000d3c1a2b4,", " },",
        f" .len = (unsigned int){r['len']},",
        f" .data_len = (unsigned int){r['data_len']}," if r["data_len"] else "",
        " .queue_mapping = (__u16)1,",
        f" .ip_summed = (__u8){r['ip_summed']:#x}," if r["ip_summed"] else "",
        f" .hash = (__u32){r['hash']}," if r["hash"] else "",
        " .protocol = (__be16)8,",  # htons(ETH_P_IP) read on a little-endian machine
        " .headers = (struct){", "  .protocol = (__be16)8,",
        f"  .mac_header = (__u16){r['mac_header']},", " },",
        f" .mac_header = (__u16){r['mac_header']},",
        f" .tail = (sk_buff_data_t){r['tail']},", f" .end = (sk_buff_data_t){r['end']},",
        " .head = (unsigned char *)0x000000007524fd8b,",
        " .data = (unsigned char *)0x000000007524fd8b,",
        f" .truesize = (unsigned int){r['truesize']},",
        " .users = (refcount_t){", "  .refs = (atomic_t){", "   .counter = (int)1,", "  },",
        " },",
    ]
    return "\n(struct sk_buff){\n" + "\n".join(m for m in members if m) + "\n}"


def _shinfo_dump(r: dict[str, Any]) -> str:
    members = [
        f" .nr_frags = (__u8){r['nr_frags']}," if r["nr_frags"] else "",
        f" .gso_size = (short unsigned int){r['gso_size']}," if r["gso_size"] else "",
        f" .gso_segs = (short unsigned int){r['gso_segs']}," if r["gso_segs"] else "",
        " .frags = (skb_frag_t[])[",
        *(f"  (struct skb_frag){{\n   .len = (unsigned int){f['len']},\n"
          f"   .offset = (unsigned int){f['offset']},\n  }},"
          for f in r["frags"]),
        " ],",
        f" .gso_type = (unsigned int){r['gso_type']}," if r["gso_type"] else "",
        " .dataref = (atomic_t){", "  .counter = (int)1,", " },",
    ]
    return "\n(struct skb_shared_info){\n" + "\n".join(m for m in members if m) + "\n}"


def pwru_json(path: Path, *, skb: bool = True, shinfo: bool = True, kind: str = "entry",
              funcs: tuple[str, ...] = ("gro_receive_skb", "ip_rcv_core")) -> Path:
    """pwru --output-json --output-skb --output-skb-shared-info, one event per skb at
    napi_gro_receive plus a later function for each (as pwru traces every function)."""
    lines = []
    for n, r in enumerate(_records(kind)):
        for func in funcs:
            event: dict[str, Any] = {"skb": f"0xffff8880{n:08x}", "cpu": r["cpu"],
                                     "process": "<empty>:0", "func": func,
                                     "netns": 4026531840, "iface": "eth0:2", "proto": 2048,
                                     "mtu": 1400, "len": r["len"],
                                     "tuple": {"saddr": "10.0.2.2", "daddr": "10.0.2.15",
                                               "sport": 443, "dport": 40000, "proto": 6}}
            if shinfo:
                event["skb_shared_info"] = _shinfo_dump(r)
            if skb:
                event["skb_metadata"] = _skb_dump(r)
            lines.append(json.dumps(event))
    path.write_text("\n".join(lines) + "\n")
    return path


def pwru_text(path: Path, *, dumps: bool) -> Path:
    head = ("SKB                CPU PROCESS          NETNS      MARK/x        IFACE       PROTO  "
            "MTU   LEN   TUPLE FUNC\n")
    out = [head]
    for n, r in enumerate(_records("entry")):
        out.append(f"0xffff8880{n:08x} {r['cpu']:<3} <empty>:0        4026531840 0     "
                   f"       eth0:2       0x0800 1400  {r['len']:<5} "
                   "10.0.2.2:443->10.0.2.15:40000(tcp) gro_receive_skb"
                   + (_skb_dump(r) + _shinfo_dump(r) if dumps else "") + "\n")
    path.write_text("".join(out))
    return path


def retis_events(path: Path, kind: str, symbol: str) -> Path:
    """``retis collect -o``: a startup event, then one event per skb with the meta section,
    the gso section only when gso_size != 0 (retis-events skb.rs), no truesize."""
    lines = [json.dumps({"common": {"timestamp": 1}, "startup": {"retis_version": "v1.6.0"}})]
    for r in _records(kind):
        frame = bytes.fromhex(r["mac"] + r["packet"])
        skb: dict[str, Any] = {"meta": {"len": r["len"], "data_len": r["data_len"],
                                        "hash": r["hash"], "ip_summed": r["ip_summed"],
                                        "csum": 0, "csum_level": 0, "priority": 0}}
        if r["gso_size"]:
            skb["gso"] = {"flags": 0, "frags": r["nr_frags"], "size": r["gso_size"],
                          "segs": r["gso_segs"], "type": r["gso_type"]}
        lines.append(json.dumps({
            "common": {"timestamp": 2, "smp_id": r["cpu"]},
            "kernel": {"symbol": symbol, "probe_type": "raw_tracepoint"},
            "dev": {"name": "eth0", "ifindex": 2}, "skb": skb,
            "packet": {"len": r["len"] + 14, "capture_len": len(frame),
                       "data": base64.b64encode(frame).decode()}}))
    path.write_text("\n".join(lines) + "\n")
    return path


# --- detection ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "fmt"), [
    ("eth0-6.18.44-perf-script.txt", "perf-script"),
    ("eth0-6.18.44-tracefs.txt", "tracefs"),
    ("eth0-6.18.44-perf-6.1-convert.json", "perf-json"),
    ("eth0-6.18.44-bpftrace.json", "bpftrace"),
    ("pwru-502.txt", "pwru"),
    ("pwru-364-shinfo.txt", "pwru"),
    ("pwru-205-cut.txt", "pwru"),
    ("retis-test-events.json", "retis"),
])
def test_detect_real_files(name: str, fmt: str) -> None:
    assert detect((TRACES / name).read_text()) == fmt


def test_detect_other_shapes(tmp_path: Path) -> None:
    tracefs = ("  <idle>-0  [001] ..s1.  51.23: napi_gro_receive_entry: dev=eth0 napi_id=0x0 "
               "len=60")
    assert detect(tracefs) == "tracefs"
    assert detect("# tracer: nop\n#\n") == "tracefs"
    assert detect((TESTS_DATA / "lab" / "small-6.1.0-57-amd64.log").read_text()) == "lab"
    assert detect(pwru_json(tmp_path / "p.json").read_text()) == "pwru-json"
    assert detect(pwru_text(tmp_path / "p.txt", dumps=False).read_text()) == "pwru"
    text = (TRACES / "eth0-6.18.44-bpftrace.json").read_text()
    plain = "".join(json.loads(line)["data"] for line in text.splitlines()[1:] if line.strip())
    assert detect(plain) == "bpftrace"  # bpftrace without -f json
    assert parse(plain).skbs == parse(text).skbs and len(parse(plain).skbs) == 21
    for other in ("", "hello\n", "60\n1514\n", '{"a": 1}\n', "[1, 2]\n",
                  "\x00\x01binary", (TESTS_DATA / "replay" / "length-mix.txt").read_text()):
        assert detect(other) is None, other


# --- parsers on the real samples ------------------------------------------------------------


def test_pwru_502_line() -> None:
    (skb,) = parse((TRACES / "pwru-502.txt").read_text()).skbs
    # default pwru text: LEN is the only skb field, the IFACE column names the device
    assert skb.probe == "__iptunnel_pull_header" and skb.dev == "eth0"
    assert skb.fields == {"len": 146, "protocol": 0x0800}
    assert skb.stage is None  # not a point vnetrx compares at


def test_pwru_364_shared_info_dump() -> None:
    (skb,) = parse((TRACES / "pwru-364-shinfo.txt").read_text()).skbs
    assert skb.probe == "validate_xmit_skb" and skb.dev is None
    # nr_frags and gso_size are absent from the dump because they were 0 (flags 0)
    assert skb.fields == {"nr_frags": 0, "gso_size": 0, "gso_type": 1}
    assert skb.gso_segs == 1 and skb.gso_type_full == 1


def test_pwru_205_cut_dump() -> None:
    """A dump that stops inside the struct: members after the cut are unknown, not 0."""
    (skb,) = parse((TRACES / "pwru-205-cut.txt").read_text()).skbs
    assert skb.probe == "xfrm_rcv_cb" and skb.dev is None  # ifindex=4: no name
    assert skb.fields == {"len": 80, "protocol": 0x86DD}  # proto=dd86 is the raw __be16
    assert "truesize" not in skb.fields and "data_len" not in skb.fields
    assert any("cut short" in n for n in skb.notes)


def test_btf_dump_of_the_helpers_documentation() -> None:
    members = btf_members(BTF_DOC_DUMP)
    assert members["end"] == 192 and members["truesize"] == 768 and members["counter"] == 1
    assert "head" not in members and "data" not in members  # hashed pointers: never read
    fields, segs, full, notes = captures._dump_fields(BTF_DOC_DUMP, None)
    # a complete dump: what it leaves out is 0; mac_header 65535 is "not set"
    assert fields["len"] == 0 and fields["data_len"] == 0 and fields["ip_summed"] == 0
    assert fields["truesize"] == 768 and fields["end"] == 192 and "mac_header" not in fields
    assert segs is None and full is None and notes == ()


def test_retis_test_data() -> None:
    capture = parse((TRACES / "retis-test-events.json").read_text())
    assert capture.format == "retis"
    xmit, rx = capture.skbs  # the startup event is no skb
    assert xmit.probe == "net:net_dev_start_xmit" and xmit.dev == "veth-ns01"
    assert rx.probe == "net:netif_receive_skb" and rx.dev == "veth-ns01-ovs"
    assert rx.stage == "post-gro"
    # meta: len after the 14-byte pull (packet.len is 98); the Ethernet type from the packet
    # bytes; no truesize, nr_frags or gso_type; no gso section anywhere in the file, so
    # gso_size is unknown (the section may not have been collected)
    assert rx.fields == {"len": 84, "data_len": 0, "hash": 0, "ip_summed": 0,
                         "protocol": 0x0800}
    assert rx.gso_segs is None
    # with a gso section on some event, its absence on another means gso_size 0
    gso = json.loads((TRACES / "retis-test-events.json").read_text().splitlines()[1])
    gso["skb"]["gso"] = {"flags": 0, "frags": 1, "size": 1448, "segs": 2, "type": 1}
    text = (TRACES / "retis-test-events.json").read_text() + json.dumps(gso) + "\n"
    _, rx, tx = parse(text).skbs
    assert rx.fields["gso_size"] == 0 and tx.fields["gso_size"] == 1448 and tx.gso_segs == 2


def test_retis_without_the_meta_section() -> None:
    """retis collect --skb-sections without meta: the packet section's length (from the MAC
    header) less the Ethernet header is all there is."""
    line = json.loads((TRACES / "retis-test-events.json").read_text().splitlines()[2])
    del line["skb"]["meta"]
    (skb,) = parse(json.dumps(line) + "\n").skbs
    assert skb.fields == {"len": 84, "protocol": 0x0800}
    assert "len is the packet's, less the 14-byte Ethernet header" in skb.notes[0]


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


def test_perf_json_of_perf_6_1_has_no_fields() -> None:
    with pytest.raises(CaptureError, match=r"its 50 samples carry no tracepoint fields .*6\.1"):
        parse((TRACES / "eth0-6.18.44-perf-6.1-convert.json").read_text())


def _perf_json_with_fields(path: Path, *, cmdline: list[str], site: str | None) -> Path:
    """perf data convert --to-json as perfs with libtraceevent write it
    (tools/perf/util/data-convert-json.c: every field by name, as tep_print_field renders it:
    a 2-byte field as a signed short, a 4-byte one as an int), from the real perf script text."""
    real = (TRACES / "eth0-6.18.44-perf-script.txt").read_text().splitlines()
    samples = []
    for line in real:
        event = core.parse_line(line)
        if event is None:
            continue
        pairs = dict(p.split("=", 1) for p in line.split(": dev=", 1)[1].split() if "=" in p)
        sample: dict[str, Any] = {"timestamp": 1, "pid": 0, "tid": 0, "cpu": 1, "comm": "x"}
        sample["callchain"] = [{"ip": "0xffffffff81efba91", "symbol": site}] if site else []
        sample["name"] = "eth0"
        for name in ("napi_id", "queue_mapping", "skbaddr", "vlan_tagged", "vlan_proto",
                     "vlan_tci", "protocol", "ip_summed", "hash", "l4_hash", "len", "data_len",
                     "truesize", "mac_header_valid", "mac_header", "nr_frags", "gso_size",
                     "gso_type"):
            value = int(pairs.get(name, "0"), 16 if name in ("skbaddr",) else 0)
            if name in ("protocol", "gso_size", "gso_type", "queue_mapping", "vlan_proto",
                        "vlan_tci") and value >= 0x8000:
                value -= 0x10000  # "%2d" of (short)val
            sample[name] = f"{value:#x}" if name == "skbaddr" else str(value)
        samples.append(sample)
    doc = {"linux-perf-json-version": 1, "headers": {"cmdline": cmdline,
                                                     "perf-version": "6.12"},
           "samples": samples}
    path.write_text(json.dumps(doc, indent=1))
    return path


def test_perf_json_with_fields(tmp_path: Path) -> None:
    path = _perf_json_with_fields(tmp_path / "p.json", site="gro_receive_skb",
                                  cmdline=["perf", "record", "-e", "net:napi_gro_receive_entry"])
    capture = parse(path.read_text())
    assert capture.format == "perf-json" and len(capture.skbs) == 25
    first = capture.skbs[0]
    assert first.probe == "napi_gro_receive_entry" and first.dev == "eth0"
    assert first.fields["len"] == 71 and first.fields["truesize"] == 832
    assert first.fields["protocol"] == 0x0800 and first.fields["ip_summed"] == 3
    # the event is told from the command line when the call chain does not say
    path = _perf_json_with_fields(tmp_path / "q.json", site=None,
                                  cmdline=["perf", "record", "-e", "net:netif_receive_skb_entry"])
    assert parse(path.read_text()).skbs[0].probe == "netif_receive_skb_entry"
    path = _perf_json_with_fields(tmp_path / "r.json", site=None, cmdline=[
        "perf", "record", "-e", "net:napi_gro_receive_entry", "-e",
        "net:netif_receive_skb_entry"])
    with pytest.raises(CaptureError, match="do not say whether"):
        parse(path.read_text())


def test_perf_json_signed_fields() -> None:
    """libtraceevent prints a u16 as a signed short: 0x86dd comes out as -31011."""
    text = json.dumps({"linux-perf-json-version": 1, "headers": {"cmdline": [
        "perf", "record", "-e", "net:napi_gro_receive_entry"]}, "samples": [
        {"name": "eth0", "len": "1000", "truesize": "2304", "data_len": "0", "nr_frags": "0",
         "protocol": "-31011", "gso_size": "-1", "hash": "-1"}]})
    (skb,) = parse(text).skbs
    assert skb.fields["protocol"] == 0x86DD and skb.fields["gso_size"] == 0xFFFF
    assert skb.fields["hash"] == 0xFFFFFFFF


def test_bpftrace_real_capture() -> None:
    capture = parse((TRACES / "eth0-6.18.44-bpftrace.json").read_text())
    assert capture.format == "bpftrace" and len(capture.skbs) == 21
    first = capture.skbs[0]
    assert first.probe == "napi_gro_receive_entry" and first.dev == "eth0"
    # the first skb of the recording made the same way by `observe --gro` on this NIC
    assert first.fields == {"len": 71, "data_len": 0, "truesize": 832, "nr_frags": 0,
                            "gso_size": 0, "gso_type": 0, "ip_summed": 3, "hash": 0,
                            "l4_hash": 0, "protocol": 0x0800, "queue_mapping": 1, "data": 78,
                            "tail": 149, "end": 256, "mac_header": 64}
    assert first.gso_segs == 0


def test_bpftrace_script() -> None:
    script = captures.bpftrace_script("eth0")
    assert 'str(args->name) == "eth0"' in script
    assert "tracepoint:net:napi_gro_receive_entry" in script
    assert "tracepoint:net:netif_receive_skb_entry" in script
    # every field the parser reads is printed, in the order of the arguments
    fmt = script.split('printf("', 1)[1].split('\\n"', 1)[0]
    assert fmt.split()[:3] == ["vnetrx-skb", "%s", "dev=%s"]
    assert fmt.split()[3:] == [f"{n}=%u" for n in captures._BPFTRACE_FIELDS]
    assert "/ str(args" not in captures.bpftrace_script(None)


# --- built from vnetrx's own recordings -----------------------------------------------------


def test_pwru_json_reproduces_the_recording(tmp_path: Path) -> None:
    capture = parse(pwru_json(tmp_path / "p.json").read_text())
    entries = _records("entry")
    at_gro = [c for c in capture.skbs if c.probe == "gro_receive_skb"]
    assert len(at_gro) == len(entries) == 300
    for got, r in zip(at_gro, entries, strict=True):
        assert got.dev == "eth0"
        for name in ("len", "data_len", "truesize", "ip_summed", "nr_frags", "gso_size",
                     "tail", "end", "mac_header", "data"):
            assert got.fields[name] == r[name], name  # data: tail - (len - data_len)
        assert got.fields["gso_type"] == r["gso_type"] & 0xFFFF
        assert got.gso_segs == r["gso_segs"] and got.fields["protocol"] == 0x0800
    # without --output-skb-shared-info: no nr_frags/gso; without --output-skb: len only
    bare = parse(pwru_json(tmp_path / "b.json", skb=False, shinfo=False).read_text()).skbs[0]
    assert set(bare.fields) == {"len", "protocol"}
    half = parse(pwru_json(tmp_path / "h.json", shinfo=False).read_text()).skbs[0]
    assert "gso_size" not in half.fields and half.fields["truesize"] == entries[0]["truesize"]


def test_pwru_text_reproduces_the_recording(tmp_path: Path) -> None:
    entries = _records("entry")
    capture = parse(pwru_text(tmp_path / "p.txt", dumps=True).read_text())
    assert [c.fields["truesize"] for c in capture.skbs] == [r["truesize"] for r in entries]
    assert [c.fields["data"] for c in capture.skbs] == [r["data"] for r in entries]
    plain = parse(pwru_text(tmp_path / "q.txt", dumps=False).read_text())
    assert [c.fields for c in plain.skbs][:2] == [
        {"len": entries[0]["len"], "protocol": 0x0800},
        {"len": entries[1]["len"], "protocol": 0x0800}]


def test_retis_reproduces_the_recording(tmp_path: Path) -> None:
    capture = parse(retis_events(tmp_path / "r.json", "delivered",
                                 "net:netif_receive_skb").read_text())
    delivered = _records("delivered")
    assert len(capture.skbs) == len(delivered)
    for got, r in zip(capture.skbs, delivered, strict=True):
        assert "truesize" not in got.fields  # retis records none
        assert got.fields["len"] == r["len"] and got.fields["data_len"] == r["data_len"]
        assert got.fields["gso_size"] == r["gso_size"]
        assert ("nr_frags" in got.fields) == bool(r["gso_size"])  # only with the gso section
        assert got.fields["protocol"] == 0x0800


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
    assert half["counts"]["unchecked"] == sum(r["len"] + 14 > 1414 for r in _records("entry"))


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
