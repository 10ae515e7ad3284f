"""`vnetrx replay` through click's CliRunner: the table, --show, JSON and JSONL, every input
form (LIST, text, JSON, pcap, pcapng), and one-line errors with exit 2 (input) or 1 (stall)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import dpkt  # type: ignore[import-untyped]
import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.replay.frames import parse_list

SEQ = ["--len", "60x11,9014,9018", "--mergeable", "--mtu", "9000", "--kernel", "6.12"]


def _row(out: str, index: int) -> list[str]:
    for line in out.splitlines():
        cells = line.split()
        if cells and cells[0] == str(index) and len(cells) > 8:
            return cells
    raise AssertionError(f"no row {index} in:\n{out}")


def test_text_table_one_row_per_frame(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["replay", *SEQ])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "vnetrx replay virtio-mergeable on Linux 6.12.117" in out
    assert "posts 256 buffers of 1536 bytes (EWMA 0 → min_buf_len 1518) on frag0..frag12" in out
    # #, len, poll, bufs, first buffer, sizes..., outcome, truesize, frags, EWMA, next len
    assert _row(out, 0)[:5] == ["0", "60", "1", "1", "frag0+0"]
    assert _row(out, 11) == ["11", "9014", "12", "6", "frag0+16896", "6×1536", "copy", "10496",
                             "1", "199", "1536"]
    assert _row(out, 12) == ["12", "9018", "13", "6", "frag0+26112", "3×1536", "2048", "2×1536",
                             "copy", "11008", "2", "336", "1536"]
    assert "final ring: EWMA 336 · mergeable_rx_buffer_size 1536 · page_frag at frag12+6144" in out
    assert "233 posted (222×1536, 11×2048), 23 free" in out
    assert "\x1b[" not in out


def test_show_maps_the_buffers_inside_their_pages(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["replay", *SEQ, "--show", "12"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Frame 12: 9018 bytes in 6 buffer(s), NAPI poll 13" in out
    bars = [line.split() for line in out.splitlines() if line.strip().startswith(("frag0 [",
                                                                                 "frag1 ["))]
    # 64 cells of 512 bytes: buffers 1-3 at 26112.., the 2048-byte 4 at 30720, 5-6 in frag1
    assert bars[0][1] == "[" + "." * 51 + "1112223334444]"
    assert bars[1][1] == "[555666" + "." * 58 + "]"
    assert "copied 14 B; the rest is frag 0" in out
    assert out.count("coalesced into frag 0") == 3 and "coalesced into frag 1" in out
    assert "len 9004  data_len 9004  headlen 0  nr_frags 2  truesize 11008" in out


def test_json_document(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["replay", *SEQ, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "vnetrx.replay/1"
    assert doc["kernel"]["name"] == "6.12.117"
    assert doc["input"] == {"source": "--len 60x11,9014,9018", "frames": 13, "mergeable": True,
                            "guest_gso": False, "mtu": 9000, "hdr_len": 12, "ring_size": 256, "batch": 1,
                            "budget": 64, "refill_threshold": 32}
    assert (doc["min_buf_len"], doc["initial_fill"]["count"]) == (1518, 256)
    assert doc["initial_fill"]["buffers"][20] == {"seq": 20, "page": "frag0", "offset": 30720,
                                                  "len": 2048, "fill": 0}
    frame = doc["frames"][12]
    assert (frame["index"], frame["frame_len"], frame["poll"]) == (12, 9018, 13)
    assert [b["seq"] for b in frame["buffers"]] == [17, 18, 19, 20, 21, 22]
    assert (frame["ewma_before"], frame["ewma_after"], frame["refill"]) == (199, 336, None)
    assert frame["trace"]["schema"] == "vnetrx.trace/1"
    assert (frame["trace"]["skb"]["truesize"], frame["trace"]["skb"]["nr_frags"]) == (11008, 2)
    assert frame["trace"]["input"]["ewma"] == 199
    ring = frame["ring"]
    assert (ring["ewma"], ring["mergeable_rx_buffer_size"], ring["page"], ring["offset"]) == (
        336, 1536, "frag12", 6144)
    assert (ring["posted"], ring["num_free"], ring["posted_lens"]) == (233, 23, [[1536, 222],
                                                                                [2048, 11]])
    assert ring["next_buffer"] == {"seq": 23, "page": "frag1", "offset": 3072, "len": 1536,
                                   "fill": 0}
    steps = frame["trace"]["steps"]
    assert steps[0]["source"] == "drivers/net/virtio_net.c:virtnet_receive @ 6.12.117"
    assert steps[0]["summary"].startswith("NAPI poll 13: virtqueue_get_buf_ctx returns buffer(s) "
                                          "#17..#22 in posting order, posted by virtnet_open")
    assert steps[-1]["summary"] == ("num_free 23 <= min(budget 64, ring 256) / 2 = 32: no refill "
                                    "after this poll")
    assert doc["final_ring"] == ring


def test_json_records_a_refill(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["replay", "--len", "9000x6", "--mergeable", "--mtu", "9000",
                                 "--kernel", "6.1", "--json"])
    assert result.exit_code == 0, result.output
    frames = json.loads(result.stdout)["frames"]
    assert [f["refill"] is not None for f in frames] == [False] * 5 + [True]
    refill = frames[5]["refill"]
    assert (refill["when"], refill["after_poll"], refill["ewma"], refill["buf_len"],
            refill["count"]) == ("virtnet_receive", 6, 9000, 4096, 36)
    # 244 x 1536 + 12 x 2048 posted at open, 35 + 1 of them used; 35 x 4096 + the 6144 posted
    assert frames[5]["ring"]["posted_lens"] == [[1536, 209], [2048, 11], [4096, 35], [6144, 1]]
    assert frames[5]["trace"]["steps"][-1]["summary"] == (
        "num_free 36 > min(budget 64, ring 256) / 2 = 32: try_fill_recv posts 36 buffer(s) of "
        "4096 bytes (get_mergeable_buf_len, EWMA 9000)")


def test_jsonl_one_compact_row_per_frame(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["replay", *SEQ, "--jsonl"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["index"] for r in rows] == list(range(13))
    assert {r["schema"] for r in rows} == {"vnetrx.replay-row/1"}
    # frame 12 (9018 bytes) lands in buffers 17-22 of the initial fill (the 2048-byte 21st of
    # frag0 among them): the same buffers, skb and EWMA as the full document
    last = rows[12]
    assert last["buffers"] == [["frag0", 26112, 1536], ["frag0", 27648, 1536],
                               ["frag0", 29184, 1536], ["frag0", 30720, 2048],
                               ["frag1", 0, 1536], ["frag1", 1536, 1536]]
    assert (last["outcome"], last["truesize"], last["nr_frags"], last["ewma"]) == (
        "copy", 11008, 2, 336)
    assert rows[11]["truesize"] == 10496 and "trace" not in rows[11]


def test_jsonl_detail_has_every_frames_trace(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["replay", *SEQ, "--jsonl", "--detail"])
    assert result.exit_code == 0, result.output
    frames = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(frames) == 13
    assert frames[11]["trace"]["skb"]["truesize"] == 10496
    doc = json.loads(runner.invoke(cli, ["replay", *SEQ, "--json"]).stdout)
    assert frames == doc["frames"]


def test_json_does_not_need_rich_for_small_mode(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["replay", "--len", "60,1600", "--kernel", "6.18", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    first, second = doc["frames"]
    assert (first["buffers"], first["ring"]["ewma"]) == (
        [{"seq": 0, "page": "frag0", "offset": 16, "len": 1920, "fill": 0}], None)
    assert (second["buffers"], second["poll"], second["trace"]["outcome"]) == ([], None, "drop")


# --- input forms ------------------------------------------------------------------------------


def test_list_syntax() -> None:
    assert parse_list("60,1000,3400-3500:25") == (60, 1000, 3400, 3425, 3450, 3475, 3500)
    assert parse_list("60x3, 5-7") == (60, 60, 60, 5, 6, 7)


def _expected() -> list[int]:
    return [60] * 11 + [9014, 9018]


def _lens_of(runner: CliRunner, path: Path) -> list[int]:
    result = runner.invoke(cli, ["replay", "--from", str(path), "--mergeable", "--jsonl"])
    assert result.exit_code == 0, result.output
    return [json.loads(line)["frame_len"] for line in result.stdout.splitlines()]


def test_from_text_and_json(runner: CliRunner, tmp_path: Path) -> None:
    text = tmp_path / "lens.txt"
    text.write_text("# warm-up\n60x11\n9014 9018  # the pair\n")
    assert _lens_of(runner, text) == _expected()
    doc = tmp_path / "lens.json"
    doc.write_text(json.dumps(_expected()))
    assert _lens_of(runner, doc) == _expected()


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_from_capture(runner: CliRunner, tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"frames.{fmt}"
    with path.open("wb") as fh:
        # snaplen 65535: dpkt's default 1500 makes a pcapng whose 9014-byte packets tcpdump
        # 4.99.3 refuses ("invalid packet capture length 9014, bigger than snaplen of 1500")
        writer = (dpkt.pcap.Writer(fh, snaplen=65535) if fmt == "pcap"
                  else dpkt.pcapng.Writer(fh, snaplen=65535))
        for n, length in enumerate(_expected()):
            writer.writepkt(bytes(length), ts=1700000000 + n)
    assert _lens_of(runner, path) == _expected()


# --- errors -----------------------------------------------------------------------------------


def _error(runner: CliRunner, args: list[str], code: int) -> str:
    result = runner.invoke(cli, ["replay", *args])
    assert result.exit_code == code, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetrx: error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--len", ""], "no frame lengths given"),
        (["--len", ","], "no frame lengths given"),
        (["--len", "60,65536"], "frame 1: length 65536 out of range (valid: 0..65535)"),
        (["--len", "60,abc"], "'abc' is not a number N"),
        (["--len", "9-3"], "runs backwards"),
        (["--len", "60", "--ring-size", "0"], "0 is out of range (valid: 1..32768 entries)"),
        (["--len", "60", "--batch", "0"], "0 is out of range"),
        ([], "exactly one of --len LIST and --from FILE"),
        (["--len", "60", "--from", "x"], "exactly one of --len LIST and --from FILE"),
        (["--from", "/nonexistent/lens.txt"], "cannot read /nonexistent/lens.txt"),
        (["--len", "60", "--show", "1"], "--show 1: there are 1 frames (valid: 0..0)"),
        (["--len", "60", "--json", "--jsonl"], "exclude each other"),
        # big mode is replayed; with an XDP program it is not (no XDP hook in big mode)
        (["--len", "60", "--mtu", "9000", "--xdp", "pass"], "replay of big mode (no "
         "--mergeable; guest GSO or an MTU above 1500) with an XDP program is not modelled"),
        (["--len", "60", "--mergeable", "--buf-len", "2048"], "--buf-len does not apply to replay"),
    ],
)
def test_bad_input_exits_2_with_one_line(runner: CliRunner, args: list[str], message: str) -> None:
    assert message in _error(runner, args, 2)


def test_unreadable_files(runner: CliRunner, tmp_path: Path) -> None:
    assert "cannot read" in _error(runner, ["--from", str(tmp_path)], 2)  # a directory
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("[60, 1000,")
    assert "not valid JSON" in _error(runner, ["--from", str(bad_json)], 2)
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00\x01" * 8)
    assert "neither a pcap/pcapng capture nor text" in _error(runner, ["--from", str(binary)], 2)
    # text that is no LIST (a file named like a capture, say): the error says what --from reads
    text = tmp_path / "text.pcap"
    text.write_text("garbage here\n")
    line = _error(runner, ["--from", str(text)], 2)
    assert "'garbage' is not a number N" in line
    assert line.endswith("(frames are read from a pcap/pcapng capture, a JSON array of lengths "
                         "or of objects, or a LIST of lengths: N, A-B, A-B:STEP, NxCOUNT, # "
                         "starts a comment)")
    # --len's own errors keep their one line without it
    assert "frames are read from" not in _error(runner, ["--len", "60,abc"], 2)
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    assert "no frame lengths given" in _error(runner, ["--from", str(empty)], 2)
    wifi = tmp_path / "wifi.pcap"
    with wifi.open("wb") as fh:
        dpkt.pcap.Writer(fh, linktype=dpkt.pcap.DLT_IEEE802_11).writepkt(bytes(60), ts=0)
    assert "link type 105, which vnetrx does not read" in _error(runner, ["--from", str(wifi)], 2)
    # a cooked capture whose only packet is of a non-Ethernet interface (hatype 0): nothing left
    cooked = tmp_path / "sll.pcap"
    with cooked.open("wb") as fh:
        dpkt.pcap.Writer(fh, linktype=dpkt.pcap.DLT_LINUX_SLL).writepkt(bytes(60), ts=0)
    assert "no frames (a Linux cooked SLL (113) capture" in _error(
        runner, ["--from", str(cooked)], 2)


def test_error_as_json(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["replay", "--len", "65536", "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"] == (
        "frame 0: length 65536 out of range (valid: 0..65535)")


def test_stall_is_a_runtime_failure(runner: CliRunner) -> None:
    line = _error(runner, ["--len", "65535", "--mergeable", "--ring-size", "8"], 1)
    assert "rx stall at frame 0: 65547 bytes" in line and "(32768 bytes)" in line


def test_a_capture_cut_by_its_snaplen_gives_the_wire_lengths(
        runner: CliRunner, tmp_path: Path) -> None:
    """tcpdump -s 96: each record holds at most 96 bytes, and orig_len the frame's length."""
    path = tmp_path / "cut.pcap"
    records = b"".join(struct.pack("<IIII", 0, 0, min(n, 96), n) + bytes(min(n, 96))
                       for n in (60, 1514, 9014))
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 96, 1) + records)
    assert _lens_of(runner, path) == [60, 1514, 9014]


