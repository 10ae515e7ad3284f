"""Live runs never leave a mess and never disturb each other (root, /dev/net/tun, tracefs).

Every case runs real ``vnetrx verify tap`` processes and then checks that no tracefs instance,
tracefs mount, private mount directory, tap helper or unreleased lock file is left: after
overlapping runs, a run as PID 1 of a new PID namespace, a run in another PID namespace next to
a live one, two SIGTERMs close together, and SIGKILL followed by the next run.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests import ROOT
from tests.live.test_verify_live import (
    MISSING,
    assert_nothing_left,
    children_of,
    our_instances,
    tracefs_mounts,
)
from vnetrx.schemas import schema

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(bool(MISSING), reason="live tap check needs " + "; ".join(MISSING)),
]
VERIFY = [sys.executable, "-m", "vnetrx", "verify", "tap"]
UNSHARE = shutil.which("unshare")


def start(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    return subprocess.Popen([*prefix, *VERIFY, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)


def instances_of(pid: int) -> list[str]:
    return [n for n in our_instances(live_too=True) if n.startswith(f"vnetrx-{pid}x")]


def wait_writing(proc: subprocess.Popen[str], timeout: float = 90) -> None:
    """Until ``proc`` has its tracefs instance and its tap helper (it is writing frames)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if instances_of(proc.pid) and children_of(proc.pid):
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    pytest.fail("verify tap did not start writing")


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def test_two_overlapping_runs_each_own_their_instance() -> None:
    mounts = tracefs_mounts()
    first = start("--len", "14-65535:9", "--json")
    wait_writing(first)
    second = start("--len", "14-65535:9", "--json")
    wait_writing(second)
    assert first.poll() is None, "the runs did not overlap"
    both = [finish(first), finish(second)]
    for code, out, err in both:
        doc = json.loads(out)
        assert code == 0 and doc["matched"] == doc["total"] > 7000, err
    assert_nothing_left(mounts)


@pytest.mark.skipif(UNSHARE is None, reason="needs unshare(1) from util-linux")
def test_as_pid_1_of_a_new_pid_namespace() -> None:
    """A container entrypoint: the tap helper's parent check must not mistake PID 1 for
    init having adopted it."""
    mounts = tracefs_mounts()
    assert UNSHARE is not None
    proc = start("--len", "60,1000,9000", "--json",
                 prefix=(UNSHARE, "--pid", "--fork", "--mount-proc"))
    code, out, err = finish(proc)
    doc = json.loads(out)
    assert code == 0 and doc["matched"] == doc["total"] == 3, err
    assert_nothing_left(mounts)


@pytest.mark.skipif(UNSHARE is None, reason="needs unshare(1) from util-linux")
def test_a_run_in_another_pid_namespace_leaves_a_live_run_alone() -> None:
    """The run inside the namespace cannot see the host run's PID; it must still know that its
    instance is alive (the owner's lock is held) and leave it recording."""
    mounts = tracefs_mounts()
    assert UNSHARE is not None
    host = start("--len", "14-65535:5", "--json")
    wait_writing(host)
    for _ in range(2):
        inner = start("--len", "60,1000", prefix=(UNSHARE, "--pid", "--fork", "--mount-proc"))
        code, _, err = finish(inner)
        assert code == 0, err
    assert host.poll() is None, "the host run ended before the namespaced runs"
    code, out, err = finish(host)
    doc = json.loads(out)
    assert code == 0 and doc["matched"] == doc["total"], err
    assert_nothing_left(mounts)


@pytest.mark.parametrize("gap", [0.0, 0.005, 0.02, 0.1])
def test_a_second_sigterm_during_cleanup_waits_for_it(gap: float) -> None:
    mounts = tracefs_mounts()
    proc = start("--len", "14-65535:2")
    wait_writing(proc)
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    time.sleep(gap)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    code, _, err = finish(proc, 60)
    assert code in (130, -signal.SIGTERM), err  # -15: the second signal came after cleanup
    assert "Traceback" not in err
    assert_nothing_left(mounts)


