"""vnetrx.owner's lock files: a run killed (SIGKILL) after taking its lock and before creating
anything leaves a lock file the next run removes; locks of live runs, and of dead runs whose
leftovers still exist, stay. Lock and temporary directories point into tmp_path."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests import ROOT
from vnetrx import owner

DIE_HOLDING = """
import os, signal, sys
from vnetrx import owner
o = owner.Owner().__enter__()
print(o.token, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    locks, tmp = tmp_path / "locks", tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(owner, "lock_dir", lambda: locks)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return locks, tmp


def dead_owner(locks: Path, tmp: Path) -> str:
    """A token whose run was SIGKILLed right after taking its lock."""
    code = ("from pathlib import Path; import tempfile; from vnetrx import owner; "
            f"owner.lock_dir = lambda: Path({str(locks)!r}); tempfile.tempdir = {str(tmp)!r}\n"
            + DIE_HOLDING.replace("from vnetrx import owner\n", ""))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert proc.returncode == -9, proc.stderr
    return proc.stdout.strip()


def test_a_lock_left_by_sigkill_is_removed_by_the_next_run(dirs: tuple[Path, Path]) -> None:
    locks, tmp = dirs
    token = dead_owner(locks, tmp)
    assert (locks / f"{token}.lock").exists() and owner.is_stale(token)
    with owner.Owner() as alive:
        owner.remove_stale_locks()
        assert sorted(p.name for p in locks.iterdir()) == [f"{alive.token}.lock"]
    assert list(locks.iterdir()) == []


def test_a_dead_lock_whose_leftovers_remain_is_kept(dirs: tuple[Path, Path]) -> None:
    locks, tmp = dirs
    with_dir, with_instance = dead_owner(locks, tmp), dead_owner(locks, tmp)
    (tmp / f"vnetrx-lab-{with_dir}").mkdir()
    owner.remove_stale_locks([f"vnetrx-{with_instance}"])
    assert sorted(p.name for p in locks.iterdir()) == sorted(
        [f"{with_dir}.lock", f"{with_instance}.lock"])


def test_release_keeping_the_file_leaves_a_stale_lock(dirs: tuple[Path, Path]) -> None:
    locks, _ = dirs
    run = owner.Owner().__enter__()
    run.release(keep_file=True)
    assert owner.is_stale(run.token)  # the next run may remove what it names
    other = owner.Owner().__enter__()
    other.release()
    assert [p.name for p in locks.iterdir()] == [f"{run.token}.lock"]


def test_an_old_unheld_draft_is_removed_a_new_one_kept(dirs: tuple[Path, Path]) -> None:
    locks, _ = dirs
    locks.mkdir(mode=0o700)
    old, new = locks / ".1x0a.new", locks / ".2x0b.new"
    old.touch()
    new.touch()
    past = time.time() - owner.DRAFT_AGE - 5
    os.utime(old, (past, past))
    owner.remove_stale_locks()
    assert [p.name for p in locks.iterdir()] == [new.name]


def test_a_lab_run_removes_the_lock_of_a_run_killed_before_its_directory(
        dirs: tuple[Path, Path]) -> None:
    # lab.qemu's clean-up before a boot: the dead run's directory (if any) and the lock of a
    # run SIGKILLed between taking its lock and making its directory (issue 29)
    from vnetrx.lab import qemu

    locks, tmp = dirs
    dead_owner(locks, tmp)  # killed before it made its directory
    with_dir = dead_owner(locks, tmp)
    (tmp / f"vnetrx-lab-{with_dir}").mkdir()
    qemu.remove_stale()
    assert list(locks.iterdir()) == [] and list(tmp.iterdir()) == []