def test_show_a_frame_the_device_dropped_and_a_page_pool_frame(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["replay", "--len", "60,1600", "--kernel", "6.12", "--show", "1"])
    assert result.exit_code == 0, result.output
    assert "Frame 1: 1600 bytes in 0 buffer(s)" in result.stdout
    assert "the device used no buffer for it" in result.stdout
    result = runner.invoke(cli, ["replay", "--len", "1000,1000", "--mergeable", "--kernel", "7.3",
                                 "--show", "1"])
    assert result.exit_code == 0, result.output
    bar = next(line for line in result.stdout.splitlines() if line.strip().startswith("pool0 ["))
    # a 4 KiB pool page in 64 cells of 64 bytes: buffer 1 is the second, 2560-byte one
    assert bar.split()[1] == "[" + "." * 24 + "1" * 40 + "]"
    assert "skb head (build_skb)" in result.stdout and "truesize 2816" in result.stdout


def test_json_replay_does_not_import_rich() -> None:
    code = (
        "import sys, io, contextlib\n"
        "sys.argv = ['vnetrx', 'replay', '--len', '60,9000', '--mergeable', '--json']\n"
        "from vnetrx.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code == 0, exc.code\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'rich', 'dpkt'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- streaming: stdin, totals, a closed pipe, Ctrl-C ----------------------------------------------


def _capture(path: Path, lengths: list[int]) -> None:
    records = b"".join(struct.pack("<IIII", 0, 0, n, n) + bytes(n) for n in lengths)
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + records)


