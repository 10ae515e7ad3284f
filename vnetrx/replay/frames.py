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
from pathlib import Path

from vnetrx.errors import InputError

MAX_FRAMES = 100_000
DLT_EN10MB = 1  # pcap LINKTYPE_ETHERNET
_PCAP_MAGICS = (
    b"\xd4\xc3\xb2\xa1",  # classic, little-endian, microseconds
    b"\xa1\xb2\xc3\xd4",
    b"\x4d\x3c\xb2\xa1",  # nanoseconds
    b"\xa1\xb2\x3c\x4d",
    b"\x0a\x0d\x0d\x0a",  # pcapng section header block
)
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
    """Frame lengths from a pcap/pcapng capture, a JSON array of lengths, or LIST text."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if data[:4] in _PCAP_MAGICS:
        return _pcap_lengths(path, data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(
            f"{path} is neither a pcap/pcapng capture nor text (a JSON array or a LIST of lengths)"
        ) from None
    body = text.strip()
    if body.startswith("["):
        return _json_lengths(path, body)
    lines = [line.split("#", 1)[0] for line in text.splitlines()]
    return parse_list(" ".join(lines), where=path)


def _json_lengths(path: str, body: str) -> tuple[int, ...]:
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
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
    """Captured lengths, read with dpkt (pcap and pcapng; pure Python)."""
    import io
    import struct

    try:
        import dpkt  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise InputError(
            f"{path} is a capture; reading it needs the dpkt package", hint="pip install dpkt"
        ) from None
    try:
        reader = dpkt.pcap.UniversalReader(io.BytesIO(data))
        link = reader.datalink()
        snaplen = int(getattr(reader, "snaplen", 0) or 0)
        lengths = [len(frame) for _, frame in reader]
    except (ValueError, struct.error, dpkt.dpkt.Error, EOFError, IndexError) as exc:
        raise InputError(f"{path}: unreadable capture ({exc})") from None
    if link != DLT_EN10MB:
        raise InputError(
            f"{path}: link type {link}, not Ethernet (1): its lengths are not Ethernet frames"
        )
    if not lengths:
        raise InputError(f"{path}: the capture holds no packets")
    if len(lengths) > MAX_FRAMES:
        raise InputError(f"{path}: more than {MAX_FRAMES} frames")
    if 0 < snaplen < 65535:
        cut = [i for i, n in enumerate(lengths) if n == snaplen]
        if cut:
            raise InputError(
                f"{path}: frame {cut[0]} may be cut at the capture's snaplen {snaplen}; "
                "capture again with the full length (tcpdump -s 0)"
            )
    return tuple(lengths)
