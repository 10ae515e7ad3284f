"""Stop a long computation at a clean boundary on Ctrl-C or SIGTERM, keeping what it has done.

``replay`` and ``sweep`` use it: inside ``with StopOnSignal() as stop``, the first SIGINT or
SIGTERM only sets ``stop.signal``; ``stop.items(iterable)`` then ends at the next item, so the
totals, the JSON document or the last JSONL batch describe exactly the items before it. The
command prints them and exits 130. A second signal raises KeyboardInterrupt (the user insists).
Stdlib only; no-op outside the main thread."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterable, Iterator
from types import FrameType
from typing import Any, Final, TypeVar

T = TypeVar("T")
SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


class StopOnSignal:
    def __init__(self) -> None:
        self.signal: int | None = None  # the first signal received
        self._old: dict[int, Any] = {}

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            self._old = {signum: signal.signal(signum, self._handler) for signum in SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._old.items():
            signal.signal(signum, previous)
        self._old = {}

    def _handler(self, signum: int, _frame: FrameType | None) -> None:
        if self.signal is not None:
            raise KeyboardInterrupt
        self.signal = signum

    @property
    def stopped(self) -> bool:
        return self.signal is not None

    def items(self, iterable: Iterable[T]) -> Iterator[T]:
        """``iterable`` until a signal arrives (checked before each item is handed out)."""
        for item in iterable:
            if self.signal is not None:
                return
            yield item


class Deferred:
    """``with Deferred() as held:`` SIGINT and SIGTERM are only recorded (``held.signal``), so
    that what is printed inside is printed whole; the caller then exits 130 if one came. No-op
    outside the main thread."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> Deferred:
        """Entering again while active changes nothing."""
        if not self._old and threading.current_thread() is threading.main_thread():
            self._old = {signum: signal.signal(signum, self._handler) for signum in SIGNALS}
        return self

    def _handler(self, signum: int, _frame: FrameType | None) -> None:
        if self.signal is None:
            self.signal = signum

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._old.items():
            signal.signal(signum, previous)
        self._old = {}
