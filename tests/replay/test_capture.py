"""vnetrx/replay/capture.py: pcap and pcapng read as a stream, lengths as on the wire."""

from __future__ import annotations

import io
import struct
from typing import Any

import pytest

from vnetrx.errors import InputError
from vnetrx.replay import capture
from vnetrx.replay.capture import (
    LENGTHS_BATCH,
    MAX_CAPLEN,
    MAX_PCAPNG_BLOCK,
    Cooked,
    read_capture,
    read_lengths,
)


def pcap(frames: list[tuple[int, int]], order: str = "<", link: int = 1, nano: bool = False
         ) -> bytes:
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, link)
    for caplen, length in frames:
        out += struct.pack(order + "IIII", 0, 0, caplen, length) + bytes(caplen)
    return out


def block(order: str, kind: int, body: bytes) -> bytes:
    body += bytes(-len(body) % 4)
    total = 12 + len(body)
    return struct.pack(order + "II", kind, total) + body + struct.pack(order + "I", total)


def pcapng(order: str = "<", link: int = 1) -> bytes:
    shb = block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    idb = block(order, 1, struct.pack(order + "HHI", link, 0, 128))
    epb = block(order, 6, struct.pack(order + "IIIII", 0, 0, 0, 60, 60) + bytes(60))
    cut = block(order, 6, struct.pack(order + "IIIII", 0, 0, 0, 128, 9014) + bytes(128))
    spb = block(order, 3, struct.pack(order + "I", 1514) + bytes(128))  # snaplen 128
    opb = block(order, 2, struct.pack(order + "HHIIII", 0, 0, 0, 0, 100, 100) + bytes(100))
    other = block(order, 5, bytes(8))  # an Interface Statistics Block: skipped
    return shb + idb + epb + other + cut + spb + opb


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("nano", [False, True])
def test_pcap_lengths_are_the_wire_lengths(order: str, nano: bool) -> None:
    data = pcap([(60, 60), (96, 1514), (96, 65535)], order, nano=nano)
    frames = list(read_capture(io.BytesIO(data), "f"))
    assert [f.length for f in frames] == [60, 1514, 65535]
    assert [len(f.data) for f in frames] == [60, 96, 96]


@pytest.mark.parametrize("order", ["<", ">"])
def test_pcapng_blocks(order: str) -> None:
    frames = list(read_capture(io.BytesIO(pcapng(order)), "f"))
    assert [(f.length, len(f.data)) for f in frames] == [(60, 60), (9014, 128), (1514, 128),
                                                         (100, 100)]


def test_records_spanning_reads() -> None:
    """Records are parsed out of 1 MiB reads: 200 frames of 9014 bytes cross several."""
    data = pcap([(9014, 9014)] * 200)
    assert sum(1 for _ in read_capture(io.BytesIO(data), "f")) == 200


class Trickle(io.RawIOBase):
    """A pipe that holds at most ``step`` bytes at a time (a live `tcpdump -U -w -`)."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.pos, self.step = data, 0, step

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        chunk = self.data[self.pos:self.pos + min(self.step, len(b))]
        b[:len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)


def on_disk(tmp_path: Any, data: bytes) -> Any:
    """``data`` as a regular file opened as ``--from`` opens one: read through mmap."""
    path = tmp_path / "capture.pcap"
    path.write_bytes(data)
    return path.open("rb")


@pytest.mark.parametrize("reader", ["file", "trickle", "buffered trickle", "mapped"])
def test_frames_keep_their_bytes(reader: str, tmp_path: Any) -> None:
    """Every frame's bytes are its own, also after later reads have reused the read buffer;
    records of up to libpcap's 262144 bytes, and reads that end anywhere in a record."""
    sizes = [60, 9014, 1514, MAX_CAPLEN, 66, *[MAX_CAPLEN - 1] * 5, 1, 200]
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, size in enumerate(sizes):
        out += struct.pack("<IIII", 0, 0, size, size) + bytes([i + 1]) * size
    stream: Any = (on_disk(tmp_path, out) if reader == "mapped" else
                   {"file": io.BytesIO(out), "trickle": Trickle(out, 997),
                    "buffered trickle": io.BufferedReader(Trickle(out, 4093))}[reader])
    frames = list(read_capture(stream, "f"))  # all read before any is looked at
    assert [f.length for f in frames] == sizes
    for i, (frame, size) in enumerate(zip(frames, sizes, strict=True)):
        assert frame.data == bytes([i + 1]) * size
    lengths = [f.length for f in read_capture(io.BytesIO(out), "f", data=False)]
    assert lengths == sizes


