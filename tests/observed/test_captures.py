"""vnetrx/observed/captures.py: other tools' traces (pwru, retis, perf's JSON, bpftrace) read
as the skbs they recorded: format detection, the parsers on real samples (pwru's and retis's
own, quoted whole in tests/data/traces/README.md), on captures of this machine's eth0, and on
pwru and retis files built from vnetrx's own recordings (capture_files.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests import DATA as TESTS_DATA
from tests.observed.capture_files import pwru_json, pwru_text, records, retis_events
from vnetrx.observed import captures
from vnetrx.observed.captures import CaptureError, btf_members, detect, parse
from vnetrx.observed.rx_event import parse_rx_event

TRACES = TESTS_DATA / "traces"
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
        event = parse_rx_event(line)
        if event is None or event.event not in ("napi_gro_receive_entry",
                                                "netif_receive_skb_entry"):
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


def test_pwru_json_reproduces_the_recording(tmp_path: Path) -> None:
    capture = parse(pwru_json(tmp_path / "p.json").read_text())
    entries = records("entry")
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
    entries = records("entry")
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
    delivered = records("delivered")
    assert len(capture.skbs) == len(delivered)
    for got, r in zip(capture.skbs, delivered, strict=True):
        assert "truesize" not in got.fields  # retis records none
        assert got.fields["len"] == r["len"] and got.fields["data_len"] == r["data_len"]
        assert got.fields["gso_size"] == r["gso_size"]
        assert ("nr_frags" in got.fields) == bool(r["gso_size"])  # only with the gso section
        assert got.fields["protocol"] == 0x0800
