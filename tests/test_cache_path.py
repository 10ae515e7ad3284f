"""The whole cache path is checked, not only its last directory: a symlink planted at any
component from the home down, or a home inside a directory another user controls, makes vnetrx
work without a cache (and ``lab fetch-kernel`` refuse, before apt-get runs), and nothing is ever
created or written where the symlink leads. A home that does not exist is not created.

"Another user" is uid 65534 (nobody); the tests run as root and chown what that user would own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx import cache
from vnetrx.cli import cli
from vnetrx.lab.initramfs import LabSetupError
from vnetrx.lab.run import cache_dir, check_lab_dir

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown")
OTHER = 65534


def other_users(path: Path) -> Path:
    os.lchown(path, OTHER, OTHER)
    return path


def target(tmp_path: Path) -> Path:
    """Where a planted symlink leads: another user's directory (writable by them)."""
    where = tmp_path / "theirs"
    where.mkdir(mode=0o755, exist_ok=True)
    return other_users(where)


def use_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("VNETRX_LAB_DIR", raising=False)
    monkeypatch.setenv("HOME", str(home))


def assert_refused(tmp_path: Path, reason: str) -> None:
    """No cache is used, ``problem`` says why in one line, nothing appears in their target,
    and the lab refuses its directory."""
    assert not cache.write("x.rows", b"data")
    assert cache.read("x.rows") is None and cache.names() == []
    problem = cache.problem(create=True)
    assert problem is not None and reason in problem and "\n" not in problem, problem
    theirs = tmp_path / "theirs"
    assert not theirs.exists() or list(theirs.iterdir()) == []
    with pytest.raises(LabSetupError, match="unsafe lab directory"):
        check_lab_dir(cache_dir())
    assert not theirs.exists() or list(theirs.iterdir()) == []


def planted_home(tmp_path: Path, component: str) -> Path:
    """A home whose ``component`` (one of home, .cache, vnetrx, lab) is another user's
    symlink to their own directory; the components above it are real and ours."""
    home = tmp_path / "home"
    chain = [home, home / ".cache", home / ".cache" / "vnetrx",
             home / ".cache" / "vnetrx" / "lab"]
    names = ["home", ".cache", "vnetrx", "lab"]
    for path, name in zip(chain, names, strict=True):
        if name == component:
            path.symlink_to(target(tmp_path))
            other_users(path)
            break
        path.mkdir(mode=0o700)
    return home


@pytest.mark.parametrize("component", ["home", ".cache", "vnetrx"])
def test_a_symlink_at_any_component_of_the_cache_path_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, component: str
) -> None:
    use_home(monkeypatch, planted_home(tmp_path, component))
    assert_refused(tmp_path, "is a symlink (not followed)")


def test_a_symlink_of_ours_is_refused_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the home down no symlink is followed, whoever owns it."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (home / ".cache").symlink_to(mine)
    use_home(monkeypatch, home)
    assert not cache.write("x", b"data") and list(mine.iterdir()) == []
    assert "is a symlink" in str(cache.problem())


def test_a_symlinked_lab_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_home(monkeypatch, planted_home(tmp_path, "lab"))
    with pytest.raises(LabSetupError, match="lab: it is not a directory"):
        check_lab_dir(cache_dir())
    assert list((tmp_path / "theirs").iterdir()) == []


@pytest.mark.parametrize("depth", [1, 2])
def test_a_home_inside_another_users_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    """Their directory one or two levels above the home: they could rename the home away and
    put their own in its place."""
    theirs = target(tmp_path)
    home = theirs / "a" / "home" if depth == 2 else theirs / "home"
    home.mkdir(parents=True, mode=0o700)
    use_home(monkeypatch, home)
    assert not cache.write("x", b"data") and not (home / ".cache").exists()
    assert f"{theirs} belongs to uid {OTHER}" in str(cache.problem(create=True))
    with pytest.raises(LabSetupError, match=f"belongs to uid {OTHER}"):
        check_lab_dir(cache_dir())


def test_another_users_symlink_above_the_home_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real"
    (real / "home").mkdir(parents=True, mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    other_users(link)
    use_home(monkeypatch, link / "home")
    assert not cache.write("x", b"data")
    assert f"{link} belongs to uid {OTHER}" in str(cache.problem())
    assert not (real / "home" / ".cache").exists()


def test_roots_symlink_above_the_home_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/home -> /var/home (Fedora Silverblue): a symlink of root's above the home is fine."""
    real = tmp_path / "real"
    (real / "home").mkdir(parents=True, mode=0o700)
    (tmp_path / "link").symlink_to(real)
    use_home(monkeypatch, tmp_path / "link" / "home")
    assert cache.write("x", b"data") and cache.read("x") == b"data"
    assert cache.problem() is None
    assert (real / "home" / ".cache" / "vnetrx").is_dir()


def test_a_home_that_does_not_exist_is_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_home(monkeypatch, tmp_path / "gone")
    assert not cache.write("x", b"data") and cache.read("x") is None
    assert not (tmp_path / "gone").exists()
    assert "does not exist (it is not created)" in str(cache.problem(create=True))


@pytest.mark.parametrize("planted", ["xdg", "vnetrx"])
def test_a_symlink_in_the_xdg_cache_path_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    xdg = tmp_path / "xdg"
    if planted == "xdg":
        xdg.symlink_to(target(tmp_path))
    else:
        xdg.mkdir(mode=0o700)
        (xdg / "vnetrx").symlink_to(target(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    monkeypatch.delenv("VNETRX_LAB_DIR", raising=False)
    assert_refused(tmp_path, "is a symlink (not followed)")


def test_a_missing_xdg_cache_home_is_created_in_a_safe_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "new"))
    assert cache.write("x", b"data") and cache.read("x") == b"data"
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700


def test_fetch_kernel_refuses_before_apt_get(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_home(monkeypatch, planted_home(tmp_path, ".cache"))
    ran: list[list[str]] = []
    monkeypatch.setattr("vnetrx.lab.fetch._run", lambda argv, cwd=None: ran.append(argv) or "")
    result = CliRunner().invoke(cli, ["lab", "fetch-kernel", "--package",
                                      "linux-image-6.1.0-57-amd64"])
    assert result.exit_code == 1 and ran == [], result.output
    [line] = result.stderr.strip().splitlines()[:1]
    assert line.startswith("vnetrx: error: unsafe lab directory") and "is a symlink" in line
    assert list((tmp_path / "theirs").iterdir()) == []
