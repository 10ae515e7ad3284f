"""pcap and pcapng captures, read as a stream: one frame at a time from a file or a pipe
(``tcpdump -w - | vnetrx replay --from -``), in constant memory. Stdlib only.

The length of a frame is its length on the wire (pcap ``orig_len``, pcapng EPB ``original
length``), so a capture taken with a short snaplen (``tcpdump -s 128``) still gives every
frame's true length; the captured bytes (a prefix of the frame) are what header parsing sees.
Formats: pcap (microsecond and nanosecond, either byte order) and pcapng (Section Header,
Interface Description, Enhanced, Simple and the obsolete Packet blocks; others skipped).

Link types: Ethernet; Linux cooked captures (``tcpdump -i any``: SLL, and SLL2 from libpcap
1.10), whose packets become the Ethernet frames a device would have received (the cooked
header's protocol as the EtherType, its address as the source MAC, a zero destination): packets
this host sent (PACKET_OUTGOING), packets of interfaces that are not Ethernet (lo) and, with an
interface index, other interfaces' packets are left out and counted (``Cooked``); raw IP
(LINKTYPE_RAW, _IPV4, _IPV6), each packet behind a 14-byte Ethernet header likewise.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from collections.abc import Callable, Iterator
from typing import BinaryIO, Final, cast

from vnetrx.errors import DamagedInput, InputError
from vnetrx.packet import KEY_SHIFT, TRANSPORT_HEAD, transport_key
from vnetrx.values import Value

LINKTYPE_ETHERNET: Final = 1
LINKTYPE_RAW: Final = 101
LINKTYPE_LINUX_SLL: Final = 113
LINKTYPE_IPV4: Final = 228
LINKTYPE_IPV6: Final = 229
LINKTYPE_LINUX_SLL2: Final = 276
LINK_TYPES: Final = {  # what vnetrx reads
    LINKTYPE_ETHERNET: "Ethernet (1)",
    LINKTYPE_LINUX_SLL: "Linux cooked SLL (113)",
    LINKTYPE_LINUX_SLL2: "Linux cooked SLL2 (276)",
    LINKTYPE_RAW: "raw IP (101)",
    LINKTYPE_IPV4: "raw IPv4 (228)",
    LINKTYPE_IPV6: "raw IPv6 (229)",
}
ETH_HLEN: Final = 14
PACKET_OUTGOING: Final = 4  # sll_pkttype: sent by this host (include/uapi/linux/if_packet.h)
ARPHRD_ETHER: Final = 1  # sll_hatype of an Ethernet device (lo: ARPHRD_LOOPBACK 772)
PCAP_MAGICS: Final = {
    b"\xd4\xc3\xb2\xa1": "<",  # microseconds, little-endian
    b"\xa1\xb2\xc3\xd4": ">",
    b"\x4d\x3c\xb2\xa1": "<",  # nanoseconds
    b"\xa1\xb2\x3c\x4d": ">",
}
PCAPNG_SHB: Final = b"\x0a\x0d\x0d\x0a"
MAGICS: Final = (*PCAP_MAGICS, PCAPNG_SHB)


class Frame(Value):
    """One captured frame. Immutable; a plain class, not a record, as PostedBuffer is (one is
    made per frame a capture holds)."""

    __slots__ = ("data", "length", "time")

    def __init__(self, length: int, data: bytes | memoryview, time: int | None = None
                 ) -> None:
        self.length: Final = length  # on the wire
        # what the capture holds of it (all unless the snaplen cut it): bytes, or a view into
        # the reader's buffer (read_capture's ``copy`` False), valid until the next frame
        self.data: Final = data
        # its record's time stamp in ns (pcap ts_sec/ts_usec or ts_nsec; pcapng EPB/PB in the
        # interface's if_tsresol units plus if_tsoffset); None: a Simple Packet Block has none,
        # and a pcap record read for its length alone (``data`` False) is not given one
        self.time: Final = time

    def _values(self) -> tuple[object, ...]:
        return (self.length, self.data, self.time)

    def __repr__(self) -> str:
        return f"Frame(length={self.length}, data={self.data!r}, time={self.time})"


def is_capture(head: bytes) -> bool:
    return head[:4] in MAGICS


class Cooked:
    """What reading a capture that is not Ethernet did: its link type and the packets it left
    out (filled in as the capture is read; the caller reports it)."""

    __slots__ = ("ifindex", "link", "not_ethernet", "other_interface", "outgoing")

    def __init__(self, ifindex: int | None = None) -> None:
        self.ifindex = ifindex  # SLL2: only this interface's packets (None: every interface)
        self.link = LINKTYPE_ETHERNET
        self.outgoing = self.not_ethernet = self.other_interface = 0

    def note(self) -> str | None:
        """One line for the reader, or None for an Ethernet capture."""
        if self.link == LINKTYPE_ETHERNET:
            return ("--ifindex applies to Linux cooked v2 captures (tcpdump -i any); this one is "
                    "Ethernet: every packet was read") if self.ifindex is not None else None
        left = [f"{n} {what}" for n, what in ((self.outgoing, "sent by this host"),
                                               (self.not_ethernet, "of non-Ethernet interfaces"),
                                               (self.other_interface, "of other interfaces"))
                if n]
        ignored = (" (--ifindex applies to SLL2 captures only)"
                   if self.ifindex is not None and self.link != LINKTYPE_LINUX_SLL2 else "")
        return (f"a {LINK_TYPES[self.link]} capture: each packet replayed as the Ethernet frame "
                "a device received (14-byte header, zero destination MAC)"
                + (f"; left out: {', '.join(left)}" if left else "") + ignored)


def read_capture(stream: BinaryIO, name: str, data: bool = True,
                 cooked: Cooked | None = None,
                 before_read: Callable[[], None] | None = None, head: int = 0,
                 copy: bool = True) -> Iterator[Frame]:
    """The frames of a pcap or pcapng capture, in order, as they are read (``data`` False:
    their lengths only, the bytes left out; ``head``: at most the first ``head`` bytes of each
    Ethernet frame, for a caller that reads its headers alone: the payload is not copied;
    ``copy`` False: an Ethernet frame's bytes are a memoryview into the reader's buffer, valid
    until the next frame is asked for, for a caller that reads them at once and keeps none). What libpcap 1.10 refuses is refused: a problem
    in the file header is an ``InputError``; damage after it (a capture cut inside a record, a
    block whose lengths disagree) a ``DamagedInput`` raised once every whole record before it
    has been yielded, as tcpdump prints them before its error. A capture of another link type
    than Ethernet gives Ethernet frames (``cooked`` records how; see the module docstring).
    ``before_read``: called before each read from the stream (a live feed: the caller flushes
    the output it has made so far, before the read may wait for the next packets). The file
    header is read and checked at the call; the records as they are asked for (the reader is
    returned, not wrapped in another generator: a replay takes every frame through it)."""
    reads = _open_reads(stream, name, before_read)
    cooked = cooked if cooked is not None else Cooked()
    magic = bytes(reads.view[:4])
    if magic in PCAP_MAGICS:
        return _pcap(reads, name, PCAP_MAGICS[magic], data, cooked, head, copy)
    return _pcapng(reads, name, data, cooked, head, copy)


class SeeFrame:
    """Sees each frame as it is read (``see``): its index, its wire length, and a buffer
    holding its captured bytes with their start and end in it (``buf[start:end]``; the
    reader's own buffer, valid during the call only: a reader of a pcap's records makes no
    view or copy of each frame, and GRO copies only the headers of most, see
    gro.read_captured). A class to subclass (in a compiled module; plain Python wraps a function
    in SeeCall), not a Callable: compiled, a reader calls its method natively, where a
    Callable's call boxes the four ints and its callee parses them again (~0.9k instructions
    a frame of a replay with GRO)."""

    def see(self, index: int, length: int, buf: bytes | bytearray | memoryview | mmap.mmap,
            start: int, end: int) -> None:
        raise NotImplementedError

    def see_head(self, index: int, length: int, head: bytes,  # noqa: ARG002  (by default)
                 buf: bytes | bytearray | memoryview | mmap.mmap, start: int, end: int) -> None:
        """``see``, with ``head``: the SEEN_HEAD bytes at ``buf[start:]``, read with the record's
        header (the frame's own bytes only as far as ``end``); by default not used."""
        self.see(index, length, buf, start, end)


# the bytes of a frame's start a pcap reader reads with each record's header for see_head (one
# Struct call for both: compiled, a second call, its boxed offset and tuple, cost ~0.35k
# instructions a frame): what GRO reads of a common frame (gro.TCP4_HEADERS)
SEEN_HEAD: Final = 94


class SeeCall(SeeFrame):
    """A function as a SeeFrame: compiled, a class of plain Python cannot subclass SeeFrame
    (mypyc refuses it), so plain Python code (a test) hands its function in this."""

    def __init__(self, call: Callable[[int, int, bytes | bytearray | memoryview | mmap.mmap,
                                       int, int], None]) -> None:
        self.call = call

    def see(self, index: int, length: int, buf: bytes | bytearray | memoryview | mmap.mmap,
            start: int, end: int) -> None:
        self.call(index, length, buf, start, end)


def read_lengths(stream: BinaryIO, name: str, cooked: Cooked | None = None,
                 before_read: Callable[[], None] | None = None,
                 see: SeeFrame | None = None) -> Iterator[list[int]]:
    """``read_capture(data=False)``'s frame lengths, in lists of at most LENGTHS_BATCH (those
    read so far): a replay of lengths alone takes them through C's iteration
    (``itertools.chain.from_iterable``), not one generator step and one Frame per frame. A
    pcap Ethernet capture's records are parsed by ``_pcap_lengths``; other captures give each
    frame's length in a list of its own. The same checks, damage and errors as
    ``read_capture``. ``see``: given each frame's bytes as its length is read (a replay with
    GRO keeps its headers)."""
    reads, cooked, magic, order = _open_lists(stream, name, cooked, before_read)
    if order is not None:
        return _pcap_lengths(reads, name, order, cooked, see=see)
    data = see is not None
    frames = (_pcap(reads, name, PCAP_MAGICS[magic], data, cooked, copy=False)
              if magic in PCAP_MAGICS else _pcapng(reads, name, data, cooked, copy=False))
    return _one_by_one(frames) if see is None else _seen_one_by_one(frames, see)


def _open_lists(stream: BinaryIO, name: str, cooked: Cooked | None,
                before_read: Callable[[], None] | None
                ) -> tuple[_Reads, Cooked, bytes, str | None]:
    """A capture opened for a reader of lists: its reads, its Cooked, its magic, and the byte
    order of a pcap Ethernet capture (whose records ``_pcap_lengths`` parses; None: another
    capture, read frame by frame)."""
    reads = _open_reads(stream, name, before_read)
    cooked = cooked if cooked is not None else Cooked()
    magic = bytes(reads.view[:4])
    if magic in PCAP_MAGICS and reads.fill(24):
        order = PCAP_MAGICS[magic]
        if _pcap_link(reads, order) == LINKTYPE_ETHERNET:
            return reads, cooked, magic, order
    return reads, cooked, magic, None


def _seen_one_by_one(frames: Iterator[Frame], see: SeeFrame) -> Iterator[list[int]]:
    """Each frame's length in a list of its own, the frame given to ``see`` first."""
    for index, frame in enumerate(frames):
        see.see(index, frame.length, frame.data, 0, len(frame.data))
        yield [frame.length]


def read_keyed(stream: BinaryIO, name: str, cooked: Cooked | None = None,
               before_read: Callable[[], None] | None = None) -> Iterator[list[int]]:
    """``read_lengths`` for a replay that derives each frame's header from its bytes
    (``--offload``): each frame read as ``transport_key(its first TRANSPORT_HEAD bytes) <<
    KEY_SHIFT | wire length``, in lists, with no Frame and no copy of the frame made (a pcap
    Ethernet capture's records: ``_pcap_lengths``; other captures: one frame at a time). The
    same checks, damage and errors as ``read_capture``."""
    reads, cooked, magic, order = _open_lists(stream, name, cooked, before_read)
    if order is not None:
        return _pcap_lengths(reads, name, order, cooked, keyed=True)
    return _keyed_one_by_one(
        _pcap(reads, name, PCAP_MAGICS[magic], True, cooked, TRANSPORT_HEAD)
        if magic in PCAP_MAGICS else _pcapng(reads, name, True, cooked, TRANSPORT_HEAD))


def _keyed_one_by_one(frames: Iterator[Frame]) -> Iterator[list[int]]:
    """Each frame's keyed length (``read_keyed``) in a list of its own."""
    for frame in frames:
        yield [transport_key(bytes(frame.data)) << KEY_SHIFT | frame.length]


def _one_by_one(frames: Iterator[Frame]) -> Iterator[list[int]]:
    """Each frame's length in a list of its own (a generator function: compiled, a generator
    expression returned would be made a list, the whole capture read at once)."""
    for frame in frames:
        yield [frame.length]


def _open_reads(stream: BinaryIO, name: str, before_read: Callable[[], None] | None
                ) -> _Reads:
    """The reads of a capture, its first 4 bytes read and checked to be a pcap or pcapng
    magic."""
    mapped = _mapped(stream) if before_read is None else None
    reads = _Reads(stream, before_read) if mapped is None else mapped
    if not reads.fill(4):
        raise InputError(f"{name}: unreadable capture (it ends inside the file header)")
    magic = bytes(reads.view[:4])
    if magic not in PCAP_MAGICS and magic != PCAPNG_SHB:
        raise InputError(f"{name} is not a pcap or pcapng capture")
    return reads


CHUNK: Final = 1 << 20  # bytes read at a time
LIVE_READ: Final = 2048  # bytes read at a time from a live feed: less than a pipe's BufferedReader holds
PIPE_READ: Final = 65536  # at most this much at a time from a live feed's read1: a pipe's capacity
# libpcap's limits (tcpdump 4.99.3, libpcap 1.10.3, refuse one byte more: "invalid packet
# capture length 262145", "pcapng block size 20971532 > maximum 16777216"); vnetrx refuses
# the same, which also bounds its read buffer
MAX_CAPLEN: Final = 262144  # also max_snaplen_for_dlt(DLT_EN10MB), the snaplen of a 0 or larger one
MAX_PCAPNG_BLOCK: Final = 16 << 20
MAX_SHB: Final = 1 << 20  # libpcap's BT_SHB_INSANE_MAX: a first Section Header Block is at most 1 MiB
SHB_MIN: Final = 28  # block header 8, byte-order magic 4, versions 4, section length 8, trailer 4
BOM_LE: Final = b"\x4d\x3c\x2b\x1a"
BOM_BE: Final = b"\x1a\x2b\x3c\x4d"


class _Reads:
    """A capture read in large steps into one buffer, reused: a read per record, or a new
    1 MiB bytes object per read (a fresh allocation the kernel faults in), costs more than the
    parsing (~1 us a frame of mixed lengths). ``buf[pos:end]``: read but not yet parsed;
    ``base``: the file offset of ``buf[0]``."""

    __slots__ = ("base", "before_read", "buf", "end", "pos", "read1", "readinto", "view")

    def __init__(self, stream: BinaryIO, before_read: Callable[[], None] | None = None,
                 size: int = CHUNK) -> None:
        # readinto1 takes what a pipe holds now: a live `tcpdump -U -w -|` feed is replayed as
        # it arrives rather than in 1 MiB steps (and a signal ends it at the next frame). Every
        # binary stream has readinto; typing.BinaryIO does not declare it.
        self.readinto = getattr(stream, "readinto1", None) or stream.readinto  # type: ignore[attr-defined]
        # a live feed's reads: BufferedReader.read1 returns the bytes it holds if it holds any,
        # else makes one raw read of what the pipe holds now (at most the size asked)
        self.read1: Callable[[int], bytes] | None = getattr(stream, "read1", None)
        # a bytearray read into, or (_Mapped) the file's pages themselves
        self.buf: bytearray | mmap.mmap = bytearray(size)
        self.view = memoryview(self.buf)
        self.pos = self.end = self.base = 0
        self.before_read = before_read

    def fill(self, need: int) -> bool:
        """At least ``need`` unparsed bytes (the buffer grows for a record larger than it);
        False when the capture ends first."""
        while self.end - self.pos < need:
            rest = self.end - self.pos
            self.base += self.pos
            buf = self.buf
            assert isinstance(buf, bytearray)  # (a _Mapped reader has its own fill)
            if need > len(buf):
                self.view.release()
                self.buf = buf = buf[self.pos:self.end] + bytearray(need - rest)
                self.view = memoryview(buf)
            else:
                buf[:rest] = buf[self.pos:self.end]  # what is begun, to the front
            self.pos, self.end = 0, rest
            if self.before_read is None:
                got = self.readinto(self.view[rest:])
            else:  # a live feed: show what is done, then take what the pipe holds now
                self.before_read()
                if self.read1 is not None:
                    # at most a pipe's default capacity: read1 allocates what it is asked for
                    # (1 MiB would be an mmap and its page faults at every read)
                    chunk = self.read1(min(len(buf) - rest, PIPE_READ))
                    got = len(chunk)
                    buf[rest:rest + got] = chunk
                else:
                    # BufferedReader.readinto1 into more than its own buffer size makes a raw
                    # read even when it holds bytes already (CPython's
                    # _buffered_readinto_generic): it would wait for the next packet with
                    # this one unread
                    got = self.readinto(self.view[rest:rest + LIVE_READ])
            if not got:
                return False
            self.end = rest + got
        return True


WINDOW = 8 << 20  # bytes of a mapped capture parsed between two fills


class _Mapped(_Reads):
    """A regular file read through its page-cache pages (mmap), not copied into a buffer: the
    copy is most of the system time of a large capture's read (~0.5 s for 600 MB), and a
    replay that reads only the records' lengths then touches little more than their headers.
    ``end`` is a window of WINDOW bytes that ``fill`` moves on, returning the pages behind it
    (MADV_DONTNEED: the resident memory stays flat, as with a reused buffer); a file that grew
    since it was mapped (tcpdump still writing it) is mapped again at its new size when the
    window reaches the old end, as reads would go on to the new end of file. The size is read
    again at each window, so a file shortened meanwhile ends there; one shortened while a
    window of it is being parsed is not guarded against (its pages past the new end fault:
    SIGBUS), which a reader through read() would survive."""

    __slots__ = ("dropped", "fd", "size")

    def __init__(self, stream: BinaryIO, fd: int, size: int) -> None:
        super().__init__(stream, size=0)
        self.fd, self.size = fd, size
        self.buf = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        self.view = memoryview(self.buf)
        self.dropped = 0  # the pages before this offset were given back (madvise)
        self.end = min(size, WINDOW)

    def fill(self, need: int) -> bool:
        if self.end - self.pos >= need:
            return True
        buf = self.buf
        assert isinstance(buf, mmap.mmap)
        done = self.pos - self.pos % mmap.PAGESIZE
        if done - self.dropped >= WINDOW:  # the pages parsed: back to the page cache
            buf.madvise(mmap.MADV_DONTNEED, self.dropped, done - self.dropped)
            self.dropped = done
        # the file's size now, at each window (a cheap fstat every 8 MiB): a file that grew is
        # mapped again (the old mapping goes when the last view of it does); one that shrank
        # ends where it ends now, not where it was mapped
        now = os.fstat(self.fd).st_size
        if now > self.size:
            self.buf = mmap.mmap(self.fd, now, access=mmap.ACCESS_READ)
            self.view = memoryview(self.buf)
        self.size = now
        self.end = min(now, self.pos + max(need, WINDOW))
        return self.end - self.pos >= need


def _mapped(stream: BinaryIO) -> _Mapped | None:
    """A _Mapped reader of ``stream`` when it is a regular file that is not empty, at its
    start (else None: a pipe, a terminal, an in-memory stream are read)."""
    try:
        fd = stream.fileno()
        info = os.fstat(fd)
        at = stream.tell()
    except (OSError, ValueError, AttributeError):  # io.BytesIO: UnsupportedOperation
        return None
    # (the readers find the file header at the buffer's start: a stream read from already, as
    # by a caller that skipped a prefix, is read on from where it is)
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0 or at != 0:
        return None
    try:
        return _Mapped(stream, fd, info.st_size)
    except (OSError, ValueError):  # a file system without mmap: read it
        return None


def _link_type(name: str, link: int) -> None:
    if link not in LINK_TYPES:
        raise InputError(f"{name}: link type {link}, which vnetrx does not read (it reads "
                         f"{', '.join(LINK_TYPES.values())})")


_ZERO_MAC: Final = bytes(6)


def _as_ethernet(c: Cooked, packet: memoryview, length: int, data: bool,
                 time: int | None = None) -> Frame | None:
    """A cooked or raw-IP packet as the Ethernet frame a device received, or None when it is
    left out (see the module docstring). ``packet``: the captured bytes."""
    link = c.link
    if link == LINKTYPE_LINUX_SLL:  # pkttype, hatype, halen, addr[8], protocol
        head = 16
        if len(packet) < head:
            return None
        pkttype, hatype, halen = cast("tuple[int, int, int]", struct.unpack_from(">HHH", packet))
        source = bytes(packet[6:6 + min(halen, 6)]).ljust(6, b"\0")
        proto = bytes(packet[14:16])
    elif link == LINKTYPE_LINUX_SLL2:  # protocol, reserved, ifindex, hatype, pkttype, halen
        head = 20
        if len(packet) < head:
            return None
        ifindex, hatype, pkttype, halen = cast("tuple[int, int, int, int]",
                                               struct.unpack_from(">4xIHBB", packet))
        if c.ifindex is not None and ifindex != c.ifindex:
            c.other_interface += 1
            return None
        source = bytes(packet[12:12 + min(halen, 6)]).ljust(6, b"\0")
        proto = bytes(packet[0:2])
    else:  # raw IP: the version nibble says which
        head, pkttype, hatype, source = 0, 0, ARPHRD_ETHER, _ZERO_MAC
        proto = b"\x86\xdd" if len(packet) and packet[0] >> 4 == 6 else b"\x08\x00"
    if pkttype == PACKET_OUTGOING:
        c.outgoing += 1
        return None
    if hatype != ARPHRD_ETHER:
        c.not_ethernet += 1
        return None
    frame = _ZERO_MAC + source + proto + bytes(packet[head:]) if data else b""
    return Frame(length - head + ETH_HLEN, frame, time)


def _cut(name: str, what: str, offset: int, read: int) -> DamagedInput:
    return DamagedInput(
        f"{name}: the capture is cut inside {what} at byte {offset} (tcpdump: \"truncated dump "
        f"file\"); the {read} whole record(s) before it were read", read)


def _pcap_header(reads: _Reads, name: str, order: str, cooked: Cooked) -> tuple[int, bool, int]:
    """The pcap file header, checked (its 24 bytes are then passed): whether the records'
    lengths are swapped (2: always, 1: when caplen > len, 0: never), whether the link type is
    Ethernet, and the time stamp's ticks per nanosecond."""
    if not reads.fill(24):
        raise InputError(f"{name}: unreadable capture (it ends inside the file header)")
    major, minor = cast("tuple[int, int]", struct.unpack_from(order + "HH", reads.buf, 4))
    if major != 2 or minor > 4:  # libpcap: "archaic pcap savefile format", "unsupported
        # pcap savefile version 2.5"
        raise InputError(f"{name}: pcap version {major}.{minor} (libpcap reads 2.0 to 2.4)")
    # versions before 2.3 wrote the lengths the other way round; 2.3 either way (libpcap)
    swapped = 2 if minor < 3 else 1 if minor == 3 else 0
    link = _pcap_link(reads, order)
    _link_type(name, link)
    cooked.link = link
    # the record's second field: microseconds, or nanoseconds (the a1b23c4d magic)
    tick = 1 if bytes(reads.view[:4]) in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1000
    reads.pos += 24
    return swapped, link == LINKTYPE_ETHERNET, tick


def _pcap_link(reads: _Reads, order: str) -> int:
    """The link type of a pcap file header read into ``reads`` (the top bits of the field may
    carry FCS flags)."""
    return cast(int, struct.unpack_from(order + "I", reads.buf, 20)[0]) & 0x0FFFFFFF


def _bad_record(name: str, index: int, offset: int, caplen: int, length: int
                ) -> DamagedInput:
    """What is wrong with a pcap record's lengths that libpcap refuses (caplen above
    MAX_CAPLEN, or above the frame's length)."""
    if caplen > MAX_CAPLEN:  # libpcap: "invalid packet capture length"
        return DamagedInput(
            f"{name}: record {index} (at byte {offset}) holds {caplen} captured bytes, more "
            f"than a pcap record can ({MAX_CAPLEN}); the {index} record(s) before it were read",
            index)
    return DamagedInput(
        f"{name}: record {index} (at byte {offset}) holds {caplen} captured bytes of a "
        f"{length}-byte frame; the {index} record(s) before it were read", index)


def _pcap(reads: _Reads, name: str, order: str, data: bool, cooked: Cooked, head: int = 0,
          copy: bool = True) -> Iterator[Frame]:
    swapped, ethernet, tick = _pcap_header(reads, name, order, cooked)
    # lengths alone: the time stamp's two fields are not unpacked
    unpack = struct.Struct(order + ("IIII" if data else "8xII")).unpack_from
    # cast: unpack gives Any, and a variable given Any is Any to mypy (even one declared int):
    # compiled, the checks below would be Python calls per record (boxed ints, RichCompare),
    # not C compares
    seconds = fraction = 0
    index = 0
    while True:
        # the records wholly read, parsed with the buffer's fields in locals
        buf, view, pos, end = reads.buf, reads.view, reads.pos, reads.end
        need = 16
        while end - pos >= 16:
            if data:
                seconds, fraction, caplen, length = cast("tuple[int, int, int, int]",
                                                         unpack(buf, pos))
            else:
                caplen, length = cast("tuple[int, int]", unpack(buf, pos))
            if swapped and (swapped == 2 or caplen > length):
                caplen, length = length, caplen
            if caplen > MAX_CAPLEN or caplen > length:
                reads.pos = pos
                raise _bad_record(name, index, reads.base + pos, caplen, length)
            start = pos + 16
            if start + caplen > end:
                need = 16 + caplen
                break
            pos = start + caplen
            # the time stamp goes with the bytes (a caller of lengths alone reads neither)
            time = seconds * 1_000_000_000 + fraction * tick if data else None
            if ethernet:
                if not data:
                    yield Frame(length, b"", time)
                elif not copy:
                    yield Frame(length, view[start:pos], time)
                else:
                    yield Frame(length, bytes(view[start:pos if not head or caplen <= head
                                                   else start + head]), time)
            else:
                frame = _as_ethernet(cooked, view[start:pos], length, data, time)
                if frame is not None:
                    yield frame
            index += 1
        reads.pos = pos
        if not reads.fill(need):
            if reads.end > reads.pos:
                raise _cut(name, f"record {index}", reads.base + reads.pos, index)
            return


# lengths ``_pcap_lengths`` hands on at a time, at most (a replay checks for a signal, and a
# live feed's output is flushed, between two lists)
LENGTHS_BATCH: Final = 1024


def _pcap_lengths(reads: _Reads, name: str, order: str, cooked: Cooked, keyed: bool = False,
                  see: SeeFrame | None = None) -> Iterator[list[int]]:
    """An Ethernet pcap capture's frame lengths, ``_pcap``'s records read for their lengths
    alone, the whole records of the buffer in lists of at most LENGTHS_BATCH: the same checks,
    damage (raised once the lengths before it are handed on) and cut. ``keyed``: each length
    with its frame's transport_key (``read_keyed``); ``see``: see ``read_lengths`` (not with
    ``keyed``: a keyed list's frames are read for their keys alone)."""
    if keyed and see is not None:
        raise ValueError("_pcap_lengths: keyed frames are not seen")
    swapped = _pcap_header(reads, name, order, cooked)[0]
    unpack = struct.Struct(order + "8xII").unpack_from
    unpack_head = struct.Struct(f"{order}8xII{SEEN_HEAD}s").unpack_from
    # (keyed: a record's header and what transport_key reads, in one call, not a slice of the
    # buffer made from two boxed offsets)
    unpack_key = struct.Struct(f"{order}8xII{TRANSPORT_HEAD}s").unpack_from
    index = 0
    while True:
        buf, pos, end = reads.buf, reads.pos, reads.end
        lengths: list[int] = []
        need = 16
        damage: DamagedInput | None = None
        refused: InputError | None = None  # ``see``'s, raised after the frames before it
        while end - pos >= 16:
            first = b""  # the frame's first SEEN_HEAD (TRANSPORT_HEAD: keyed) bytes, or none
            if see is not None and end - pos >= 16 + SEEN_HEAD:
                caplen, length, first = cast("tuple[int, int, bytes]", unpack_head(buf, pos))
            elif keyed and end - pos >= 16 + TRANSPORT_HEAD:
                caplen, length, first = cast("tuple[int, int, bytes]", unpack_key(buf, pos))
            else:
                caplen, length = cast("tuple[int, int]", unpack(buf, pos))
            if swapped and (swapped == 2 or caplen > length):
                caplen, length = length, caplen
            if caplen > MAX_CAPLEN or caplen > length:
                damage = _bad_record(name, index, reads.base + pos, caplen, length)
                break
            if pos + 16 + caplen > end:
                need = 16 + caplen
                break
            if keyed:
                if first and caplen >= TRANSPORT_HEAD:  # (else they run past the frame)
                    key = transport_key(first)
                else:
                    # (a mapped capture's slice is bytes already; a read buffer's a bytearray)
                    head = buf[pos + 16:pos + 16 + min(caplen, TRANSPORT_HEAD)]
                    key = transport_key(head if isinstance(head, bytes) else bytes(head))
                lengths.append(key << KEY_SHIFT | length)
            else:
                if see is not None:
                    try:
                        if first:
                            see.see_head(index, length, first, buf, pos + 16, pos + 16 + caplen)
                        else:
                            see.see(index, length, buf, pos + 16, pos + 16 + caplen)
                    except InputError as exc:
                        refused = exc
                        break
                lengths.append(length)
            pos += 16 + caplen
            index += 1
            if len(lengths) == LENGTHS_BATCH:
                break
        reads.pos = pos
        if lengths:
            yield lengths
        if refused is not None:
            raise refused
        if damage is not None:
            raise damage
        if not reads.fill(need):
            if reads.end > reads.pos:
                raise _cut(name, f"record {index}", reads.base + reads.pos, index)
            return


class _Section:
    """What a pcapng reader knows at a block: the byte order, the first interface's link type
    and snaplen (libpcap refuses later ones that differ), and the interfaces this section
    described."""

    __slots__ = ("clocks", "interfaces", "link", "order", "snapshot")

    def __init__(self, order: str) -> None:
        self.order = order
        self.link = -1
        self.snapshot = 0
        self.interfaces = 0
        # per interface: (time stamp units per second, if_tsoffset in seconds)
        self.clocks: list[tuple[int, int]] = []


def _pcapng(reads: _Reads, name: str, data: bool, cooked: Cooked, head: int = 0,
            copy: bool = True) -> Iterator[Frame]:
    if not reads.fill(12):
        raise InputError(f"{name}: unreadable capture (it ends inside the section header)")
    bom = bytes(reads.view[8:12])
    if bom not in (BOM_LE, BOM_BE):
        raise InputError(f"{name}: unreadable capture (bad pcapng byte-order magic)")
    s = _Section("<" if bom == BOM_LE else ">")
    first = True
    index = 0
    while True:
        if not reads.fill(8):
            if reads.end > reads.pos:
                raise _cut(name, "a block header", reads.base + reads.pos, index)
            if s.link < 0:  # libpcap: "the capture file has no Interface Description Blocks"
                raise InputError(f"{name}: no Interface Description Block: the capture "
                                 "describes no interface")
            return
        at = reads.pos
        offset = reads.base + at
        kind, total = cast("tuple[int, int]", struct.unpack_from(s.order + "II", reads.buf, at))
        if first and not SHB_MIN <= total <= MAX_SHB:
            raise InputError(f"{name}: unreadable capture (a section header of {total} bytes; "
                             f"valid: {SHB_MIN}..{MAX_SHB})")
        problem = _block_size(kind, total)
        if problem:
            raise DamagedInput(f"{name}: {problem} at byte {offset}; the {index} packet(s) "
                               "before it were read", index)
        if not reads.fill(total):
            raise _cut(name, f"a block of {total} bytes", offset, index)
        at = reads.pos
        trailer = cast(int, struct.unpack_from(s.order + "I", reads.buf, at + total - 4)[0])
        body = reads.view[at + 8:at + total - 4]
        problem = (f"a block's total length is {total} in its header and {trailer} in its "
                   "trailer" if trailer != total else _block(name, kind, body, s, first))
        if problem:
            raise DamagedInput(f"{name}: {problem} (block at byte {offset}); the {index} "
                               "packet(s) before it were read", index)
        first = False
        reads.pos = at + total
        if kind in (6, 3, 2):
            if s.link == LINKTYPE_ETHERNET:
                yield _packet(kind, body, s, data, head, copy)
            else:
                cooked.link = s.link
                packet = _packet(kind, body, s, True)
                frame = _as_ethernet(cooked, memoryview(packet.data), packet.length, data,
                                     packet.time)
                if frame is not None:
                    yield frame
            index += 1


def _block_size(kind: int, total: int) -> str:
    if total < 12 or total % 4:
        return f"a block of {total} bytes (at least 12, a multiple of 4)"
    if total > MAX_PCAPNG_BLOCK:
        return f"a block of {total} bytes, more than a pcapng block can ({MAX_PCAPNG_BLOCK})"
    if kind == 0x0A0D0D0A and total < SHB_MIN:
        return f"a section header of {total} bytes (at least {SHB_MIN})"
    return ""


FIXED: Final = {6: 20, 2: 20, 3: 4, 1: 8}  # a packet block's or an IDB's fixed part, in bytes


def _block(name: str, kind: int, body: memoryview, s: _Section, first: bool) -> str:
    """What libpcap refuses in a block (its error, in other words), or ""."""
    order = s.order
    if kind == 0x0A0D0D0A:
        bom = bytes(body[:4])
        if bom != (BOM_LE if order == "<" else BOM_BE):
            return ("a section in the other byte order" if bom in (BOM_LE, BOM_BE)
                    else "a section header with a bad byte-order magic")
        major, minor = struct.unpack_from(order + "HH", body, 4)
        if major != 1 or (first and minor not in (0, 2)):
            return f"pcapng version {major}.{minor} (libpcap reads 1.0 and 1.2)"
        s.interfaces = 0
        s.clocks = []
        return ""
    fixed = FIXED.get(kind, 0)
    if len(body) < fixed:
        return f"a block of type {kind} too short for its {fixed}-byte fixed part"
    if kind == 1:
        link, _reserved, snaplen = struct.unpack_from(order + "HHI", body)
        snapshot = snaplen if 0 < snaplen <= MAX_CAPLEN else MAX_CAPLEN
        if s.link < 0:
            _link_type(name, link)
            s.link, s.snapshot = link, snapshot
        elif link != s.link:
            return f"an interface of link type {link}, not the first interface's {s.link}"
        elif snapshot != s.snapshot:
            return (f"an interface with snaplen {snaplen}, not the first interface's "
                    f"{s.snapshot}")
        s.interfaces += 1
        return _options(body[8:], order, s.clocks)
    if kind in (6, 3, 2):
        if s.link < 0:
            return "a packet block before any Interface Description Block"
        if kind == 3:
            iface = 0
            (length,) = struct.unpack_from(order + "I", body)
            caplen = min(length, s.snapshot)
        elif kind == 6:
            iface, _hi, _lo, caplen, length = struct.unpack_from(order + "IIIII", body)
        else:
            iface, _drops, _hi, _lo, caplen, length = struct.unpack_from(order + "HHIIII", body)
        if iface >= s.interfaces:
            return f"a packet on interface {iface}, which is not described"
        if caplen > s.snapshot:
            return f"a packet of {caplen} captured bytes, more than the snaplen ({s.snapshot})"
        if caplen > len(body) - fixed:
            return (f"a packet of {caplen} captured bytes in a block that holds "
                    f"{len(body) - fixed}")
        if caplen > length:
            return f"a packet of {caplen} captured bytes of a {length}-byte frame"
    return ""


def _options(opts: memoryview, order: str, clocks: list[tuple[int, int]]) -> str:
    """An Interface Description Block's options, as libpcap checks them; its time stamp
    resolution (if_tsresol: 10^-n s, or 2^-n s with the top bit; default 10^-6) and offset
    (if_tsoffset, seconds) go to ``clocks``."""
    problem = _read_options(opts, order)
    if not problem:
        per_second, offset = 1_000_000, 0
        for code, value in _time_options(opts, order):
            if code == 9:
                per_second = 1 << (value & 0x7F) if value & 0x80 else 10 ** value
            else:
                offset = value
        clocks.append((per_second, offset))
    return problem


def _time_options(opts: memoryview, order: str) -> list[tuple[int, int]]:
    """The well-formed if_tsresol (9) and if_tsoffset (14) options, as numbers."""
    at = 0
    out: list[tuple[int, int]] = []
    while len(opts) - at >= 4:
        code, size = struct.unpack_from(order + "HH", opts, at)
        padded = (size + 3) // 4 * 4
        if code == 0 or len(opts) - at - 4 < padded:
            break
        if code == 9 and size == 1:
            out.append((9, opts[at + 4]))
        elif code == 14 and size == 8:
            out.append((14, struct.unpack_from(order + "q", opts, at + 4)[0]))
        at += 4 + padded
    return out


def _read_options(opts: memoryview, order: str) -> str:
    """libpcap's checks of an IDB's options: its error, or ""."""
    at = 0
    seen: set[int] = set()
    while at < len(opts):
        if len(opts) - at < 4:
            return "an interface option cut short"
        code, size = struct.unpack_from(order + "HH", opts, at)
        padded = (size + 3) // 4 * 4
        if len(opts) - at - 4 < padded:
            return f"an interface option of {size} bytes past its block"
        value = opts[at + 4:at + 4 + size]
        at += 4 + padded
        if code == 0:  # opt_endofopt
            return "" if size == 0 else f"an opt_endofopt of {size} bytes"
        if code in (9, 14):  # if_tsresol, if_tsoffset
            want = 1 if code == 9 else 8
            what = "if_tsresol" if code == 9 else "if_tsoffset"
            if size != want:
                return f"an {what} option of {size} bytes (it has {want})"
            if code in seen:
                return f"more than one {what} option"
            seen.add(code)
            if code == 9 and (value[0] & 0x7F > 63 if value[0] & 0x80 else value[0] > 19):
                return f"an if_tsresol of {value[0]:#x}, finer than a 64-bit time stamp"
    return ""


def _packet(kind: int, body: memoryview, s: _Section, data: bool, head: int = 0,
            copy: bool = True) -> Frame:
    """A packet block's frame (``_block`` has checked it)."""
    order = s.order
    time: int | None = None
    if kind == 3:  # a Simple Packet Block: no interface, no time stamp
        (length,) = cast("tuple[int]", struct.unpack_from(order + "I", body))
        caplen, start = min(length, s.snapshot), 4
    else:
        iface = cast(int, struct.unpack_from(order + ("I" if kind == 6 else "H"), body)[0])
        high, low, caplen, length = cast("tuple[int, int, int, int]",
                                         struct.unpack_from(order + "IIII", body, 4))
        start = 20
        per_second, offset = s.clocks[iface]
        ticks = (high << 32) | low
        time = offset * 1_000_000_000 + (ticks * (1_000_000_000 // per_second)
                                         if 1_000_000_000 % per_second == 0
                                         else ticks * 1_000_000_000 // per_second)
    kept = caplen if not head or caplen <= head else head
    if not data:
        return Frame(length, b"", time)
    return Frame(length, bytes(body[start:start + kept]) if copy else body[start:start + caplen],
                 time)