def test_capture_from_standard_input(tmp_path: Path) -> None:
    path = tmp_path / "f.pcap"
    _capture(path, _expected())
    with path.open("rb") as stdin:
        out = subprocess.run([sys.executable, "-m", "vnetrx", "replay", "--from", "-",
                              "--mergeable", "--jsonl"], stdin=stdin, capture_output=True,
                             text=True, check=True)
    assert [json.loads(line)["frame_len"] for line in out.stdout.splitlines()] == _expected()


def test_summary_text_and_json(runner: CliRunner) -> None:
    text = runner.invoke(cli, ["replay", *SEQ, "--summary"])
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("totals: 13 frames, 18692 bytes; 13 skbs")
    doc = json.loads(runner.invoke(cli, ["replay", *SEQ, "--summary", "--json"]).stdout)
    assert (doc["schema"], doc["frames"], doc["frame_bytes"]) == (
        "vnetrx.replay-summary/1", 13, 11 * 60 + 9014 + 9018)
    # the text table (rich) ends with the same totals line, word for word, as the plain line
    # --summary writes into a pipe; with colour --summary prints rich's, in bold
    table = runner.invoke(cli, ["replay", *SEQ]).stdout
    assert text.stdout.endswith("\n") and text.stdout.count("\n") == 1
    assert text.stdout[:-1] in table.splitlines()
    coloured = runner.invoke(cli, ["--color", "always", "replay", *SEQ, "--summary"]).stdout
    assert coloured.startswith("\x1b[1mtotals: ")
    assert coloured.replace("\x1b[1m", "").replace("\x1b[0m", "") == text.stdout


