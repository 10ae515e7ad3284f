"""``vnetrx observe`` offline: saved lab guest logs (real 6.1 / 6.12 virtio_net skbs), plain
trace_pipe text, feature decoding from a fake sysfs tree, and bad input. Nothing here traces or
touches a real device (the only device name looked up live does not exist)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from tests import DATA as TESTS_DATA
from vnetrx.cli import cli
from vnetrx.errors import VnetrxError
from vnetrx.kernel.registry import lookup
from vnetrx.live import observe as core
from vnetrx.live.device import read_device
from vnetrx.observed.negotiated import DeviceInfo
from vnetrx.schemas import schema

LAB = TESTS_DATA / "lab"
LOGS = sorted(LAB.glob("*.log"))
RUNNER = CliRunner(env={"COLUMNS": "120", "NO_COLOR": "1"})
MERGEABLE_61 = LAB / "mergeable-6.1.0-57-amd64.log"
# A mergeable virtio_net device: MRG_RXBUF, VERSION_1, MAC, STATUS, CTRL_VQ, … (the lab's bits)
MERGEABLE_BITS = "0010010000000001111101010000110010000000100000000000000000000000"
TAP_LINE = (
    "  python3-812 [001] ..... 51.23: netif_receive_skb_entry: dev={dev} napi_id=0x0 "
    "queue_mapping=0 skbaddr=000000001 vlan_tagged=0 vlan_proto=0x0000 vlan_tci=0x0000 "
    "protocol=0x88b5 ip_summed=0 hash=0x00000000 l4_hash=0 len={len} data_len={data_len} "
    "truesize={truesize} mac_header_valid=1 mac_header=-14 nr_frags={frags} gso_size=0 "
    "gso_type=0x0"
)


def observe_json(*args: str, code: int = 0) -> dict[str, Any]:
    result = RUNNER.invoke(cli, ["observe", "--json", *args])
    assert result.exit_code == code, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    Draft202012Validator(schema("observe")).validate(doc)
    return doc


def frame(doc: dict[str, Any], frame_len: int) -> dict[str, Any]:
    found = [f for f in doc["frames"] if f["frame_len"] == frame_len]
    assert len(found) == 1, (frame_len, [f["frame_len"] for f in doc["frames"]])
    return found[0]


# --- saved lab logs: real guests -------------------------------------------------------------


def test_lab_logs_are_all_there() -> None:
    names = {p.name.split("-")[0] + "-" + p.name.split("-")[1][:4] for p in LOGS}
    assert names == {f"{m}-{v}" for m in ("small", "big", "mergeable") for v in ("6.1.", "6.12")}


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_every_lab_skb_agrees(log: Path) -> None:
    doc = observe_json("--from-trace", str(log))
    mode = log.name.split("-")[0]
    assert doc["mode"] == mode and doc["driver"] == "virtio_net" and doc["device"] == "eth0"
    assert doc["source"] == "lab log" and doc["match"] is True
    events = sum("napi_gro_receive_entry:" in line for line in log.read_text().splitlines())
    assert len(doc["frames"]) == events >= 21
    assert doc["counts"]["mismatch"] == doc["counts"]["unmodelled"] == 0
    # the plain assumption explains all but the frames that landed in an unusual buffer
    assert doc["counts"]["exact"] >= len(doc["frames"]) - 2
    for f in doc["frames"]:
        assert f["path"].startswith(mode + "/")
        for name in ("len", "data_len", "truesize", "nr_frags", "data", "tail", "end"):
            assert f["predicted"][name] == f["observed"][name], (f["frame_len"], name)
    version = "6.1.192" if "6.1.0" in log.name else "6.12.117"
    assert doc["kernel"] == version
    assert doc["hdr_len"] == 12


def test_mergeable_paths_and_numbers() -> None:
    doc = observe_json("--from-trace", str(MERGEABLE_61))
    assert doc["mergeable_rx_buffer_size"] == 1536
    assert "MRG_RXBUF" in doc["features"] and "VERSION_1" in doc["features"]
    f = frame(doc, 128)  # GOOD_COPY_LEN after the header: copied into a small head
    assert (f["path"], f["observed"]["truesize"], f["agreement"]) == (
        "mergeable/copy",
        1280,
        "exact",
    )
    f = frame(doc, 129)
    assert f["path"] == "mergeable/build_skb" and f["observed"]["truesize"] == 1792
    f = frame(doc, 1204)  # the largest build_skb frame in a 1536-byte buffer
    assert f["path"] == "mergeable/build_skb" and f["observed"]["tail"] == 1216
    f = frame(doc, 1205)
    assert f["path"] == "mergeable/copy" and f["observed"]["nr_frags"] == 1
    assert f["observed"]["truesize"] == 2816
    # landed in the 21st buffer of a page (2048 bytes: it absorbed the leftover)
    f = frame(doc, 1514)
    assert f["agreement"] == "consistent" and f["match"] is True
    assert f["path"] == "mergeable/build_skb" and f["observed"]["truesize"] == 2304
    assert "posted buffer 20" in f["note"] and "2048" in f["note"]
    f = frame(doc, 20000)  # crossed into the next page_frag page: two frags
    assert f["agreement"] == "consistent" and f["observed"]["nr_frags"] == 2
    f = frame(doc, 65535)
    assert f["agreement"] == "exact" and f["observed"]["truesize"] == 68352


def test_small_and_big_numbers() -> None:
    small = observe_json("--from-trace", str(LAB / "small-6.12.117+deb12-amd64.log"))
    assert {f["path"] for f in small["frames"]} == {"small/build_skb"}
    assert {f["observed"]["truesize"] for f in small["frames"]} == {2176}
    big = observe_json("--from-trace", str(LAB / "big-6.1.0-57-amd64.log"))
    assert big["mtu"] == 9000 and "MTU" in big["features"]
    assert frame(big, 128)["path"] == "big/copy"
    assert frame(big, 3744)["path"] == "big/build_skb"
    f = frame(big, 3745)
    assert f["path"] == "big/copy" and f["observed"]["truesize"] == 5376
    assert frame(big, 16352)["observed"]["nr_frags"] == 4


def test_text_output() -> None:
    result = RUNNER.invoke(cli, ["observe", "--from-trace", str(MERGEABLE_61)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "vnetrx observe eth0: virtio_net, mergeable mode, MTU 1500, hdr_len 12" in out
    assert "mergeable_rx_buffer_size 1536; model 6.1.192" in out
    assert "25/25 skbs agree (2 consistent with an assumption vnetrx cannot check)" in out
    assert "[1] consistent with the frame starting in posted buffer 20" in out


def test_a_wrong_skb_is_a_mismatch(tmp_path: Path) -> None:
    """The check can fail: one truesize changed in a real log → that frame, and only it."""
    text = MERGEABLE_61.read_text()
    line = next(x for x in text.splitlines() if " len=986 data_len=0 truesize=1792" in x)
    bad = tmp_path / "bad.log"
    small = next(x for x in text.splitlines() if " len=46 data_len=0 truesize=1280" in x)
    text = text.replace(line, line.replace("truesize=1792", "truesize=1856"))
    bad.write_text(text.replace(small, small.replace("truesize=1280", "truesize=1000")))
    doc = observe_json("--from-trace", str(bad), code=1)
    assert doc["match"] is False and doc["counts"]["mismatch"] == 2
    assert frame(doc, 60)["path"] == "mergeable/linear"  # 1000 - 256 is no whole buffer
    f = frame(doc, 1000)
    assert f["agreement"] == "mismatch" and f["match"] is False
    assert f["predicted"]["truesize"] == 1792 and f["observed"]["truesize"] == 1856
    # 1856 - 256 = 1600: a whole 64-byte-aligned buffer → looks like build_skb
    assert f["path"] == "mergeable/build_skb?" and "truesize" in f["note"]
    text_out = RUNNER.invoke(cli, ["observe", "--from-trace", str(bad)]).output
    assert "1792≠1856" in text_out and "23/25 skbs agree" in text_out


def test_the_model_version_matters() -> None:
    """The same 6.1 skbs against 5.12 (no build_skb in page_to_skb): mismatches."""
    doc = observe_json("--from-trace", str(MERGEABLE_61), "--kernel", "5.12", code=1)
    assert doc["kernel"].startswith("5.12") and doc["counts"]["mismatch"] >= 4
    assert frame(doc, 1000)["agreement"] == "mismatch"


# --- plain trace_pipe text ----------------------------------------------------------------


def _plain_virtio(tmp_path: Path) -> Path:
    lines = [x for x in MERGEABLE_61.read_text().splitlines() if "napi_gro_receive_entry:" in x]
    other = lines[0].replace("dev=eth0", "dev=eth1").replace("truesize=1280", "truesize=1")
    out = tmp_path / "trace.txt"
    out.write_text("# tracer: nop\n" + "\n".join([*lines, other]) + "\n")
    return out


def test_plain_trace_with_options(tmp_path: Path) -> None:
    trace = _plain_virtio(tmp_path)
    doc = observe_json(
        "--from-trace",
        str(trace),
        "--dev",
        "eth0",
        "--mergeable",
        "--buf-len",
        "1536",
        "--kernel",
        "6.1",
    )
    assert doc["source"] == "options" and doc["mode"] == "mergeable"
    assert len(doc["frames"]) == 25 and doc["counts"]["mismatch"] == 0
    assert "data" not in frame(doc, 1000)["observed"]  # no kprobe in a plain trace
    same = observe_json(
        "--from-trace",
        str(trace),
        "--dev",
        "eth0",
        "--features",
        MERGEABLE_BITS,
        "--buf-len",
        "1536",
        "--kernel",
        "6.1",
    )
    assert same["frames"] == doc["frames"] and same["features"][0] == "CTRL_GUEST_OFFLOADS"
    # the same skbs as a small-mode device: most cannot be explained
    small = observe_json("--from-trace", str(trace), "--dev", "eth0", "--kernel", "6.1", code=1)
    assert small["mode"] == "small" and small["counts"]["mismatch"] >= 20
    # two devices in one trace: --dev is needed
    result = RUNNER.invoke(cli, ["observe", "--from-trace", str(trace), "--mergeable"])
    assert result.exit_code == 2 and "several devices (eth0, eth1)" in result.stderr


def test_plain_tap_trace(tmp_path: Path) -> None:
    rows = [
        (46, 0, 704, 0),  # 60: tun_build_skb
        (986, 0, 1664, 0),  # 1000: tun_build_skb
        (986, 0, 2304, 0),  # 1000 written blocking: tun_alloc_skb
        (8986, 5288, 12544, 1),  # 9000: linear part + one frag
    ]
    trace = tmp_path / "tap.txt"
    trace.write_text(
        "\n".join(
            TAP_LINE.format(dev="vnx1", len=a, data_len=b, truesize=c, frags=d)
            for a, b, c, d in rows
        )
    )
    doc = observe_json("--from-trace", str(trace), "--kernel", "6.12")
    assert doc["driver"] == "tun" and doc["mode"] == "tap" and doc["device"] == "vnx1"
    paths = [(f["frame_len"], f["path"], f["agreement"]) for f in doc["frames"]]
    assert paths == [
        (60, "tap/build_skb", "exact"),
        (1000, "tap/build_skb", "exact"),
        (1000, "tap/alloc_skb", "consistent"),
        (9000, "tap/alloc_skb", "exact"),
    ]
    assert "blocking write" in doc["frames"][2]["note"]
    limited = observe_json("--from-trace", str(trace), "--kernel", "6.12", "--count", "2")
    assert len(limited["frames"]) == 2


# --- device facts ----------------------------------------------------------------------------


def _fake_sysfs(
    root: Path, name: str, driver: str | None, bits: str | None, buf: str | None
) -> None:
    dev = root / "sys" / "class" / "net" / name
    dev.mkdir(parents=True)
    (dev / "mtu").write_text("1500\n")
    (dev / "ifindex").write_text("2\n")
    if driver is None:
        (dev / "tun_flags").write_text("0x5002\n")
        return
    drivers = root / "sys" / "bus" / "virtio" / "drivers" / driver
    drivers.mkdir(parents=True, exist_ok=True)
    (dev / "device").mkdir()
    (dev / "device" / "driver").symlink_to(drivers)
    if bits is not None:
        (dev / "device" / "features").write_text(bits + "\n")
    if buf is not None:
        queue = dev / "queues" / "rx-0" / "virtio_net"
        queue.mkdir(parents=True)
        (queue / "mergeable_rx_buffer_size").write_text(buf + "\n")


def test_read_device_from_sysfs(tmp_path: Path) -> None:
    _fake_sysfs(tmp_path, "ens3", "virtio_net", MERGEABLE_BITS, "1536")
    _fake_sysfs(tmp_path, "tap0", None, None, None)
    _fake_sysfs(tmp_path, "eno1", "e1000e", None, None)
    info = read_device("ens3", str(tmp_path))
    assert info == DeviceInfo("ens3", "virtio_net", 1500, MERGEABLE_BITS, 1536, 2)
    setup = core.setup_from_device(info)
    assert setup.rx is not None
    assert (setup.mode, setup.rx.hdr_len, setup.rx.buf_len) == ("mergeable", 12, 1536)
    assert setup.event == "napi_gro_receive_entry"
    tap = core.setup_from_device(read_device("tap0", str(tmp_path)))
    assert (tap.driver, tap.mode, tap.event) == ("tun", "tap", "netif_receive_skb_entry")
    with pytest.raises(VnetrxError, match="driven by e1000e"):
        core.setup_from_device(read_device("eno1", str(tmp_path)))
    with pytest.raises(VnetrxError, match="no network device nope0"):
        read_device("nope0", str(tmp_path))


@pytest.mark.parametrize(
    ("bits", "mtu", "mode", "hdr_len"),
    [
        ({15, 32}, 1500, "mergeable", 12),
        ({32}, 1500, "small", 12),
        (set(), 1500, "small", 10),  # legacy device: virtio_net_hdr
        ({7, 32}, 1500, "big", 12),  # GUEST_TSO4
        ({10}, 1500, "big", 10),  # GUEST_UFO
        ({3, 32}, 9000, "big", 12),  # MTU 9000 offered
        ({32}, 9000, "small", 12),  # MTU raised by hand: big_packets stays off
        ({3, 15, 32}, 9000, "mergeable", 12),
        ({15, 32, 57}, 1500, "mergeable", 20),  # HASH_REPORT
    ],
)
def test_feature_decoding(bits: set[int], mtu: int, mode: str, hdr_len: int) -> None:
    text = "".join("1" if bit in bits else "0" for bit in range(64))
    setup = core.setup_from_device(DeviceInfo("ens3", "virtio_net", mtu, text, None))
    assert setup.rx is not None
    assert (setup.mode, setup.rx.hdr_len) == (mode, hdr_len)
    names = {
        15: "MRG_RXBUF",
        32: "VERSION_1",
        7: "GUEST_TSO4",
        10: "GUEST_UFO",
        3: "MTU",
        57: "HASH_REPORT",
    }
    assert set(setup.features) == {names[b] for b in bits}


def test_hash_report_needs_5_18() -> None:
    text = "".join("1" if bit in (15, 32, 57) else "0" for bit in range(64))
    setup = core.setup_from_device(DeviceInfo("ens3", "virtio_net", 1500, text, 1536))
    frames = core.observe(lookup("6.1"), setup, [])
    assert frames.frames == ()
    with pytest.raises(VnetrxError, match=r"needs 5\.18"):
        next(core.Observer(lookup("5.15"), setup).candidates(60))


# --- bad input -------------------------------------------------------------------------------


def _fails(args: list[str], code: int, text: str) -> None:
    result = RUNNER.invoke(cli, ["observe", *args])
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetrx: error: "), result.stderr
    assert text in lines[0]


def test_bad_input(tmp_path: Path) -> None:
    _fails(["--dev", "vnxnope0"], 1, "no network device vnxnope0 in this network namespace")
    _fails(["--dev", "x" * 20], 1, "is not a network device name")
    _fails(["--dev", "vnxnope0", "--count", "0"], 2, "0 is out of range (valid: 1..100000")
    _fails(["--count", "5"], 2, "give --dev NAME (or --from-trace FILE)")
    _fails(["--dev", "vnxnope0", "--mergeable"], 2, "--mergeable apply to --from-trace text only")
    # a file that cannot be read is a bad request, as for replay --from (exit 2)
    _fails(["--from-trace", str(tmp_path / "missing.log")], 2, "cannot read")
    _fails(["--from-trace", str(tmp_path)], 2, "is a directory")
    empty = tmp_path / "empty.txt"
    empty.write_text("# tracer: nop\n")
    _fails(["--from-trace", str(empty)], 1, "no napi_gro_receive_entry or netif_receive_skb_entry")
    _fails(["--from-trace", str(MERGEABLE_61), "--dev", "eth1"], 2, "the log traced eth0, not eth1")
    _fails(["--from-trace", str(MERGEABLE_61), "--mergeable"], 2, "the lab log states")
    _fails(["--from-trace", str(MERGEABLE_61), "--kernel", "2.6"], 2, "2.6")
    trace = _plain_virtio(tmp_path)
    _fails(["--from-trace", str(trace), "--dev", "eth0", "--features", "01x"], 2, "--features")
    _fails(["--from-trace", str(trace), "--dev", "eth0", "--buf-len", "1536"], 2, "MRG_RXBUF")
    cut = tmp_path / "cut.log"
    cut.write_text(MERGEABLE_61.read_text().split("VNETRX trace-end")[0])
    _fails(["--from-trace", str(cut)], 1, "no complete trace")
    result = RUNNER.invoke(cli, ["observe", "--json", "--dev", "vnxnope0"])
    doc = json.loads(result.stdout)
    Draft202012Validator(schema("error")).validate(doc)
    assert doc["exit_code"] == 1 and "vnxnope0" in doc["error"]


def test_live_without_root_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import vnetrx.live.device

    monkeypatch.setattr(
        vnetrx.live.device, "read_device", lambda name: DeviceInfo(name, "tun", 1500)
    )
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    _fails(["--dev", "vnxfake0"], 1, "observe needs root")
    monkeypatch.setattr(
        vnetrx.live.device, "read_device", lambda name: DeviceInfo(name, "veth", 1500)
    )
    _fails(["--dev", "vnxfake0"], 1, "vnxfake0 is driven by veth")


def test_json_does_not_import_rich() -> None:
    code = (
        "import sys\n"
        "from vnetrx.cli import cli\n"
        "try:\n"
        f"    cli.main(['observe', '--json', '--from-trace', {str(MERGEABLE_61)!r}])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "assert 'rich' not in sys.modules, 'rich imported'\n"
        "print('no rich', file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "no rich\n"
    assert json.loads(result.stdout)["schema"] == "vnetrx.observe/1"


# --- offload frames on this machine's own NIC -------------------------------------------------


def test_eth0_download_skbs_with_gso_agree() -> None:
    """The skbs `observe --dev eth0` recorded on this machine's virtio_net NIC during a
    package download (26 of 33 distinct ones GSO: NEEDS_CSUM + TCPV4, gso_size 1348): with the
    header inferred from ip_summed and gso_type, none contradicts the model. Before offloads
    were modelled every GSO skb was off by the 40 pulled header bytes (data_len)."""
    from vnetrx.live.observe_parse import Setup, virtio_rx
    from vnetrx.live.observe_predict import Observer
    from vnetrx.observed.rx_event import RxEvent

    doc = json.loads((TESTS_DATA / "observe" / "eth0-6.18.44-download.json").read_text())
    features, mtu = tuple(doc["setup"]["features"]), doc["setup"]["mtu"]
    setup = Setup(device="eth0", driver="virtio_net", features=features, mtu=mtu,
                  rx=virtio_rx(features, mtu, doc["setup"]["hdr_len"],
                               doc["setup"]["mergeable_rx_buffer_size"]))
    # this machine's 6.18.44 (MAX_HEADER 32 → a 576-byte skbuff_small_head object, as
    # /sys/kernel/slab showed) is the "minimal" config preset
    from vnetrx.kernel.choice import BuildChoice, load_profile

    profile = load_profile(doc["kernel"], "minimal", BuildChoice("x86_64", "4k", None, None))
    observer = Observer(profile, setup)
    agreements = []
    for item in doc["skbs"]:
        o = item["observed"]
        event = RxEvent(dev="eth0", protocol=0x0800, **{k: o[k] for k in (
            "len", "data_len", "truesize", "nr_frags", "ip_summed", "gso_size", "gso_type",
            "hash")}, l4_hash=bool(o["l4_hash"]))
        verdict = observer.judge(event)
        agreements.append(verdict.agreement)
        if o["gso_size"]:
            assert verdict.note is not None and "NEEDS_CSUM at 34 + 16" in verdict.note
    assert "mismatch" not in agreements and "unmodelled" not in agreements
    assert agreements.count("exact") >= 10


def test_inferred_headers() -> None:
    from vnetrx.live.observe_predict import inferred_headers

    assert list(inferred_headers({"ip_summed": 0, "gso_size": 0}, 0x0800)) == [(None, None)]
    tcp6 = list(inferred_headers({"ip_summed": 3, "gso_size": 1428, "gso_type": 0x12}, 0x86DD))
    assert [(h.csum_start, h.csum_offset, h.gso_type) for _, h in tcp6 if h] == [(54, 16, 4)]
    # non-GSO NEEDS_CSUM: TCP or UDP; UFO and USO both show gso_type 0x2 (bits 16, 17 lost)
    assert len(list(inferred_headers({"ip_summed": 3, "gso_size": 0}, 0x0800))) == 2
    udp = list(inferred_headers({"ip_summed": 3, "gso_size": 1472, "gso_type": 0x2}, 0x0800))
    assert [h.gso_type for _, h in udp if h] == [3, 5]
