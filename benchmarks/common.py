"""What the benchmark scripts share: another process keeping every core busy (``--busy``: a
user's machine is rarely idle), and the CPU time of one whole command."""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import resource
import statistics
import subprocess
from collections.abc import Iterator, Mapping
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
    return sum(cpu_split(cmd))


def cpu_split(cmd: list[str] | str) -> tuple[float, float]:
    """``cpu_seconds`` as its user and its system seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   shell=isinstance(cmd, str))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def round_options(parser: argparse.ArgumentParser, rounds: int) -> None:
    """--rounds and --busy, as every script that times whole commands takes them."""
    parser.add_argument("--rounds", type=int, default=rounds,
                        help=f"whole commands: N interleaved rounds (default {rounds})")
    parser.add_argument("--busy", action="store_true",
                        help="keep every core busy with another process meanwhile")


def interleaved(commands: Mapping[str, list[str] | str], rounds: int,
                keep_busy: bool) -> dict[str, list[float]]:
    """Each command's CPU seconds in ``rounds`` rounds, the commands taking turns within a round
    (so that a busy moment of the machine hits every command alike), with every core kept busy
    by another process when ``keep_busy``."""
    return {name: [user + system for user, system in runs]
            for name, runs in interleaved_split(commands, rounds, keep_busy).items()}


def interleaved_split(commands: Mapping[str, list[str] | str], rounds: int,
                      keep_busy: bool) -> dict[str, list[tuple[float, float]]]:
    """``interleaved``, each run's CPU time as its user and its system seconds."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    with busy(keep_busy):
        for _ in range(rounds):
            for name, cmd in commands.items():
                times[name].append(cpu_split(cmd))
    return times


def paired_ratio(runs: list[float], reference: list[float]) -> float:
    """The median of the round-by-round ratios of ``runs`` to ``reference``."""
    return statistics.median(t / r for t, r in zip(runs, reference, strict=True))


def heading(rounds: int, keep_busy: bool) -> str:
    return (f"whole commands, CPU seconds (user + system), median of {rounds} interleaved rounds"
            + (" (every core kept busy by another process)" if keep_busy else "") + ":")
