"""vnetrx's cache directory, safe to use as root: files are only read from and written to a
directory this user owns that nobody else can write, through a directory file descriptor
(``O_NOFOLLOW`` on every file, ``O_EXCL`` temporary files with a random name, an atomic
rename); a file that is not a regular file of ours, or too large, reads as absent. Every
component from the user's home (or $XDG_CACHE_HOME) down is opened without following symlinks
and must be a directory of this user nobody else can write; the directories above it must be
root's or this user's (:func:`open_chain`). The home is never created. Each file carries its
length and CRC-32 (:data:`HEADER`): a truncated or damaged file reads as absent, and callers
still validate what they read, so a damaged cache is rebuilt, never trusted. Every operation is
best effort: when no safe directory exists vnetrx simply works without a cache
(:func:`problem` says why, in one line). Stdlib only.

Where: ``$XDG_CACHE_HOME/vnetrx`` (an absolute path), else ``$HOME/.cache/vnetrx`` (an absolute,
non-empty ``$HOME``, else the password database's home directory).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator

MAX_FILE = 64 << 20  # no cache file vnetrx writes comes near this
# Every file starts with MAGIC, the payload's length (8 bytes) and its CRC-32 (4 bytes), little
# endian. CRC-32 catches every error burst up to 32 bits (any damaged byte) and the length any
# truncation; files this user writes on purpose are not what it guards against.
MAGIC = b"vnxc1\n"
HEADER = len(MAGIC) + 12


def _seal(data: bytes) -> bytes:
    from zlib import crc32

    return MAGIC + len(data).to_bytes(8, "little") + crc32(data).to_bytes(4, "little") + data


def _unseal(raw: bytes) -> bytes | None:
    from zlib import crc32

    if len(raw) < HEADER or not raw.startswith(MAGIC):
        return None
    size = int.from_bytes(raw[len(MAGIC):len(MAGIC) + 8], "little")
    data = raw[HEADER:]
    if size != len(data) or crc32(data) != int.from_bytes(raw[HEADER - 4:HEADER], "little"):
        return None
    return data


def _home() -> str | None:
    home = os.environ.get("HOME", "")
    if not os.path.isabs(home):
        try:
            import pwd

            home = pwd.getpwuid(os.geteuid()).pw_dir
        except (ImportError, KeyError):
            return None
    if not os.path.isabs(home) or home == "/":
        return None
    return home


def root() -> str | None:
    """The cache directory's path (not checked), or None when there is no home to put it in."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "vnetrx")
    home = _home()
    return None if home is None else os.path.join(home, ".cache", "vnetrx")


