"""`vnetrx lab virtio --gro` without QEMU: the backend's burst write (one used-index update,
one interrupt), the guest's record lines, which frames a delivered skb carries, the comparison,
its JSON (schema lab-gro) and text, and the CLI's refusals."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from tests.lab.test_lab_vhost_user import FakeGuest, _frame
from vnetrx.cli import cli
from vnetrx.lab import gro
from vnetrx.lab import vhost_user_proto as proto
from vnetrx.lab import vhost_user_ring as vring
from vnetrx.live import gro_frames
from vnetrx.render.lab_gro_text import lab_gro_lines
from vnetrx.schemas import schema

RUNNER = CliRunner()


def _counting_call_fd(g: FakeGuest) -> int:
    """An eventfd-like pipe as the ring's call fd; returns the read end."""
    read, write = os.pipe()
    os.set_blocking(read, False)
    g.ring.call_fd = write
    return read


def _interrupts(read: int) -> int:
    try:
        return len(os.read(read, 4096)) // 8
    except BlockingIOError:
        return 0


def test_a_burst_is_one_used_index_update_and_one_interrupt() -> None:
    g = FakeGuest()
    posted = [g.post(1536) for _ in range(4)]
    calls = _counting_call_fd(g)
    frames = [(b"", _frame(1514)), (bytes([2]) + bytes(9), _frame(60)), (b"", _frame(3000))]
    written = vring.receive_burst(g.mem, g.ring, frames, hdr_len=12, mergeable=True)
    # 1514 + 12 fits one 1536-byte buffer; 3000 + 12 takes two: four chains, one index update
    assert written == [proto.net_header(12, 1), proto.net_header(12, 1, bytes([2]) + bytes(9)),
                       proto.net_header(12, 2)]
    assert g.used_idx() == 4 and g.ring.last_avail == 4
    assert _interrupts(calls) == 1
    assert [g.used_entry(i) for i in range(4)] == [
        (posted[0][0], 1526), (posted[1][0], 72), (posted[2][0], 1536), (posted[3][0], 1476)]
    assert g.read(posted[1][1][0], 72) == written[1] + _frame(60)
    os.close(calls)
    os.close(g.ring.call_fd or -1)


def test_a_burst_waits_until_the_whole_burst_fits() -> None:
    g = FakeGuest()
    g.post(1536)
    calls = _counting_call_fd(g)
    frames = [(b"", _frame(1514)), (b"", _frame(1514))]
    assert vring.receive_burst(g.mem, g.ring, frames, hdr_len=12, mergeable=True) is None
    assert g.used_idx() == 0 and g.ring.last_avail == 0 and _interrupts(calls) == 0
    g.post(1536)
    assert vring.receive_burst(g.mem, g.ring, frames, hdr_len=12, mergeable=True) is not None
    assert g.used_idx() == 2 and _interrupts(calls) == 1
    os.close(calls)
    os.close(g.ring.call_fd or -1)


def test_a_non_mergeable_burst_drops_what_does_not_fit_its_chain() -> None:
    g = FakeGuest()
    g.post(12 + 1514)
    g.post(12 + 1514)
    frames = [(b"", _frame(1515)), (b"", _frame(1514)), (b"", _frame(60))]
    written = vring.receive_burst(g.mem, g.ring, frames, hdr_len=12, mergeable=False)
    # the 1515-byte frame does not fit the chain at the head: dropped, the chain stays posted
    assert written is not None and written[0] is None and g.used_idx() == 2
    assert [g.used_entry(i)[1] for i in range(2)] == [1526, 72]


def test_record_lines_unpack_zero_runs() -> None:
    assert gro.unpack_record("ab" + "z0003" + "cd", 8) == b"\xab\0\0\0\xcd\0\0\0"
    assert gro.unpack_record("z0010", 16) == bytes(16)
    with pytest.raises(Exception, match="16 bytes"):
        gro.unpack_record("z0010", 15)


def _writes(**spec: object) -> list[bytes]:
    return [w.frame for w in gro_frames.build(spec)]


def test_frames_of_reads_the_sequence_numbers() -> None:
    sent = _writes(segments=8, payload=[1448, 1448, 1448, 0, 1448, 1448, 1448, 1448])
    window = range(8)
    # an aggregate of frames 4..7 (4 x 1448 behind 52 header bytes) starting at frame 4's seq
    head = sent[4][14:]
    assert gro.frames_of(head, 52 + 4 * 1448, 4, sent, window) == [4, 5, 6, 7]
    # the pure ACK (frame 3) has frame 4's sequence number but carries nothing: only itself
    assert gro.frames_of(sent[3][14:], 52, 3, sent, window) == [3]
    # not TCP: the frame whose skb it is
    other = _writes(segments=3, other=[1])
    assert gro.frames_of(other[1][14:], 46, 1, other, range(3)) == [1]