def pcapng_of(sizes: list[int], order: str = "<", extra: bytes = b"") -> bytes:
    """A pcapng whose Enhanced Packet Block i holds ``sizes[i]`` bytes of i + 1; ``extra``
    (blocks) after the Interface Description Block."""
    shb = block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    idb = block(order, 1, struct.pack(order + "HHI", 1, 0, 0))
    epbs = b"".join(block(order, 6, struct.pack(order + "IIIII", 0, 0, 0, size, size)
                          + bytes([i + 1]) * size) for i, size in enumerate(sizes))
    return shb + idb + extra + epbs


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("reader", ["file", "trickle", "mapped"])
def test_pcapng_frames_keep_their_bytes(order: str, reader: str, tmp_path: Any) -> None:
    """As for pcap: every frame's bytes its own, reads ending anywhere in a block, and a block
    (here a 2 MiB one vnetrx skips) larger than the 1 MiB read buffer."""
    sizes = [60, 9014, MAX_CAPLEN, 1, 1514]
    data = pcapng_of(sizes, order, extra=block(order, 0x0BAD, bytes(2 << 20)))
    stream: Any = (io.BytesIO(data) if reader == "file" else on_disk(tmp_path, data)
                   if reader == "mapped" else Trickle(data, 1021))
    frames = list(read_capture(stream, "f"))
    assert [f.length for f in frames] == sizes
    for i, (frame, size) in enumerate(zip(frames, sizes, strict=True)):
        assert frame.data == bytes([i + 1]) * size


def test_pcapng_blocks_up_to_libpcaps_maximum() -> None:
    """tcpdump 4.99.3 reads a 16 MiB block and refuses a larger one ("pcapng block size
    20971532 > maximum 16777216"); the next size a block can have is 16 MiB + 4."""
    fits = pcapng_of([60], extra=block("<", 0x0BAD, bytes(MAX_PCAPNG_BLOCK - 12)))
    assert [f.length for f in read_capture(io.BytesIO(fits), "f")] == [60]
    over = pcapng_of([60], extra=block("<", 0x0BAD, bytes(MAX_PCAPNG_BLOCK - 8)))
    with pytest.raises(InputError, match="a block of 16777220 bytes, more than a pcapng block"):
        list(read_capture(io.BytesIO(over), "f"))


@pytest.mark.parametrize(("data", "message"), [
    (pcap([(60, 60)], link=105), "link type 105, which vnetrx does not read"),  # 802.11
    (pcapng(link=105), "link type 105, which vnetrx does not read"),
    (pcap([(60, 60)])[:-10], "cut inside record 0 at byte 24"),
    (pcap([(60, 60)])[:20], "it ends inside the file header"),
    (pcap([(60, 60), (MAX_CAPLEN + 1, MAX_CAPLEN + 1)]),  # tcpdump: "invalid packet capture
     "record 1 \\(at byte 100\\) holds 262145 captured bytes, more than a pcap record can"),  # length 262145"
    (pcapng_of([60, MAX_CAPLEN + 1]), "a packet of 262145 captured bytes, more than the snaplen \\(262144\\)"),
    (pcapng()[:-6], "cut inside a block of 132 bytes at byte 464.*the 3 whole record"),
])
def test_broken_captures(data: bytes, message: str) -> None:
    with pytest.raises(InputError, match=message):
        list(read_capture(io.BytesIO(data), "f"))


def test_frames_compare_by_value() -> None:
    from vnetrx.replay.capture import Frame

    frames = list(read_capture(io.BytesIO(pcap([(4, 60)])), "f"))
    assert frames == [Frame(60, bytes(4), 0)] and hash(frames[0]) == hash(Frame(60, bytes(4), 0))
    assert frames[0] != Frame(60, bytes(3), 0) and frames[0] != Frame(61, bytes(4), 0)
    assert frames[0] != Frame(60, bytes(4), 1) and frames[0] != Frame(60, bytes(4))
    assert repr(frames[0]) == "Frame(length=60, data=b'\\x00\\x00\\x00\\x00', time=0)"


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize(("nano", "fraction", "ns"), [(False, 999_999, 999_999_000),
                                                      (True, 999_999_999, 999_999_999)])
def test_pcap_record_times_in_ns(order: str, nano: bool, fraction: int, ns: int) -> None:
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    data = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1)
    data += struct.pack(order + "IIII", 1_700_000_000, fraction, 60, 60) + bytes(60)
    (frame,) = read_capture(io.BytesIO(data), "f")
    assert frame.time == 1_700_000_000 * 10**9 + ns


def _idb(order: str, options: bytes) -> bytes:
    return block(order, 1, struct.pack(order + "HHI", 1, 0, 0) + options)


