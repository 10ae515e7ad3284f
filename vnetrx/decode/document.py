"""``vnetrx decode``: a virtio_net_hdr (10, 12, 20 or 24 bytes), optionally followed by a frame,
decoded field by field and validated the way a tap write is (paths/virtio_net_hdr.py). Stdlib only.

The steps live next door: header.py (the header's struct, fields and their meanings), frame.py
(the frame's layers), csum.py (where the checksum goes) and json_doc.py (the JSON document);
this module checks the input and puts them together.

Schema ledger:
  vnetrx.decode/1  first version: kernel, input, header, frame, csum, validation, notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vnetrx.decode.csum import CsumPlace, csum_place
from vnetrx.decode.frame import Layer, parse_frame
from vnetrx.decode.header import (
    HeaderField,
    flag_names,
    gso_name,
    header_fields,
    header_layout,
    read_header,
)
from vnetrx.errors import InputError
from vnetrx.kernel.changes import VNET_HDR_UDP_TUNNEL
from vnetrx.kernel.profile import KernelProfile
from vnetrx.layouts.virtio_net import HDR_LENS
from vnetrx.paths.tun import MAX_FRAME_LEN, tun_rx_pad
from vnetrx.paths.tun.vnet_hdr import Verdict, validate
from vnetrx.paths.virtio_net_hdr import NEEDS_CSUM, VnetHdr

MAX_INPUT = max(HDR_LENS) + MAX_FRAME_LEN


@dataclass(frozen=True)
class Decoded:
    kernel: KernelProfile
    hdr_len: int
    struct: str
    raw_header: bytes
    fields: tuple[HeaderField, ...]
    hdr: VnetHdr
    flag_names: tuple[str, ...]
    flags_unknown: int
    gso_name: str
    frame: bytes | None
    frame_len: int | None  # the frame length validated (captured bytes, or --len)
    layers: tuple[Layer, ...]
    csum: CsumPlace | None
    verdict: Verdict | None
    notes: tuple[str, ...]


def parse_hex(text: str) -> bytes:
    """Hex text as people paste it: spaces, newlines, ':' '-' ',' separators, '0x' prefixes and
    strace's '\\x' escapes are all accepted; so is a quoted strace string ("\\1\\0A...", the
    octal escapes and printable characters of strace without -x, also "\\x01\\x00")."""
    stripped = text.strip()
    if stripped.startswith('"') or re.search(r"\\[0-7]", stripped):
        return _c_string(stripped)
    cleaned = re.sub(r"0x|\\x|[\s:,\-]", "", text.strip(), flags=re.IGNORECASE)
    if not cleaned:
        raise InputError("no bytes given (pass hex digits, --file F or - for stdin)")
    bad = re.search(r"[^0-9a-fA-F]", cleaned)
    if bad:
        raise InputError(f"{bad.group()!r} is not a hex digit (give bytes as hex, e.g. 0100…)")
    if len(cleaned) % 2:
        raise InputError(f"odd number of hex digits ({len(cleaned)}): the last byte is incomplete")
    return bytes.fromhex(cleaned)


_ESCAPES = {"n": 10, "t": 9, "r": 13, "v": 11, "f": 12, "a": 7, "b": 8, "e": 27, '"': 34,
            "\\": 92, "'": 39}


def _c_string(text: str) -> bytes:
    """The bytes of a C string literal as strace prints it: "...", escapes \\ooo (1-3 octal
    digits), \\xHH, \\n and friends, other printable characters as themselves. A trailing
    ``...`` (strace's -s cut) is refused: the bytes after it are unknown."""
    body = text
    if body.endswith("..."):
        raise InputError("the string ends in '...': strace cut it (run strace with -s 65535 "
                         "to print the whole write)")
    if body.startswith('"'):
        if len(body) < 2 or not body.endswith('"'):
            raise InputError("unbalanced quotes: give the whole strace string, \"...\"")
        body = body[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            if ord(ch) > 0x7E or ord(ch) < 0x20:
                raise InputError(f"{ch!r} at {i} is not a character strace prints unescaped")
            out.append(ord(ch))
            i += 1
            continue
        nxt = body[i + 1: i + 2]
        if nxt in "01234567" and nxt:
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            assert m is not None
            value = int(m.group(), 8)
            if value > 0xFF:
                raise InputError(f"octal escape \\{m.group()} at {i} is more than a byte")
            out.append(value)
            i += 1 + len(m.group())
        elif nxt in ("x", "X"):
            m = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:])
            if m is None:
                raise InputError(f"\\x at {i} has no hex digits")
            out.append(int(m.group(), 16))
            i += 2 + len(m.group())
        elif nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            raise InputError(f"unknown escape \\{nxt} at {i} in the strace string")
    if not out:
        raise InputError("no bytes given (pass hex digits, --file F or - for stdin)")
    return bytes(out)


