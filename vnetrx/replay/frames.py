"""Frame lengths for ``vnetrx replay``: a LIST on the command line, or a file (pcap, pcapng, a
JSON array, or text in the LIST syntax). Every problem is an ``InputError`` naming the culprit.

LIST: comma-separated items, each one of
  ``N``        one frame of N bytes
  ``A-B``      every length from A to B
  ``A-B:S``    A, A+S, A+2S, ... up to B
  ``NxR``      R frames of N bytes
Lengths are frame bytes after the virtio-net header, Ethernet header included (what a capture
on the host's tap device records).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, Final, TypeVar, Union

from vnetrx.errors import DamagedInput, InputError
from vnetrx.files import open_input, parse_json
from vnetrx.packet import TRANSPORT_HEAD, CaptureDeriver
from vnetrx.records import NamedTuple
from vnetrx.replay.capture import (
    Cooked,
    SeeFrame,
    is_capture,
    read_capture,
    read_keyed,
    read_lengths,
)

if TYPE_CHECKING:
    from vnetrx.paths.virtio_net_hdr import VnetHdr

MAX_FRAMES: Final = 100_000
MAX_TEXT: Final = 16 << 20  # bytes of a JSON or LIST file (100,000 frames of ~160 bytes)
_TOKEN: Final = re.compile(r"[^,\s]+")
_COMMENT: Final = re.compile(r"#[^\r\n]*")
_ITEM: Final = re.compile(r"^(\d{1,9})(?:-(\d{1,9})(?::(\d{1,9}))?|x(\d{1,9}))?$")


def parse_list(text: str, where: str = "--len") -> tuple[int, ...]:
    """Expand a LIST (``60,1000,3400-3500:8,60x11``)."""
    out: list[int] = []
    for match in _TOKEN.finditer(text):  # one at a time: the count is checked as they come
        out.extend(_item(match.group(), where, MAX_FRAMES - len(out)))
    if not out:
        raise InputError(f"{where}: no frame lengths given")
    return tuple(out)


def _item(token: str, where: str, room: int) -> list[int]:
    match = _ITEM.match(token)
    if match is None:
        raise InputError(
            f"{where}: {token if len(token) <= 40 else token[:37] + '...'!r} is not a number N, "
            "a range A-B[:STEP] or a repeat NxCOUNT"
        )
    first, last, step, repeat = match.groups()
    start = int(first)
    if repeat is not None:
        count = int(repeat)
        if count < 1:
            raise InputError(f"{where}: {token!r} repeats {count} times (at least 1)")
        _room(count, room, where)
        return [start] * count
    if last is None:
        _room(1, room, where)
        return [start]
    stop, stride = int(last), int(step or 1)
    if stride < 1:
        raise InputError(f"{where}: {token!r} has step {stride} (at least 1)")
    if stop < start:
        raise InputError(f"{where}: {token!r} runs backwards ({start} > {stop})")
    _room((stop - start) // stride + 1, room, where)
    return list(range(start, stop + 1, stride))


def _room(count: int, room: int, where: str) -> None:
    if count > room:
        raise InputError(f"{where}: more than {MAX_FRAMES} frames")


def read_file(path: str) -> tuple[int, ...]:
    """Frame lengths from a pcap/pcapng capture, a JSON array, or LIST text."""
    return read_frames(path)[0]


Headers = tuple["VnetHdr | None", ...]
Item = Union[int, tuple[int, "VnetHdr | None"]]  # noqa: UP007  (a runtime alias)
Pair = tuple[int, "VnetHdr | None"]
T = TypeVar("T")


class Frames(NamedTuple):
    """Where a replay's frames come from: ``items`` (lengths, or (length, header) pairs),
    ``known``: how many, when that is known before they are read (None: a capture, streamed
    as it is read)."""

    items: Iterable[Item]
    known: int | None  # how many, when known before they are read
    has_headers: bool
    # a damaged capture read with ``partial``: the damage, once the whole records before it
    # have been read (the caller reports it after its output)
    damage: list[DamagedInput] | None = None
    # a capture of another link type (tcpdump -i any): how it was read, for the caller's note
    cooked: Cooked | None = None
    # a capture's lengths alone: the same lengths in lists, as read (``items`` is
    # chain.from_iterable(lists)); a caller takes one or the other, and may check each list
    # as a whole (BeyondMtu.watch_lists, StopOnSignal.items) rather than every frame
    lists: Iterator[list[int]] | None = None
    # a capture's lengths with the header derived for each (--offload), in lists likewise
    pairs: Iterator[list[Pair]] | None = None


Derive = Callable[[int, bytes], "VnetHdr | None"]
# the bytes of a frame a Derive is given (when nothing else reads them)
DERIVE_HEAD: Final = TRANSPORT_HEAD
# keep(index, length, data, whole, split, time): a frame's bytes, for a caller that reads them
# (GRO): the whole frame (a JSON object's "frame") or what a capture holds (maybe cut by its
# snaplen), a JSON object's "split" (the writev boundaries of an IFF_NAPI_FRAGS write; ()
# otherwise), and the capture record's time stamp in ns (None: a JSON object, or a pcapng
# Simple Packet Block). A capture's bytes may be a view of its reader's buffer, valid during
# the call only (read_capture's ``copy`` False): a caller reads them at once, or copies.
Keep = Callable[[int, int, "bytes | memoryview", bool, tuple[int, ...], "int | None"], None]


def open_frames(path: str, derive: Derive | None = None, partial: bool = False,
                ifindex: int | None = None,
                before_read: Callable[[], None] | None = None, keep: Keep | None = None,
                see: SeeFrame | None = None) -> Frames:
    """A pcap/pcapng capture (streamed: a file, or ``-`` for standard input), a JSON array (of
    lengths, or of objects ``{"len": L, "hdr": HEX, "l4": ..., "tcp_options": N}`` that also
    give each frame's virtio_net_hdr) or LIST text (# starts a comment). ``derive(length,
    captured bytes)``: each captured frame's header, from its bytes (a capture only).
    ``partial``: a capture damaged after its first record gives the records before the damage,
    and the damage in ``Frames.damage`` (tcpdump prints those records, then its error), for the
    caller to report after its output, instead of raising it. ``ifindex``: of a Linux cooked
    v2 capture (tcpdump -i any), only that interface's packets. ``before_read``: called before
    each read of a capture (see ``read_capture``). ``keep``: given each frame's bytes (see
    ``Keep``); an input without them (lengths only) is refused. ``see``: instead of ``keep``
    for a capture without ``derive``, given each frame's bytes as its reader reads the lengths
    in lists (``capture.read_lengths``)."""
    stream = _open(path)
    name = "standard input" if path == "-" else path
    if is_capture(stream.peek(4)[:4]):
        damage: list[DamagedInput] | None = [] if partial else None
        cooked = Cooked(ifindex)
        if isinstance(derive, CaptureDeriver) and keep is None:
            # --offload's headers alone: lengths and transport keys read in lists, each list's
            # headers derived at once (no Frame, no copy, no generator step per frame)
            pairs = _pair_lists(stream, name, derive, damage, cooked, before_read)
            return Frames(chain.from_iterable(pairs), None, True, damage, cooked, pairs=pairs)
        if derive is not None:
            return Frames(_derived(stream, name, derive, damage, cooked, before_read, keep),
                          None, True, damage, cooked)
        if keep is None or see is not None:  # the commonest replay: lengths alone (or seen
            # by ``see``), handed on in lists (C's iteration, no generator step per frame)
            lists = _length_lists(stream, name, damage, cooked, before_read, see)
            return Frames(chain.from_iterable(lists), None, False, damage, cooked, lists)
        return Frames(_lengths(stream, name, damage, cooked, before_read, keep), None, False,
                      damage, cooked)
    if derive is not None:
        if path != "-":
            stream.close()
        raise InputError(f"{name} is not a capture: deriving headers needs the frames' bytes "
                         "(a pcap or pcapng file)")
    try:
        # a regular file by its size, before reading it
        big = path != "-" and os.fstat(stream.fileno()).st_size > MAX_TEXT
        data = b"" if big else stream.read(MAX_TEXT + 1)
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror or exc}") from None
    finally:
        if path != "-":
            stream.close()
    if big or len(data) > MAX_TEXT:
        raise InputError(f"{name} is more than {MAX_TEXT >> 20} MiB of text: give a capture, "
                         "which is read as a stream")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(
            f"{name} is neither a pcap/pcapng capture nor text (a JSON array or a LIST of lengths)"
        ) from None
    body = text.strip()
    if body.startswith("["):
        # a frame: a length, or an object of at most 4 keys (4 ":" and 3 ",") and its ","
        value = parse_json(body, name, "a JSON array", max_values=8 * MAX_FRAMES + 1)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            lengths, hdrs, frame_bytes, splits = _json_objects(name, value)
            if keep is not None:
                for index, frame in enumerate(frame_bytes):
                    if frame is None:
                        raise InputError(f"{name}: frame {index} gives no \"frame\" bytes "
                                         "(the Ethernet frame as hex)", hint=_NEEDS_BYTES)
                    keep(index, len(frame), frame, True, splits[index], None)
            elif any(splits):
                raise InputError(f"{name}: \"split\" (writev boundaries) applies to "
                                 "--path tap --gro --napi frags")
            return Frames(tuple(zip(lengths, hdrs, strict=True)), len(lengths), True)
        lengths = _json_lengths(name, value)
    else:
        try:
            lengths = parse_list(_COMMENT.sub("", text), where=name)
        except InputError as exc:  # (a file of text that is no LIST: say what --from reads)
            raise InputError(exc.message, hint=exc.hint or _FORMATS) from None
    if keep is not None:
        raise InputError(f"{name} gives frame lengths only, not the frames' bytes",
                         hint=_NEEDS_BYTES)
    return Frames(lengths, len(lengths), False)


_FORMATS: Final = ("frames are read from a pcap/pcapng capture, a JSON array of lengths or of "
                   "objects, or a LIST of lengths: N, A-B, A-B:STEP, NxCOUNT, # starts a comment")
_NEEDS_BYTES: Final = ("give a pcap/pcapng capture, or a JSON array of objects {\"frame\": HEX, "
                "\"hdr\": HEX}")


VLAN_ETH_HLEN: Final = 18  # an Ethernet header with one VLAN tag


def _unwritten(length: int, hdr: VnetHdr | None, limit: int) -> bool:
    """A frame longer than ``limit`` without a GSO header: what a device does not write."""
    return length > limit and (hdr is None or not hdr.gso_type)


class BeyondMtu:
    """Frames longer than a device with this MTU writes without a GSO header (counted as they
    pass by ``watch``): what a capture taken after GRO holds (tcpdump inside the guest), not
    what the device wrote."""

    __slots__ = ("count", "first", "mtu")

    def __init__(self, mtu: int) -> None:
        self.mtu = mtu
        self.count = 0
        self.first: tuple[int, int] | None = None  # (index, length) of the first one

    def watch(self, items: Iterable[Item]) -> Iterator[Item]:
        limit = self.mtu + VLAN_ETH_HLEN
        index = 0
        for item in items:  # (every frame of a replay passes here: no tuple made per frame)
            if isinstance(item, int):
                if item > limit:
                    self._beyond(index, item)
            elif _unwritten(item[0], item[1], limit):
                self._beyond(index, item[0])
            index += 1  # noqa: SIM113  (enumerate makes a tuple per frame)
            yield item

    def watch_lists(self, lists: Iterable[list[int]]) -> Iterator[list[int]]:
        """``watch`` for lengths handed on in lists (``Frames.lists``)."""
        limit = self.mtu + VLAN_ETH_HLEN
        index = 0
        for lengths in lists:
            for length in lengths:
                if length > limit:
                    self._beyond(index, length)
                index += 1
            yield lengths

    def watch_pairs(self, lists: Iterable[list[Pair]]) -> Iterator[list[Pair]]:
        """``watch`` for (length, header) pairs handed on in lists (``Frames.pairs``)."""
        limit = self.mtu + VLAN_ETH_HLEN
        index = 0
        for pairs in lists:
            for length, hdr in pairs:
                if _unwritten(length, hdr, limit):
                    self._beyond(index, length)
                index += 1
            yield pairs

    def _beyond(self, index: int, length: int) -> None:
        self.count += 1
        if self.first is None:
            self.first = (index, length)

    def note(self) -> str | None:
        if self.first is None:
            return None
        index, length = self.first
        return (f"{self.count} frame(s) (the first: frame {index}, {length} bytes) are longer "
                f"than the MTU ({self.mtu}) plus an Ethernet header with a VLAN tag and have no "
                "GSO header: a device with that MTU does not write them. A capture taken inside "
                "the guest (tcpdump on its interface) is taken after GRO and holds GRO's "
                "aggregates: replay a capture of the host's tap, or give --offload auto to "
                "read long TCP/UDP frames as GSO")


def watched_lists(frames: Frames, beyond: BeyondMtu) -> Iterator[Sequence[Item]] | None:
    """A capture's frames in lists as read (``Frames.lists`` or ``Frames.pairs``), watched by
    ``beyond``; None when they are not read in lists."""
    if frames.lists is not None:
        return beyond.watch_lists(frames.lists)
    if frames.pairs is not None:
        return beyond.watch_pairs(frames.pairs)
    return None


def nonempty(items: Iterable[T], empty: Callable[[], Exception]) -> Iterator[T]:
    """``items``, or ``empty()`` raised when the first is asked for and there is none (a
    compiled generator: a replay's frames, or lists of their lengths, pass through it)."""
    it = iter(items)
    first = next(it, None)
    if first is None:
        raise empty()
    yield first
    yield from it


def _open(path: str) -> io.BufferedReader:
    return open_input(path, "--from")  # type: ignore[return-value]


def _length_lists(stream: io.BufferedReader, name: str, damage: list[DamagedInput] | None,
                  cooked: Cooked, before_read: Callable[[], None] | None,
                  see: SeeFrame | None = None) -> Iterator[list[int]]:
    """The wire lengths of a capture's frames, in lists, read as they are needed (each frame
    given to ``see`` as it is read)."""
    with _reading(stream, name, damage):
        yield from read_lengths(stream, name, cooked, before_read, see)


def _pair_lists(stream: io.BufferedReader, name: str, derive: CaptureDeriver,
                damage: list[DamagedInput] | None, cooked: Cooked,
                before_read: Callable[[], None] | None) -> Iterator[list[Pair]]:
    """Each captured frame's wire length and the header ``derive`` gives it, in lists."""
    with _reading(stream, name, damage):
        for keyed in read_keyed(stream, name, cooked, before_read):
            yield derive.pairs(keyed)


def _lengths(stream: io.BufferedReader, name: str, damage: list[DamagedInput] | None,
             cooked: Cooked, before_read: Callable[[], None] | None,
             keep: Keep) -> Iterator[int]:
    """The wire lengths of a capture's frames, read as they are needed, each frame handed to
    ``keep`` first."""
    with _reading(stream, name, damage):
        frames = read_capture(stream, name, cooked=cooked, before_read=before_read, copy=False)
        for index, frame in enumerate(frames):
            keep(index, frame.length, frame.data, False, (), frame.time)
            yield frame.length


def _derived(stream: io.BufferedReader, name: str, derive: Derive,
             damage: list[DamagedInput] | None, cooked: Cooked,
             before_read: Callable[[], None] | None,
             keep: Keep | None) -> Iterator[tuple[int, VnetHdr | None]]:
    """Each captured frame's wire length and the header ``derive`` gives it (each frame handed
    to ``keep`` first)."""
    with _reading(stream, name, damage):
        if keep is None:  # the headers alone (their copy is most of a frame's)
            for frame in read_capture(stream, name, data=True, cooked=cooked,
                                      before_read=before_read, head=DERIVE_HEAD):
                yield frame.length, derive(frame.length, bytes(frame.data))
            return
        # the whole frame, seen in the reader's buffer by ``keep``; ``derive`` gets its headers
        for index, frame in enumerate(read_capture(stream, name, data=True, cooked=cooked,
                                                   before_read=before_read, copy=False)):
            keep(index, frame.length, frame.data, False, (), frame.time)
            yield frame.length, derive(frame.length, bytes(frame.data[:DERIVE_HEAD]))


@contextmanager
def _reading(stream: io.BufferedReader, name: str, damage: list[DamagedInput] | None
             ) -> Iterator[None]:
    """Around the reading of a capture: damage after whole records is kept in ``damage`` (the
    replay goes on with what was read), a read error is an InputError, and the file is closed
    at the end."""
    try:
        yield
    except DamagedInput as exc:
        if damage is None or not exc.read:
            raise
        damage.append(exc)
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror or exc}") from None
    finally:
        if name != "standard input":
            stream.close()


