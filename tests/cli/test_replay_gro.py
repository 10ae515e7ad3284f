"""vnetrx replay --gro: GRO over a replayed capture, poll by poll (issue 26). The numbers are
the kernel's arithmetic (net/core/gro.c, tcp_offload.c: 52 header bytes + 45 x 1448 payload =
65,212 < 65,536 <= 66,660; a whole budget of 64 flushes at HZ 250), the same GRO the tap oracle
checks against 6.18.44 (tests/paths/test_gro_oracle.py)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from vnetrx.cli import cli
from vnetrx.live.gro_frames import tcp_segment
from vnetrx.packet import build_frame, headers_of, tcp_flow_frames
from vnetrx.schemas import schema

RUNNER = CliRunner(env={"COLUMNS": "140"})


def capture(path: Path, frames: list[bytes], times_ns: list[int] | None = None) -> Path:
    """A pcap (nanosecond records) of ``frames``, frame i at ``times_ns[i]`` (default: i s)."""
    out = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
    for i, frame in enumerate(frames):
        t = i * 10**9 if times_ns is None else times_ns[i]
        out += struct.pack("<IIII", t // 10**9, t % 10**9, len(frame), len(frame)) + frame
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


def test_a_whole_frame_with_a_bad_tcp_checksum_is_not_merged(tmp_path: Path) -> None:
    """JSON {"frame"} objects (whole frames) with no virtio-net header (CHECKSUM_NONE), so
    tcp4_gro_receive's skb_gro_checksum_validate sums each segment; frame 3's wrong sum is
    "goto flush": it goes to the stack alone, first, with only its 20-byte IP header pulled
    (the mergeable copy's headlen 0: the TCP header stays in the frag), while the held skb
    waits for frame 4, whose sequence number does not follow frame 2's (as 6.1.192 and
    6.12.117 guests did: tests/data/gro/guest-linux-*.json, burst v4-bad-csum3)."""
    frames = flow(8)
    bad = bytearray(frames[3])
    bad[14 + 20 + 16] ^= 0x55
    frames[3] = bytes(bad)
    path = objects(tmp_path / "flow.json", frames)
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


# --- JSON objects {"frame": HEX, "hdr": HEX}: the frames' own bytes --------------------------


def objects(path: Path, frames: list[bytes], hdr: str | None = None) -> Path:
    path.write_text(json.dumps([{"frame": f.hex(), **({"hdr": hdr} if hdr else {})}
                                for f in frames]))
    return path


def test_json_frames_merge_as_the_same_capture_does(tmp_path: Path) -> None:
    frames = flow(100)
    args = ["--mergeable", "--batch", "64", "--kernel", "6.12"]
    from_json = rows(["--from", str(objects(tmp_path / "flow.json", frames)), *args])
    assert from_json == rows(["--from", str(capture(tmp_path / "flow.pcap", frames)), *args])
    assert (from_json[0]["len"], from_json[0]["segs"]) == (52 + 45 * 1448, 45)


def test_a_12_byte_header_with_num_buffers_is_read_as_its_10_bytes(tmp_path: Path) -> None:
    frames = flow(3)
    ten = rows(["--from", str(objects(tmp_path / "a.json", frames, "02" + "00" * 9)),
                "--mergeable", "--batch", "3"])
    twelve = rows(["--from", str(objects(tmp_path / "b.json", frames, "02" + "00" * 9 + "0100")),
                   "--mergeable", "--batch", "3"])
    assert ten == twelve and len(ten) == 1 and ten[0]["segs"] == 3


def bad_checksum(frame: bytes) -> bytes:
    """The frame with its TCP checksum (IPv4 without options: at 14 + 20 + 16) flipped."""
    at = 14 + 20 + 16
    return frame[:at] + bytes([frame[at] ^ 0xFF]) + frame[at + 1:]


def test_a_bad_tcp_checksum_is_found_only_when_gro_sums_it(tmp_path: Path) -> None:
    # tcp4_gro_receive: skb_gro_checksum_validate sums a CHECKSUM_NONE skb (no header: flags 0)
    # and a bad sum ("goto flush") makes it GRO_NORMAL: delivered at once, before the held
    # [0, 1], which frame 3 (not contiguous) then completes; DATA_VALID (flags 2) is trusted
    frames = flow(5)
    frames[2] = bad_checksum(frames[2])
    none = rows(["--from", str(objects(tmp_path / "a.json", frames)), "--mergeable",
                 "--batch", "5"])
    assert [r["frames"] for r in none] == [[2], [0, 1], [3, 4]]
    valid = rows(["--from", str(objects(tmp_path / "b.json", frames, "02" + "00" * 9)),
                  "--mergeable", "--batch", "5"])
    assert [r["frames"] for r in valid] == [[0, 1, 2, 3, 4]]


def with_udp_checksum(frame: bytes) -> bytes:
    """The IPv4/UDP frame (no IP options) with its UDP checksum summed here (RFC 768)."""
    udp = 14 + 20
    data = frame[26:34] + struct.pack("!BBH", 0, 17, len(frame) - udp) + frame[udp:udp + 6]
    data += b"\0\0" + frame[udp + 8:] + b"\0" * (len(frame) % 2)
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return frame[:udp + 6] + struct.pack("!H", (0xFFFF - total) or 0xFFFF) + frame[udp + 8:]


def test_a_udp_datagram_with_a_checksum_leaves_gro_checksum_unnecessary(tmp_path: Path) -> None:
    # udp4_gro_receive validates a nonzero UDP checksum of a CHECKSUM_NONE skb and marks it
    # CHECKSUM_UNNECESSARY (1); no UDP GRO socket, so it is not merged
    udp = with_udp_checksum(build_frame(300, "udp4"))
    got = rows(["--from", str(objects(tmp_path / "u.json", [udp])), "--mergeable"])
    assert [(r["frames"], r["ip_summed"]) for r in got] == [([0], 1)]
    zero = udp[:14 + 20 + 6] + b"\0\0" + udp[14 + 20 + 8:]  # no checksum: left alone
    got = rows(["--from", str(objects(tmp_path / "z.json", [zero])), "--mergeable"])
    assert [(r["frames"], r["ip_summed"]) for r in got] == [([0], 0)]


def test_gro_needs_the_frames_bytes(tmp_path: Path) -> None:
    path = tmp_path / "lengths.json"
    for body in ([1514, 1514], [{"len": 1514}]):
        path.write_text(json.dumps(body))
        result = RUNNER.invoke(cli, ["replay", "--from", str(path), "--gro"])
        assert result.exit_code == 2, result.output
        assert "frame" in result.stderr and "give a pcap/pcapng capture" in result.stderr


# --- 6.1.0-6.1.6: a GSO write merges into the held segment (5eddb24901ee) ----------------------


def mixed_tso(path: Path) -> Path:
    """A 1448-byte segment (no header), a TSO frame of 2 x 1448 behind a virtio_net_hdr
    (NEEDS_CSUM, GSO_TCPV4, gso_size 1448), a 1448-byte segment: contiguous, IP IDs 10-12, DF."""
    def seg(seq: int, size: int, ipid: int, partial: bool = False) -> str:
        return tcp_segment(4, sport=40000, seq=seq, ack=1, flags=0x10, window=1000,
                           options=b"", payload=bytes(size), ipid=ipid, df=True, ttl=64,
                           partial=partial).hex()
    hdr = struct.pack("<BBHHHH", 1, 1, 54, 1448, 34, 16).hex()
    path.write_text(json.dumps([{"frame": seg(1000, 1448, 10)},
                                {"frame": seg(1000 + 1448, 2896, 11, True), "hdr": hdr},
                                {"frame": seg(1000 + 3 * 1448, 1448, 12)}]))
    return path


def test_a_tso_write_merges_on_6_1_6_and_goes_alone_on_6_1_7(tmp_path: Path) -> None:
    # 6.1.6: the TSO skb (gso_size 1448 = the held mss) is merged, its head stolen (tun_build_skb:
    # delta 3648 - 256 = 3392); counted as gso_segs 0, p's count stays 1; out_check_final
    # (2896 != 0 x 1448) completes p at once: len 40 + 3 x 1448, gso_size 0, segs 1
    args = ["--from", str(mixed_tso(tmp_path / "m.json")), "--path", "tap", "--napi",
            "threaded"]
    got = rows([*args, "--kernel", "6.1.6"])
    assert [(r["frames"], r["segs"], r["flush"]) for r in got] == [
        ([0, 1], 1, "gso_segs"), ([2], 1, "poll_end")]
    assert (got[0]["len"], got[0]["gso_size"], got[0]["truesize"]) == (
        40 + 3 * 1448, 0, 2176 + 3392)
    # 6.1.7: flushed by dev_gro_receive, the held segment completed by it
    got = rows([*args, "--kernel", "6.1.7"])
    assert [(r["frames"], r["flush"]) for r in got] == [
        ([0], "gso"), ([1], "not_held"), ([2], "poll_end")]
    assert got[1]["gso_size"] == 1448 and got[1]["len"] == 40 + 2 * 1448
    text = RUNNER.invoke(cli, ["replay", *args, "--gro", "--kernel", "6.1.6"])
    assert text.exit_code == 0
    assert "note: an skb of several frames with segs 1: count 1" in text.stdout
    assert "not checked on a running kernel" in text.stdout


# --- --no-gro and the device's limits ------------------------------------------------------------


def test_gro_off_delivers_every_frame_alone(tmp_path: Path) -> None:
    path = capture(tmp_path / "flow.pcap", flow(10))
    got = rows(["--from", str(path), "--mergeable", "--batch", "10", "--no-gro"])
    assert [r["frames"] for r in got] == [[i] for i in range(10)]


def test_gro_max_size_cuts_the_aggregate(tmp_path: Path) -> None:
    # skb_gro_receive: -E2BIG once p->len + len >= gro_max_size: 52 + 20 x 1448 = 29,012 and
    # 29,012 + 1448 = 30,460 >= 30,000
    path = capture(tmp_path / "flow.pcap", flow(30))
    got = rows(["--from", str(path), "--mergeable", "--batch", "30", "--kernel", "6.12",
                "--gro-max-size", "30000"])
    assert [(r["segs"], r["flush"]) for r in got] == [(20, "e2big"), (10, "poll_end")]
    got = rows(["--from", str(path), "--mergeable", "--batch", "30", "--kernel", "6.12",
                "--gro-max-size", "30461"])  # one byte more: 21 fit
    assert [r["segs"] for r in got] == [21, 9]
    result = RUNNER.invoke(cli, ["replay", "--from", str(path), "--gro", "--kernel", "5.15",
                                 "--gro-max-size", "30000"])
    assert result.exit_code == 2 and "gro_max_size does not exist on 5.15" in result.stderr


# --- --path tap: writes into an IFF_NAPI tap --------------------------------------------------


def test_tap_writes_merge_only_when_the_napi_keeps_them(tmp_path: Path) -> None:
    # each write polled at once: napi_complete_done flushes it; with gro_flush_timeout the
    # held skbs stay across writes (tests/paths/test_gro_oracle.py checks both on 6.18.44)
    path = capture(tmp_path / "flow.pcap", flow(100))
    alone = rows(["--from", str(path), "--path", "tap", "--kernel", "6.18"])
    assert [r["frames"] for r in alone] == [[i] for i in range(100)]
    assert [r["poll"] for r in alone] == list(range(1, 101))
    kept = rows(["--from", str(path), "--path", "tap", "--napi", "timeout", "--kernel", "6.18"])
    assert [(r["frames"][0], r["frames"][-1], r["flush"]) for r in kept] == [
        (0, 44, "e2big"), (45, 89, "e2big"), (90, 99, "timer")]
    assert (kept[0]["len"], kept[0]["gso_segs"], kept[0]["ip_summed"]) == (52 + 45 * 1448, 45, 3)
    threaded = rows(["--from", str(path), "--path", "tap", "--napi", "threaded"])
    assert [(r["frames"][0], r["frames"][-1], r["flush"]) for r in threaded] == [
        (0, 44, "e2big"), (45, 63, "budget"), (64, 99, "poll_end")]


def test_tap_napi_frags_writes_split_where_the_json_says(tmp_path: Path) -> None:
    # tun_napi_alloc_frags: the first iovec (the 10-byte vnet header) is read, the second (100
    # frame bytes) is the linear part and eth_type_trans pulls 14 of it; the rest is one frag
    path = tmp_path / "frags.json"
    path.write_text(json.dumps([{"frame": f.hex(), "split": [10, 110]} for f in flow(2)]))
    got = rows(["--from", str(path), "--path", "tap", "--napi", "frags", "--kernel", "6.18"])
    assert [(r["frames"], r["headlen"], r["frags"]) for r in got] == [
        ([0], 86, [1414]), ([1], 86, [1414])]


def test_tap_replay_refuses_what_does_not_apply(tmp_path: Path) -> None:
    path = capture(tmp_path / "flow.pcap", flow(2))
    for args, message in (
        (["--path", "tap"], "add --gro"),
        (["--path", "tap", "--gro", "--mergeable"], "--mergeable does not apply to --path tap"),
        (["--path", "tap", "--gro", "--batch", "4"], "--batch does not apply to --path tap"),
        (["--gro", "--napi", "timeout"], "--napi does not apply to --path virtio"),
        (["--gro", "--sndbuf", "4096"], "--sndbuf does not apply to --path virtio"),
        (["--no-gro"], "--no-gro needs --gro"),
        (["--gro-max-size", "30000"], "--gro-max-size needs --gro"),
    ):
        result = RUNNER.invoke(cli, ["replay", "--from", str(path), *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr, (args, result.stderr)
    split = tmp_path / "split.json"
    split.write_text(json.dumps([{"frame": flow(1)[0].hex(), "split": [10]}]))
    result = RUNNER.invoke(cli, ["replay", "--from", str(split), "--path", "tap", "--gro"])
    assert result.exit_code == 2 and "applies to --path tap --gro --napi frags" in result.stderr
    result = RUNNER.invoke(cli, ["replay", "--from", str(split)])
    assert result.exit_code == 2 and "applies to --path tap --gro --napi frags" in result.stderr


def test_gro_flush_timeout_is_the_napi_mode_said_the_kernels_way(tmp_path: Path) -> None:
    # /sys/class/net/DEV/gro_flush_timeout: 0 (the default) flushes at every write's poll;
    # more keeps the held skbs (the writes stamped within one jiffy)
    path = capture(tmp_path / "flow.pcap", flow(20), [1000 * i for i in range(20)])
    base = ["--from", str(path), "--path", "tap", "--kernel", "6.18"]
    assert rows([*base, "--gro-flush-timeout", "20000"]) == rows([*base, "--napi", "timeout"])
    assert rows([*base, "--gro-flush-timeout", "0"]) == rows([*base, "--napi", "write"])
    for args, message in ((["--gro-flush-timeout", "5", "--napi", "write"],
                           "--gro-flush-timeout 5 is --napi timeout, not --napi write"),
                          (["--gro-flush-timeout", "-1"], "-1")):
        result = RUNNER.invoke(cli, ["replay", *base, "--gro", *args])
        assert result.exit_code == 2 and message in result.stderr, result.output
    result = RUNNER.invoke(cli, ["replay", "--from", str(path), "--gro",
                                 "--gro-flush-timeout", "5"])
    assert result.exit_code == 2 and "does not apply to --path virtio" in result.stderr


# gro_flush_timeout with the capture's times: napi_complete_done (net/core/dev.c @ 6.18.7)
# completes the skbs held in an earlier jiffy (__gro_flush_chain: age != jiffies) after the
# poll's own dev_gro_receive, and re-arms the hrtimer for the timeout at every poll that
# leaves one held; its poll (no work) flushes everything. HZ 250: a jiffy is 4 ms.
JIFFY = 4_000_000


def timed(tmp_path: Path, times: list[int], timeout: int = 20_000_000) -> list[tuple[
        list[int], str]]:
    path = capture(tmp_path / "timed.pcap", flow(len(times)), times)
    return [(r["frames"], r["flush"]) for r in rows(  # type: ignore[misc]
        ["--from", str(path), "--path", "tap", "--kernel", "6.18",
         "--gro-flush-timeout", str(timeout)])]


def test_a_write_in_the_next_jiffy_merges_then_completes_the_old_aggregate(
        tmp_path: Path) -> None:
    # writes 0-3 in jiffy 0; write 4 one jiffy on: merged into the held skb in its poll, whose
    # napi_complete_done then completes it (held in jiffy 0); 5-7 start a new one
    late = [0, 1000, 2000, 3000, JIFFY, JIFFY + 1000, JIFFY + 2000, JIFFY + 3000]
    assert timed(tmp_path, late) == [([0, 1, 2, 3, 4], "old"), ([5, 6, 7], "timer")]
    # write 4 one ns before the tick: still jiffy 0; write 5 at the tick takes it all out
    same = [0, 1000, 2000, 3000, JIFFY - 1, JIFFY, JIFFY + 1000, JIFFY + 2000]
    assert timed(tmp_path, same) == [([0, 1, 2, 3, 4, 5], "old"), ([6, 7], "timer")]
    one = [0, 1000, 2000, 3000, JIFFY - 1, JIFFY - 1, JIFFY - 1, JIFFY - 1]
    assert timed(tmp_path, one) == [([0, 1, 2, 3, 4, 5, 6, 7], "timer")]


def test_the_timer_fires_timeout_ns_after_the_last_poll_that_left_a_held_skb(
        tmp_path: Path) -> None:
    timeout = 20_000_000
    before = [0, 1000, 2000, 2000 + timeout - 1, 2000 + timeout, 2000 + timeout + 1]
    # write 3 at 2000 + timeout - 1: before the timer (armed at write 2's poll, 2000 +
    # timeout), five jiffies on: merged, then completed as old; writes 4-5 a new aggregate
    assert timed(tmp_path, before, timeout) == [([0, 1, 2, 3], "old"), ([4, 5], "timer")]
    at = [0, 1000, 2000, 2000 + timeout, 2000 + timeout + 1, 2000 + timeout + 2]
    # write 3 at exactly 2000 + timeout: the timer's poll came first and flushed 0-2
    assert timed(tmp_path, at, timeout) == [([0, 1, 2], "timer"), ([3, 4, 5], "timer")]


def test_json_frames_have_no_times_and_are_taken_within_one_jiffy(tmp_path: Path) -> None:
    path = tmp_path / "flow.json"
    path.write_text(json.dumps([{"frame": f.hex()} for f in flow(8)]))
    result = RUNNER.invoke(cli, ["replay", "--from", str(path), "--path", "tap", "--kernel",
                                 "6.18", "--gro", "--gro-flush-timeout", "20000000"])
    assert result.exit_code == 0, result.output
    assert "the writes have no times" in " ".join(result.stdout.split())
    stamped = capture(tmp_path / "flow.pcap", flow(8), [0] * 8)
    result = RUNNER.invoke(cli, ["replay", "--from", str(stamped), "--path", "tap", "--kernel",
                                 "6.18", "--gro", "--gro-flush-timeout", "20000000"])
    assert result.exit_code == 0 and "polled at their capture times" in " ".join(
        result.stdout.split())


def test_times_that_go_back_are_refused(tmp_path: Path) -> None:
    path = capture(tmp_path / "back.pcap", flow(3), [5000, 4000, 6000])
    result = RUNNER.invoke(cli, ["replay", "--from", str(path), "--path", "tap", "--gro",
                                 "--gro-flush-timeout", "20000000"])
    assert result.exit_code == 2, result.output
    assert "frame 1 is stamped 1000 ns before the frame ahead of it" in result.stderr


# UDP: udp_gro_receive merges only for a UDP_GRO socket on the destination port,
# NETIF_F_GRO_UDP_FWD or NETIF_F_GRO_FRAGLIST (net/ipv4/udp_offload.c @ 6.18.7); on 6.18.44
# 8 datagrams of 1448 bytes to a UDP_GRO socket left GRO as one skb of len 11612, gso_size
# 1448, gso_segs 8, SKB_GSO_UDP_L4, CHECKSUM_PARTIAL (tests/data/gro: udp-seg8-gro-socket)
def udp_flow(count: int, payload: int = 1448) -> list[bytes]:
    """Datagrams 40000 -> 5001, IP IDs incrementing, DF."""
    return [tcp_segment(4, sport=40000, seq=0, ack=0, flags=0, window=0, options=b"",
                        payload=bytes(payload), ipid=0x100 + i, df=True, ttl=64, udp=True)
            for i in range(count)]


def udp_rows(tmp_path: Path, *args: str, count: int = 8) -> list[dict[str, object]]:
    path = capture(tmp_path / "udp.pcap", udp_flow(count), [0] * count)
    return rows(["--from", str(path), "--path", "tap", "--kernel", "6.18", "--napi", "timeout",
                 *args])


def test_udp_merges_only_for_a_udp_gro_socket_on_its_port(tmp_path: Path) -> None:
    assert [r["frames"] for r in udp_rows(tmp_path)] == [[i] for i in range(8)]
    assert [r["frames"] for r in udp_rows(tmp_path, "--udp-gro-socket", "5002")] == [
        [i] for i in range(8)]
    (row,) = udp_rows(tmp_path, "--udp-gro-socket", "5001")
    assert (row["len"], row["gso_size"], row["gso_segs"], row["ip_summed"]) == (
        11612, 1448, 8, 3)
    assert row["gso_type"] == 1 << 17 and row["csum_offset"] == 6


def test_udp_forwarding_and_gro_list(tmp_path: Path) -> None:
    (fwd,) = udp_rows(tmp_path, "--udp-gro-forwarding")
    assert fwd["gso_type"] == 1 << 17 and fwd["frag_list"]["count"] == 0
    (flist,) = udp_rows(tmp_path, "--gro-list")
    # skb_gro_receive_list: every later datagram chained whole; udp4_gro_complete:
    # SKB_GSO_FRAGLIST | SKB_GSO_UDP_L4, __skb_incr_checksum_unnecessary
    assert flist["gso_type"] == (1 << 18) | (1 << 17) and flist["frag_list"]["count"] == 7
    assert flist["ip_summed"] == 1 and flist["len"] == 11612
    # a UDP_GRO socket takes its datagrams out of the fraglist path
    (both,) = udp_rows(tmp_path, "--gro-list", "--udp-gro-socket", "5001")
    assert both["gso_type"] == 1 << 17


@pytest.mark.parametrize(("count", "sizes"), [(64, [64]), (65, [64, 1])])
def test_a_udp_aggregate_ends_at_64_segments(tmp_path: Path, count: int,
                                             sizes: list[int]) -> None:
    path = capture(tmp_path / "udp.pcap", udp_flow(count, 100), [0] * count)
    got = rows(["--from", str(path), "--path", "tap", "--kernel", "6.18", "--napi", "timeout",
                "--udp-gro-socket", "5001"])
    assert [len(r["frames"]) for r in got] == sizes  # type: ignore[arg-type]


def test_udp_gro_options_need_gro(tmp_path: Path) -> None:
    path = capture(tmp_path / "udp.pcap", udp_flow(2))
    result = RUNNER.invoke(cli, ["replay", "--from", str(path), "--udp-gro-socket", "5001"])
    assert result.exit_code == 2 and "--udp-gro-socket needs --gro" in result.stderr


def test_each_row_is_the_json_of_its_record_to_the_byte(tmp_path: Path) -> None:
    # render/gro_json.py writes the rows directly: the same text json.dumps makes of
    # codec.delivered_row (aggregates with frag_list members, lone skbs, every flush reason)
    from vnetrx.codec import delivered_row
    from vnetrx.kernel.registry import lookup
    from vnetrx.paths.gro import read_frame
    from vnetrx.paths.virtio_net import VirtioRxSetup
    from vnetrx.render.gro_json import delivered_line
    from vnetrx.replay import RingConfig, Stream
    from vnetrx.replay.gro import replay_gro

    frames = flow(150)
    frames.insert(70, build_frame(300, "udp4"))
    k = lookup("6.12")
    cfg = RingConfig(VirtioRxSetup(mergeable=True), batch=64)
    inputs = [read_frame(f, len(f), False) for f in frames]
    records = Stream(k, cfg, [len(f) for f in frames], rings=False, frags=True).records
    delivered = list(replay_gro(k, cfg, records, inputs.__getitem__))
    assert any(d.skb.frag_list for _, d in delivered)
    assert any(d.skb.csum_start is None for _, d in delivered)
    for poll, d in delivered:
        assert delivered_line(poll, d) == json.dumps(delivered_row(poll, d))
    path = capture(tmp_path / "flow.pcap", frames)
    result = RUNNER.invoke(cli, ["replay", "--from", str(path), "--mergeable", "--batch", "64",
                                 "--kernel", "6.12", "--gro", "--jsonl"])
    assert result.stdout == "".join(json.dumps(delivered_row(poll, d)) + "\n"
                                    for poll, d in delivered)


def test_nine_flows_in_turn_never_merge_each_frame_leaves_alone(tmp_path: Path) -> None:
    """A device without a hash puts every flow in bucket 0, which holds MAX_GRO_SKBS (8) skbs:
    a ninth flow's segment completes the oldest held one (gro_flush_oldest), so nine flows in
    turn never merge [net/core/gro.c:dev_gro_receive, gro_flush_oldest @ 6.12]: every frame
    is an skb of its own, count 1, gso_size 0 (napi_gro_complete sends count 1 on as it is),
    56 of a poll of 64 evicted and the last 8 flushed by __napi_poll (the poll used its whole
    budget: napi_gro_flush before napi_complete_done) [net/core/dev.c @ 6.12]. Its rows are
    json.dumps of their records to the byte (render/gro_json.py writes a repeated skb's text
    once), and the lone skbs of frames alike in geometry are one record (GroState.complete)."""
    from vnetrx.codec import delivered_row
    from vnetrx.kernel.registry import lookup
    from vnetrx.paths.gro import read_frame
    from vnetrx.paths.virtio_net import VirtioRxSetup
    from vnetrx.replay import RingConfig, Stream
    from vnetrx.replay.gro import replay_gro

    frames = [tcp_segment(4, sport=40000 + i % 9, seq=1448 * (i // 9), ack=1, flags=0x10,
                          window=512, options=b"", payload=bytes(1448), ipid=i // 9, df=True,
                          ttl=64) for i in range(128)]
    path = capture(tmp_path / "nine.pcap", frames)
    args = ["--from", str(path), "--mergeable", "--batch", "64", "--kernel", "6.12"]
    got = rows(args)
    assert [r["frames"] for r in got] == [[i] for i in range(128)]
    # len from the network header: 20 + 20 + 1448
    assert {(r["segs"], r["gso_size"], r["gso_segs"], r["len"]) for r in got} == {
        (1, 0, 0, 1488)}
    flushes = [r["flush"] for r in got]
    assert flushes == (["evicted"] * 56 + ["budget"] * 8) * 2
    k = lookup("6.12")
    cfg = RingConfig(VirtioRxSetup(mergeable=True), batch=64)
    inputs = [read_frame(f, len(f), False) for f in frames]
    records = Stream(k, cfg, [len(f) for f in frames], rings=False, frags=True).records
    delivered = list(replay_gro(k, cfg, records, inputs.__getitem__))
    result = RUNNER.invoke(cli, ["replay", *args, "--gro", "--jsonl"])
    assert result.stdout == "".join(json.dumps(delivered_row(poll, d)) + "\n"
                                    for poll, d in delivered)
    assert len({id(d.skb) for _, d in delivered}) < len(delivered) // 8


def test_gro_rows_do_not_import_rich(tmp_path: Path) -> None:
    """--gro --jsonl writes rows only, and --gro --summary into a pipe or a file its plain
    lines: the text renderer and rich (~0.1 s of start-up under load, a tenth of a
    200,000-frame replay) are not imported; the table needs them."""
    path = capture(tmp_path / "flow.pcap", flow(3))
    code = (
        "import sys, io, contextlib\n"
        f"sys.argv = ['vnetrx', 'replay', '--from', {str(path)!r}, '--mergeable', '--gro', "
        "*sys.argv[1:]]\n"
        "from vnetrx.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code == 0, exc.code\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'rich'}))\n"
    )
    for output, imported in ((["--jsonl"], "[]"), (["--summary"], "[]"), ([], "['rich']")):
        out = subprocess.run([sys.executable, "-c", code, *output], capture_output=True,
                             text=True, check=True)
        assert out.stdout.strip() == imported
