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
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any, Union

from vnetrx.errors import DamagedInput, InputError
from vnetrx.files import open_input, parse_json
from vnetrx.records import NamedTuple
from vnetrx.replay.capture import Cooked, is_capture, read_capture

if TYPE_CHECKING:
    from vnetrx.paths.virtio_net_hdr import VnetHdr

MAX_FRAMES = 100_000
MAX_TEXT = 16 << 20  # bytes of a JSON or LIST file (100,000 frames of ~160 bytes)
_TOKEN = re.compile(r"[^,\s]+")
_COMMENT = re.compile(r"#[^\r\n]*")
_ITEM = re.compile(r"^(\d{1,9})(?:-(\d{1,9})(?::(\d{1,9}))?|x(\d{1,9}))?$")


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


Derive = Callable[[int, bytes], "VnetHdr | None"]


def open_frames(path: str, derive: Derive | None = None, partial: bool = False,
                ifindex: int | None = None,
                before_read: Callable[[], None] | None = None) -> Frames:
    """A pcap/pcapng capture (streamed: a file, or ``-`` for standard input), a JSON array (of
    lengths, or of objects ``{"len": L, "hdr": HEX, "l4": ..., "tcp_options": N}`` that also
    give each frame's virtio_net_hdr) or LIST text (# starts a comment). ``derive(length,
    captured bytes)``: each captured frame's header, from its bytes (a capture only).
    ``partial``: a capture damaged after its first record gives the records before the damage,
    and the damage in ``Frames.damage`` (tcpdump prints those records, then its error), for the
    caller to report after its output, instead of raising it. ``ifindex``: of a Linux cooked
    v2 capture (tcpdump -i any), only that interface's packets. ``before_read``: called before
    each read of a capture (see ``read_capture``)."""
    stream = _open(path)
    name = "standard input" if path == "-" else path
    if is_capture(stream.peek(4)[:4]):
        damage: list[DamagedInput] | None = [] if partial else None
        cooked = Cooked(ifindex)
        if derive is not None:
            return Frames(_derived(stream, name, derive, damage, cooked, before_read), None,
                          True, damage, cooked)
        return Frames(_lengths(stream, name, damage, cooked, before_read), None, False, damage,
                      cooked)
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
            lengths, hdrs = _json_objects(name, value)
            return Frames(tuple(zip(lengths, hdrs, strict=True)), len(lengths), True)
        lengths = _json_lengths(name, value)
        return Frames(lengths, len(lengths), False)
    lengths = parse_list(_COMMENT.sub("", text), where=name)
    return Frames(lengths, len(lengths), False)


def _open(path: str) -> io.BufferedReader:
    return open_input(path, "--from")  # type: ignore[return-value]


def _lengths(stream: io.BufferedReader, name: str, damage: list[DamagedInput] | None,
             cooked: Cooked, before_read: Callable[[], None] | None) -> Iterator[int]:
    """The wire lengths of a capture's frames, read as they are needed."""
    try:
        for frame in read_capture(stream, name, data=False, cooked=cooked,
                                  before_read=before_read):
            yield frame.length
    except DamagedInput as exc:
        if damage is None or not exc.read:
            raise
        damage.append(exc)
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror or exc}") from None
    finally:
        if name != "standard input":
            stream.close()


def _derived(stream: io.BufferedReader, name: str, derive: Derive,
             damage: list[DamagedInput] | None, cooked: Cooked,
             before_read: Callable[[], None] | None) -> Iterator[tuple[int, VnetHdr | None]]:
    """Each captured frame's wire length and the header ``derive`` gives it."""
    try:
        for frame in read_capture(stream, name, cooked=cooked, before_read=before_read):
            yield frame.length, derive(frame.length, frame.data)
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


def _json_objects(path: str, value: list[Any]) -> tuple[tuple[int, ...], Headers]:
    from vnetrx.packet import L4_CHOICES, headers_of
    from vnetrx.paths.virtio_net_hdr import VnetHdr

    if len(value) > MAX_FRAMES:
        raise InputError(f"{path}: more than {MAX_FRAMES} frames")
    lengths: list[int] = []
    hdrs: list[VnetHdr | None] = []
    for index, item in enumerate(value):
        where = f"{path}: frame {index}"
        if not isinstance(item, dict):
            raise InputError(f"{where}: expected an object like {{\"len\": 1514, \"hdr\": "
                             "\"0101...\"}}")
        unknown = sorted(set(item) - {"len", "hdr", "l4", "tcp_options"})
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (valid: len, hdr, "
                             "l4, tcp_options)")
        length = item.get("len")
        if not isinstance(length, int) or isinstance(length, bool):
            raise InputError(f"{where}: \"len\" must be a whole number")
        l4 = item.get("l4", "none")
        if l4 != "none" and l4 not in L4_CHOICES:
            raise InputError(f"{where}: \"l4\" {l4!r} is not one of none, "
                             + ", ".join(L4_CHOICES))
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
        raw = item.get("hdr")
        hdr = None
        if raw is not None:
            if not isinstance(raw, str):
                raise InputError(f"{where}: \"hdr\" must be a hex string")
            try:
                data = bytes.fromhex(raw.replace(" ", ""))
            except ValueError:
                raise InputError(f"{where}: \"hdr\" {raw!r} is not hex") from None
            if len(data) > 10:
                raise InputError(f"{where}: \"hdr\" has {len(data)} bytes; give the 10-byte "
                                 "virtio_net_hdr (num_buffers is the device's to set)")
            hdr = VnetHdr.from_bytes(data)
        lengths.append(length)
        hdrs.append(hdr)
    return tuple(lengths), tuple(hdrs)


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