def _base_and_below() -> tuple[str, list[str]] | None:
    """The directory that must already exist (the user's home, or $XDG_CACHE_HOME or its
    parent) and the components below it that may be created."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        xdg = os.path.normpath(xdg)
        if os.path.lexists(xdg) or xdg == "/":
            return xdg, ["vnetrx"]
        return os.path.dirname(xdg), [os.path.basename(xdg), "vnetrx"]
    home = _home()
    return None if home is None else (os.path.normpath(home), [".cache", "vnetrx"])


def unsafe_reason(st: os.stat_result) -> str | None:
    """Why a directory with this lstat() result is not safe to keep files in, or None."""
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory (a symlink is not followed)"
    if st.st_uid != os.geteuid():
        return f"it belongs to uid {st.st_uid}, not to uid {os.geteuid()}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "other users can write to it"
    return None


def ancestor_problem(path: str) -> str | None:
    """Why the directories above ``path`` (an absolute path) would let another user swap what
    it names, or None: each must be owned by root or by this user and writable by nobody else
    (sticky directories like /tmp excepted: nobody can rename an entry of ours there); a
    symlink among them must belong to root or to this user, and where it leads is checked the
    same way."""
    for text in (path, os.path.realpath(path)):
        parts = text.split("/")[1:-1]
        where = "/"
        for part in ["", *parts]:
            where = os.path.join(where, part) if part else where
            try:
                st = os.lstat(where)
            except OSError as exc:
                return f"{where}: {exc.strerror}"
            if st.st_uid not in (0, os.geteuid()):
                return f"{where} belongs to uid {st.st_uid}"
            if stat.S_ISLNK(st.st_mode):
                continue  # owned by root or us; its target is checked in the realpath pass
            if not stat.S_ISDIR(st.st_mode):
                return f"{where} is not a directory"
            if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
                return f"other users can write to {where}"
    return None


def path_problem(path: str) -> str | None:
    """Why a directory ``path`` (which may not exist yet: it is then created 0700 by the
    caller) is unsafe for this user to write in, or None: the existing part of it must pass
    :func:`ancestor_problem`, and ``path`` itself, when it exists, must be a directory of this
    user that nobody else can write (not a symlink)."""
    path = os.path.abspath(path)
    existing = path
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if existing != path:
        return ancestor_problem(os.path.join(existing, "x"))
    problem = ancestor_problem(path)
    if problem:
        return problem
    reason = unsafe_reason(os.lstat(path))
    return f"{path}: {reason}" if reason else None


def _open_below(dir_fd: int, name: str, where: str, create: bool) -> int:
    """Open ``name`` in ``dir_fd`` as a safe directory (created 0700 if ``create``); raises
    _Unsafe with the reason."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise _Unsafe(f"{where} does not exist") from None
        try:
            os.mkdir(name, 0o700, dir_fd=dir_fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise _Unsafe(f"cannot create {where}: {exc.strerror}") from None
        try:
            fd = os.open(name, flags, dir_fd=dir_fd)
        except OSError as exc:
            raise _Unsafe(_open_failure(dir_fd, name, where, exc)) from None
    except OSError as exc:
        raise _Unsafe(_open_failure(dir_fd, name, where, exc)) from None
    problem = unsafe_reason(os.fstat(fd))
    if problem:
        os.close(fd)
        raise _Unsafe(f"{where}: {problem}")
    return fd


def _open_failure(dir_fd: int | None, name: str, where: str, exc: OSError) -> str:
    try:
        if stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode):
            return f"{where} is a symlink (not followed)"
    except OSError:
        pass
    return f"{where}: {exc.strerror}"


class _Unsafe(Exception):
    pass


def open_chain(base: str, below: list[str], create: bool) -> int:
    """An fd of ``base``/``below``...: ``base`` must exist, every component from ``base`` down
    is opened without following a symlink and must be a directory of this user that nobody
    else can write, and ``base``'s ancestors must be safe (:func:`ancestor_problem`). Missing
    components below ``base`` are created 0700 when ``create``. Raises OSError with a
    one-line reason."""
    problem = ancestor_problem(base)
    if problem:
        raise OSError(errno.EPERM, f"unsafe cache path: {problem}")
    try:
        fd = _open_base(base)
        where = base
        for name in below:
            where = os.path.join(where, name)
            try:
                child = _open_below(fd, name, where, create)
            finally:
                os.close(fd)
            fd = child
    except _Unsafe as exc:
        raise OSError(errno.EPERM, f"unsafe cache path: {exc}") from None
    return fd


def _open_base(base: str) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(base, flags)
    except FileNotFoundError:
        raise _Unsafe(f"{base} does not exist (it is not created)") from None
    except OSError as exc:
        raise _Unsafe(_open_failure(None, base, base, exc)) from None
    problem = unsafe_reason(os.fstat(fd))
    if problem:
        os.close(fd)
        raise _Unsafe(f"{base}: {problem}")
    return fd


def problem(create: bool = False) -> str | None:
    """Why vnetrx's cache directory cannot be used, as one line, or None when it can."""
    chain = _base_and_below()
    if chain is None:
        return "no cache directory: $HOME and $XDG_CACHE_HOME are unset or not absolute"
    try:
        os.close(open_chain(*chain, create=create))
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


@contextlib.contextmanager
def _directory(create: bool) -> Iterator[int | None]:
    """An fd of the cache directory when it is safe (created 0700 if ``create``), else None."""
    chain = _base_and_below()
    if chain is None:
        yield None
        return
    try:
        fd = open_chain(*chain, create=create)
    except OSError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _safe_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and "\0" not in name


def read(name: str, limit: int = MAX_FILE) -> bytes | None:
    """The cache file ``name``'s bytes, or None (absent, not a regular file of ours, too big,
    damaged or truncated)."""
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
            limit += HEADER
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_size > limit:
                return None
            with os.fdopen(os.dup(fd), "rb") as f:
                raw = f.read(limit + 1)
            return _unseal(raw) if len(raw) <= limit else None
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
                f.write(_seal(data))
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
