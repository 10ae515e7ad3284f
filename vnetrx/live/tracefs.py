"""A private tracefs instance recording one net tracepoint for one device (root only).

What it creates, and removes again on success, on error and on SIGINT/SIGTERM:

* a tracefs mount in a temporary directory, only when tracefs is not mounted anywhere yet;
* an instance ``instances/vnetrx-<pid>`` with ``net:<event>`` enabled and filtered on the device
  name. Instances outlive their process and their mount: ones a vnetrx killed with SIGKILL left
  behind (``vnetrx-<pid>`` of a dead pid) are removed first.

Nothing is configured and nothing is sent: the kernel only records what arrives. Used by
``vnetrx verify tap`` (vnetrx.live.tap) and ``vnetrx observe``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from vnetrx.errors import VnetrxError
from vnetrx.live.parse import parse_marker

EVENTS = ("napi_gro_receive_entry", "netif_receive_skb_entry")
INSTANCE_PREFIX = "vnetrx-"
MNT_DETACH = 2  # include/uapi/linux/mount.h (umount2 flag)


def read_text(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def tracefs_mounts() -> list[str]:
    mounts = read_text("/proc/mounts") or ""
    return [line.split()[1] for line in mounts.splitlines() if line.split()[2:3] == ["tracefs"]]


def libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While active, SIGTERM raises KeyboardInterrupt, so ``finally`` blocks clean up."""
    if not in_main_thread():
        yield
        return

    def handler(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def remove_stale_instances(instances: Path) -> None:
    """Remove instances a vnetrx that died hard (SIGKILL) left behind: only ours, named
    vnetrx-<pid>, and only when that process no longer exists."""
    for entry in instances.glob(f"{INSTANCE_PREFIX}*"):
        pid_text = entry.name[len(INSTANCE_PREFIX):]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        for event in EVENTS:
            with contextlib.suppress(OSError):
                (entry / "events" / "net" / event / "enable").write_text("0\n")
        with contextlib.suppress(OSError):
            entry.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class DeviceWatch:
    """Context manager: a tracefs instance recording ``net:<event>`` for device ``dev``."""

    def __init__(self, dev: str, event: str) -> None:
        if event not in EVENTS:
            raise ValueError(f"unsupported event {event}")
        if '"' in dev or "\\" in dev:
            raise VnetrxError(f"{dev!r} is not a network device name")
        self.dev = dev
        self.event = f"events/net/{event}"
        self.tracefs: Path | None = None
        self.mounted: Path | None = None  # the temporary mount point we created, if any
        self.instance: Path | None = None
        self._pipe: int | None = None  # trace_pipe fd
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
        mounts = tracefs_mounts()
        if mounts:
            self.tracefs = Path(mounts[0])
        else:
            point = Path(tempfile.mkdtemp(prefix="vnetrx-tracefs-"))
            self.mounted = point
            check(libc().mount(b"nodev", str(point).encode(), b"tracefs", 0, None),
                  f"mount tracefs on {point}")
            self.tracefs = point
        remove_stale_instances(self.tracefs / "instances")
        instance = self.tracefs / "instances" / f"{INSTANCE_PREFIX}{os.getpid()}"
        instance.mkdir()
        self.instance = instance
        if not (instance / self.event).is_dir():
            raise VnetrxError(f"this kernel has no tracepoint net:{Path(self.event).name}")
        (instance / self.event / "filter").write_text(f'name == "{self.dev}"\n')
        (instance / self.event / "enable").write_text("1\n")
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
        self, count: int, timeout: float, keep: Callable[[str], bool] = lambda _l: True
    ) -> list[str]:
        """Up to ``count`` trace lines that ``keep`` accepts, waiting at most ``timeout`` s."""
        out: list[str] = []
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
        mark = f"{INSTANCE_PREFIX}{os.getpid()}-{self._serial}"
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
        """Remove everything this object created. Safe to call twice; never raises."""
        in_main = in_main_thread()
        old = signal.getsignal(signal.SIGINT) if in_main else None
        if in_main:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not skip this
        try:
            self._remove()
        finally:
            if in_main:
                signal.signal(signal.SIGINT, old)

    def _remove(self) -> None:
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                os.close(self._pipe)
            self._pipe = None
        if self.instance is not None:
            with contextlib.suppress(OSError):
                (self.instance / self.event / "enable").write_text("0\n")
            for _ in range(200):  # the kernel refuses while trace_pipe is still busy
                try:
                    self.instance.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
            self.instance = None
        if self.mounted is not None:
            libc().umount2(str(self.mounted).encode(), MNT_DETACH)
            with contextlib.suppress(OSError):
                self.mounted.rmdir()
            self.mounted = None


def collect(
    dev: str, event: str, count: int, timeout: float, keep: Callable[[str], bool]
) -> list[str]:
    """Set up, read up to ``count`` accepted lines (or until ``timeout``), tear down; Ctrl-C
    and SIGTERM clean up too (KeyboardInterrupt leaves through the ``with``)."""
    with sigterm_as_interrupt(), DeviceWatch(dev, event) as watch:
        return watch.lines(count, timeout, keep)
