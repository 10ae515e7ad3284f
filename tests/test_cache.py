"""vnetrx.cache: a cache another user could plant files in is never used; planted symlinks,
FIFOs and devices are never followed, opened for writing or waited on."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from vnetrx import cache


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "vnetrx"


def test_round_trip_and_private_mode(home: Path) -> None:
    assert cache.write("x.rows", b"data")
    assert cache.read("x.rows") == b"data"
    assert (home.stat().st_mode & 0o777) == 0o700
    assert (home / "x.rows").stat().st_mode & 0o777 == 0o600
    assert cache.names() == ["x.rows"]  # no temporary file left


def test_group_or_world_writable_directory_is_not_used(home: Path) -> None:
    home.mkdir(mode=0o700)
    (home / "x").write_bytes(b"planted")
    for mode in (0o770, 0o777, 0o702):
        home.chmod(mode)
        assert cache.read("x") is None
        assert not cache.write("y", b"mine")
    assert not (home / "y").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown")
def test_a_directory_of_another_user_is_not_used(home: Path) -> None:
    home.mkdir(mode=0o700)
    (home / "x").write_bytes(b"planted")
    os.chown(home, 65534, 65534)
    assert cache.read("x") is None and not cache.write("y", b"mine")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown")
def test_a_file_of_another_user_is_not_trusted(home: Path) -> None:
    assert cache.write("x", b"mine")
    os.chown(home / "x", 65534, 65534)
    assert cache.read("x") is None


def test_symlinked_cache_directory_is_not_followed(home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    home.symlink_to(elsewhere)
    assert not cache.write("x", b"data")
    assert list(elsewhere.iterdir()) == []


def test_planted_symlink_is_not_followed_on_read_or_write(home: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"root's file")
    home.mkdir(mode=0o700)
    (home / "x").symlink_to(victim)
    assert cache.read("x") is None
    assert cache.write("x", b"new")  # replaces the link itself (rename), never writes through
    assert victim.read_bytes() == b"root's file"
    assert not (home / "x").is_symlink() and cache.read("x") == b"new"


def test_fifo_in_place_of_a_cache_file_does_not_hang(home: Path) -> None:
    home.mkdir(mode=0o700)
    os.mkfifo(home / "x")
    result: list[bytes | None] = []
    reader = threading.Thread(target=lambda: result.append(cache.read("x")), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive() and result == [None]


def test_oversized_file_reads_as_absent(home: Path) -> None:
    assert cache.write("x", b"1234")
    assert cache.read("x", limit=3) is None


def test_names_with_slashes_are_refused(home: Path) -> None:
    assert not cache.write("../escape", b"x") and cache.read("../escape") is None
    assert not (home.parent / "escape").exists()


def test_empty_home_uses_the_password_database(monkeypatch: pytest.MonkeyPatch) -> None:
    import pwd

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "")
    expected = pwd.getpwuid(os.geteuid()).pw_dir
    assert cache.root() == (os.path.join(expected, ".cache", "vnetrx")
                            if expected not in ("", "/") else None)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # not absolute: ignored
    assert cache.root() != os.path.join("relative/dir", "vnetrx")


def test_lab_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    from vnetrx.lab.initramfs import LabSetupError
    from vnetrx.lab.run import check_lab_dir

    lab = tmp_path / "lab"
    lab.mkdir(mode=0o700)
    check_lab_dir(lab)  # ours, private: fine
    check_lab_dir(lab / "not-yet")  # created later, under a private parent: fine
    lab.chmod(0o777)
    with pytest.raises(LabSetupError, match="other users can write to it"):
        check_lab_dir(lab)
    with pytest.raises(LabSetupError, match="other users can write to /"):
        check_lab_dir(lab / "not-yet")  # a world-writable parent without the sticky bit


def test_cached_kprobe_offsets_are_validated() -> None:
    from vnetrx.lab.vmlinux import _valid

    good = b'{"head": 192, "data": 200, "tail": 188, "end": 184, "mac_header": 182, "len": 112}'
    assert _valid(good) is not None
    assert _valid(good.replace(b'"len": 112', b'"len": 112, "extra": 1')) is None
    assert _valid(good.replace(b"192", b"-1")) is None
    assert _valid(good.replace(b"192", b'"192"')) is None
    assert _valid(b"[" * 100000) is None
