"""A private tracefs instance recording one net tracepoint for one device (root only).

What it creates, and removes again on success, on error and on SIGINT/SIGTERM:

* a tracefs mount of its own in ``<tmp>/vnetrx-tracefs-<token>``, only when tracefs is not
  mounted where the system mounts it (another run's private mount is never borrowed: it goes
  away when that run ends);
* an instance ``instances/vnetrx-<token>`` with ``net:<event>`` enabled and filtered on the
  device name.

``<token>`` belongs to a :class:`vnetrx.owner.Owner` whose lock file stays locked while the run
lives. Instances and mounts outlive a run killed with SIGKILL: the next run removes those whose
owner's lock it can take (a dead owner), and leaves everything else alone, including a live run
in another PID namespace. Cleanup holds SIGINT/SIGTERM until it is done.

Nothing is configured and nothing is sent: the kernel only records what arrives. Used by
``vnetrx verify tap`` (vnetrx.live.tap) and ``vnetrx observe``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import select
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from vnetrx import owner as owners
from vnetrx.errors import Interrupted, VnetrxError
from vnetrx.live.parse import parse_marker

EVENTS = ("napi_gro_receive_entry", "netif_receive_skb_entry")
MOUNT_KIND = "tracefs"  # <tmp>/vnetrx-tracefs-<token>
MNT_DETACH = 2  # include/uapi/linux/mount.h (umount2 flag)


def read_text(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def missing_for_tracing() -> list[str]:
    """What this machine lacks for ``vnetrx observe`` on a live device (empty when it can run):
    root, and tracefs in the kernel."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (it enables a tracepoint in a tracefs instance of its own)")
    if "tracefs" not in (read_text("/proc/filesystems") or "").split():
        missing.append("tracefs (a kernel built with CONFIG_TRACING)")
    return missing


def tracefs_mounts() -> list[str]:
    """Where tracefs is mounted, other vnetrx runs' private mounts excluded."""
    return [point for point in _all_tracefs_mounts()
            if owners.token_of(Path(point).name, MOUNT_KIND) is None]


def _all_tracefs_mounts() -> list[str]:
    mounts = read_text("/proc/mounts") or ""
    return [_unescape(line.split()[1]) for line in mounts.splitlines()
            if line.split()[2:3] == ["tracefs"]]


def _unescape(field: str) -> str:
    """/proc/mounts writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def remove_stale(tracefs: Path) -> None:
    """Remove what runs that died hard (SIGKILL, a crash) left behind: instances named
    ``vnetrx-<token>`` and private mounts ``vnetrx-tracefs-<token>`` whose owner is gone
    (:func:`vnetrx.owner.is_stale`). A name without a token, or with a live owner or one this
    run cannot see (another container's), is left alone."""
    dead: set[str] = set()
    instances = _open_dir(tracefs / "instances")
    if instances is not None:
        for entry in _entries(tracefs / "instances"):
            token = owners.token_of(entry.name)
            if token is None or not owners.is_stale(token):
                continue
            if _remove_instance(instances, entry.name):
                dead.add(token)  # else its lock stays: a later run tries again
        os.close(instances)
    for point in _all_tracefs_mounts():
        token = owners.token_of(Path(point).name, MOUNT_KIND)
        if token is None or not (token in dead or owners.is_stale(token)):
            continue
        _unmount(Path(point))
        dead.add(token)
    for folder in _entries(Path(tempfile.gettempdir())):  # a mount point already unmounted
        token = owners.token_of(folder.name, MOUNT_KIND)
        if token is not None and (token in dead or owners.is_stale(token)):
            with contextlib.suppress(OSError):
                folder.rmdir()
            dead.add(token)
    for token in dead:
        owners.forget(token)
    # Lock files of runs that died before they created anything (SIGKILL right after locking)
    owners.remove_stale_locks(names_in_use(tracefs))


def names_in_use(tracefs: Path | None = None) -> list[str]:
    """The names of every vnetrx tracefs instance and private tracefs mount (in ``tracefs``,
    or in every tracefs mounted): a dead run's lock stays while one of them carries its token."""
    points = [Path(p) for p in _all_tracefs_mounts()]
    names = [p.name for p in points]
    for point in [tracefs] if tracefs is not None else points:
        names += [entry.name for entry in _entries(point / "instances")]
    return names


def _entries(folder: Path) -> list[Path]:
    try:
        return list(folder.glob(f"{owners.PREFIX}*"))
    except OSError:
        return []


def _open_dir(folder: Path) -> int | None:
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None


def _remove_instance(instances: int, name: str) -> bool:
    """Disable and remove instance ``name`` of the directory open as ``instances`` (through
    the fd, it works after that directory's mount has been detached from every path); False
    when the kernel still refused after 10 s."""
    for event in EVENTS:
        with contextlib.suppress(OSError):
            fd = os.open(f"{name}/events/net/{event}/enable", os.O_WRONLY, dir_fd=instances)
            try:
                os.write(fd, b"0\n")
            finally:
                os.close(fd)
    for _ in range(200):  # the kernel refuses (EBUSY) while a trace_pipe reader is still open
        try:
            os.rmdir(name, dir_fd=instances)
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.05)
            continue
        return True
    return False


def _unmount(point: Path) -> None:
    libc().umount2(str(point).encode(), MNT_DETACH)
    with contextlib.suppress(OSError):
        point.rmdir()