def read_frames(path: str) -> tuple[tuple[int, ...], Headers | None]:
    """All of a file's frames (at most MAX_FRAMES): their lengths, and each frame's
    virtio_net_hdr when the file gives them (None otherwise)."""
    frames = open_frames(path)
    items = tuple(islice(frames.items, MAX_FRAMES + 1))
    if len(items) > MAX_FRAMES:
        raise InputError(f"{path}: more than {MAX_FRAMES} frames")
    if not items:
        raise InputError(f"{path}: the capture holds no packets")
    if not frames.has_headers:
        return tuple(x if isinstance(x, int) else x[0] for x in items), None
    pairs = [x for x in items if not isinstance(x, int)]
    return tuple(n for n, _ in pairs), tuple(h for _, h in pairs)


def _json_objects(path: str, value: list[Any]) -> tuple[
        tuple[int, ...], Headers, tuple[bytes | None, ...], tuple[tuple[int, ...], ...]]:
    """Objects ``{"len": L, "hdr": HEX, "l4": ..., "tcp_options": N}`` or ``{"frame": HEX,
    "hdr": HEX, "split": [OFFSET, ...]}``: each frame's length, virtio_net_hdr, (with "frame")
    bytes and (with "split") writev boundaries."""
    from vnetrx.packet import L4_CHOICES, headers_of
    from vnetrx.paths.virtio_net_hdr import VnetHdr

    if len(value) > MAX_FRAMES:
        raise InputError(f"{path}: more than {MAX_FRAMES} frames")
    lengths: list[int] = []
    hdrs: list[VnetHdr | None] = []
    data: list[bytes | None] = []
    splits: list[tuple[int, ...]] = []
    for index, item in enumerate(value):
        where = f"{path}: frame {index}"
        if not isinstance(item, dict):
            raise InputError(f"{where}: expected an object like {{\"len\": 1514, \"hdr\": "
                             "\"0101...\"}} or {\"frame\": HEX, \"hdr\": HEX}")
        unknown = sorted(set(item) - {"len", "hdr", "l4", "tcp_options", "frame", "split"})
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (valid: len, hdr, "
                             "l4, tcp_options, frame, split)")
        split = item.get("split", [])
        if not isinstance(split, list) or not all(
                isinstance(x, int) and not isinstance(x, bool) for x in split):
            raise InputError(f"{where}: \"split\" must be a list of byte offsets (where each "
                             "iovec of the write begins, after the first)")
        if split and "frame" not in item:
            raise InputError(f"{where}: \"split\" needs the write's \"frame\"")
        frame = hex_field(item, "frame", where)
        if frame is not None:
            length = len(frame)
            given = sorted(set(item) & {"len", "l4", "tcp_options"})
            if given:  # the bytes say it
                raise InputError(f"{where}: \"frame\" gives the frame's bytes; leave out "
                                 + ", ".join(f'"{key}"' for key in given))
            if length < 14:
                raise InputError(f"{where}: \"frame\" has {length} bytes (an Ethernet frame "
                                 "has at least 14)")
        else:
            length = _json_len(item, where, L4_CHOICES, headers_of)
        raw = hex_field(item, "hdr", where)
        hdr = None
        if raw is not None:
            if len(raw) > 10 and len(raw) != 12:  # shorter: zero-padded to 10
                raise InputError(f"{where}: \"hdr\" has {len(raw)} bytes; give the 10-byte "
                                 "virtio_net_hdr, or 12 with num_buffers (not read: the replay "
                                 "counts each frame's buffers itself)")
            # num_buffers is the device's to set, from the buffers the replay gives the frame
            hdr = VnetHdr.from_bytes(raw[:10])
        lengths.append(length)
        hdrs.append(hdr)
        data.append(frame)
        splits.append(tuple(split))
    return tuple(lengths), tuple(hdrs), tuple(data), tuple(splits)