def test_frames_of_reads_past_ip_options() -> None:
    sent = _writes(segments=3, ip_options=[1])
    assert gro.frames_of(sent[1][14:], len(sent[1]) - 14, 1, sent, range(3)) == [1]


def test_frames_of_reads_past_an_8021q_tag() -> None:
    """A tagged aggregate leaves GRO with skb->data at the tag (TCI, inner EtherType): the
    frames it carries are those of the same tag and flow; an untagged frame of the same flow
    (vlan_gro_receive does not merge it) is not among them."""
    sent = _writes(segments=8, vlan=100, untagged=[4], payload=1444)
    # frames 0..3 merged: 4 x 1444 behind the tag (4), the IP and TCP headers (52)
    tagged = sent[0][14:]
    assert gro.frames_of(tagged, 4 + 52 + 4 * 1444, 0, sent, range(8)) == [0, 1, 2, 3]
    # the untagged frame 4 alone, though its sequence number follows frame 3's
    assert gro.frames_of(sent[4][14:], 52 + 1444, 4, sent, range(8)) == [4]
    # a tag of another TCI: not the same flow
    other = _writes(segments=4, vlan=100, vlan_change=[2], payload=1444)
    assert gro.frames_of(other[0][14:], 4 + 52 + 4 * 1444, 0, other, range(4)) == [0, 1, 3]


def _row(frames: list[int], **kw: int) -> dict[str, object]:
    base = {"len": 1500, "data_len": 1448, "headlen": 52, "truesize": 2816, "nr_frags": 1,
            "frag_list": 0, "gso_size": 0, "gso_segs": 0, "gso_type": 0, "ip_summed": 1}
    return {**base, **kw, "frames": frames, "poll": 0}


def _predicted(frames: list[int], **kw: int) -> dict[str, object]:
    row = _row(frames, **kw)
    return {**row, "frag_list": {"count": row["frag_list"], "bytes": 0, "members": []}}


def test_compare_aligns_burst_by_burst_and_says_what_differs() -> None:
    ranges = [("a", 0, 2), ("b", 2, 1)]
    observed = gro.Observed([_row([0]), _row([1]), _row([2])], [2, 1], [64, 64],
                            ["HELD", "NORMAL", "NORMAL"], 3)
    # the model delivers burst a as one skb: one disagreement, one skb missing; b still agrees
    predicted = [_predicted([0, 1], len=2948, gso_segs=2), _predicted([2])]
    bursts = gro.compare(observed, predicted, ranges)
    a, b = bursts
    assert (a.name, a.polls, a.match, b.match) == ("a", (2,), False, True)
    assert a.skbs[0].differ == ("len", "gso_segs", "frames")
    assert a.skbs[1].predicted is None and not a.skbs[1].match
    report = gro.GroReport("6.1.192", "6.1.0-57-amd64", "mergeable", [2, 1], bursts)
    report.verdicts_differ = gro.verdict_differences(
        ["HELD", "NORMAL", "NORMAL"], ["HELD", "MERGED_FREE", "NORMAL"])
    assert report.verdicts_differ == [(1, "NORMAL", "MERGED_FREE")]
    doc = gro.report_to_dict(report)
    Draft202012Validator(schema("lab-gro")).validate(json.loads(json.dumps(doc)))
    assert doc["match"] is False
    text = "\n".join(lab_gro_lines(report, 1.0, 2.0, "in.json"))
    assert "DISAGREE (2)" in text and "skb 0: len, gso_segs, frames" in text
    assert "--mergeable --kernel 6.1.192 --gro --polls 2,1 --jsonl" in text
    assert "input 1: napi_gro_receive_exit NORMAL, the model MERGED_FREE" in text
    assert gro.verdict_differences(["HELD"], ["HELD", "NORMAL"]) == [(1, None, "NORMAL")]
    # big mode: the host_mtu in the header, and the replay command with it (big mode from the
    # MTU alone: no --mergeable, no --guest-gso)
    big = gro.GroReport("6.1.192", "6.1.0-57-amd64", "big", [2, 1], bursts, mtu=9000)
    doc = gro.report_to_dict(big)
    Draft202012Validator(schema("lab-gro")).validate(json.loads(json.dumps(doc)))
    assert doc["mtu"] == 9000 and gro.report_to_dict(report)["mtu"] is None
    text = "\n".join(lab_gro_lines(big, 1.0, 2.0, "in.json"))
    assert "big (host_mtu 9000)" in text
    assert "replay: vnetrx replay --from in.json --mtu 9000 --kernel 6.1.192 --gro --polls 2,1" in text
    gso = gro.GroReport("6.1.192", "6.1.0-57-amd64", "big-gso", [2, 1], bursts)
    assert "vnetrx replay --from in.json --guest-gso --kernel" in "\n".join(
        lab_gro_lines(gso, 1.0, 2.0, "in.json"))


