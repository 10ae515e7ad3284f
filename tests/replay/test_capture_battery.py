"""A battery that damaged captures cannot come back through (issue 29): every field of a small
valid pcap and pcapng mutated, and each file cut at every offset. Whatever the damage, the
reader yields whole frames and then ends or raises an InputError (never another exception); a
cut capture yields every record that is whole before the cut, then a DamagedInput (exit 1)
naming the cut's byte offset. Where tcpdump is installed, a deterministic sample is also read
by tcpdump 4.99.3 (libpcap 1.10.3): a file it refuses is never read as whole, and a cut file
gives the packets it prints."""

from __future__ import annotations

import io
import mmap
import random
import re
import shutil
import struct
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vnetrx.errors import DamagedInput, InputError
from vnetrx.packet import KEY_SHIFT, TRANSPORT_HEAD, build_frame, transport_key
from vnetrx.replay.capture import SeeCall, read_capture, read_keyed, read_lengths

SHB, IDB, EPB, SPB, OPB, ISB = 0x0A0D0D0A, 1, 6, 3, 2, 5


def block(order: str, kind: int, body: bytes) -> bytes:
    body += bytes(-len(body) % 4)
    total = 12 + len(body)
    return struct.pack(order + "II", kind, total) + body + struct.pack(order + "I", total)