def test_interrupted_run_prints_what_it_checked() -> None:
    mounts = tracefs_mounts()
    proc = start("--len", "14-65535:2", "--json")
    wait_writing(proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    code, out, err = finish(proc, 60)
    doc = json.loads(out)
    Draft202012Validator(schema("verify")).validate(doc)
    assert code == 130 and doc["interrupted"] is True and doc["planned"] == 32762
    assert 0 < doc["total"] < 32762 and doc["matched"] == doc["total"]
    assert f"interrupted after {doc['total']} of 32762 writes" in err
    assert_nothing_left(mounts)


HIDDEN_TRACEFS = r"""
import ctypes, json, os, signal, subprocess, sys, time
from pathlib import Path

libc = ctypes.CDLL(None, use_errno=True)
for line in reversed(Path("/proc/mounts").read_text().splitlines()):
    if line.split()[2] == "tracefs":  # hide tracefs in this mount namespace only
        assert libc.umount2(line.split()[1].encode(), 2) == 0, os.strerror(ctypes.get_errno())
verify = [sys.executable, "-m", "vnetrx", "verify", "tap"]
run = subprocess.Popen([*verify, "--len", "14-65535:2"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def private_mounts():
    return [l.split()[1] for l in Path("/proc/mounts").read_text().splitlines()
            if l.split()[2] == "tracefs"]


deadline = time.monotonic() + 60
while not private_mounts() and time.monotonic() < deadline:
    time.sleep(0.02)
time.sleep(0.5)
run.send_signal(signal.SIGKILL)
run.wait()
time.sleep(0.2)
left = private_mounts()
point = left[0] if left else None
instances = sorted(p.name for p in Path(point, "instances").glob("vnetrx-*")) if point else []
after = subprocess.run([*verify, "--len", "60"], capture_output=True, text=True)
print(json.dumps({"left_mounts": left, "left_instances": instances, "rc": after.returncode,
       "err": after.stderr, "mounts_after": private_mounts(),
       "dirs_after": sorted(str(p) for p in Path("/tmp").glob("vnetrx-tracefs-*"))}))
"""


@pytest.mark.skipif(UNSHARE is None, reason="needs unshare(1) from util-linux")
def test_sigkill_leaves_a_private_mount_the_next_run_removes() -> None:
    """Where tracefs is not mounted, a run mounts its own; SIGKILLed, it leaves the mount, its
    directory and its instance, and the next run removes all three."""
    mounts = tracefs_mounts()
    assert UNSHARE is not None
    out = subprocess.run(
        [UNSHARE, "--mount", "--propagation", "private", sys.executable, "-c", HIDDEN_TRACEFS],
        capture_output=True, text=True, timeout=240, cwd=ROOT, check=False,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert len(report["left_mounts"]) == 1 and "vnetrx-tracefs-" in report["left_mounts"][0]
    assert len(report["left_instances"]) == 1, report
    assert report["rc"] == 0, report["err"]
    assert report["mounts_after"] == [] and report["dirs_after"] == [], report
    assert_nothing_left(mounts)
    assert not Path(report["left_mounts"][0]).exists()


# In a private mount namespace: the only tracefs mount is one a user made for a moment (a name
# vnetrx does not own, so a run adopts it); it is lazily unmounted while the run records, then
# the run ends. Prints the instance's name, whether its path was still reachable, and the lock.
MOUNT_PULLED = """
import ctypes, json, os, tempfile
from pathlib import Path
from vnetrx import owner
from vnetrx.live import tracefs
libc = ctypes.CDLL(None, use_errno=True)
for point in tracefs._all_tracefs_mounts():
    libc.umount2(point.encode(), 2)
point = tempfile.mkdtemp(prefix="users-tracefs-")
assert libc.mount(b"nodev", point.encode(), b"tracefs", 0, None) == 0
with tracefs.DeviceWatch("lo", "netif_receive_skb_entry") as watch:
    name = watch.owner.name()
    lock = owner.lock_dir() / f"{watch.owner.token}.lock"
    assert watch.tracefs == Path(point) and watch.mounted is None
    assert libc.umount2(point.encode(), 2) == 0
    reachable = (Path(point) / "instances" / name).exists()
os.rmdir(point)
print(json.dumps({"name": name, "reachable": reachable, "lock_left": lock.exists()}))
"""


@pytest.mark.skipif(UNSHARE is None, reason="needs unshare(1) from util-linux")
def test_an_adopted_mount_pulled_away_still_loses_the_instance() -> None:
    """A run that adopted a tracefs mount someone unmounts (umount -l) while it records still
    removes its instance when it ends: by its path it was unreachable, and a run that took
    "not there" for "removed" dropped its lock file and left an instance recording that no
    later run could remove (CI, 2026-12-03: ``vnetrx-25211x07b3a854`` filtered on a tap)."""
    mounts = tracefs_mounts()
    assert UNSHARE is not None
    out = subprocess.run(
        [UNSHARE, "--mount", "--propagation", "private", sys.executable, "-c", MOUNT_PULLED],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["reachable"] is False  # the path no longer led to it
    assert report["name"] not in our_instances(live_too=True)
    assert report["lock_left"] is False
    assert_nothing_left(mounts)