def decode(
    k: KernelProfile, data: bytes, hdr_len: int = 10, frame_len: int | None = None
) -> Decoded:
    """Decode ``data`` = header + optional frame; validate when the frame length is known."""
    _check_input(data, hdr_len)
    layout = header_layout(k, hdr_len)
    raw, frame_bytes = data[:hdr_len], data[hdr_len:]
    frame = frame_bytes or None
    frame_len = _frame_len(frame_bytes, frame_len)
    values, hdr = read_header(layout, raw)
    names, unknown = flag_names(hdr.flags)
    layers, frame_notes = parse_frame(frame or b"")
    csum = csum_place(hdr, layers, frame_len) if hdr.flags & NEEDS_CSUM else None
    # the header's size is the tap's vnet_hdr_sz (24 turns UDP-tunnel GSO on, 6.17+)
    verdict = None if frame_len is None else validate(
        k, hdr, frame_len, headroom=tun_rx_pad(k), vnet_hdr_sz=hdr_len, frame=frame
    )
    return Decoded(
        k,
        hdr_len,
        layout.name,
        bytes(raw),
        header_fields(layout, values, hdr, csum),
        hdr,
        names,
        unknown,
        gso_name(hdr.gso_type),
        frame,
        frame_len,
        layers,
        csum,
        verdict,
        _notes(k, hdr_len, frame, frame_len, frame_notes),
    )


def _check_input(data: bytes, hdr_len: int) -> None:
    """A known header length, at least that many bytes, and no more than a header + frame."""
    if hdr_len not in HDR_LENS:
        raise InputError(
            f"header length {hdr_len} unknown (valid: {', '.join(map(str, HDR_LENS))})"
        )
    if len(data) < hdr_len:
        raise InputError(
            f"{len(data)} byte(s) given, a {hdr_len}-byte virtio_net_hdr needs {hdr_len} "
            "(truncated input)"
        )
    if len(data) > MAX_INPUT:
        raise InputError(f"{len(data)} bytes given; at most {hdr_len} + {MAX_FRAME_LEN} decode")


def _frame_len(frame_bytes: bytes, frame_len: int | None) -> int | None:
    """The frame length to validate: --len (at least the bytes given), else the bytes given,
    else None (header only)."""
    if frame_len is not None:
        if not 0 <= frame_len <= MAX_FRAME_LEN:
            raise InputError(f"frame length {frame_len} out of range (valid: 0..{MAX_FRAME_LEN})")
        if frame_len < len(frame_bytes):
            raise InputError(
                f"--len {frame_len} is shorter than the {len(frame_bytes)} frame bytes given "
                "(--len gives the written length when only a prefix was captured)"
            )
    elif frame_bytes:
        frame_len = len(frame_bytes)
    return frame_len


def _notes(
    k: KernelProfile,
    hdr_len: int,
    frame: bytes | None,
    frame_len: int | None,
    frame_notes: tuple[str, ...],
) -> tuple[str, ...]:
    """The frame walk's notes, then what was not checked or assumed, then how a tap reads it."""
    notes = list(frame_notes)
    if frame_len is None:
        notes.append("no frame bytes and no --len: the frame-dependent checks were not run")
    if frame is not None and frame_len is not None and frame_len > len(frame):
        notes.append(f"{len(frame)} of {frame_len} frame bytes given: the rest is assumed")
    if hdr_len > 10:
        notes.append(
            f"a tap write with vnet_hdr_sz {hdr_len} reads "
            + (
                "24 header bytes (UDP tunnel fields)"
                if hdr_len == 24 and k.has(VNET_HDR_UDP_TUNNEL)
                else "only the first 10 bytes (struct virtio_net_hdr)"
            )
            + f" and skips the rest (drivers/net/tun.c:tun_get_user @ {k.name})"
        )
    notes.append(
        "multi-byte fields read little-endian (VIRTIO_F_VERSION_1, or legacy on x86 and "
        "arm64; a tap with TUNSETVNETBE would read them big-endian)"
    )
    return tuple(notes)
