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
from typing import BinaryIO

from vnetrx.errors import InputError
from vnetrx.records import NamedTuple

LINKTYPE_ETHERNET = 1
PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": "<",  # microseconds, little-endian
    b"\xa1\xb2\xc3\xd4": ">",
    b"\x4d\x3c\xb2\xa1": "<",  # nanoseconds
    b"\xa1\xb2\x3c\x4d": ">",
}
PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
MAGICS = (*PCAP_MAGICS, PCAPNG_SHB)


class Frame(NamedTuple):
    length: int  # on the wire
    data: bytes  # what the capture holds of it (all of it unless the snaplen cut it)


def is_capture(head: bytes) -> bool:
    return head[:4] in MAGICS


def read_capture(stream: BinaryIO, name: str, data: bool = True) -> Iterator[Frame]:
    """The frames of a pcap or pcapng capture, in order, as they are read (``data`` False:
    their lengths only, the bytes left out)."""
    magic = _read(stream, 4, name, "the file header")
    if magic in PCAP_MAGICS:
        yield from _pcap(stream, name, PCAP_MAGICS[magic], data)
    elif magic == PCAPNG_SHB:
        yield from _pcapng(stream, name)
    else:
        raise InputError(f"{name} is not a pcap or pcapng capture")


def _read(stream: BinaryIO, size: int, name: str, what: str) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise InputError(f"{name}: unreadable capture (it ends inside {what})")
    return data


def _ethernet(name: str, link: int) -> None:
    if link != LINKTYPE_ETHERNET:
        raise InputError(
            f"{name}: link type {link}, not Ethernet (1): its lengths are not Ethernet frames"
        )


CHUNK = 1 << 20  # bytes read at a time
# libpcap's MAXIMUM_SNAPLEN: tcpdump 4.99.3 (libpcap 1.10.3) reads a record of 262144 captured
# bytes and refuses one of 262145 ("invalid packet capture length"); so does vnetrx, which
# also keeps every record within one read buffer
MAX_CAPLEN = 262144


def _pcap(stream: BinaryIO, name: str, order: str, data: bool) -> Iterator[Frame]:
    """Records parsed out of large reads into one buffer, reused: a read per record, or a new
    1 MiB bytes object per read (each a fresh allocation the kernel faults in), cost more than
    the parsing (~1 us a frame of mixed lengths)."""
    header = _read(stream, 20, name, "the file header")
    _major, _minor, _zone, _sigfigs, _snaplen, link = struct.unpack(order + "HHiIII", header)
    _ethernet(name, link & 0x0FFFFFFF)  # the top bits may carry FCS flags
    unpack = struct.Struct(order + "8xII").unpack_from
    # readinto1 takes what a pipe holds now: a live `tcpdump -U -w - |` feed is replayed as it
    # arrives rather than in 1 MiB steps (and a signal ends it at the next frame)
    # (every binary stream has readinto; typing.BinaryIO does not declare it)
    readinto = getattr(stream, "readinto1", None) or stream.readinto  # type: ignore[attr-defined]
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    end = pos = index = 0
    while True:
        if end - pos >= 16:
            caplen, length = unpack(buf, pos)
            if caplen > MAX_CAPLEN:
                raise InputError(f"{name}: record {index} holds {caplen} captured bytes, more "
                                 f"than a pcap record can ({MAX_CAPLEN})")
            start = pos + 16
            if start + caplen <= end:
                pos = start + caplen
                yield Frame(length, bytes(view[start:pos]) if data else b"")
                index += 1
                continue
        rest = end - pos
        buf[:rest] = buf[pos:end]  # the record begun so far, to the front
        got = readinto(view[rest:])
        if not got:
            if rest:
                raise InputError(f"{name}: unreadable capture (it ends inside record {index})")
            return
        end, pos = rest + got, 0


def _pcapng(stream: BinaryIO, name: str) -> Iterator[Frame]:
    order = "<"
    links: list[tuple[int, int]] = []  # (link type, snaplen) per interface of this section
    block_type = PCAPNG_SHB
    index = 0
    while True:
        if block_type == PCAPNG_SHB:
            raw_len = _read(stream, 4, name, "a section header")
            bom = _read(stream, 4, name, "a section header")
            order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">" if bom == b"\x1a\x2b\x3c\x4d" else ""
            if not order:
                raise InputError(f"{name}: unreadable capture (bad pcapng byte-order magic)")
            (total,) = struct.unpack(order + "I", raw_len)
            _read(stream, total - 12, name, "a section header")
            links = []
        else:
            (total,) = struct.unpack(order + "I", _read(stream, 4, name, "a block"))
            if total < 12 or total % 4:
                raise InputError(f"{name}: unreadable capture (a block of {total} bytes)")
            body = _read(stream, total - 8, name, "a block")
            kind = struct.unpack(order + "I", block_type)[0]
            if kind == 1:  # Interface Description Block
                link, _reserved, snaplen = struct.unpack_from(order + "HHI", body)
                links.append((link, snaplen))
            elif kind in (6, 3, 2):
                frame = _packet(kind, body, order, links, name, index)
                yield frame
                index += 1
        block_type = stream.read(4)
        if not block_type:
            return
        if len(block_type) != 4:
            raise InputError(f"{name}: unreadable capture (it ends inside a block)")


def _packet(kind: int, body: bytes, order: str, links: list[tuple[int, int]], name: str,
            index: int) -> Frame:
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
    _ethernet(name, links[iface][0])
    return Frame(length, body[start : start + caplen])
