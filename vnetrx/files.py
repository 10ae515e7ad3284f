"""Reading files a user names: regular files only (a FIFO would block, /dev/zero never ends),
never more than a stated size, and every failure a one-line ``InputError``. Stdlib only."""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from vnetrx.errors import InputError

MiB = 1 << 20
STDIN_OK = ("--from", "--weights", "--load")  # the options that read standard input for "-"


def open_input(name: str | os.PathLike[str], what: str = "") -> BinaryIO:
    """``name`` opened for reading (``-``: standard input); refuses what is not a regular
    file. ``what``: the option that named it ("--btf"), for the hint."""
    path = os.fspath(name)
    if path == "-":
        if sys.stdin is None:  # started with fd 0 closed (`<&-`): main points it at /dev/null
            given = f"{what} -" if what else "-"
            raise InputError(f"standard input is closed: nothing to read for {given}")
        stdin = sys.stdin.buffer
        if isinstance(stdin, io.BufferedReader):
            return stdin
        # standard input replaced by another binary stream (an embedding program, click's
        # test runner): read through a buffer, which can peek at a capture's magic
        return io.BufferedReader(stdin)  # type: ignore[type-var]
    label = path
    if "\x00" in path:
        raise InputError(f"cannot read {path!r}: a file name has no NUL byte")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read {label}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "not a regular file")
            raise InputError(f"cannot read {label}: it is {kind}, not a regular file",
                             hint=f"for a pipe, give {what} - and redirect it to standard "
                             "input" if stat.S_ISFIFO(mode) and what in STDIN_OK else None)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


HEAD = 4096  # bytes ``read_bounded``'s ``check`` sees before the rest is read


def read_bounded(name: str | os.PathLike[str], limit: int, what: str = "",
                 check: Callable[[bytes], None] | None = None) -> bytes:
    """All of a file (or standard input), refused past ``limit`` bytes: a regular file by its
    size before any byte is read, standard input after ``limit`` + 1. ``check(first bytes)``
    (at most HEAD) raises when they are not the start of what is wanted (a magic number): a
    2 GiB file of something else is refused after 4 KiB, not read whole first."""
    path = label = os.fspath(name)
    stream = open_input(path, what)
    try:
        if path != "-" and os.fstat(stream.fileno()).st_size > limit:
            raise InputError(f"{label} is larger than {_size(limit)}: not a file vnetrx reads")
        head = b""
        if check is not None:
            head = stream.read(min(HEAD, limit + 1))
            check(head)
        data = head + stream.read(limit + 1 - len(head))
    except OSError as exc:
        raise InputError(f"cannot read {label}: {exc.strerror or exc}") from None
    finally:
        if path != "-":
            stream.close()
    if len(data) > limit:
        raise InputError(f"{label} is larger than {_size(limit)}: not a file vnetrx reads")
    return data


def _size(limit: int) -> str:
    return f"{limit // MiB} MiB" if limit >= MiB else f"{limit:,} bytes"


MAX_JSON_VALUES = 500_000  # values (counted by their separators) a JSON input may hold


def parse_json(text: str, label: str, what: str, max_values: int = MAX_JSON_VALUES) -> Any:
    """``text`` parsed as JSON, or a one-line ``InputError`` naming ``label`` and what it is
    not (``what``: "a JSON array", "a JSON document"): a syntax error with its line, a number
    of 4,300+ digits, nesting too deep for the parser, or more than ``max_values`` values,
    which is refused before parsing (each value past the first follows a "," or ":"): what
    the parse builds is bounded by that, not by the text's size."""
    import json  # here: `vnetrx layout`'s fast path reads files through this module, without json

    if text.count(",") + text.count(":") >= max_values:
        raise InputError(f"{label}: more than {max_values:,} JSON values: not {what} vnetrx "
                         "reads")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{label}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:80]
        raise InputError(f"{label}: not {what} vnetrx reads ({why})") from None
