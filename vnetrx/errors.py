"""The one error family users see. No imports from the rest of vnetrx."""

from __future__ import annotations


class VnetrxError(Exception):
    """Something the user can act on. The CLI prints one line and exits with ``exit_code``."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class InputError(VnetrxError):
    """The request itself is wrong (a length out of range, conflicting options): a usage error."""

    exit_code = 2


class UnknownProfileError(InputError):
    """No kernel profile matches the requested version."""


class UnsupportedError(InputError):
    """The combination is valid Linux but vnetrx does not model it (it says which)."""


class LayoutError(VnetrxError):
    """Bytes that do not fit a layout (truncated, corrupt)."""


class StructNotFound(LayoutError):
    """A struct or union name the BTF does not define: the user's input, so a usage error.
    ``known`` gives the names to suggest from (computed only when asked)."""

    exit_code = 2

    def __init__(self, message: str, known: object = None) -> None:
        super().__init__(message)
        self.known = known  # a callable returning the defined names


class SimulationError(VnetrxError):
    """An internal invariant broke: a vnetrx bug, reported with the step that broke it."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a long run, carrying what was collected before it (``partial``)
    so that the command can still print it (exit 130). Everything the run created has been
    removed by the time a caller sees this. Uncaught, it is an ordinary KeyboardInterrupt."""

    def __init__(self, partial: object) -> None:
        super().__init__()
        self.partial = partial


class DamagedInput(InputError):
    """A file damaged after its start: a capture cut inside a record (the disk filled, tcpdump
    was killed) or a block a strict reader refuses. ``read``: the whole records before the
    damage, which a reader hands on first (as tcpdump prints them before its error); exit 1,
    as tcpdump's."""

    exit_code = 1

    def __init__(self, message: str, read: int = 0, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.read = read
