"""Telling our run's leftovers from another live run's objects: a test on a busy machine (two
suites at once, or a user's own vnetrx) must not count a mount or instance whose owner is
still running (its lock file is held, vnetrx.owner) as left behind."""

from __future__ import annotations

import contextlib
import fcntl
import os

from vnetrx import owner


def held(token: str) -> bool:
    """A live run holds this token's lock file."""
    try:
        fd = os.open(owner.lock_dir() / f"{token}.lock", os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def of_a_live_run(name: str) -> bool:
    """``name`` (a mount point's base name or an instance name) belongs to a running vnetrx."""
    for kind in ("tracefs", ""):
        token = owner.token_of(name, kind)
        if token is not None:
            return held(token)
    return False