def _long_capture(tmp_path: Path) -> Path:
    """2,000,000 frames of mixed wire lengths captured with snaplen 0 (16 bytes a record, 32 MB):
    more than any build replays in the seconds these tests take."""
    path = tmp_path / "long.pcap"
    records = b"".join(struct.pack("<IIII", 0, 0, 0, n) for n in [60, 1514, 9014, 1000]) * 500_000
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 0, 1) + records)
    return path


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    path = _long_capture(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "vnetrx", "replay", "--from", str(path),
                             "--mergeable", "--mtu", "9000", "--jsonl"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = json.loads(proc.stdout.readline())
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""
    assert first["index"] == 0


def test_ctrl_c_leaves_whole_lines_and_exits_130(tmp_path: Path) -> None:
    import signal
    import time

    path = _long_capture(tmp_path)
    out = tmp_path / "rows.jsonl"
    with out.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "vnetrx", "replay", "--from", str(path),
                                 "--mergeable", "--mtu", "9000", "--jsonl"], stdout=sink,
                                stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while out.stat().st_size == 0 and time.monotonic() < deadline:  # rows are coming
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
    assert proc.stderr is not None
    assert proc.stderr.read().decode().strip() == (
        "vnetrx: interrupted (the output covers the frames before it)")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert 0 < len(rows) < 2_000_000
    assert [r["index"] for r in rows] == list(range(len(rows)))