def hex_field(item: dict[str, Any], key: str, where: str) -> bytes | None:
    """A JSON frame object's hex field (spaces allowed), None when absent; InputError naming
    ``where`` when it is not a hex string."""
    raw = item.get(key)
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise InputError(f"{where}: \"{key}\" must be a hex string")
    try:
        return bytes.fromhex(raw.replace(" ", ""))
    except ValueError:
        shown = raw if len(raw) <= 40 else raw[:37] + "..."
        raise InputError(f"{where}: \"{key}\" {shown!r} is not hex") from None


def _json_len(item: dict[str, Any], where: str, l4_choices: Sequence[str],
              headers_of: Callable[[str, int], object]) -> int:
    """An object's "len", checked with its "l4" and "tcp_options"."""
    length = item.get("len")
    if not isinstance(length, int) or isinstance(length, bool):
        raise InputError(f"{where}: \"len\" (a whole number) or \"frame\" (the frame's "
                         "bytes as hex) is needed")
    l4 = item.get("l4", "none")
    if l4 != "none" and l4 not in l4_choices:
        raise InputError(f"{where}: \"l4\" {l4!r} is not one of none, " + ", ".join(l4_choices))
    options = item.get("tcp_options", 0)
    if not isinstance(options, int) or isinstance(options, bool):
        raise InputError(f"{where}: \"tcp_options\" must be a whole number")
    if l4 != "none":
        try:
            headers_of(l4, options)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
    elif options:
        raise InputError(f"{where}: \"tcp_options\" needs a TCP \"l4\"")
    return length


def _json_lengths(path: str, value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in value
    ):
        raise InputError(f"{path}: expected a JSON array of whole numbers (frame lengths)")
    if not value:
        raise InputError(f"{path}: the array is empty")
    if len(value) > MAX_FRAMES:
        raise InputError(f"{path}: more than {MAX_FRAMES} frames")
    return tuple(value)
