"""Watch one device's received skbs through a private tracefs instance (root only).

What this module creates, and removes again on success, on error and on SIGINT/SIGTERM (the same
rules as vnetrx.live.tap, whose helpers it uses):

* a tracefs mount in a temporary directory, only when tracefs is not mounted anywhere yet;
* a tracefs instance ``instances/vnetrx-<pid>`` with one event (``net:napi_gro_receive_entry``
  or ``net:netif_receive_skb_entry``) enabled and filtered on the device name. Instances that a
  vnetrx killed with SIGKILL left behind (``vnetrx-<pid>`` of a dead pid) are removed first.

Nothing is configured on the device and nothing is sent: the kernel only records what arrives.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from vnetrx.errors import VnetrxError
from vnetrx.live import tap as live_tap

EVENTS = ("napi_gro_receive_entry", "netif_receive_skb_entry")


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
        self.mounted: Path | None = None
        self.instance: Path | None = None
        self._pipe: int | None = None
        self._pending = ""

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
        mounts = live_tap._tracefs_mounts()
        if mounts:
            self.tracefs = Path(mounts[0])
        else:
            point = Path(tempfile.mkdtemp(prefix="vnetrx-tracefs-"))
            self.mounted = point
            live_tap._check(
                live_tap._libc().mount(b"nodev", str(point).encode(), b"tracefs", 0, None),
                f"mount tracefs on {point}",
            )
            self.tracefs = point
        live_tap._remove_stale_instances(self.tracefs / "instances")
        instance = self.tracefs / "instances" / f"{live_tap.INSTANCE_PREFIX}{os.getpid()}"
        instance.mkdir()
        self.instance = instance
        if not (instance / self.event).is_dir():
            raise VnetrxError(f"this kernel has no tracepoint net:{Path(self.event).name}")
        (instance / self.event / "filter").write_text(f'name == "{self.dev}"\n')
        (instance / self.event / "enable").write_text("1\n")
        self._pipe = os.open(instance / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)

    def lines(
        self, count: int, timeout: float, keep: Callable[[str], bool] = lambda _l: True
    ) -> list[str]:
        """Up to ``count`` trace lines that ``keep`` accepts, waiting at most ``timeout`` s."""
        assert self._pipe is not None
        out: list[str] = []
        deadline = time.monotonic() + timeout
        while len(out) < count:
            while "\n" in self._pending and len(out) < count:
                line, self._pending = self._pending.split("\n", 1)
                if keep(line):
                    out.append(line)
            if len(out) >= count:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            select.select([self._pipe], [], [], min(left, 0.2))
            try:
                chunk = os.read(self._pipe, 65536)
            except BlockingIOError:
                continue
            self._pending += chunk.decode(errors="replace")
        return out

    def close(self) -> None:
        """Remove everything this object created. Safe to call twice; never raises."""
        in_main = live_tap._in_main_thread()
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
            live_tap._libc().umount2(str(self.mounted).encode(), live_tap.MNT_DETACH)
            with contextlib.suppress(OSError):
                self.mounted.rmdir()
            self.mounted = None


def collect(
    dev: str, event: str, count: int, timeout: float, keep: Callable[[str], bool]
) -> list[str]:
    """Set up, read up to ``count`` accepted lines (or until ``timeout``), tear down; Ctrl-C
    and SIGTERM clean up too (KeyboardInterrupt leaves through the ``with``)."""
    with live_tap.sigterm_as_interrupt(), DeviceWatch(dev, event) as watch:
        return watch.lines(count, timeout, keep)