def test_offload_auto_derives_headers_from_a_capture(runner: CliRunner, tmp_path: Path) -> None:
    from vnetrx.packet import build_frame

    path = tmp_path / "tcp.pcap"
    frames = [build_frame(1514, "tcp4", 12), build_frame(9014, "tcp4", 12)]
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + b"".join(
        struct.pack("<IIII", 0, 0, len(f), len(f)) + f for f in frames))
    args = ["replay", "--from", str(path), "--mergeable", "--guest-gso", "--jsonl"]
    rows = [json.loads(line) for line in runner.invoke(
        cli, [*args, "--offload", "auto", "--kernel", "6.12"]).stdout.splitlines()]
    assert [(r["ip_summed"], r["gso_size"], r["data_len"]) for r in rows] == [
        (3, 0, 1462), (3, 1448, 8960)]  # the 6.12 guest's own numbers for such frames (lab)
    # DATA_VALID TSO frames in 6.6.46's window are refused
    rows = [json.loads(line) for line in runner.invoke(
        cli, [*args, "--offload", "auto-valid", "--kernel", "6.6.46"]).stdout.splitlines()]
    assert [(r["outcome"], r["reason"]) for r in rows] == [("copy", None), ("drop", "bad_gso")]
    text = runner.invoke(cli, [*args[:-1], "--offload", "auto", "--summary"])
    assert text.exit_code == 0
    bad = runner.invoke(cli, ["replay", "--len", "60", "--offload", "auto"])
    assert bad.exit_code == 2 and "capture's bytes" in bad.stderr


@pytest.mark.parametrize(("mode", "kernel"), [([], "6.1"), (["--mergeable"], "6.12"),
                                              (["--mergeable"], "6.1")])
def test_a_header_only_frame_replays_as_a_short_packet(
        runner: CliRunner, tmp_path: Path, mode: list[str], kernel: str) -> None:
    """A recorded sequence with frames of length 0 (the device wrote the virtio-net header
    alone): each takes one buffer, is dropped by receive_buf's short-packet guard into
    rx_length_errors (what a 6.1/6.12 guest's /sys/class/net/*/statistics show) and leaves
    the EWMA as it was (ewma_pkt_len_add runs in receive_mergeable only)."""
    path = tmp_path / "seq.json"
    path.write_text(json.dumps([{"len": 60}, {"len": 0, "hdr": "00"}, {"len": 1514},
                                {"len": 0}]))
    args = ["replay", "--from", str(path), *mode, "--kernel", kernel]
    result = runner.invoke(cli, [*args, "--jsonl"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["frame_len"], r["outcome"] == "drop", r["reason"], r["counter"])
            for r in rows] == [(60, False, None, None), (0, True, "short_packet",
                                                         "rx_length_errors"),
                               (1514, False, None, None), (0, True, "short_packet",
                                                           "rx_length_errors")]
    assert all(len(r["buffers"]) == 1 for r in rows)
    assert [b[1] for r in rows for b in r["buffers"]] == sorted(
        {b[1] for r in rows for b in r["buffers"]})  # one posted buffer after the other
    if mode:
        assert rows[1]["ewma"] == rows[0]["ewma"] and rows[3]["ewma"] == rows[2]["ewma"]
    summary = json.loads(runner.invoke(cli, [*args, "--summary", "--json"]).stdout)
    assert (summary["frames"], summary["skbs"], summary["drops"], summary["counters"]) == (
        4, 2, {"short_packet": 2}, {"rx_length_errors": 2})


