"""vnetrx's cache directory, safe to use as root: files are only read from and written to a
directory this user owns that nobody else can write, through a directory file descriptor
(``O_NOFOLLOW`` on every file, ``O_EXCL`` temporary files with a random name, an atomic
rename); a file that is not a regular file of ours, or too large, reads as absent. Callers still
validate what they read: a damaged or foreign cache is rebuilt, never trusted. Every operation is
best effort: when no safe directory exists vnetrx simply works without a cache. Stdlib only.

Where: ``$XDG_CACHE_HOME/vnetrx`` (an absolute path), else ``$HOME/.cache/vnetrx`` (an absolute,
non-empty ``$HOME``, else the password database's home directory).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator

MAX_FILE = 64 << 20  # no cache file vnetrx writes comes near this


def root() -> str | None:
    """The cache directory's path (not checked), or None when there is no home to put it in."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "vnetrx")
    home = os.environ.get("HOME", "")
    if not os.path.isabs(home):
        try:
            import pwd

            home = pwd.getpwuid(os.geteuid()).pw_dir
        except (ImportError, KeyError):
            return None
    if not os.path.isabs(home) or home == "/":
        return None
    return os.path.join(home, ".cache", "vnetrx")


def unsafe_reason(st: os.stat_result) -> str | None:
    """Why a directory with this lstat() result is not safe to keep files in, or None."""
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory (a symlink is not followed)"
    if st.st_uid != os.geteuid():
        return f"it belongs to uid {st.st_uid}, not to uid {os.geteuid()}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "other users can write to it"
    return None


@contextlib.contextmanager
def _directory(create: bool) -> Iterator[int | None]:
    """An fd of the cache directory when it is safe (created 0700 if ``create``), else None."""
    path = root()
    if path is None:
        yield None
        return
    if create:
        with contextlib.suppress(OSError):
            os.makedirs(path, mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        yield None
        return
    try:
        yield None if unsafe_reason(os.fstat(fd)) else fd
    finally:
        os.close(fd)


def _safe_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and "\0" not in name


def read(name: str, limit: int = MAX_FILE) -> bytes | None:
    """The cache file ``name``'s bytes, or None (absent, not a regular file of ours, too big)."""
    if not _safe_name(name):
        return None
    with _directory(create=False) as dir_fd:
        if dir_fd is None:
            return None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=dir_fd)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_size > limit:
                return None
            with os.fdopen(os.dup(fd), "rb") as f:
                data = f.read(limit + 1)
            return data if len(data) <= limit else None
        except OSError:
            return None
        finally:
            os.close(fd)


def write(name: str, data: bytes) -> bool:
    """Replace the cache file ``name`` atomically; False when it could not be written."""
    if not _safe_name(name) or len(data) > MAX_FILE:
        return False
    with _directory(create=True) as dir_fd:
        if dir_fd is None:
            return False
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600, dir_fd=dir_fd)
        except OSError:
            return False
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            return True
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            return False


def names() -> list[str]:
    """The cache's file names (empty when there is no safe cache directory)."""
    with _directory(create=False) as dir_fd:
        if dir_fd is None:
            return []
        try:
            return os.listdir(dir_fd)
        except OSError:
            return []


def remove(name: str) -> None:
    if not _safe_name(name):
        return
    with _directory(create=False) as dir_fd:
        if dir_fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dir_fd)
