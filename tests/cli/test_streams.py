"""Every subcommand with a closed, full or broken standard stream: the exit status and the
error line are what they are with ordinary streams, never a traceback (issue 29: `vnetrx
kernels >&-` died with an AttributeError, errors written to /dev/full or a closed pipe died with
OSError/BrokenPipeError, a closed stderr changed exit statuses).

Each case runs as a process (the streams are the process's own file descriptors), two at a time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import pytest

# One line that works and one that fails (usage or runtime), for every subcommand; the lines
# that need root, a guest or a capture are given as --help and as a usage error.
WORKS = [
    ["trace", "--len", "1000", "--mergeable"],
    ["trace", "--len", "1000", "--json"],
    ["sweep", "--len", "60-70"],
    ["replay", "--len", "100x3"],
    ["decode", "0100", "0000", "0000", "2200", "0600"],
    ["headroom"],
    ["kernels"],
    ["diff", "--kernel", "5.12", "--kernel", "5.13", "--", "--len", "100"],
    ["layout", "skb_shared_info"],
    ["schema", "trace"],
    ["xdp", "check", "--json"],
    ["xdp"],  # a group without a command prints its help
    [],  # so does bare vnetrx
    ["lab", "--help"],
    ["observe", "--help"],
    ["verify", "tap", "--help"],
]
FAILS = [
    ["trace", "--len", "65536"],
    ["trace", "--len", "100", "--tcp-options", "9" * 30, "--json"],
    ["sweep", "--len", "9-3", "--json"],
    ["replay", "--len", "100x3", "--ring-size", "3"],
    ["decode", "zz", "--json"],
    ["headroom", "--kernel", "1.0"],
    ["kernels", "--between", "6.12..6.1"],
    ["diff", "--json"],
    ["layout", "no_such_struct", "--json"],
    ["schema", "nope"],
    ["xdp", "check", "--queues", "0"],
    ["lab", "virtio", "--len", "0"],
    ["observe", "--count", "0", "--json"],
    ["verify", "tap", "--len", "70000"],
]


class Ran(NamedTuple):
    code: int
    out: str
    err: str


def _run(args: list[str], stdin: int | None = None, stdout: int | None = None,
         stderr: int | None = None, close: tuple[int, ...] = ()) -> Ran:
    """``python -m vnetrx ARGS`` with fds in ``close`` closed in the child."""

    def closer() -> None:
        for fd in close:
            os.close(fd)

    proc = subprocess.run(
        [sys.executable, "-m", "vnetrx", *args],
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE if stderr is None else stderr,
        preexec_fn=closer if close else None,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
    )
    return Ran(proc.returncode, (proc.stdout or b"").decode(), (proc.stderr or b"").decode())


def _normal(args: list[str]) -> Ran:
    return _run(args)


def _stdout_closed(args: list[str]) -> Ran:
    return _run(args, close=(1,))


def _stderr_closed(args: list[str]) -> Ran:
    return _run(args, close=(2,))


def _stdin_closed(args: list[str]) -> Ran:
    return _run(args, close=(0,))


def _stdout_full(args: list[str]) -> Ran:
    with open("/dev/full", "wb") as full:
        return _run(args, stdout=full.fileno())


def _stdout_broken(args: list[str]) -> Ran:
    read, write = os.pipe()
    os.close(read)
    try:
        return _run(args, stdout=write)
    finally:
        os.close(write)


def _all(how: Callable[[list[str]], Ran], lines: list[list[str]]) -> list[Ran]:
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(how, lines))


@pytest.fixture(scope="module")
def normal() -> dict[tuple[str, ...], Ran]:
    lines = WORKS + FAILS
    return dict(zip(map(tuple, lines), _all(_normal, lines), strict=True))


def test_the_lines_work_and_fail_as_meant(normal: dict[tuple[str, ...], Ran]) -> None:
    for args in WORKS:
        assert normal[tuple(args)].code == 0, (args, normal[tuple(args)].err)
    for args in FAILS:
        ran = normal[tuple(args)]
        assert ran.code in (1, 2), (args, ran)
        assert ran.err.startswith("vnetrx: error: ") and ran.err.count("\n") == 1, (args, ran)


def test_a_closed_stdout_is_one_error_line_and_exit_1() -> None:
    for args, ran in zip(WORKS + FAILS, _all(_stdout_closed, WORKS + FAILS), strict=True):
        assert ran.code == 1, (args, ran)
        assert ran.err == "vnetrx: error: standard output is closed (nothing to print on)\n", (
            args, ran)


def test_a_closed_stderr_changes_neither_exit_status_nor_stdout(
    normal: dict[tuple[str, ...], Ran],
) -> None:
    for args, ran in zip(WORKS + FAILS, _all(_stderr_closed, WORKS + FAILS), strict=True):
        want = normal[tuple(args)]
        assert (ran.code, ran.out) == (want.code, want.out), args


def test_a_closed_stdin_changes_nothing_for_lines_that_do_not_read_it(
    normal: dict[tuple[str, ...], Ran],
) -> None:
    for args, ran in zip(WORKS + FAILS, _all(_stdin_closed, WORKS + FAILS), strict=True):
        assert ran == normal[tuple(args)], args


@pytest.mark.parametrize("args", [["decode", "-"], ["trace", "--load", "-"],
                                  ["replay", "--from", "-"]])
def test_a_closed_stdin_where_it_is_read_is_one_error_line(args: list[str]) -> None:
    ran = _stdin_closed(args)
    assert ran.code in (1, 2) and "Traceback" not in ran.err, ran
    assert ran.err.startswith("vnetrx: error: standard input is closed"), ran
    assert ran.err.count("\n") == 1


def test_a_full_disk_is_exit_1_and_keeps_usage_errors(normal: dict[tuple[str, ...], Ran]) -> None:
    for args, ran in zip(WORKS + FAILS, _all(_stdout_full, WORKS + FAILS), strict=True):
        want = normal[tuple(args)]
        assert "Traceback" not in ran.err, (args, ran.err[-400:])
        if want.code == 0:
            assert ran == Ran(1, "", "vnetrx: error: No space left on device\n"), args
        else:  # the error line is on stderr; only the JSON copy on stdout is lost
            assert (ran.code, ran.err) == (want.code, want.err), args


def test_a_reader_that_stopped_is_not_an_error(normal: dict[tuple[str, ...], Ran]) -> None:
    for args, ran in zip(WORKS + FAILS, _all(_stdout_broken, WORKS + FAILS), strict=True):
        want = normal[tuple(args)]
        assert "Traceback" not in ran.err, (args, ran.err[-400:])
        if want.code == 0:
            assert (ran.code, ran.err) == (0, ""), args
        else:
            assert (ran.code, ran.err) == (want.code, want.err), args


def test_an_argument_with_a_newline_is_still_one_error_line() -> None:
    ran = _run(["trace", "--kernel", "6.1\nfoo", "--len", "100"])
    assert ran.code == 2 and ran.err.count("\n") == 1, ran
    assert "'6.1\\nfoo'" in ran.err