class DeviceWatch:
    """Context manager: a tracefs instance recording ``net:<event>`` for device ``dev``."""

    def __init__(self, dev: str, event: str) -> None:
        if event not in EVENTS:
            raise ValueError(f"unsupported event {event}")
        if '"' in dev or "\\" in dev:
            raise VnetrxError(f"{dev!r} is not a network device name")
        self.dev = dev
        self.owner = owners.Owner()
        self.event = f"events/net/{event}"
        self.tracefs: Path | None = None
        self.mounted: Path | None = None  # the temporary mount point we created, if any
        self.instance: Path | None = None
        self._pipe: int | None = None  # trace_pipe fd
        self._instances: int | None = None  # fd of <tracefs>/instances, where ours is removed
        self._pending = ""
        self._serial = 0

    def __enter__(self) -> DeviceWatch:
        try:
            self._setup()
        except OSError as exc:
            self.close()
            raise VnetrxError(f"cannot set up tracing: {exc}") from None
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _setup(self) -> None:
        self.owner.__enter__()
        mounts = tracefs_mounts()
        if mounts:
            self.tracefs = Path(mounts[0])
        else:
            point = Path(tempfile.gettempdir()) / self.owner.name(MOUNT_KIND)
            self.mounted = point  # first: an interrupt right after mkdir still removes it
            point.mkdir(mode=0o700)
            check(libc().mount(b"nodev", str(point).encode(), b"tracefs", 0, None),
                  f"mount tracefs on {point}")
            self.tracefs = point
        remove_stale(self.tracefs)
        # Cleanup goes through this descriptor, not the path: a mount we adopted can be
        # unmounted under us (umount -l, or a user's script that mounted tracefs for a moment),
        # and then the path no longer leads to the instance while the kernel keeps it recording.
        # Its lock file would have gone with a "not there" rmdir, and nothing could remove it.
        with owners.shielded():  # recorded before a signal can interrupt (see trace_pipe's)
            self._instances = os.open(self.tracefs / "instances",
                                      os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        instance = self.tracefs / "instances" / self.owner.name()
        self.instance = instance  # first, as above
        os.mkdir(instance.name, dir_fd=self._instances)
        if not (instance / self.event).is_dir():
            raise VnetrxError(f"this kernel has no tracepoint net:{Path(self.event).name}")
        (instance / self.event / "filter").write_text(f'name == "{self.dev}"\n')
        (instance / self.event / "enable").write_text("1\n")
        # SIGINT/SIGTERM held while trace_pipe opens: a signal's handler runs as the call that
        # opened it returns, before its fd is recorded, and that unrecorded fd kept the instance
        # busy (rmdir EBUSY) until the process ended: cleanup retried for 10 s, then left the
        # instance to the next run (CI, 2026-12-03: a run SIGTERMed just after tracing started
        # took 10.2 s to exit)
        with owners.shielded():
            self._pipe = os.open(instance / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)

    def _next_line(self, deadline: float) -> str | None:
        """The next trace line, or None once ``deadline`` (time.monotonic) has passed."""
        assert self._pipe is not None
        while "\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            select.select([self._pipe], [], [], min(left, 0.2))
            try:
                chunk = os.read(self._pipe, 65536)
            except BlockingIOError:
                continue
            self._pending += chunk.decode(errors="replace")
        line, self._pending = self._pending.split("\n", 1)
        return line

    def lines(
        self,
        count: int,
        timeout: float,
        keep: Callable[[str], bool] = lambda _l: True,
        out: list[str] | None = None,
    ) -> list[str]:
        """Up to ``count`` trace lines that ``keep`` accepts, waiting at most ``timeout`` s,
        appended to ``out`` (a new list by default) as they arrive."""
        out = [] if out is None else out
        deadline = time.monotonic() + timeout
        while len(out) < count:
            line = self._next_line(deadline)
            if line is None:
                break
            if keep(line):
                out.append(line)
        return out

    def until_marker(self, timeout: float) -> list[str]:
        """Write a marker into the instance's ring buffer and return the lines before it: what
        was recorded up to now."""
        assert self.instance is not None
        self._serial += 1
        mark = f"{self.owner.name()}-{self._serial}"
        (self.instance / "trace_marker").write_text(mark + "\n")
        out: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            line = self._next_line(deadline)
            if line is None:
                raise VnetrxError("no trace marker came back from the tracefs instance")
            if parse_marker(line) == mark:
                return out
            out.append(line)

    def close(self) -> None:
        """Remove everything this object created. Safe to call twice; never raises. SIGINT and
        SIGTERM wait until it is done (a second Ctrl-C must not leave an instance recording)."""
        with owners.shielded():
            self._remove()

    def _remove(self) -> None:
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                os.close(self._pipe)
            self._pipe = None
        removed = True
        if self.instance is not None:
            removed = self._instances is not None and _remove_instance(
                self._instances, self.instance.name)
            self.instance = None
        if self._instances is not None:
            with contextlib.suppress(OSError):
                os.close(self._instances)
            self._instances = None
        if self.mounted is not None:
            _unmount(self.mounted)
            self.mounted = None
        # An instance the kernel would not remove keeps its lock file (unlocked once this
        # process ends): the next run sees a dead owner's instance and removes it.
        self.owner.release(keep_file=not removed)


def collect(
    dev: str, event: str, count: int, timeout: float, keep: Callable[[str], bool]
) -> list[str]:
    """Set up, read up to ``count`` accepted lines (or until ``timeout``), tear down. Ctrl-C
    and SIGTERM clean up too, then raise :class:`Interrupted` with the lines read so far."""
    seen: list[str] = []
    try:
        with owners.interrupt_once(), DeviceWatch(dev, event) as watch:
            return watch.lines(count, timeout, keep, seen)
    except KeyboardInterrupt:
        raise Interrupted(seen) from None
