"""Every input reader bounded and strict (issue 29): a capture cut inside a record (every whole
record replayed, then one error line, exit 1, as tcpdump), standard input closed, special
files (/dev/zero, a FIFO without a writer, a 2 GiB sparse file), decompression bombs and huge
or deep JSON, each refused in one line before the work, in bounded memory (< 100 MB RSS)."""

from __future__ import annotations

import gzip
import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli


def pcap(count: int, length: int = 60) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i in range(count):
        out += struct.pack("<IIII", i, 0, length, length) + bytes(length)
    return out


def _one_error(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetrx: error: "), stderr
    return lines[0]


# --- a capture cut inside a record --------------------------------------------------------

def test_a_cut_capture_replays_every_whole_record(runner: CliRunner, tmp_path: Path) -> None:
    """300 whole frames, then 50 of the 301st's 76 bytes (the disk filled): tcpdump 4.99.3
    prints the 300 and ends with "truncated dump file; tried to read 60 captured bytes, only
    got 50", exit 1. vnetrx replays the 300 (257 before: the rest of the last batch was
    dropped), then says where the capture is cut, exit 1."""
    path = tmp_path / "cut.pcap"
    path.write_bytes(pcap(301)[:-10])
    result = runner.invoke(cli, ["replay", "--from", str(path), "--jsonl", "--batch", "64"])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert [json.loads(line)["index"] for line in lines[:-1]] == list(range(300))
    error = json.loads(lines[-1])
    assert error["schema"] == "vnetrx.error/1" and error["exit_code"] == 1
    # record 300 begins at 24 + 300 * (16 + 60)
    assert "cut inside record 300 at byte 22824" in error["error"]
    assert "the 300 whole record(s) before it were read" in _one_error(result.stderr)

    text = runner.invoke(cli, ["replay", "--from", str(path), "--summary"])
    assert text.exit_code == 1 and "totals: 300 frames, 18000 bytes" in text.stdout
    _one_error(text.stderr)


def test_a_short_cut_capture_in_one_json_document(runner: CliRunner, tmp_path: Path) -> None:
    """7 records, the last cut: the 6 before it (0 rows before the fix) in the document, then
    the error object."""
    path = tmp_path / "seven.pcap"
    path.write_bytes(pcap(7)[:-10])
    result = runner.invoke(cli, ["replay", "--from", str(path), "--json"])
    assert result.exit_code == 1
    decoder = json.JSONDecoder()
    doc, end = decoder.raw_decode(result.stdout)
    assert len(doc["frames"]) == 6 and doc["input"]["frames"] == 6
    error = json.loads(result.stdout[end:])
    assert "cut inside record 6 at byte 480" in error["error"]


@pytest.mark.parametrize("args", [["--xdp", "pass", "--summary"], ["--json"], ["--summary"]])
def test_a_four_byte_capture_is_one_line(runner: CliRunner, tmp_path: Path,
                                         args: list[str]) -> None:
    """Only the magic: struct.error in cli/replay.py before the fix."""
    path = tmp_path / "four.pcap"
    path.write_bytes(pcap(1)[:4])
    result = runner.invoke(cli, ["replay", "--from", str(path), *args])
    assert result.exit_code == 2
    assert "it ends inside the file header" in _one_error(result.stderr)


# --- standard input closed, special files -------------------------------------------------

def vnetrx(*args: str, close_stdin: bool = False, timeout: float = 60
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vnetrx", *args], capture_output=True, text=True,
        timeout=timeout, stdin=None if close_stdin else subprocess.DEVNULL,
        preexec_fn=(lambda: os.close(0)) if close_stdin else None)


@pytest.mark.parametrize(("args", "code"), [
    (["replay", "--from", "-", "--summary"], 2),
    (["replay", "--from", "-", "--json"], 2),
    (["trace", "--load", "-"], 2),
    (["decode", "-"], 2),
])
def test_closed_standard_input(args: list[str], code: int) -> None:
    """`<&-`: Python has no sys.stdin ("'NoneType' object has no attribute 'buffer'" before)."""
    done = vnetrx(*args, close_stdin=True)
    assert done.returncode == code
    assert _one_error(done.stderr).startswith("vnetrx: error: standard input is closed")
    if "--json" in args:
        assert json.loads(done.stdout)["error"].startswith("standard input is closed")


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.fixture
def sparse(tmp_path: Path) -> Path:
    """2 GiB of zeros that take no disk."""
    path = tmp_path / "sparse"
    with path.open("wb") as fh:
        fh.truncate(2 << 30)
    return path


@pytest.mark.parametrize(("option", "special", "message"), [
    ("--frame", "/dev/zero", "cannot read /dev/zero: it is a device, not a regular file"),
    ("--frame", "fifo", "it is a FIFO, not a regular file"),
    ("--frame", "sparse", "holds more than 65535 bytes: a frame is at most 65535"),
    ("--load", "fifo", "it is a FIFO, not a regular file (for a pipe, give --load -"),
    ("--load", "sparse", "is larger than 4 MiB"),
])
def test_trace_special_files(request: pytest.FixtureRequest, option: str, special: str,
                             message: str) -> None:
    """A FIFO without a writer is refused at once (it waited forever), /dev/zero and a sparse
    file without reading them (/dev/zero grew past 3 GiB)."""
    path = special if special.startswith("/") else str(request.getfixturevalue(special))
    done = vnetrx("trace", option, path, timeout=20)
    assert done.returncode == 2
    assert message in _one_error(done.stderr)


@pytest.mark.parametrize(("special", "message"), [
    ("/dev/zero", "it is a device, not a regular file"),
    ("fifo", "it is a FIFO, not a regular file (for a pipe, give --from - and redirect"),
    ("sparse", "is more than 16 MiB of text"),
])
def test_replay_special_files(request: pytest.FixtureRequest, special: str,
                              message: str) -> None:
    path = special if special.startswith("/") else str(request.getfixturevalue(special))
    done = vnetrx("replay", "--from", path, "--summary", timeout=20)
    assert done.returncode == 2
    assert message in _one_error(done.stderr)


@pytest.mark.parametrize(("special", "message"), [
    ("/dev/zero", "cannot read BTF from /dev/zero: it is a device, not a regular file"),
    ("fifo", "it is a FIFO, not a regular file"),
    ("sparse", r"not BTF at byte 0 (magic 0x0000, expected 0xeb9f)"),
])
@pytest.mark.parametrize("option", ["--btf", "--btf-base"])
def test_layout_special_files(request: pytest.FixtureRequest, tmp_path: Path, special: str,
                              message: str, option: str) -> None:
    """The sparse file is refused by its first bytes (it was read whole: 2 GiB RSS)."""
    path = special if special.startswith("/") else str(request.getfixturevalue(special))
    args = ["--btf", path] if option == "--btf" else ["--btf", path, "--btf-base", path]
    done = vnetrx("layout", "sk_buff", *args, timeout=20)
    assert done.returncode == 1
    assert message in _one_error(done.stderr)


# --- memory: < 100 MB whatever the input --------------------------------------------------

def max_rss_mb(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    """The peak RSS of `vnetrx ARGS`, measured by a parent of its own (getrusage of its one
    child)."""
    probe = textwrap.dedent(f"""
        import resource, subprocess, sys
        done = subprocess.run([sys.executable, "-m", "vnetrx", *{list(args)!r}],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=120)
        sys.stderr.write(done.stderr)
        sys.stdout.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
        sys.exit(done.returncode)
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=150)
    return int(done.stdout) / 1024, done


def test_memory_of_unbounded_inputs(tmp_path: Path, sparse: Path) -> None:
    """/dev/zero as --frame (past 3 GiB before), a 2 GiB sparse --btf (2 GiB), a gzip bomb
    (50 MB of zeros; past 3 GiB) and one behind an ELF header, a 15 MiB JSON array of
    7.5 million lengths (1.25 GiB for 64 MiB of frames before): each one line, < 100 MB."""
    bomb = tmp_path / "bomb.ko.gz"
    bomb.write_bytes(gzip.compress(bytes(50 << 20), 1))
    elf = tmp_path / "elf.ko.gz"
    elf.write_bytes(gzip.compress(b"\x7fELF\x02\x01" + bytes(50 << 20), 1))
    lengths = tmp_path / "lengths.json"
    lengths.write_text("[" + "60," * (5 << 20) + "60]")
    cases = [
        (["trace", "--frame", "/dev/zero"], "not a regular file"),
        (["layout", "sk_buff", "--btf", str(sparse)], "not BTF at byte 0"),
        (["layout", "sk_buff", "--btf", str(bomb)], "holds neither a 64-bit little-endian ELF"),
        # e_shoff 0: no section headers, nothing more decompressed
        (["layout", "sk_buff", "--btf", str(elf)], "an ELF file without section headers"),
        (["replay", "--from", str(lengths), "--summary"], "more than 800,001 JSON values"),
    ]
    for args, message in cases:
        rss, done = max_rss_mb(*args)
        assert done.returncode in (1, 2), (args, done.stderr)
        assert message in _one_error(done.stderr), args
        assert rss < 100, (args, rss)


def test_a_json_document_of_many_frames_is_written_as_they_go() -> None:
    """replay --json of 3,000 traced frames: the document is ~30 MB, its memory is not (as one
    dict it was ~230 MB, and 7.3 GiB for 100,000 frames)."""
    rss, done = max_rss_mb("replay", "--len", "60x3000", "--json")
    assert done.returncode == 0 and rss < 100, rss


# --- JSON: deep, wide, huge -----------------------------------------------------------------

@pytest.mark.parametrize(("text", "message"), [
    ("[" * 100_000, "nested too deeply"),
    ("[" + "[]," * 900_000 + "[]]", "more than 800,001 JSON values"),
    ("[" + '{"len": 60},' * 450_000 + '{"len": 60}]', "more than 800,001 JSON values"),
    ("[" + "60," * 100_000 + "60]", "more than 100000 frames"),
    ('[{"len": 60}' + ', {"len": 60}' * 100_000 + "]", "more than 100000 frames"),
])
def test_replay_json_bounds(runner: CliRunner, tmp_path: Path, text: str,
                            message: str) -> None:
    """Deep, wide and many-framed JSON: one line, before the frames are built."""
    path = tmp_path / "frames.json"
    path.write_text(text)
    result = runner.invoke(cli, ["replay", "--from", str(path), "--summary"])
    assert result.exit_code == 2
    assert message in _one_error(result.stderr)


def test_replay_text_past_16_mib_is_refused_unread(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    with path.open("wb") as fh:
        fh.truncate((16 << 20) + 1)
    result = runner.invoke(cli, ["replay", "--from", str(path), "--summary"])
    assert result.exit_code == 2
    assert "is more than 16 MiB of text" in _one_error(result.stderr)
    path.write_bytes(b"60 " * 100)  # 16 MiB and less: read
    assert runner.invoke(cli, ["replay", "--from", str(path), "--summary"]).exit_code == 0


@pytest.mark.parametrize(("text", "message"), [
    ("[" * 100_000, "nested too deeply"),
    ("[" + "0," * 600_000 + "0]", "more than 500,000 JSON values"),
])
def test_trace_load_json_bounds(runner: CliRunner, tmp_path: Path, text: str,
                                message: str) -> None:
    path = tmp_path / "trace.json"
    path.write_text(text)
    result = runner.invoke(cli, ["trace", "--load", str(path)])
    assert result.exit_code == 2
    assert message in _one_error(result.stderr)


def test_a_live_feed_gets_each_row_as_its_frame_arrives() -> None:
    """`tcpdump -U -w - | vnetrx replay --from - --jsonl`: a frame's row is written before the
    next frame arrives (issue 28: rows piled up until 256, and the first read waited for more
    input than the pipe held)."""
    import select

    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)

    def record(n: int) -> bytes:
        return struct.pack("<IIII", 0, 0, n, n) + bytes(n)

    proc = subprocess.Popen([sys.executable, "-m", "vnetrx", "replay", "--from", "-", "--jsonl"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        rows = []
        for n, data in ((100, header + record(100)), (1000, record(1000))):
            proc.stdin.write(data)
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, f"no row for the {n}-byte frame while the feed stays open"
            rows.append(json.loads(proc.stdout.readline()))
        assert [r["frame_len"] for r in rows] == [100, 1000]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0


def test_a_live_feed_gets_each_gro_row_before_the_next_frame_arrives() -> None:
    """`... | vnetrx replay --from - --gro --jsonl` (batches of one frame: a poll a frame): the
    skb GRO delivers at the end of a frame's poll is written before the next frame arrives
    (it waited for the next frame's record before)."""
    import select

    from vnetrx.packet import build_frame

    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    frame = build_frame(1514, "tcp4", 12)
    record = struct.pack("<IIII", 0, 0, len(frame), len(frame)) + frame
    proc = subprocess.Popen([sys.executable, "-m", "vnetrx", "replay", "--from", "-", "--gro",
                             "--mergeable", "--jsonl"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        rows = []
        for n, data in ((0, header + record), (1, record)):
            proc.stdin.write(data)
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, f"no row for frame {n} while the feed stays open"
            rows.append(json.loads(proc.stdout.readline()))
        assert [(r["poll"], r["frames"]) for r in rows] == [(1, [0]), (2, [1])]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0