def test_frames_longer_than_a_device_writes_are_pointed_out() -> None:
    # 1500 + 18 (an Ethernet header with a VLAN tag) is the longest frame a device with MTU
    # 1500 writes without a GSO header; one byte more is noted, once, with the count
    result = CliRunner().invoke(cli, ["replay", "--len", "1514,1518,1519,9014", "--mergeable",
                                      "--summary"])
    assert result.exit_code == 0
    assert ("2 frame(s) (the first: frame 2, 1519 bytes) are longer than the MTU (1500)"
            in result.stderr)
    assert "taken after GRO" in result.stderr
    result = CliRunner().invoke(cli, ["replay", "--len", "1514,1518", "--mergeable", "--summary"])
    assert result.exit_code == 0 and "longer than the MTU" not in result.stderr
    result = CliRunner().invoke(cli, ["replay", "--len", "9014", "--mergeable", "--mtu", "9000",
                                      "--summary"])
    assert result.exit_code == 0 and "longer than the MTU" not in result.stderr


def test_frames_beyond_the_mtu_in_a_capture_read_list_by_list(tmp_path: Path) -> None:
    """A capture's lengths are handed on in lists of 1,024 (BeyondMtu.watch_lists): the frame
    indices go on across lists, as frame by frame (--count takes that path)."""
    lengths = [1514] * 1500
    lengths[1030] = lengths[1200] = 1519
    data = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for n in lengths:
        data += struct.pack("<IIII", 0, 0, 60, n) + bytes(60)
    path = tmp_path / "beyond.pcap"
    path.write_bytes(data)
    for extra in ([], ["--count", "1500"]):
        result = CliRunner().invoke(cli, ["replay", "--from", str(path), "--mergeable",
                                          "--summary", *extra])
        assert result.exit_code == 0, result.output
        assert ("2 frame(s) (the first: frame 1030, 1519 bytes) are longer than the MTU (1500)"
                in result.stderr)
        assert result.stdout.startswith("totals: 1500 frames")


def test_offload_frames_read_list_by_list_replay_as_frame_by_frame(tmp_path: Path) -> None:
    """--offload's lengths and derived headers are handed on in lists of 1,024
    (BeyondMtu.watch_pairs): the same rows, totals and MTU note as frame by frame (--count takes
    that path). A TCP frame over the MTU is GSO and not noted; a long frame of no TCP/UDP is;
    a file cut inside a record gives the frames before it and exit 1 alike."""
    from vnetrx.packet import build_frame

    records = [(build_frame(1514, "tcp4", 12), 1514)] * 1500
    records[7] = (build_frame(9014, "tcp4", 12)[:80], 9014)  # GSO: not beyond the MTU
    records[1100] = (bytes(60), 1519)  # no TCP/UDP: no header, beyond the MTU
    records[1300] = (build_frame(200, "udp6"), 200)
    data = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for frame, n in records:
        data += struct.pack("<IIII", 0, 0, len(frame), n) + frame
    path = tmp_path / "offload.pcap"
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:-30])
    path.write_bytes(data)
    for capture, code in ((path, 0), (cut, 1)):
        for out in ("--jsonl", "--summary"):
            args = ["replay", "--from", str(capture), "--mergeable", "--offload", "auto",
                    "--kernel", "6.12", out]
            lists = CliRunner().invoke(cli, args)
            one_by_one = CliRunner().invoke(cli, [*args, "--count", "1000000"])
            assert lists.exit_code == one_by_one.exit_code == code, lists.output
            assert lists.stdout == one_by_one.stdout
            assert lists.stderr == one_by_one.stderr
            assert ("1 frame(s) (the first: frame 1100, 1519 bytes) are longer than the MTU "
                    "(1500)" in lists.stderr)
    rows = [json.loads(line) for line in CliRunner().invoke(
        cli, ["replay", "--from", str(path), "--mergeable", "--offload", "auto", "--kernel",
              "6.12", "--jsonl"]).stdout.splitlines()]
    assert len(rows) == 1500
    # NEEDS_CSUM frames (CHECKSUM_PARTIAL, 3); the 9014-byte one GSO with gso_size 1448
    assert (rows[0]["ip_summed"], rows[7]["gso_size"], rows[1100]["ip_summed"]) == (3, 1448, 0)


