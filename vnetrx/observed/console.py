"""A lab guest's serial console as vnetrx's /init and probes print it: status lines
``VNETRX <key> [<value>]`` among the kernel's own output and the trace lines. What every
reader of such a log (guest_log for lab virtio, vhost for lab vhost, lab.gro for lab virtio
--gro) shares: the lines, split into status and other lines, and the status keys that mean the
same in every log (errors /init reported, the trace window)."""

from __future__ import annotations

import re
from collections.abc import Iterator

_STATUS = re.compile(r"VNETRX (?P<key>[\w-]+)(?: (?P<value>.*?))?\s*$")


def console_lines(text: str) -> Iterator[tuple[str | None, str, str]]:
    """Each line of a serial log: ``(key, value, line)`` for a status line, ``(None, "",
    line)`` for any other (carriage returns left out, as the console adds them)."""
    for line in text.replace("\r", "").split("\n"):
        match = _STATUS.search(line)
        if match is None:
            yield None, "", line
        else:
            yield match.group("key"), match.group("value") or "", line


class TraceWindow:
    """The status keys every log shares: ``error`` (what /init could not do), ``trace-begin``
    and ``trace-end`` (the lines between them are the trace)."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.open = False  # inside trace-begin .. trace-end
        self.ended = False  # trace-end was printed: the trace is whole

    def take(self, key: str, value: str) -> bool:
        """Whether ``key`` was one of these (and is now taken into account)."""
        if key == "error":
            self.errors.append(value)
        elif key == "trace-begin":
            self.open = True
        elif key == "trace-end":
            self.open, self.ended = False, True
        else:
            return False
        return True