def pcap(order: str) -> tuple[bytes, list[int]]:
    """Three records (captured 60, 42, 70 of 70, 52, 80 bytes); the file, and the offset at
    which each record ends (the file header ends at 24)."""
    out = struct.pack(order + "IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    ends = []
    for n in (60, 42, 70):
        out += struct.pack(order + "IIII", 1, 2, n, n + 10) + bytes(range(n))
        ends.append(len(out))
    return out, ends


def pcapng(order: str) -> tuple[bytes, list[int]]:
    """A section, an interface (snaplen 128, an if_tsresol option, opt_endofopt), then an
    EPB, a statistics block, an SPB, an obsolete Packet Block and an EPB; the file, and the
    offset at which each block after the interface's ends (a packet's, or the statistics
    block's, which holds none: negative)."""
    out = block(order, SHB, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(order, IDB, struct.pack(order + "HHI", 1, 0, 128)
                 + struct.pack(order + "HHB3x", 9, 1, 6) + struct.pack(order + "HH", 0, 0))
    ends = []
    for kind, body in [
        (EPB, struct.pack(order + "IIIII", 0, 0, 0, 60, 60) + bytes(60)),
        (ISB, bytes(8)),
        (SPB, struct.pack(order + "I", 100) + bytes(100)),
        (OPB, struct.pack(order + "HHIIII", 0, 0, 0, 0, 50, 50) + bytes(50)),
        (EPB, struct.pack(order + "IIIII", 0, 0, 0, 30, 64) + bytes(30)),
    ]:
        out += block(order, kind, body)
        ends.append(len(out) if kind != ISB else -len(out))
    return out, ends


BASES = {f"{kind}{order}": (pcap if kind == "pcap" else pcapng)(order)
         for kind in ("pcap", "pcapng") for order in "<>"}
WORDS = (0, 1, 4, 12, 16, 28, 0xFFFF, 262144, 262145, 0x7FFFFFFF, 0xFFFFFFFF)


def mutants(data: bytes) -> Iterator[tuple[str, bytes]]:
    """Every 32-bit word set to edge values and to itself +-1, +-4; every byte 0, 0xff and
    with its low bit flipped."""
    for at in range(0, len(data) - 3, 4):
        (word,) = struct.unpack_from("<I", data, at)
        for new in (*WORDS, word + 1, word - 1, word + 4, word - 4, word ^ 0x80000000):
            yield f"word {at} = {new & 0xFFFFFFFF:#x}", (
                data[:at] + struct.pack("<I", new & 0xFFFFFFFF) + data[at + 4:])
    for at in range(len(data)):
        for new in (0, 0xFF, data[at] ^ 1):
            yield f"byte {at} = {new:#x}", data[:at] + bytes([new]) + data[at + 1:]


def read(data: bytes) -> tuple[int, InputError | None]:
    """Frames read, and the error that ended the reading (None: it ended cleanly). Any other
    exception fails the test that calls this."""
    frames = 0
    try:
        for _ in read_capture(io.BytesIO(data), "f"):
            frames += 1
    except InputError as exc:
        assert "\n" not in exc.message  # noqa: PT017  (one line, for every mutant)
        return frames, exc
    return frames, None


@pytest.mark.parametrize("base", sorted(BASES))
def test_every_cut_gives_the_whole_records_before_it(base: str) -> None:
    """Cut at every offset after the file header (pcapng: and the interface): the records
    that end at or before the cut are read; a cut between records ends the file cleanly, a
    cut inside one is a DamagedInput (exit 1) that counts them and names where the record
    it cut begins."""
    data, ends = BASES[base]
    header = 24 if base.startswith("pcap") and not base.startswith("pcapng") else 60
    bounds = [header, *map(abs, ends)]
    for cut in range(header, len(data) + 1):
        frames, error = read(data[:cut])
        whole = sum(1 for end in ends if 0 < end <= cut)
        assert frames == whole, (base, cut)
        if cut in bounds:
            assert error is None, (base, cut, error)
            continue
        assert isinstance(error, DamagedInput), (base, cut, error)
        assert error.exit_code == 1 and error.read == whole
        assert f"at byte {max(b for b in bounds if b <= cut)}" in error.message, error.message


@pytest.mark.parametrize("base", sorted(BASES))
def test_every_cut_inside_the_file_header_is_refused(base: str) -> None:
    data, _ = BASES[base]
    for cut in range(0, 24 if base[4] != "n" else 60):
        frames, error = read(data[:cut])
        assert frames == 0 and error is not None, (base, cut)


@pytest.mark.parametrize("base", sorted(BASES))
def test_mutants_never_crash(base: str) -> None:
    """Every mutant (about 2,000 per file) is read to its end or refused with an InputError;
    read() lets any other exception through."""
    data, ends = BASES[base]
    count = 0
    for _name, mutant in mutants(data):
        frames, error = read(mutant)
        assert frames <= len(ends) or error is None  # damage: what was read before it
        count += 1
    assert count > 1500


# --- what tcpdump does with the same files ------------------------------------------------

# Each found by the battery against tcpdump 4.99.3 (libpcap 1.10.3); its message quoted.
def _epb(order: str, caplen: int, length: int, room: int) -> bytes:
    return block(order, EPB, struct.pack(order + "IIIII", 0, 0, 0, caplen, length)
                 + bytes(room))


def _ng(*blocks: bytes, snaplen: int = 128, order: str = "<") -> bytes:
    return (block(order, SHB, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))
            + block(order, IDB, struct.pack(order + "HHI", 1, 0, snaplen)) + b"".join(blocks))


def _with_trailer(data: bytes, trailer: int) -> bytes:
    return data[:-4] + struct.pack("<I", trailer)


REFUSED = [
    # "block total length in header 92 and trailer 96 don't match"
    ("trailer", _ng(_epb("<", 60, 60, 60), _with_trailer(_epb("<", 60, 60, 60), 96)), 1,
     "total length is 92 in its header and 96 in its trailer"),
    # "block of type 6 in pcapng dump file is too short" (caplen 120 in a 92-byte block)
    ("caplen past its block", _ng(_epb("<", 60, 60, 60), _epb("<", 120, 120, 60)), 1,
     "a packet of 120 captured bytes in a block that holds 60"),
    # "invalid packet capture length 100, bigger than snaplen of 64" (an SPB of a 100-byte
    # frame holds min(100, snaplen 64) bytes: its block has room for them, not more)
    ("SPB past the snaplen", _ng(_epb("<", 60, 60, 60), block("<", SPB, struct.pack(
        "<I", 100) + bytes(60)), snaplen=64), 1, "a packet of 64 captured bytes in a block"),
    # "invalid packet capture length 129, bigger than snaplen of 128"
    ("EPB past the snaplen", _ng(_epb("<", 129, 129, 132)), 0,
     "a packet of 129 captured bytes, more than the snaplen \\(128\\)"),
    # "a packet arrived on interface 1, but there's no Interface Description Block for that
    # interface"
    ("undescribed interface", _ng(block("<", EPB, struct.pack("<IIIII", 1, 0, 0, 4, 4)
                                        + bytes(4))), 0, "on interface 1, which is not described"),
    # "the capture file has no Interface Description Blocks"
    ("no interface", _ng()[:28], 0, "no Interface Description Block"),
    # "unsupported pcap savefile version 2.5"
    ("pcap 2.5", struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 5, 0, 0, 65535, 1), 0,
     "pcap version 2.5"),
    # "truncated dump file; tried to read 60 captured bytes, only got 50"
    ("cut pcap", BASES["pcap<"][0][:-10], 2, "cut inside record 2 at byte 158"),
]


