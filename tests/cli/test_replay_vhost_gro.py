"""`vnetrx replay --path vhost-rx --gro`: a burst the host's tap queued, through vhost-net's
handle_rx into the guest's ring, the guest's virtio-net receive path and its GRO, poll by poll.

Checked against real guests: tests/data/gro/guest-linux-*.json hold what Debian 6.1.170,
6.1.192, 6.12.100 and 6.12.117 guests' GRO made of bursts put into their rx ring with one
used-ring update and one interrupt (`vnetrx lab virtio --gro`, vnetrx's vhost-user backend),
in the mergeable (with and without guest GSO), small and big modes. vhost-rx's used ring
gives those guests the same buffers: mergeable buffers are all 1536 bytes for these frames
(get_mergeable_buf_len: hdr_len + max(EWMA, GOOD_PACKET_LEN 1518) rounded to 64, and the
EWMA of frames of at most 1514 bytes never passes 1518), carved from the same page frag in the
same order, each frame in one buffer (num_buffers 1); small and big buffers are alike
wherever they lie. Fed the boot's frames with the skb state the backend's header describes
(flags and GSO fields: virtio_net_hdr_from_skb writes them back) and the polls the guest's
napi:napi_poll reported, every skb that left the guests' GRO comes out: len, data_len,
headlen, truesize, nr_frags, frag_list, gso fields, ip_summed, frames, order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests import DATA
from vnetrx.cli import cli
from vnetrx.codec import delivered_row
from vnetrx.flow import vhost_rx_gro
from vnetrx.kernel.registry import lookup
from vnetrx.lab import gro
from vnetrx.packet import build_frame, headers_of, tcp_flow_frames
from vnetrx.paths.gro import read_frame
from vnetrx.paths.vhost.rx import (
    HostFrame,
    VhostRxSetup,
    host_skbs,
    vhost_rx_config,
    vhost_rx_stream,
)
from vnetrx.paths.virtio_net_hdr import VnetHdr
from vnetrx.schemas import REPLAY_GRO_ROW

GRO_DATA = DATA / "gro"
FILES = sorted(p.name for p in GRO_DATA.glob("guest-linux-*.json"))
DOCS = {name: json.loads((GRO_DATA / name).read_text()) for name in FILES}
MODE_ARGS = {"mergeable": ["--mergeable"], "mergeable-gso": ["--mergeable", "--guest-gso"],
             "small": [], "big-gso": ["--guest-gso"], "big": []}


def _objects(doc: dict[str, Any]) -> tuple[list[dict[str, str]], list[tuple[str, int, int]]]:
    """The boot's frames as vhost-rx input: the frame, and the skb's state as the 10-byte
    header (the backend's 12-byte header without num_buffers, which vhost writes itself)."""
    frames, ranges = gro.data_frames(doc)
    return [{"frame": o["frame"], "hdr": o["hdr"][:20]} for o in gro.input_objects(frames)], ranges


def _run(args: list[str]) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("name", FILES)
def test_every_skb_the_real_guests_gro_delivered(name: str, tmp_path: Path) -> None:
    doc = DOCS[name]
    objects, ranges = _objects(doc)
    path = tmp_path / "frames.json"
    path.write_text(json.dumps(objects))
    # big mode without guest GSO: the device's MTU alone (host_mtu) makes it
    mtu = ["--mtu", str(doc["mtu"])] if doc.get("mtu") else []
    rows = _run(["replay", "--path", "vhost-rx", "--from", str(path), *MODE_ARGS[doc["mode"]],
                 *mtu, "--kernel", doc["kernel"], "--gro", "--polls",
                 ",".join(map(str, doc["polls"])), "--jsonl"])
    checks = gro.compare(gro.data_observed(doc), rows, ranges)
    assert [(c.name, [s.differ for s in c.skbs if not s.match]) for c in checks
            if not c.match] == []
    assert len(rows) == len(doc["delivered"])
    assert sum(len(r["frames"]) for r in rows) == len(objects)


def _burst_alone(doc: dict[str, Any], frames: list[dict[str, str]], first: int, count: int
                 ) -> list[dict[str, Any]]:
    """One burst of a small-mode boot on the tap's ring by itself (the ring empty before and after: handle_rx
    signals at its end), the guest's GRO polling what vhost's signals made visible."""
    k = lookup(doc["kernel"])
    c = vhost_rx_config(k, VhostRxSetup(mode="small"))
    burst = frames[first:first + count]
    data = [bytes.fromhex(f["frame"]) for f in burst]
    host = [HostFrame(len(b), VnetHdr.from_bytes(bytes.fromhex(f["hdr"]))) for f, b in
            zip(burst, data, strict=True)]
    xmits, skbs = host_skbs(c, host)
    inputs = [read_frame(b, len(b), True) for b in data]
    return [{**delivered_row(poll, d), "frames": [first + i for i in d.frames]}
            for poll, d in vhost_rx_gro(k, vhost_rx_stream(k, c, xmits, skbs),
                                        inputs.__getitem__)]


@pytest.mark.parametrize("name", [n for n in FILES if n.endswith(".small.json")])
def test_without_polls_each_burst_is_polled_as_vhost_signals_it(name: str) -> None:
    """vhost-rx's own poll grouping (no --polls), each burst alone: a burst of at most 64
    frames is one vhost_net_signal_used (the empty ring) and one poll, as the guests polled it,
    and every skb agrees. The 70-frame burst does not: vhost signals after 65 heads
    (done_idx > VHOST_NET_BATCH), so a guest polling at once takes 64, then 1, then 5; the
    lab's backend put all 70 in the ring at once and the guest polled 64 + 6."""
    doc = DOCS[name]
    frames, ranges = _objects(doc)
    observed = gro.data_observed(doc)
    for burst, first, count in ranges:
        rows = _burst_alone(doc, frames, first, count)
        checks = [c for c in gro.compare(observed, rows, ranges) if c.name == burst]
        if count <= 64:
            assert checks and all(c.match for c in checks), burst
            assert {r["poll"] for r in rows} == {1}
        else:
            assert burst == "v4-seg70"
            assert [len(r["frames"]) for r in rows] == [45, 19, 1, 5]
            assert [r["poll"] for r in rows] == [1, 1, 2, 3]
            assert not all(c.match for c in checks)


def _flow(count: int, length: int = 1514) -> list[dict[str, str]]:
    headers = headers_of("tcp4")
    frames = tcp_flow_frames(build_frame(length, "tcp4"), headers, count)
    return [{"frame": f.hex(), "hdr": "02" + "00" * 9} for f in frames]


@pytest.mark.parametrize(("count", "polls"), [(64, [1]), (65, [1, 2]), (66, [1, 2, 3])])
def test_the_default_polls_follow_done_idx(count: int, polls: list[int], tmp_path: Path
                                           ) -> None:
    """handle_rx signals when done_idx > 64 (after the 65th head) and at the empty ring: 64
    frames are one poll; 65 are 64 (a whole budget: flushed) and 1; 66 add a poll of 1."""
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(_flow(count)))
    rows = _run(["replay", "--path", "vhost-rx", "--from", str(path), "--mergeable", "--gro",
                 "--kernel", "6.12.117", "--jsonl"])
    assert sorted({r["poll"] for r in rows}) == polls
    assert sum(len(r["frames"]) for r in rows) == count
    jsonschema = pytest.importorskip("jsonschema")
    for row in rows:
        jsonschema.validate(row, REPLAY_GRO_ROW)


