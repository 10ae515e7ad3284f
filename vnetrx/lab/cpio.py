"""A minimal writer for the cpio "newc" format the kernel unpacks as an initramfs
(Documentation/driver-api/early-userspace/buffer-format.rst). Pure: bytes in, bytes out."""

from __future__ import annotations

import stat
from dataclasses import dataclass

MAGIC = b"070701"
TRAILER = "TRAILER!!!"


@dataclass(frozen=True)
class Entry:
    """One archive member. ``data`` is the file content, or the target of a symlink."""

    name: str  # path inside the archive, without a leading "/"
    mode: int  # file type and permission bits (stat.S_IFREG | 0o755, ...)
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)  # major, minor for device nodes


def directory(name: str) -> Entry:
    return Entry(name, stat.S_IFDIR | 0o755)


def regular(name: str, data: bytes, perm: int = 0o644) -> Entry:
    return Entry(name, stat.S_IFREG | perm, data)


def symlink(name: str, target: str) -> Entry:
    return Entry(name, stat.S_IFLNK | 0o777, target.encode())


def char_device(name: str, major: int, minor: int, perm: int = 0o600) -> Entry:
    return Entry(name, stat.S_IFCHR | perm, b"", (major, minor))


def _pad4(length: int) -> bytes:
    return b"\0" * (-length % 4)


def _header(ino: int, entry: Entry, name: bytes) -> bytes:
    nlink = 2 if stat.S_ISDIR(entry.mode) else 1
    fields = (
        ino,
        entry.mode,
        0,  # uid
        0,  # gid
        nlink,
        0,  # mtime: reproducible archives
        len(entry.data),
        0,  # devmajor
        0,  # devminor
        entry.rdev[0],
        entry.rdev[1],
        len(name) + 1,  # namesize, NUL included
        0,  # check
    )
    return MAGIC + b"".join(b"%08X" % value for value in fields)


def archive(entries: list[Entry]) -> bytes:
    """The newc archive of ``entries`` (parents must come before children), with the trailer."""
    out = bytearray()
    for ino, entry in enumerate([*entries, Entry(TRAILER, 0)], start=1):
        name = entry.name.lstrip("/").encode()
        if not name:
            raise ValueError("empty name in cpio archive")
        header = _header(0 if entry.name == TRAILER else ino, entry, name)
        out += header + name + b"\0"
        out += _pad4(len(header) + len(name) + 1)
        out += entry.data + _pad4(len(entry.data))
    return bytes(out)


def read_archive(data: bytes) -> list[Entry]:
    """Parse a newc archive back into entries (the trailer excluded); for tests and debugging."""
    entries, pos = [], 0
    while pos < len(data):
        if data[pos : pos + 6] != MAGIC:
            raise ValueError(f"not a newc header at byte {pos}")
        fields = [int(data[pos + 6 + 8 * i : pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, rmajor, rminor, namesize = (
            fields[1],
            fields[6],
            fields[9],
            fields[10],
            fields[11],
        )
        name_start = pos + 110
        name = data[name_start : name_start + namesize - 1].decode()
        pos = name_start + namesize
        pos += -pos % 4
        body = data[pos : pos + size]
        pos += size
        pos += -pos % 4
        if name == TRAILER:
            break
        entries.append(Entry(name, mode, body, (rmajor, rminor)))
    return entries
