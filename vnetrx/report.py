"""How an error leaves the process: one line on stderr (and, with --json/--jsonl, the error's
JSON object on stdout), never a traceback, even when the output itself is what failed.

No click here: the click CLI's error boundary (``VnetrxGroup.main``) and ``vnetrx.fast_trace``
(trace command lines served before click is imported) report through the same functions.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn


def report(message: str, exit_code: int, hint: str | None, argv: Sequence[str]) -> None:
    """The error's one line on stderr and, with --json/--jsonl, its JSON object on stdout.

    Reporting must not fail in turn: stdout may be the full disk or the closed pipe that caused
    the error, or stderr may be gone; what cannot be written is dropped and the exit status
    still says what happened."""
    line = f"vnetrx: error: {one_line(message)}" + (f" ({one_line(hint)})" if hint else "")
    write_quietly(sys.stderr, line)
    if "--json" in argv or "--jsonl" in argv:
        from vnetrx.codec import error_to_dict

        write_quietly(sys.stdout, json.dumps(error_to_dict(message, exit_code, hint)))


def one_line(text: str) -> str:
    """An argument echoed in a message may hold a newline or other control characters: shown
    escaped (as Python's repr would), so that an error is always exactly one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def write_quietly(stream: Any, line: str) -> None:
    try:
        stream.write(line + "\n")
        stream.flush()
    except (OSError, ValueError):  # ENOSPC, EPIPE, a closed stream
        if stream is sys.stdout:
            quiet_stdout()


def output_failed(exc: OSError, argv: Sequence[str]) -> NoReturn:
    """Writing the output or reading an input failed (ENOSPC, EIO): one line, exit 1."""
    import errno

    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO):
        quiet_stdout()  # stdout itself may be what failed
    where = f": {exc.filename}" if exc.filename else ""
    report(f"{exc.strerror or exc}{where}", 1, None, argv)
    sys.exit(1)


def quiet_stdout() -> None:
    """After stdout failed (a full disk): point it at /dev/null, so that the exit-time flush of
    what is still buffered does not fail again with a traceback."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