def _option(order: str, code: int, value: bytes) -> bytes:
    return struct.pack(order + "HH", code, len(value)) + value + bytes(-len(value) % 4)


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize(("options", "ticks", "ns"), [
    (b"", 1_500_000, 1_500_000_000),  # default: microseconds
    (b"\x09", 1_500_000_000, 1_500_000_000),  # if_tsresol 9: nanoseconds
    (b"\x03", 1500, 1_500_000_000),  # milliseconds
    (b"\x8a", 1024, 1_000_000_000),  # 2^-10 s
    (b"\x8a", 1, 976_562),  # 2^-10 s, rounded down to the ns
])
def test_pcapng_times_follow_if_tsresol(order: str, options: bytes, ticks: int,
                                        ns: int) -> None:
    shb = block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    opts = (_option(order, 9, options) if options else b"") + _option(order, 0, b"")
    epb = block(order, 6, struct.pack(order + "IIIII", 0, ticks >> 32, ticks & 0xFFFFFFFF, 60,
                                      60) + bytes(60))
    spb = block(order, 3, struct.pack(order + "I", 60) + bytes(60))
    frames = list(read_capture(io.BytesIO(shb + _idb(order, opts) + epb + spb), "f"))
    assert [f.time for f in frames] == [ns, None]  # a Simple Packet Block has no time


