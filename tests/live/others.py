"""Telling our run's leftovers from another live run's objects: a test on a busy machine (two
suites at once, or a user's own vnetrx) must not count a mount or instance whose owner is
still running (its lock file is held, vnetrx.owner) as left behind."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

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


def tracefs_points() -> list[str]:
    """Where tracefs is mounted (/proc/mounts), other live runs' private mounts excluded."""
    lines = Path("/proc/mounts").read_text().splitlines()
    return [line.split()[1] for line in lines if line.split()[2:3] == ["tracefs"]
            and not of_a_live_run(os.path.basename(line.split()[1]))]


# Lists tracefs instances from a mount of its own, made in a private mount namespace: tracefs
# instances outlive mounts, so one must be mounted to see them, and a vnetrx run starting
# meanwhile adopts any tracefs mount it can see (vnetrx/live/tracefs.py) and fails when that
# mount goes away under it. Nobody outside the namespace sees this one.
_LIST_PRIVATELY = """
import ctypes, json, os, sys, tempfile
point = tempfile.mkdtemp(prefix="vnetrx-test-tracefs-")
libc = ctypes.CDLL(None, use_errno=True)
try:
    if libc.mount(b"nodev", point.encode(), b"tracefs", 0, None) != 0:
        sys.exit("mount tracefs: " + os.strerror(ctypes.get_errno()))
    try:
        print(json.dumps(sorted(os.listdir(os.path.join(point, "instances")))))
    finally:
        libc.umount2(point.encode(), 2)
finally:
    os.rmdir(point)
"""


def instance_names() -> list[str]:
    """Every tracefs instance's name, whether or not tracefs is mounted anywhere."""
    points = tracefs_points()
    if points:
        return sorted(p.name for p in (Path(points[0]) / "instances").iterdir())
    unshare = shutil.which("unshare")
    if unshare is not None:
        proc = subprocess.run(
            [unshare, "--mount", "--propagation", "private", sys.executable, "-c",
             _LIST_PRIVATELY], capture_output=True, text=True, timeout=60, check=True)
        names: list[str] = json.loads(proc.stdout)
        return names
    # no unshare(1): a brief mount anyone can see (a run starting just now may adopt it)
    point = tempfile.mkdtemp(prefix="vnetrx-test-tracefs-")
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.mount(b"nodev", point.encode(), b"tracefs", 0, None) == 0
    try:
        return sorted(p.name for p in (Path(point) / "instances").iterdir())
    finally:
        libc.umount2(point.encode(), 2)
        os.rmdir(point)