def test_text_and_summary(tmp_path: Path) -> None:
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(_flow(8)))
    result = CliRunner().invoke(cli, ["replay", "--path", "vhost-rx", "--from", str(path),
                                      "--mergeable", "--gro", "--kernel", "6.1.192"])
    assert result.exit_code == 0, result.output
    assert "vnetrx replay --path vhost-rx --gro" in result.output
    assert "done_idx > 64" in result.output  # the default polls are said
    summary = CliRunner().invoke(cli, ["replay", "--path", "vhost-rx", "--from", str(path),
                                       "--mergeable", "--gro", "--summary"])
    assert summary.exit_code == 0, summary.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--len", "1514", "--gro"], "give JSON objects"),
        (["--FILE", "--polls", "8"], "--polls needs --gro"),
        (["--FILE", "--gro", "--polls", "7"], "add up to the 8 packet(s)"),
        (["--FILE", "--gro", "--polls", "4,5"], "add up to the 8 packet(s)"),
        (["--LENS", "--gro"], "gives no \"frame\" bytes"),
        (["--GSO", "--gro", "--no-tap-offload", "--mergeable"], "the host stack segments before the tap"),
        (["--FILE", "--gro", "--uniform-buffers", "--buf-len", "2048"],
         "a driver of its own"),
    ],
)
def test_bad_input_is_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    flow = tmp_path / "flow.json"
    flow.write_text(json.dumps(_flow(8)))
    lens = tmp_path / "lens.json"
    lens.write_text(json.dumps([{"len": 1514}]))
    gso = tmp_path / "gso.json"
    frame = build_frame(3000, "tcp4")
    gso.write_text(json.dumps([{"frame": frame.hex(), "l4": "tcp4",
                                "hdr": "01013600a80522001000"}]))
    where = {"--FILE": ["--from", str(flow)], "--LENS": ["--from", str(lens)],
             "--GSO": ["--from", str(gso)]}
    argv = [a for arg in args for a in where.get(arg, [arg])]
    result = CliRunner().invoke(cli, ["replay", "--path", "vhost-rx", *argv])
    assert result.exit_code in (1, 2), result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetrx: error: "), result.stderr
    assert message in lines[0]


