"""What the benchmark scripts share: another process keeping every core busy (``--busy``: a
user's machine is rarely idle), and the CPU time of one whole command."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import resource
import subprocess
from collections.abc import Iterator
from typing import Any


def _spin(stop: Any) -> None:  # a multiprocessing Event
    while not stop.is_set():
        sum(range(10_000))


@contextlib.contextmanager
def busy(enabled: bool) -> Iterator[None]:
    """While inside: one spinning process per core (when ``enabled``)."""
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,))
                for _ in range(os.cpu_count() or 1)] if enabled else []
    for p in spinners:
        p.start()
    try:
        yield
    finally:
        stop.set()
        for p in spinners:
            p.join()


def cpu_seconds(cmd: list[str] | str) -> float:
    """The user + system CPU seconds of one run of ``cmd`` (a shell line when a string), its
    output discarded (children of a shell line included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   shell=isinstance(cmd, str))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
