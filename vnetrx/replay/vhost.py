"""``vnetrx replay --path vhost-rx``'s input: the frames the host's tap transmits, a JSON array
of objects ``{"len": L, "l4": "tcp4", "hdr": HEX, "tcp_options": N, "vlan": false}`` (``hdr``:
the skb's offload state as a 10-byte virtio_net_hdr; ``l4``: its headers, which segmentation
needs) or ``{"frame": HEX, "hdr": HEX}`` (the Ethernet frame's own bytes, which the guest's GRO
reads: ``--gro``), or, from ``--len LIST``, bare lengths."""

from __future__ import annotations

from typing import Any, Final

from vnetrx.errors import InputError
from vnetrx.files import parse_json, read_bounded
from vnetrx.packet import L4_CHOICES, Headers, headers_of
from vnetrx.paths.vhost.rx import HostFrame, check_frame
from vnetrx.paths.virtio_net_hdr import VnetHdr
from vnetrx.replay.frames import hex_field

MAX_FRAMES: Final = 100_000
MAX_TEXT: Final = 16 << 20
KEYS: Final = ("len", "l4", "hdr", "tcp_options", "vlan", "frame")


def read_host_frames(path: str) -> tuple[HostFrame, ...]:
    """The frames of a JSON file (``-``: standard input), each checked."""
    return read_host_frame_bytes(path)[0]


def read_host_frame_bytes(path: str) -> tuple[tuple[HostFrame, ...], tuple[bytes | None, ...]]:
    """The frames of a JSON file, each checked, and each one's bytes (None: a frame given by
    its length only)."""
    name, value = _json_frames(path, "objects like {\"len\": 1514, \"l4\": \"tcp4\", "
                               "\"hdr\": \"0101...\"} or {\"frame\": HEX, \"hdr\": HEX}")
    pairs = [_frame(item, f"{name}: frame {index}") for index, item in enumerate(value)]
    return tuple(f for f, _ in pairs), tuple(b for _, b in pairs)


def _json_frames(path: str, like: str) -> tuple[str, list[Any]]:
    """The file's name as errors give it, and its JSON array of frames (1..MAX_FRAMES of
    them); ``like``: what the array holds, for the error."""
    data = read_bounded(path, MAX_TEXT, "--from")
    name = "standard input" if path == "-" else path
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise InputError(f"{name}: not UTF-8 text (a JSON array of frames)") from None
    value = parse_json(text, name, "a JSON array of frames")
    if not isinstance(value, list) or not value:
        raise InputError(f"{name}: expected a non-empty JSON array of {like}")
    if len(value) > MAX_FRAMES:
        raise InputError(f"{name}: more than {MAX_FRAMES} frames (valid: 1..{MAX_FRAMES})")
    return name, value


