"""vnetrx replay in big mode (no --mergeable; --guest-gso, or --mtu above 1500): each frame in a
page chain of its own (add_recvbuf_big), decided alone with its NAPI poll. The expected skbs are
what real Debian 6.1.192 and 6.12.117 guests delivered (tests/data/gro/guest-linux-*.big*.json,
recorded by `vnetrx lab virtio --gro`), and the chain geometry is the kernel's arithmetic:
virtnet_set_big_packets (6.1+) makes big_packets_num_skbfrags DIV_ROUND_UP(9000, 4096) = 3, so
a chain is 3 + 1 pages in 3 + 2 sg entries (51 chains in a 256-entry ring, as the guests
posted), and holds (3 + 1) * 4096 - sizeof(struct padded_vnet_hdr) 32 = 16352 frame bytes
(add_recvbuf_big: sg[1] starts at the padded header)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from vnetrx.cli import cli
from vnetrx.lab import gro
from vnetrx.packet import build_frame, headers_of, tcp_flow_frames
from vnetrx.schemas import schema

RUNNER = CliRunner(env={"COLUMNS": "160"})
DATA = Path(__file__).parents[1] / "data" / "gro"
BIG = sorted(p for p in DATA.glob("guest-linux-*.json")
             if json.loads(p.read_text())["mode"] in gro.BIG_MODES)


def run(args: list[str]) -> str:
    result = RUNNER.invoke(cli, ["replay", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def jsonl(args: list[str], name: str = "replay-row") -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in run([*args, "--jsonl"]).splitlines()]
    validator = Draft202012Validator(schema(name))
    for row in rows:
        validator.validate(row)
    return rows


def test_the_boots_have_big_mode_of_both_kinds() -> None:
    kinds = {(json.loads(p.read_text())["kernel"], json.loads(p.read_text())["mode"])
             for p in BIG}
    assert kinds == {(k, m) for k in ("6.1.170", "6.1.192", "6.12.100", "6.12.117")
                     for m in ("big", "big-gso")}


@pytest.mark.parametrize("path", BIG, ids=[p.name for p in BIG])
def test_every_frame_gro_left_alone_is_the_guests_skb(path: Path, tmp_path: Path) -> None:
    """`replay --jsonl` without --gro on a boot's frames: every frame that left GRO on its
    own in the guest (one frame, not a GSO aggregate) has the guest's len, truesize, nr_frags,
    gso_size and gso_type (GRO changes none of these for an skb it does not merge; it pulls
    headers and may validate a checksum, so data_len and ip_summed are not compared)."""
    doc = json.loads(path.read_text())
    frames, _ranges = gro.data_frames(doc)
    source = tmp_path / "input.json"
    source.write_text(json.dumps(gro.input_objects(frames)))
    rows = jsonl(["--from", str(source), *gro.replay_args(doc["mode"], doc.get("mtu")),
                  "--kernel", doc["kernel"], "--polls", ",".join(map(str, doc["polls"]))])
    assert len(rows) == len(frames)
    assert {(r["buffers"] == [], r["ewma"], r["refill"]) for r in rows} == {(True, None, None)}
    fields = ("len", "truesize", "nr_frags", "gso_size", "gso_type")
    alone = [d for d in doc["delivered"] if len(d["frames"]) == 1]
    assert len(alone) >= 9  # 9 (big-gso) or 11 (big) in every boot
    for skb in alone:
        row = rows[skb["frames"][0]]
        assert {f: row[f] for f in fields} == {f: skb[f] for f in fields}, skb
    # the polls are the guest's: each frame in the poll napi:napi_poll reported
    assert [r["poll"] for r in rows] == [i + 1 for i, n in enumerate(doc["polls"])
                                         for _ in range(n)]


def test_rows_for_mtu_9000() -> None:
    """6.12.117, MTU 9000 (guest-linux-6.12.117.big.json frames 39, 65, 409: a 60-byte frame
    truesize 1280, a 1514-byte one 4352 with no frag (build_skb on page 0: PAGE_SIZE +
    SKB_DATA_ALIGN(sizeof(struct sk_buff))), a 9014-byte one 13568 with 3 frags)."""
    rows = jsonl(["--len", "60,1514,9014", "--mtu", "9000", "--kernel", "6.12.117",
                  "--batch", "3"])
    assert [(r["outcome"], r["len"], r["truesize"], r["nr_frags"], r["poll"]) for r in rows] == [
        ("copy", 46, 1280, 0, 1), ("build_skb", 1500, 4352, 0, 1), ("copy", 9000, 13568, 3, 1)]


def test_a_frame_longer_than_the_chain_is_the_devices_drop() -> None:
    rows = jsonl(["--len", "16352,16353", "--mtu", "9000", "--kernel", "6.12"])
    assert [(r["poll"], r["outcome"]) for r in rows] == [(1, "copy"), (None, "drop")]
    summary = json.loads(run(["--len", "16352,16353", "--mtu", "9000", "--kernel", "6.12",
                              "--summary", "--json"]))
    Draft202012Validator(schema("replay-summary")).validate(summary)
    assert summary["drops"] == {"device_too_long": 1} and summary["skbs"] == 1
    # the received frame's chain: 4 pages; which pages of rq->pages: not followed
    assert (summary["buffers"], summary["pages"]) == (4, None)


def test_the_whole_document_and_the_detail_rows() -> None:
    args = ["--len", "60,9014", "--guest-gso", "--kernel", "6.1.192"]
    doc = json.loads(run([*args, "--json"]))
    Draft202012Validator(schema("replay")).validate(doc)
    assert (doc["min_buf_len"], doc["initial_fill"], doc["final_ring"]) == (None, None, None)
    assert [(f["buffers"], f["ring"], f["refill"], f["ewma_after"]) for f in doc["frames"]] == [
        ([], None, None, None)] * 2
    steps = [s["function"] for s in doc["frames"][1]["trace"]["steps"]]
    assert steps[:4] == ["virtnet_receive", "virtnet_probe", "add_recvbuf_big", "receive_buf"]
    # guest GSO: chains of MAX_SKB_FRAGS (17) + 1 pages, 19 descriptors: 13 in 256 entries
    assert "chain of 18 pages (19 sg entries)" in doc["notes"][0]
    assert "a ring of 256 holds 13 chains" in doc["notes"][1]
    detail = jsonl([*args, "--detail"], "replay-frame")
    assert [d["trace"] for d in detail] == [f["trace"] for f in doc["frames"]]


def test_text() -> None:
    out = run(["--len", "60,9014,20000", "--mtu", "9000", "--kernel", "6.12", "--batch", "2"])
    assert out.startswith("vnetrx replay virtio-big on Linux 6.12.117")
    assert "add_recvbuf_big: every buffer is a chain of 4 pages from rq->pages" in out
    assert "page chain    4×4096" in out and "device drop: too long" in out
    assert "final: 1 NAPI poll(s); the page chains' places in the ring are not followed" in out
    assert "2 skbs" in out and "8 chain pages" in out
    shown = run(["--len", "60,9014", "--mtu", "9000", "--kernel", "6.12", "--show", "1"])
    assert "Frame 1: 9014 bytes in a page chain, NAPI poll 2" in shown
    assert "the device wrote on into page1 (4096 B), page2 (854 B)" in shown


def flow(count: int, payload: int) -> list[bytes]:
    """A TCP/IPv4 flow with 12 bytes of options (timestamps) and ``payload`` bytes a segment."""
    length = 14 + 20 + 32 + payload
    return tcp_flow_frames(build_frame(length, "tcp4", 12), headers_of("tcp4", 12), count)


def test_gro_over_jumbo_segments(tmp_path: Path) -> None:
    """8 jumbo segments (8948 bytes of payload, 9014-byte frames) with DATA_VALID in one poll:
    7 merge (15 frags, the 6th segment's skb on the frag_list), the 8th goes alone (62688 +
    8948 > 65536), as 6.1.192 and 6.12.117 guests delivered them (guest-linux-*.big.json,
    burst v4-jumbo8)."""
    path = tmp_path / "jumbo.json"
    path.write_text(json.dumps([{"frame": f.hex(), "hdr": "02" + "00" * 11}
                                for f in flow(8, 8948)]))
    rows = jsonl(["--from", str(path), "--mtu", "9000", "--kernel", "6.12", "--batch", "8",
                  "--gro"], "replay-gro-row")
    assert [(r["len"], r["nr_frags"], r["frag_list"]["count"], r["gso_segs"], r["frames"])
            for r in rows] == [(62688, 15, 1, 7, list(range(7))), (9000, 3, 0, 0, [7])]
    summary = run(["--from", str(path), "--mtu", "9000", "--kernel", "6.12", "--batch", "8",
                   "--gro", "--summary"])
    assert "totals: 8 frames in 2 skb(s)" in summary