def test_gro_over_a_capture_read_list_by_list_replays_as_frame_by_frame(tmp_path: Path) -> None:
    """--gro keeps each frame's headers as the capture's lengths are read in lists of 1,024
    (GroFrames.see): the same skbs, rows and totals as frame by frame (--count), over a
    capture of two interleaved TCP flows with consecutive sequence numbers."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        from replay_gro import write_capture
    finally:
        sys.path.pop(0)
    path = tmp_path / "flows.pcap"
    write_capture(path, 2500)
    for out in (["--jsonl"], ["--summary"], []):
        args = ["replay", "--from", str(path), "--mergeable", "--batch", "64", "--kernel",
                "6.12", "--gro", *out]
        lists = CliRunner().invoke(cli, args)
        one_by_one = CliRunner().invoke(cli, [*args, "--count", "1000000"])
        assert lists.exit_code == one_by_one.exit_code == 0, lists.output
        assert lists.stdout == one_by_one.stdout and lists.stderr == one_by_one.stderr
    rows = CliRunner().invoke(cli, [*args, "--jsonl"]).stdout.splitlines()
    assert 0 < len(rows) < 2500  # merged: fewer skbs than frames


def test_tcpdump_style_read_count_and_line_buffering(tmp_path: Path) -> None:
    # -r FILE is --from FILE; -c N stops after N frames (as tcpdump -c); -l writes each row at
    # once (checked as a process below, where buffering is real)
    lens = tmp_path / "lens.txt"
    lens.write_text("60,1514,9014,1000")
    result = CliRunner().invoke(cli, ["replay", "-r", str(lens), "-c", "2", "--mergeable",
                                      "--jsonl"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["frame_len"] for line in result.stdout.splitlines()] == [60, 1514]
    result = CliRunner().invoke(cli, ["replay", "--len", "60x5", "-c", "0"])
    assert result.exit_code == 2 and "-c" in result.stderr


def test_a_live_feed_shows_each_text_row_before_the_input_ends() -> None:
    # --from - on a pipe: the text rows come one by one, not in blocks of 1000 (issue 28)
    import os
    import select

    proc = subprocess.Popen([sys.executable, "-m", "vnetrx", "replay", "--from", "-",
                             "--mergeable"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        proc.stdin.write(struct.pack("<IIII", 0, 0, 60, 60) + bytes(60))
        proc.stdin.flush()
        out = b""
        while not any(line.split()[:2] == [b"0", b"60"] for line in out.splitlines()):
            ready, _, _ = select.select([proc.stdout], [], [], 20)
            assert ready, f"no row while the feed is open; got {out!r}"
            out += os.read(proc.stdout.fileno(), 65536)
    finally:
        proc.stdin.close()
        proc.stdout.close()
        proc.wait(timeout=60)


def test_line_buffered_text_rows_share_one_header() -> None:
    # -l: every row printed as it is computed, under one header; otherwise blocks of 1000
    # rows, each with its own header
    args = ["replay", "--len", "60x1001", "--mergeable"]
    blocks = CliRunner().invoke(cli, args)
    rows = CliRunner().invoke(cli, [*args, "-l"])
    assert blocks.exit_code == rows.exit_code == 0
    headers = [sum(line.split()[:2] == ["#", "len"] for line in r.stdout.splitlines())
               for r in (blocks, rows)]
    assert headers == [2, 1]
    assert sum(line.split()[1:2] == ["60"] for line in rows.stdout.splitlines()) == 1001