def _frame(item: Any, where: str) -> tuple[HostFrame, bytes | None]:
    if isinstance(item, int) and not isinstance(item, bool):
        item = {"len": item}
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object like {{\"len\": 1514, \"l4\": \"tcp4\", "
                         "\"hdr\": \"0101...\"}}")
    unknown = sorted(set(item) - set(KEYS))
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (valid: "
                         f"{', '.join(KEYS)})")
    frame_bytes: bytes | None = None
    if "frame" in item:
        raw_frame = item["frame"]
        if not isinstance(raw_frame, str):
            raise InputError(f"{where}: \"frame\" must be a hex string (the Ethernet frame)")
        try:
            frame_bytes = bytes.fromhex(raw_frame.replace(" ", ""))
        except ValueError:
            raise InputError(f"{where}: \"frame\" is not hex") from None
        if "len" in item and item["len"] != len(frame_bytes):
            raise InputError(f"{where}: \"len\" {item['len']} is not the frame's "
                             f"{len(frame_bytes)} bytes (give one of them)")
        item = {**item, "len": len(frame_bytes)}
    length = item.get("len")
    if not isinstance(length, int) or isinstance(length, bool):
        raise InputError(f"{where}: \"len\" must be a whole number (valid: 1..65535)")
    l4 = item.get("l4")
    options = item.get("tcp_options", 0)
    if not isinstance(options, int) or isinstance(options, bool):
        raise InputError(f"{where}: \"tcp_options\" must be a whole number (valid: 0..40, a "
                         "multiple of 4)")
    headers: Headers | None = None
    if l4 is not None:
        if l4 not in L4_CHOICES:
            raise InputError(f"{where}: \"l4\" {l4!r} is not one of {', '.join(L4_CHOICES)}")
        try:
            headers = headers_of(str(l4), options)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        if length < headers.end:
            raise InputError(f"{where}: {length} bytes cannot hold the {headers.end}-byte "
                             f"{l4} headers (valid: {headers.end}..65535)")
    elif options:
        raise InputError(f"{where}: \"tcp_options\" needs a TCP \"l4\" (tcp4, tcp6)")
    vlan = item.get("vlan", False)
    if not isinstance(vlan, bool):
        raise InputError(f"{where}: \"vlan\" must be true or false")
    hdr = None
    data = hex_field(item, "hdr", where)
    if data is not None:
        if len(data) > 10:
            raise InputError(f"{where}: \"hdr\" has {len(data)} bytes; give the skb's state as "
                             "the 10-byte virtio_net_hdr (valid: 0..10 bytes)")
        hdr = VnetHdr.from_bytes(data)
    frame = HostFrame(length, hdr, headers, vlan)
    check_frame(frame, where)
    return frame, frame_bytes


def length_frames(lengths: tuple[int, ...]) -> tuple[HostFrame, ...]:
    """``--len LIST``: frames with no offload state (CHECKSUM_NONE, not GSO)."""
    frames = tuple(HostFrame(n) for n in lengths)
    for index, f in enumerate(frames):
        check_frame(f, f"--len: frame {index}")
    return frames


def read_guest_frames(path: str) -> tuple[tuple[int, bytes | None], ...]:
    """``replay --path vhost-tx``'s frames: a JSON array of lengths or of objects ``{"len": L,
    "hdr": HEX}`` (the virtio_net_hdr the guest put before the frame: 10 bytes, or 12 with
    num_buffers, which vhost's TX does not read); each frame's length and header bytes."""
    name, value = _json_frames(path, "lengths or objects like {\"len\": 1514, \"hdr\": "
                               "\"0101...\"}")
    out: list[tuple[int, bytes | None]] = []
    for index, item in enumerate(value):
        where = f"{name}: frame {index}"
        if isinstance(item, int) and not isinstance(item, bool):
            item = {"len": item}
        if not isinstance(item, dict):
            raise InputError(f"{where}: expected a length or an object like {{\"len\": 1514, "
                             "\"hdr\": \"0101...\"}}")
        unknown = sorted(set(item) - {"len", "hdr", "l4"})
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (valid: len, hdr, "
                             "l4)")
        length = item.get("len")
        if not isinstance(length, int) or isinstance(length, bool) or not 0 <= length <= 65535:
            raise InputError(f"{where}: \"len\" must be a whole number (valid: 0..65535)")
        raw = item.get("hdr")
        hdr = None
        if raw is not None:
            if not isinstance(raw, str):
                raise InputError(f"{where}: \"hdr\" must be a hex string")
            try:
                hdr = bytes.fromhex(raw.replace(" ", ""))
            except ValueError:
                raise InputError(f"{where}: \"hdr\" {raw!r} is not hex") from None
            if len(hdr) not in (10, 12):
                raise InputError(f"{where}: \"hdr\" has {len(hdr)} bytes (valid: the 10-byte "
                                 "virtio_net_hdr, or 12 with num_buffers)")
            hdr = hdr[:10] if any(hdr[:10]) else None
        out.append((length, hdr))
    return tuple(out)