@pytest.mark.parametrize(("what", "data", "frames", "message"), REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_what_tcpdump_refuses_is_refused(tmp_path: Path, what: str, data: bytes, frames: int,
                                         message: str) -> None:
    got, error = read(data)
    assert got == frames and error is not None
    assert re.search(message, error.message), error.message
    if shutil.which("tcpdump"):
        printed, code = tcpdump(tmp_path, data)
        assert code == 1 and printed == frames


def tcpdump(tmp_path: Path, data: bytes) -> tuple[int, int]:
    """(packets tcpdump -r passes on, its exit status): it writes them to a pcap, counted."""
    src, out = tmp_path / "in", tmp_path / "out.pcap"
    src.write_bytes(data)
    out.unlink(missing_ok=True)
    done = subprocess.run(["tcpdump", "-r", str(src), "-w", str(out)], capture_output=True,
                          timeout=30)
    packets = 0
    if out.exists():
        written = out.read_bytes()
        at = 24
        while at + 16 <= len(written):
            at += 16 + struct.unpack_from("<I", written, at + 8)[0]
            packets += 1
    return packets, done.returncode


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed")
@pytest.mark.parametrize("base", sorted(BASES))
def test_a_sample_against_tcpdump(tmp_path: Path, base: str) -> None:
    """60 mutants and 15 cuts of each file (a fixed sample): what tcpdump refuses, vnetrx
    never reads as whole; a cut file gives the packets tcpdump gives."""
    data, _ = BASES[base]
    every = list(mutants(data))
    sample = random.Random(29).sample(every, 60)
    cuts = random.Random(28).sample(range(len(data)), 15)
    sample += [(f"cut {cut}", data[:cut]) for cut in cuts]
    for name, mutant in sample:
        frames, error = read(mutant)
        printed, code = tcpdump(tmp_path, mutant)
        if code != 0:
            assert error is not None, f"{base} {name}: tcpdump refuses it, vnetrx read it"
        if name.startswith("cut"):
            assert frames == printed, f"{base} {name}"


# --- read_lengths: the lengths alone, in lists, exactly as read_capture gives them -----------


def lengths_and_error(read: Callable[..., Iterator[Any]], capture: bytes, **options: Any
                      ) -> tuple[list[int], str | None]:
    got: list[int] = []
    try:
        for item in read(io.BytesIO(capture), "f", **options):
            got.extend(item if isinstance(item, list) else [item.length])
    except InputError as exc:
        return got, f"{type(exc).__name__}: {exc.message}"
    return got, None


@pytest.mark.parametrize("base", sorted(BASES))
def test_read_lengths_agrees_with_read_capture_on_every_cut_and_mutant(base: str) -> None:
    """The same lengths and the same error (class and words) as read_capture(data=False), for
    every cut and every mutant of each file: the pcap fast path parses the records itself."""
    data, _ = BASES[base]
    variants = [data[:cut] for cut in range(len(data) + 1)] + [m for _, m in mutants(data)]
    for variant in variants:
        want = lengths_and_error(read_capture, variant, data=False)
        assert lengths_and_error(read_lengths, variant) == want


# --- read_keyed: lengths with their transport keys, in lists, as read_capture's frames give ---


def _tagged(frame: bytes) -> bytes:
    """The frame with an 802.1Q tag (VLAN 5) after its MAC addresses."""
    return frame[:12] + struct.pack("!HH", 0x8100, 5) + frame[12:]


def _tcp_capture(order: str = "<") -> bytes:
    """Frames whose keys differ, most cut by a snaplen: TCP/IPv4 with options, UDP/IPv6, a
    tagged TCP frame, one cut inside its TCP header (caplen 40 of 1514: no key) and one past it
    (caplen 60), a TCP/IPv6 frame of more than TRANSPORT_HEAD bytes and a frame of no IP."""
    frames = [(build_frame(1514, "tcp4", 12)[:100], 1514), (build_frame(200, "udp6"), 200),
              (_tagged(build_frame(9014, "tcp4"))[:300], 9018),
              (build_frame(1514, "tcp4")[:40], 1514), (build_frame(1514, "tcp4")[:60], 1514),
              (build_frame(3014, "tcp6", 40)[:300], 3014), (bytes(range(70)), 80)]
    out = struct.pack(order + "IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for data, length in frames:
        out += struct.pack(order + "IIII", 1, 2, len(data), length) + data
    return out


def test_read_keyed_keys_are_the_documented_encoding() -> None:
    """transport_key's encoding (l4 code in bits 0-2, network offset 3-7, transport header
    length 8-13, its offset from 14) of each frame, above its wire length."""
    got = [k for keyed in read_keyed(io.BytesIO(_tcp_capture()), "f") for k in keyed]
    tcp4 = (14 + 20) << 14 | 32 << 8 | 14 << 3 | 1  # 12 option bytes: a 32-byte TCP header
    udp6 = (14 + 40) << 14 | 8 << 8 | 14 << 3 | 4
    tagged = (18 + 20) << 14 | 20 << 8 | 18 << 3 | 1
    tcp4_plain = 34 << 14 | 20 << 8 | 14 << 3 | 1
    tcp6 = 54 << 14 | 60 << 8 | 14 << 3 | 2
    assert got == [tcp4 << KEY_SHIFT | 1514, udp6 << KEY_SHIFT | 200,
                   tagged << KEY_SHIFT | 9018, 1514, tcp4_plain << KEY_SHIFT | 1514,
                   tcp6 << KEY_SHIFT | 3014, 80]


def keyed_and_error(capture: bytes, path: Path | None = None
                    ) -> tuple[list[int], str | None]:
    got: list[int] = []
    try:
        if path is None:
            for keyed in read_keyed(io.BytesIO(capture), "f"):
                got.extend(keyed)
        else:  # a file: the mapped reader (slices of it are bytes)
            path.write_bytes(capture)
            with path.open("rb") as stream:
                for keyed in read_keyed(stream, "f"):
                    got.extend(keyed)
    except InputError as exc:
        return got, f"{type(exc).__name__}: {exc.message}"
    return got, None


def frames_keyed_and_error(capture: bytes) -> tuple[list[int], str | None]:
    got: list[int] = []
    try:
        # (extend keeps what was appended before an error)
        got.extend(transport_key(bytes(frame.data)) << KEY_SHIFT | frame.length
                   for frame in read_capture(io.BytesIO(capture), "f", head=TRANSPORT_HEAD))
    except InputError as exc:
        return got, f"{type(exc).__name__}: {exc.message}"
    return got, None


@pytest.mark.parametrize("order", ["<", ">"])
def test_read_keyed_agrees_with_read_capture_on_every_cut_and_mutant(order: str,
                                                                     tmp_path: Path) -> None:
    """The same keys, lengths and error as the frames read_capture gives, for every cut and
    mutant of a capture of TCP/UDP frames; read from a file too (mapped) at every 97th cut."""
    data = _tcp_capture(order)
    variants = [data[:cut] for cut in range(len(data) + 1)] + [m for _, m in mutants(data)]
    for number, variant in enumerate(variants):
        want = frames_keyed_and_error(variant)
        assert keyed_and_error(variant) == want
        if number % 97 == 0:
            assert keyed_and_error(variant, tmp_path / "c.pcap") == want


@pytest.mark.parametrize("base", sorted(BASES))
def test_read_keyed_of_other_captures_agrees_with_read_capture(base: str) -> None:
    """pcapng and the other bases (one frame per list): the same as read_capture's frames."""
    data, _ = BASES[base]
    for variant in [data[:cut] for cut in range(0, len(data) + 1, 7)] + [data]:
        assert keyed_and_error(variant) == frames_keyed_and_error(variant)


@pytest.mark.parametrize("base", sorted(BASES))
def test_read_lengths_shows_each_frame_to_see_as_read_capture_gives_it(base: str) -> None:
    """``see`` gets every frame's index, length and captured bytes, in order, as read_capture
    gives them; an InputError it raises ends the lengths after the frames before it (those are
    handed on first, as the frames before a damaged record are)."""
    data, _ = BASES[base]
    want = [(i, f.length, bytes(f.data)) for i, f in enumerate(read_capture(io.BytesIO(data),
                                                                             "f"))]
    seen: list[tuple[int, int, bytes]] = []

    def keep(index: int, length: int, buf: bytes | bytearray | memoryview | mmap.mmap,
             start: int, end: int) -> None:
        seen.append((index, length, bytes(buf[start:end])))

    def refuse_the_second(index: int, length: int,
                          buf: bytes | bytearray | memoryview | mmap.mmap, start: int,
                          end: int) -> None:
        if index == 1:
            raise InputError(f"frame {index} refused")

    lengths = [n for batch in read_lengths(io.BytesIO(data), "f", see=SeeCall(keep))
               for n in batch]
    assert seen == want and lengths == [n for _, n, _ in want]

    got, error = lengths_and_error(read_lengths, data, see=SeeCall(refuse_the_second))
    assert (got, error) == ([want[0][1]], "InputError: frame 1 refused")
