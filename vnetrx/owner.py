"""What a run owns, so that it can be cleaned up after it whatever happened: a token in the name
of everything it creates (tracefs instances and mounts, temporary directories), and a lock file
it holds locked while it lives. A later run removes only what carries a token whose lock file it
can see and lock: the owner is dead (SIGKILL, a crash), and the check holds across PID
namespaces, where PIDs say nothing. Without a visible lock file (another container's run) it
leaves things alone. Stdlib only."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

PREFIX = "vnetrx-"


def lock_dir() -> Path:
    """Where lock files live: /run/vnetrx-locks for root (a tmpfs, gone at reboot with the
    tracefs instances), else ``<tmp>/vnetrx-locks-<uid>``."""
    uid = os.geteuid()
    if uid == 0 and Path("/run").is_dir():
        return Path("/run") / "vnetrx-locks"
    return Path(tempfile.gettempdir()) / f"vnetrx-locks-{uid}"


def _own_lock_dir() -> Path:
    """The lock directory, created if needed, refused unless it is a real directory of ours
    that nobody else can write (in a shared /tmp another user could have planted it)."""
    folder = lock_dir()
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise OSError(errno.EPERM, f"{folder} is not a directory only this user can write")
    return folder


class Owner:
    """A token and its held lock. ``name(kind)`` names what the run creates."""

    def __init__(self) -> None:
        self.token = f"{os.getpid()}x{secrets.token_hex(4)}"
        self._fd: int | None = None

    def __enter__(self) -> Owner:
        with shielded():  # a signal cannot land between the rename and keeping the fd
            return self._enter()

    def _enter(self) -> Owner:
        folder = _own_lock_dir()
        # Lock first, then give it its name: a lock file is never visible unlocked while its
        # owner lives (else a concurrent is_stale() could take it for a dead run's).
        draft = folder / f".{self.token}.new"
        fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(draft, folder / f"{self.token}.lock")
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                draft.unlink()
            raise
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self, keep_file: bool = False) -> None:
        """Unlock; the lock file is removed unless ``keep_file`` (something of this run could
        not be removed: the file tells a later run whose leftover it is)."""
        if self._fd is None:
            return
        if not keep_file:
            with contextlib.suppress(OSError):
                (lock_dir() / f"{self.token}.lock").unlink()
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = None

    def make_dir(self, kind: str) -> Path:
        """A private temporary directory ``<tmp>/vnetrx-<kind>-<token>`` (mode 0700)."""
        folder = Path(tempfile.gettempdir()) / self.name(kind)
        folder.mkdir(mode=0o700)
        return folder

    def name(self, kind: str = "") -> str:
        """``vnetrx-<kind>-<token>`` (or ``vnetrx-<token>``)."""
        return f"{PREFIX}{kind}-{self.token}" if kind else f"{PREFIX}{self.token}"


def token_of(name: str, kind: str = "") -> str | None:
    """The token in a name ``name(kind)`` made, or None."""
    head = f"{PREFIX}{kind}-" if kind else PREFIX
    if not name.startswith(head):
        return None
    token = name[len(head):]
    return token if token and all(c.isalnum() for c in token) and "x" in token else None


def is_stale(token: str) -> bool:
    """Its owner is gone: the lock file is here and nobody holds it."""
    try:
        fd = os.open(_own_lock_dir() / f"{token}.lock", os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return False  # not a lock we can see: another namespace's run, or not ours at all
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: the owner is alive
    finally:
        os.close(fd)
    return True


def remove_stale_dirs(kind: str) -> None:
    """Remove temporary directories ``make_dir(kind)`` made for runs that died hard."""
    try:
        entries = list(Path(tempfile.gettempdir()).glob(f"{PREFIX}{kind}-*"))
    except OSError:
        return
    for folder in entries:
        token = token_of(folder.name, kind)
        if token is None or not is_stale(token):
            continue
        with contextlib.suppress(OSError):
            if folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder)
        forget(token)


def forget(token: str) -> None:
    """Remove a dead owner's lock file once what it left has been removed."""
    with contextlib.suppress(OSError):
        (lock_dir() / f"{token}.lock").unlink()


DRAFT_AGE = 60.0  # seconds: an unlocked draft older than this belongs to a dead run


def remove_stale_locks(in_use: Sequence[str] = ()) -> None:
    """Remove lock files of dead owners that left nothing behind: no name in ``in_use`` (what
    the caller sees, e.g. tracefs instances and mounts) and no ``vnetrx-*`` entry in the
    temporary directory carries their token. Also drafts (``.<token>.new``) of runs killed
    while taking their lock, once unlocked and older than DRAFT_AGE."""
    try:
        folder = _own_lock_dir()
        entries = list(folder.iterdir())
        names = [*in_use, *(p.name for p in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"))]
    except OSError:
        return
    for entry in entries:
        if entry.name.endswith(".lock"):
            token = entry.name.removesuffix(".lock")
            if any(name.endswith(f"-{token}") for name in names) or not is_stale(token):
                continue
            forget(token)
        elif entry.name.startswith(".") and entry.name.endswith(".new"):
            with contextlib.suppress(OSError):
                if time.time() - entry.lstat().st_mtime > DRAFT_AGE and _unheld(entry):
                    entry.unlink()


def _unheld(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


_interrupting = False  # an interrupt_once() is active (nested ones leave it in charge)


@contextlib.contextmanager
def interrupt_once() -> Iterator[None]:
    """While active, the first SIGINT or SIGTERM raises KeyboardInterrupt, so ``finally``
    blocks clean up and the command ends as after Ctrl-C (exit 130); later ones are absorbed,
    so that a second signal arriving before a cleanup has blocked signals (:func:`shielded`)
    cannot cut it short. Leaving restores the previous handlers. Nested inside another, it
    changes nothing: the outer one has already raised for the first signal, or will."""
    global _interrupting
    if not in_main_thread() or _interrupting:
        yield
        return
    fired = False

    def handler(_signum: int, _frame: FrameType | None) -> None:
        nonlocal fired
        if not fired:
            fired = True
            raise KeyboardInterrupt

    old = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    _interrupting = True
    try:
        yield
    finally:
        _interrupting = False
        for signum, previous in old.items():
            signal.signal(signum, previous)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while cleaning up: a second Ctrl-C or a second SIGTERM waits
    until everything is removed, then takes effect."""
    blocked = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    except (OSError, ValueError):
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