def test_pcapng_if_tsoffset_adds_seconds() -> None:
    shb = block("<", 0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    opts = _option("<", 14, struct.pack("<q", 100)) + _option("<", 0, b"")
    epb = block("<", 6, struct.pack("<IIIII", 0, 0, 7, 60, 60) + bytes(60))
    (frame,) = read_capture(io.BytesIO(shb + _idb("<", opts) + epb), "f")
    assert frame.time == 100 * 10**9 + 7000


# --- a regular file, read through mmap ------------------------------------------------------
def test_mapped_file_across_its_windows(tmp_path: Any) -> None:
    """A file of ~27 MB (three 8 MiB windows and more): every record whole, records that cross
    a window's end included, the same as reading it through a buffer."""
    sizes = [9014, 60, 1514, 4093, 262144] * 110
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, size in enumerate(sizes):
        out += struct.pack("<IIII", 0, 0, size, size) + bytes([i % 251]) * size
    assert len(out) > 3 * (8 << 20)
    with on_disk(tmp_path, out) as stream:
        got = [(f.length, f.data[:1], f.data[-1:]) for f in read_capture(stream, "f")]
    assert got == [(size, bytes([i % 251]), bytes([i % 251])) for i, size in enumerate(sizes)]
    with on_disk(tmp_path, out) as stream:
        assert [f.length for f in read_capture(stream, "f", data=False)] == sizes


def test_mapped_file_that_grows_is_read_to_its_new_end(tmp_path: Any) -> None:
    """A capture still being written (tcpdump -w FILE running): the records appended after the
    file was opened are read, as read() would reach them."""
    first = pcap([(100, 100)] * 3)
    path = tmp_path / "growing.pcap"
    path.write_bytes(first)
    with path.open("rb") as stream:
        frames = read_capture(stream, "f")
        assert next(frames).length == 100
        with path.open("ab") as writer:
            writer.write(struct.pack("<IIII", 0, 0, 1514, 1514) + bytes(1514))
        assert [f.length for f in frames] == [100, 100, 1514]


def test_mapped_file_cut_inside_a_record_names_the_file_offset(tmp_path: Any) -> None:
    """Damage in a mapped file: the whole records before it, then the error with the byte
    offset in the file (24-byte header, then records of 16 + 100 bytes)."""
    from vnetrx.errors import DamagedInput

    data = pcap([(100, 100)] * 3)[:-40]
    with on_disk(tmp_path, data) as stream:
        frames = read_capture(stream, "f")
        assert [next(frames).length for _ in range(2)] == [100, 100]
        with pytest.raises(DamagedInput, match=r"record 2 at byte 256 "):
            next(frames)


def test_mapped_file_read_from_where_the_stream_is(tmp_path: Any) -> None:
    """A stream already read past a prefix (peek does not move it) is read on from its
    position (through reads, not the mapping, which starts at the file's start)."""
    data = pcap([(60, 60), (70, 70)])
    path = tmp_path / "prefixed.bin"
    path.write_bytes(b"JUNK" * 3 + data)
    with path.open("rb") as stream:
        stream.read(12)
        assert [f.length for f in read_capture(stream, "f")] == [60, 70]


@pytest.mark.parametrize("kind", ["pcap", "pcapng", "mapped pcap"])
def test_head_keeps_the_first_bytes_of_each_frame(kind: str, tmp_path: Any) -> None:
    """``head``: a reader of headers gets each frame's first ``head`` bytes (all of a shorter
    one), the wire length unchanged."""
    sizes = [60, 99, 100, 101, 9014]
    if kind == "pcapng":
        data = pcapng_of(sizes)
    else:
        data = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + b"".join(
            struct.pack("<IIII", 0, 0, n, n) + bytes([i + 1]) * n for i, n in enumerate(sizes))
    stream: Any = on_disk(tmp_path, data) if kind == "mapped pcap" else io.BytesIO(data)
    frames = list(read_capture(stream, "f", head=100))
    assert [f.length for f in frames] == sizes
    assert [f.data for f in frames] == [bytes([i + 1]) * min(n, 100)
                                       for i, n in enumerate(sizes)]


def test_mapped_file_shortened_between_windows_ends_where_it_ends_now(tmp_path: Any) -> None:
    """The size is read again when the reader moves on to the next 8 MiB: a capture cut short
    meanwhile (inside record 127, the first past the first window) is damage at that record,
    as a reader through read() would find it, not a read past the end of the file."""
    from vnetrx.errors import DamagedInput

    size = 65536
    data = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + b"".join(
        struct.pack("<IIII", 0, 0, size, size) + bytes([i % 251]) * size for i in range(140))
    path = tmp_path / "shrinking.pcap"
    path.write_bytes(data)
    with path.open("rb") as stream:
        frames = read_capture(stream, "f")
        assert [next(frames).data[:1] for _ in range(127)][-1] == bytes([126])
        at = 24 + 127 * (16 + size)  # record 127 begins here, past the first window (8 MiB)
        assert at < 8 << 20 < at + 16 + size
        with path.open("r+b") as writer:
            writer.truncate(at + 100)
        with pytest.raises(DamagedInput, match=f"record 127 at byte {at} "):
            next(frames)


@pytest.mark.parametrize("kind", ["pcap", "pcapng", "mapped pcap", "trickle"])
def test_views_of_the_frames_read_at_once(kind: str, tmp_path: Any) -> None:
    """``copy`` False: each frame's bytes are a view of the reader's buffer, right when read
    at once (before the next frame is asked for), across refills of the buffer too."""
    sizes = [60, 9014, MAX_CAPLEN, 1, 1514] * 3
    if kind == "pcapng":
        data = pcapng_of(sizes)
    else:
        data = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + b"".join(
            struct.pack("<IIII", 0, 0, n, n) + bytes([i + 1]) * n for i, n in enumerate(sizes))
    stream: Any = (on_disk(tmp_path, data) if kind == "mapped pcap" else
                   Trickle(data, 1021) if kind == "trickle" else io.BytesIO(data))
    seen = []
    for frame in read_capture(stream, "f", copy=False):
        assert isinstance(frame.data, memoryview)
        seen.append((frame.length, frame.data.tobytes()))
    assert seen == [(n, bytes([i + 1]) * n) for i, n in enumerate(sizes)]


@pytest.mark.parametrize("order", ["<", ">"])
def test_read_lengths_hands_on_lists_of_at_most_a_batch(order: str) -> None:
    """2,500 records: the wire lengths in order, in lists of at most LENGTHS_BATCH (1,024),
    the first list as soon as its records are read."""
    wire = [60 + i % 1455 for i in range(2500)]
    data = pcap([(min(n, 96), n) for n in wire], order)
    lists = list(read_lengths(io.BytesIO(data), "f"))
    assert [n for batch in lists for n in batch] == wire
    assert max(map(len, lists)) == LENGTHS_BATCH == 1024
    assert len(lists) >= 3


def test_read_lengths_of_a_mapped_file_across_windows(tmp_path: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A regular file is mapped and parsed a window at a time (WINDOW bytes; 4 KiB here):
    records that straddle two windows are read whole, and the file's lengths come out as
    read_capture gives them."""
    monkeypatch.setattr(capture, "WINDOW", 4096)
    wire = [60 + (i * 37) % 3000 for i in range(400)]
    path = tmp_path / "w.pcap"
    path.write_bytes(pcap([(n, n) for n in wire]))
    with path.open("rb") as f:
        got = [n for batch in read_lengths(f, "w") for n in batch]
    assert got == wire


def test_read_lengths_of_a_cooked_capture_leaves_out_what_read_capture_does() -> None:
    """Not Ethernet (SLL2: tcpdump -i any): each packet through the cooked reader, one list
    per frame; outgoing packets are left out and counted."""
    sll2 = struct.pack(">HHIHBB8s", 0x0800, 0, 2, 1, 0, 6, bytes(8))
    out = struct.pack(">HHIHBB8s", 0x0800, 0, 2, 1, 4, 6, bytes(8))  # PACKET_OUTGOING
    data = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 276)
    for head, size in ((sll2, 40), (out, 40), (sll2, 100)):
        data += struct.pack("<IIII", 0, 0, len(head) + size, len(head) + size) + head + bytes(size)
    cooked = Cooked()
    assert list(read_lengths(io.BytesIO(data), "f", cooked)) == [[54], [114]]
    assert cooked.outgoing == 1