def test_init_script_waits_for_every_frame_and_dumps() -> None:
    script = gro.init_script(["virtio_net"], "52:54:00:12:34:56", 712,
                             list(gro.TRACEPOINTS), 846)
    assert "/bin/groprobe /tmp/gro-ready 712 napi_gro_receive_entry /gro/0.bin" in script
    assert "statistics/rx_packets)\" -lt 846" in script
    assert script.index("kill -USR1 $probe") < script.index("say trace-end")


def test_the_bursts_fit_each_mode() -> None:
    for mode, (mergeable, guest_gso) in gro.MODES.items():
        if mode == "big":
            continue  # test_big_mode_bursts_fit_the_mtus_chains
        frames = [f for b in gro.bursts_for(mode) for _, f in b.writes()]
        if not guest_gso and mergeable:  # no GSO frame: every frame fits small mode's GOOD_PACKET_LEN
            # (ETH_HLEN + VLAN_HLEN + ETH_DATA_LEN = 1518: the IP options frame is 1518)
            assert max(map(len, frames)) == 1518
        # at most 70 (64 + 6); big mode: 12, one less than its 13 posted page chains
        assert max(len(b.writes()) for b in gro.bursts_for(mode)) == (
            70 if mergeable or not guest_gso else 12)
    with pytest.raises(Exception, match="unknown mode"):
        gro.bursts_for("big-tso")


@pytest.mark.parametrize(("args", "message"), [
    (["--gro", "--len", "60"], "drop --len"),
    (["--gro", "--offloads"], "drop --offloads"),
    (["--save-input", "x.json"], "give --gro"),
])
def test_cli_refusals(tmp_path: Path, args: list[str], message: str) -> None:
    image = tmp_path / "vmlinuz"
    image.write_bytes(b"")
    result = RUNNER.invoke(cli, ["lab", "virtio", "--image", str(image), *args])
    assert result.exit_code == 2 and message in result.output


def test_big_mode_bursts_fit_the_mtus_chains() -> None:
    """virtnet_set_big_packets: big_packets_num_skbfrags = DIV_ROUND_UP(mtu, PAGE_SIZE), each
    chain that + 2 descriptors (add_recvbuf_big) in QEMU's 256-entry rx ring: 9000 → 3 frags,
    5 descriptors, 51 chains; 8192 → 2, 4, 64; 8193 → 3, 5, 51; 1501 → 1, 3, 85."""
    assert [gro.big_chains(m) for m in (1501, 4096, 4097, 8192, 8193, 9000, 12288, 12289)] == [
        85, 85, 64, 64, 51, 51, 51, 42]
    bursts = gro.bursts_for("big")  # host_mtu 9000
    assert bursts == gro.bursts_for("big", 9000)
    frames = [f for b in bursts for _, f in b.writes()]
    assert max(map(len, frames)) == 9014  # 8948 bytes of TCP payload at MTU 9000
    assert max(len(b.writes()) for b in bursts) == 46 < gro.big_chains(9000)
    assert not [b for b in bursts if any(h for h, _ in b.writes()) and b.spec.get("gso")]
    # a smaller MTU keeps the bursts whose frames it allows: at 1504 no frame above 1518
    small = gro.bursts_for("big", 1504)
    assert {b.name for b in small} < {b.name for b in bursts}
    assert max(len(f) for b in small for _, f in b.writes()) == 1518
    assert "v4-jumbo8" not in {b.name for b in small} and "v4-seg46" in {b.name for b in small}


@pytest.mark.parametrize(("mode", "mtu", "message"), [
    ("big", 1500, "--mtu 1500 (valid: 1501..65535"),
    ("mergeable", 9000, "--mtu applies to --mode big only, not mergeable"),
    ("big-gso", 9000, "--mtu applies to --mode big only, not big-gso"),
])
def test_cli_refuses_an_mtu_gro_does_not_check(tmp_path: Path, mode: str, mtu: int,
                                               message: str) -> None:
    image = tmp_path / "vmlinuz"
    image.write_bytes(b"")
    result = RUNNER.invoke(cli, ["lab", "virtio", "--image", str(image), "--gro", "--mode",
                                 mode, "--mtu", str(mtu)])
    assert result.exit_code == 2 and message in result.output
    assert gro.check_mtu("big", None) == 9000 and gro.check_mtu("big", 1501) == 1501
    assert gro.check_mtu("small", None) is None