# --- trace --path vhost-rx --gro: a flow of the traced frame's shape ---------------------


# the big modes' bursts begin otherwise (big-gso: GSO frames; big: BIG_MTU_BURSTS, 2 segments)
@pytest.mark.parametrize("name", [n for n in FILES if not n.endswith((".big-gso.json",
                                                                      ".big.json"))])
def test_trace_flow_is_the_guests_first_burst(name: str) -> None:
    """Each boot's first burst (8 TCPv4 segments of 1448 bytes with timestamps, DATA_VALID)
    landed in the freshly filled ring, as a trace's flow does: the guest's one skb is the
    trace's."""
    doc = DOCS[name]
    assert doc["bursts"][0] == {"name": "v4-seg8", "spec": {"segments": 8, "vnet": "data_valid",
                                                            "payload": 1448}}
    first = [r for r in doc["delivered"] if r["frames"][0] < 8]
    result = CliRunner().invoke(cli, [
        "trace", "--path", "vhost-rx", "--len", "1514", "--l4", "tcp4", "--tcp-options", "12",
        "--csum", "valid", *MODE_ARGS[doc["mode"]], "--gro", "--segments", "8", "--kernel",
        doc["kernel"], "--json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    got = [(d["frames"], d["skb"]["len"], d["skb"]["data_len"], d["skb"]["truesize"],
            d["skb"]["nr_frags"], d["skb"]["gso_segs"]) for d in run["delivered"]]
    assert got == [(r["frames"], r["len"], r["data_len"], r["truesize"], r["nr_frags"],
                    r["gso_segs"]) for r in first]
    assert run["input"]["via"] == "vhost-rx" and run["input"]["polls"] == "8"


@pytest.mark.parametrize(("segments", "polls"), [(64, "64"), (65, "64,1"), (66, "64,1,1")])
def test_trace_flow_polls_as_vhost_signals(segments: int, polls: str) -> None:
    result = CliRunner().invoke(cli, [
        "trace", "--path", "vhost-rx", "--len", "1514", "--l4", "tcp4", "--mergeable", "--gro",
        "--segments", str(segments), "--json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert run["input"]["polls"] == polls
    assert sum(len(d["frames"]) for d in run["delivered"]) == segments
    jsonschema = pytest.importorskip("jsonschema")
    from vnetrx.schemas import GRO

    jsonschema.validate(run, GRO)
    text = CliRunner().invoke(cli, [
        "trace", "--path", "vhost-rx", "--len", "1514", "--l4", "tcp4", "--mergeable", "--gro",
        "--segments", str(segments)])
    assert text.exit_code == 0 and "done_idx > 64" in text.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--len", "1514", "--l4", "tcp4", "--segments", "8"], "--segments goes with --gro"),
        (["--len", "1514", "--gro"], "--gro needs a TCP frame"),
        (["--len", "1514", "--l4", "udp4", "--gro"], "--gro needs a TCP frame"),
        (["--len", "1514", "--l4", "tcp4", "--gro", "--uniform-buffers", "--buf-len", "2048"],
         "a driver of its own"),
        (["--len", "3000", "--l4", "tcp4", "--gso", "tcpv4:1448", "--gro", "--mergeable",
          "--no-tap-offload"], "segments these GSO skbs before the tap"),
        (["--len", "1514", "--l4", "tcp4", "--gro", "--segments", "0"], "valid: 1..4096"),
    ],
)
def test_trace_gro_bad_input_is_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["trace", "--path", "vhost-rx", *args])
    assert result.exit_code in (1, 2), result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetrx: error: "), result.stderr
    assert message in lines[0]


@pytest.mark.parametrize("release", ["6.1.0-57-amd64", "6.12.117+deb12-amd64"])
def test_the_default_polls_rest_on_real_vhost_nets_signals(release: str) -> None:
    """What the default poll grouping stands on: real vhost-net (lab vhost, tests/data/vhost)
    signalled frames queued on the tap before the guest's buffers came once for 64 frames and
    twice for 100 (done_idx > 64 after the 65th, then the empty ring); vhost-rx's handle_rx
    ends its poll batches at the same places."""
    doc = json.loads((DATA / "vhost" / f"linux-{release}.json").read_text())
    k = lookup(doc["kernel"]["version"])
    c = vhost_rx_config(k, VhostRxSetup(mode="mergeable", buf_len=1536))
    for case, count in (("rx-mrg-1536-queued-64", 64), ("rx-mrg-1536-queued-100", 100)):
        record = next(r for r in doc["rx"] if r["case"] == case)
        xmits, skbs = host_skbs(c, [HostFrame(60 + i) for i in range(count)])
        signalled = [p.seq for _x, p, _g in vhost_rx_stream(k, c, xmits, skbs, guest=False)
                     if p.signal is not None]
        assert len(signalled) == record["signals"]
        assert signalled == ([63] if count == 64 else [64, 99])
