"""pcap and pcapng captures, read as a stream: one frame at a time from a file or a pipe
(``tcpdump -w - | vnetrx replay --from -``), in constant memory. Stdlib only.

The length of a frame is its length on the wire (pcap ``orig_len``, pcapng EPB ``original
length``), so a capture taken with a short snaplen (``tcpdump -s 128``) still gives every
frame's true length; the captured bytes (a prefix of the frame) are what header parsing sees.
Formats: pcap (microsecond and nanosecond, either byte order) and pcapng (Section Header,
Interface Description, Enhanced, Simple and the obsolete Packet blocks; others skipped).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO, Final

from vnetrx.errors import InputError
from vnetrx.values import Value

LINKTYPE_ETHERNET = 1
PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": "<",  # microseconds, little-endian
    b"\xa1\xb2\xc3\xd4": ">",
    b"\x4d\x3c\xb2\xa1": "<",  # nanoseconds
    b"\xa1\xb2\x3c\x4d": ">",
}
PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
MAGICS = (*PCAP_MAGICS, PCAPNG_SHB)


class Frame(Value):
    """One captured frame. Immutable; a plain class, not a record, as PostedBuffer is (one is
    made per frame a capture holds)."""

    __slots__ = ("data", "length")

    def __init__(self, length: int, data: bytes) -> None:
        self.length: Final = length  # on the wire
        self.data: Final = data  # what the capture holds of it (all unless the snaplen cut it)

    def _values(self) -> tuple[object, ...]:
        return (self.length, self.data)

    def __repr__(self) -> str:
        return f"Frame(length={self.length}, data={self.data!r})"


def is_capture(head: bytes) -> bool:
    return head[:4] in MAGICS


def read_capture(stream: BinaryIO, name: str, data: bool = True) -> Iterator[Frame]:
    """The frames of a pcap or pcapng capture, in order, as they are read (``data`` False:
    their lengths only, the bytes left out)."""
    reads = _Reads(stream)
    if not reads.fill(4):
        raise InputError(f"{name}: unreadable capture (it ends inside the file header)")
    magic = bytes(reads.view[:4])
    if magic in PCAP_MAGICS:
        yield from _pcap(reads, name, PCAP_MAGICS[magic], data)
    elif magic == PCAPNG_SHB:
        yield from _pcapng(reads, name, data)
    else:
        raise InputError(f"{name} is not a pcap or pcapng capture")


CHUNK = 1 << 20  # bytes read at a time
# libpcap's limits (tcpdump 4.99.3, libpcap 1.10.3, refuse one byte more: "invalid packet
# capture length 262145", "pcapng block size 20971532 > maximum 16777216"); vnetrx refuses
# the same, which also bounds its read buffer
MAX_CAPLEN = 262144
MAX_PCAPNG_BLOCK = 16 << 20


class _Reads:
    """A capture read in large steps into one buffer, reused: a read per record, or a new
    1 MiB bytes object per read (a fresh allocation the kernel faults in), costs more than the
    parsing (~1 us a frame of mixed lengths). ``buf[pos:end]``: read but not yet parsed."""

    __slots__ = ("buf", "end", "pos", "readinto", "view")

    def __init__(self, stream: BinaryIO) -> None:
        # readinto1 takes what a pipe holds now: a live `tcpdump -U -w - |` feed is replayed as
        # it arrives rather than in 1 MiB steps (and a signal ends it at the next frame). Every
        # binary stream has readinto; typing.BinaryIO does not declare it.
        self.readinto = getattr(stream, "readinto1", None) or stream.readinto  # type: ignore[attr-defined]
        self.buf = bytearray(CHUNK)
        self.view = memoryview(self.buf)
        self.pos = self.end = 0

    def fill(self, need: int) -> bool:
        """At least ``need`` unparsed bytes (the buffer grows for a record larger than it);
        False when the capture ends first."""
        while self.end - self.pos < need:
            rest = self.end - self.pos
            if need > len(self.buf):
                self.view.release()
                self.buf = self.buf[self.pos:self.end] + bytearray(need - rest)
                self.view = memoryview(self.buf)
            else:
                self.buf[:rest] = self.buf[self.pos:self.end]  # what is begun, to the front
            self.pos, self.end = 0, rest
            got = self.readinto(self.view[rest:])
            if not got:
                return False
            self.end = rest + got
        return True


def _ethernet(name: str, link: int) -> None:
    if link != LINKTYPE_ETHERNET:
        raise InputError(
            f"{name}: link type {link}, not Ethernet (1): its lengths are not Ethernet frames"
        )


def _pcap(reads: _Reads, name: str, order: str, data: bool) -> Iterator[Frame]:
    if not reads.fill(24):
        raise InputError(f"{name}: unreadable capture (it ends inside the file header)")
    link = struct.unpack_from(order + "I", reads.buf, reads.pos + 20)[0]
    _ethernet(name, link & 0x0FFFFFFF)  # the top bits may carry FCS flags
    reads.pos += 24
    unpack = struct.Struct(order + "8xII").unpack_from
    index = 0
    while True:
        # the records wholly read, parsed with the buffer's fields in locals
        buf, view, pos, end = reads.buf, reads.view, reads.pos, reads.end
        need = 16
        while end - pos >= 16:
            caplen, length = unpack(buf, pos)
            if caplen > MAX_CAPLEN:
                raise InputError(f"{name}: record {index} holds {caplen} captured bytes, more "
                                 f"than a pcap record can ({MAX_CAPLEN})")
            start = pos + 16
            if start + caplen > end:
                need = 16 + caplen
                break
            pos = start + caplen
            yield Frame(length, bytes(view[start:pos]) if data else b"")
            index += 1
        reads.pos = pos
        if not reads.fill(need):
            if reads.end > reads.pos:
                raise InputError(f"{name}: unreadable capture (it ends inside record {index})")
            return


def _pcapng(reads: _Reads, name: str, data: bool) -> Iterator[Frame]:
    order = "<"
    links: list[tuple[int, int]] = []  # (link type, snaplen) per interface of this section
    index = 0
    while True:
        if not reads.fill(8):
            if reads.end > reads.pos:
                what = ("a section header" if reads.buf.startswith(PCAPNG_SHB, reads.pos)
                        else "a block")
                raise InputError(f"{name}: unreadable capture (it ends inside {what})")
            return
        at = reads.pos
        section = reads.buf.startswith(PCAPNG_SHB, at)
        if section:
            if not reads.fill(12):
                raise InputError(f"{name}: unreadable capture (it ends inside a section header)")
            at = reads.pos
            bom = reads.buf[at + 8:at + 12]
            order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">" if bom == b"\x1a\x2b\x3c\x4d" else ""
            if not order:
                raise InputError(f"{name}: unreadable capture (bad pcapng byte-order magic)")
            links = []
        kind, total = struct.unpack_from(order + "II", reads.buf, at)
        if total < 12 or total % 4:
            raise InputError(f"{name}: unreadable capture (a block of {total} bytes)")
        if total > MAX_PCAPNG_BLOCK:
            raise InputError(f"{name}: a block of {total} bytes, more than a pcapng block can "
                             f"({MAX_PCAPNG_BLOCK})")
        if not reads.fill(total):
            what = "a section header" if section else "a block"
            raise InputError(f"{name}: unreadable capture (it ends inside {what})")
        at = reads.pos
        body = reads.view[at + 8:at + total - 4]
        reads.pos = at + total
        if kind == 1:  # Interface Description Block
            link, _reserved, snaplen = struct.unpack_from(order + "HHI", body)
            links.append((link, snaplen))
        elif kind in (6, 3, 2):
            yield _packet(kind, body, order, links, name, index, data)
            index += 1


def _packet(kind: int, body: memoryview, order: str, links: list[tuple[int, int]], name: str,
            index: int, data: bool) -> Frame:
    if kind == 6:  # Enhanced Packet Block
        iface, _hi, _lo, caplen, length = struct.unpack_from(order + "IIIII", body)
        start = 20
    elif kind == 2:  # Packet Block (obsolete)
        iface, _drops, _hi, _lo, caplen, length = struct.unpack_from(order + "HHIIII", body)
        start = 20
    else:  # Simple Packet Block: interface 0, captured = min(length, snaplen)
        (length,) = struct.unpack_from(order + "I", body)
        iface, start = 0, 4
        snaplen = links[0][1] if links else 0
        caplen = min(length, snaplen) if snaplen else length
    if iface >= len(links):
        raise InputError(f"{name}: packet {index} names interface {iface}, which is not described")
    if caplen > MAX_CAPLEN:
        raise InputError(f"{name}: packet {index} holds {caplen} captured bytes, more than a "
                         f"pcap record can ({MAX_CAPLEN})")
    _ethernet(name, links[iface][0])
    return Frame(length, bytes(body[start:start + caplen]) if data else b"")
