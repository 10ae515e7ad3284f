"""vnetrx replay --gro: GRO over a replayed capture, poll by poll (issue 26). The numbers are
the kernel's arithmetic (net/core/gro.c, tcp_offload.c: 52 header bytes + 45 x 1448 payload =
65,212 < 65,536 <= 66,660; a whole budget of 64 flushes at HZ 250), the same GRO the tap oracle
checks against 6.18.44 (tests/paths/test_gro_oracle.py)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from click.testing import CliRunner
from jsonschema import Draft202012Validator

from vnetrx.cli import cli
from vnetrx.live.gro_frames import tcp_segment
from vnetrx.packet import build_frame, headers_of, tcp_flow_frames
from vnetrx.schemas import schema

RUNNER = CliRunner(env={"COLUMNS": "140"})


def capture(path: Path, frames: list[bytes]) -> Path:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, frame in enumerate(frames):
        out += struct.pack("<IIII", i, 0, len(frame), len(frame)) + frame
    path.write_bytes(out)
    return path


def flow(count: int) -> list[bytes]:
    """A TCP flow of 1514-byte frames (IPv4, 12 bytes of options: 1448 of payload)."""
    return tcp_flow_frames(build_frame(1514, "tcp4", 12), headers_of("tcp4", 12), count)


def rows(args: list[str]) -> list[dict[str, object]]:
    result = RUNNER.invoke(cli, ["replay", *args, "--gro", "--jsonl"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    validator = Draft202012Validator(schema("replay-gro-row"))
    for line in lines:
        validator.validate(line)
    return lines


def test_a_poll_of_64_frames_gives_the_aggregates_the_kernel_makes(tmp_path: Path) -> None:
    path = capture(tmp_path / "flow.pcap", flow(100))
    got = rows(["--from", str(path), "--mergeable", "--batch", "64", "--kernel", "6.12"])
    assert [(r["poll"], r["frames"][0], r["frames"][-1], r["flush"]) for r in got] == [
        (1, 0, 44, "e2big"), (1, 45, 63, "budget"), (2, 64, 99, "poll_end")]
    first = got[0]
    assert (first["len"], first["segs"], first["gso_size"], first["ip_summed"]) == (
        52 + 45 * 1448, 45, 1448, 3)
    assert first["nr_frags"] == 17 and first["frag_list"]["count"] == 2


def test_one_frame_a_poll_merges_nothing(tmp_path: Path) -> None:
    # --batch 1 (the default): the driver polls after every frame; napi_complete_done flushes
    path = capture(tmp_path / "flow.pcap", flow(5))
    got = rows(["--from", str(path), "--mergeable"])
    assert [r["frames"] for r in got] == [[i] for i in range(5)]
    assert {r["segs"] for r in got} == {1} and {r["gso_size"] for r in got} == {0}


def test_a_udp_datagram_passes_the_flow_by(tmp_path: Path) -> None:
    frames = flow(4)
    frames.insert(2, build_frame(300, "udp4"))
    path = capture(tmp_path / "mixed.pcap", frames)
    got = rows(["--from", str(path), "--mergeable", "--batch", "5"])
    assert sorted(tuple(r["frames"]) for r in got) == [(0, 1, 3, 4), (2,)]


def test_text_and_summary(tmp_path: Path) -> None:
    path = capture(tmp_path / "flow.pcap", flow(100))
    result = RUNNER.invoke(cli, ["replay", "--from", str(path), "--mergeable", "--batch", "64",
                                 "--kernel", "6.12", "--gro", "--summary"])
    assert result.exit_code == 0
    assert "totals: 100 frames in 3 skb(s) (3 aggregate(s), up to 45 segments each)" in (
        result.stdout)


def test_gro_needs_a_capture_and_a_row_output() -> None:
    result = RUNNER.invoke(cli, ["replay", "--len", "100x3", "--gro"])
    assert result.exit_code == 2 and "give a capture" in result.stderr
    result = RUNNER.invoke(cli, ["replay", "--from", "x.pcap", "--gro", "--json"])
    assert result.exit_code == 2 and "not --json" in result.stderr


def test_a_whole_captured_frame_with_a_bad_tcp_checksum_is_not_merged(tmp_path: Path) -> None:
    """No --offload: the frames come with no virtio-net header (CHECKSUM_NONE), so
    tcp4_gro_receive's skb_gro_checksum_validate sums each segment; frame 3's wrong sum is
    "goto flush": it goes to the stack alone, first, with only its 20-byte IP header pulled
    (the mergeable copy's headlen 0: the TCP header stays in the frag), while the held skb
    waits for frame 4, whose sequence number does not follow frame 2's (as 6.1.192 and
    6.12.117 guests did: tests/data/gro/guest-linux-*.json, burst v4-bad-csum3)."""
    frames = flow(8)
    bad = bytearray(frames[3])
    bad[14 + 20 + 16] ^= 0x55
    frames[3] = bytes(bad)
    path = capture(tmp_path / "flow.pcap", frames)
    got = rows(["--from", str(path), "--mergeable", "--batch", "8", "--kernel", "6.12"])
    assert [(r["frames"], r["headlen"], r["ip_summed"]) for r in got] == [
        ([3], 20, 0), ([0, 1, 2], 52, 3), ([4, 5, 6, 7], 52, 3)]


def test_a_udp_datagram_leaves_gro_with_its_ip_header_pulled(tmp_path: Path) -> None:
    """inet_gro_receive pulls the IPv4 header before udp4_gro_receive flushes the datagram (no
    UDP GRO socket): the GRO_NORMAL exit copies those 20 bytes out of the frag of a mergeable
    copy (headlen 0 after eth_type_trans), as 6.1.192 and 6.12.117 guests did with a 1476-byte
    datagram (tests/data/gro/guest-linux-*.mergeable.json, burst v4-udp5)."""
    frame = tcp_segment(4, sport=40000, seq=0, ack=0, flags=0, window=0, options=b"",
                        payload=bytes(1448), ipid=1, df=True, ttl=64, udp=True)
    assert len(frame) == 1490
    got = rows(["--from", str(capture(tmp_path / "udp.pcap", [frame])), "--mergeable",
                "--kernel", "6.1"])
    assert [(r["len"], r["headlen"], r["data_len"]) for r in got] == [(1476, 20, 1456)]
