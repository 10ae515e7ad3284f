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

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from vnetrx.errors import InputError

if TYPE_CHECKING:
    from vnetrx.paths.virtio_net_hdr import VnetHdr

MAX_FRAMES = 100_000
DLT_EN10MB = 1  # pcap LINKTYPE_ETHERNET
PCAP_MAGICS = (
    b"\xd4\xc3\xb2\xa1",  # classic, little-endian, microseconds
    b"\xa1\xb2\xc3\xd4",
    b"\x4d\x3c\xb2\xa1",  # nanoseconds
    b"\xa1\xb2\x3c\x4d",
    b"\x0a\x0d\x0d\x0a",  # pcapng section header block
)
T = TypeVar("T")
_ITEM = re.compile(r"^(\d+)(?:-(\d+)(?::(\d+))?|x(\d+))?$")


def parse_list(text: str, where: str = "--len") -> tuple[int, ...]:
    """Expand a LIST (``60,1000,3400-3500:8,60x11``)."""
    out: list[int] = []
    for raw in re.split(r"[,\s]+", text.strip()):
        if not raw:
            continue
        out.extend(_item(raw, where, MAX_FRAMES - len(out)))
    if not out:
        raise InputError(f"{where}: no frame lengths given")
    return tuple(out)


def _item(token: str, where: str, room: int) -> list[int]:
    match = _ITEM.match(token)
    if match is None:
        raise InputError(
            f"{where}: {token!r} is not a number N, a range A-B[:STEP] or a repeat NxCOUNT"
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


def read_frames(path: str) -> tuple[tuple[int, ...], Headers | None]:
    """Frame lengths from a pcap/pcapng capture, a JSON array (of lengths, or of objects
    ``{"len": L, "hdr": HEX, "l4": ..., "tcp_options": N}`` that also give each frame's
    virtio_net_hdr) or LIST text. The headers are None unless the file gives them."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if data[:4] in PCAP_MAGICS:
        return _pcap_lengths(path, data), None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(
            f"{path} is neither a pcap/pcapng capture nor text (a JSON array or a LIST of lengths)"
        ) from None
    body = text.strip()
    if body.startswith("["):
        try:
            value = json.loads(body)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return _json_objects(path, value)
        return _json_lengths(path, value), None
    lines = [line.split("#", 1)[0] for line in text.splitlines()]
    return parse_list(" ".join(lines), where=path), None


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


def _pcap_lengths(path: str, data: bytes) -> tuple[int, ...]:
    """Captured lengths (pcap and pcapng)."""
    return tuple(_pcap_read(path, data, len, MAX_FRAMES))


def pcap_frames(path: str, data: bytes, limit: int) -> tuple[bytes, ...]:
    """The first ``limit`` frames of a capture, as bytes."""
    return tuple(_pcap_read(path, data, bytes, limit))


def _pcap_read(path: str, data: bytes, keep: Callable[[bytes], T], limit: int) -> list[T]:
    """``keep(frame)`` of the first ``limit`` frames, read with dpkt (pcap and pcapng; pure
    Python); more than MAX_FRAMES is an error. A frame the capture's snaplen may have cut is an
    error too: its length would be wrong."""
    import io
    import struct

    try:
        import dpkt  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise InputError(
            f"{path} is a capture; reading it needs the dpkt package", hint="pip install dpkt"
        ) from None
    out: list[T] = []
    cut: int | None = None
    try:
        reader = dpkt.pcap.UniversalReader(io.BytesIO(data))
        link = reader.datalink()
        snaplen = int(getattr(reader, "snaplen", 0) or 0)
        for _, frame in reader:
            if len(out) == limit:
                if limit < MAX_FRAMES:
                    break
                raise InputError(f"{path}: more than {MAX_FRAMES} frames")
            if cut is None and 0 < snaplen < 65535 and len(frame) == snaplen:
                cut = len(out)
            out.append(keep(frame))
    except (ValueError, struct.error, dpkt.dpkt.Error, EOFError, IndexError) as exc:
        raise InputError(f"{path}: unreadable capture ({exc})") from None
    if link != DLT_EN10MB:
        raise InputError(
            f"{path}: link type {link}, not Ethernet (1): its lengths are not Ethernet frames"
        )
    if not out:
        raise InputError(f"{path}: the capture holds no packets")
    if cut is not None:
        raise InputError(
            f"{path}: frame {cut} may be cut at the capture's snaplen {snaplen}; "
            "capture again with the full length (tcpdump -s 0)"
        )
    return out
