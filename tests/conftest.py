"""Shared fixtures: golden files, a CLI runner, hypothesis profiles, the lab's temporary
directories and a stand-in QEMU."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings

GOLDEN = Path(__file__).parent / "golden"
ACTUAL = Path(__file__).parent / "actual"

settings.register_profile("dev", max_examples=60)
settings.register_profile("ci", max_examples=300, deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite golden files")


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    update = request.config.getoption("--update-golden") or os.environ.get("VNETRX_UPDATE_GOLDEN")

    def check(name: str, actual: str) -> None:
        __tracebackhide__ = True
        expected = GOLDEN / name
        if update:
            expected.parent.mkdir(parents=True, exist_ok=True)
            expected.write_text(actual)
            return
        if not expected.exists() or expected.read_text() != actual:
            saved = ACTUAL / name
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_text(actual)
            pytest.fail(f"{name} differs from golden; actual output saved to {saved} "
                        "(review, then rerun with --update-golden)")

    return check


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env={"COLUMNS": "100", "NO_COLOR": "1"})


@pytest.fixture
def made_dirs(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The temporary directories qemu.run creates (other lab runs may be going on)."""
    from vnetrx.owner import Owner

    made: list[Path] = []
    real = Owner.make_dir

    def recording(self: Owner, kind: str) -> Path:
        path = real(self, kind)
        made.append(path)
        return path

    monkeypatch.setattr(Owner, "make_dir", recording)
    return made


@pytest.fixture
def fake_qemu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for qemu-system-x86_64 that records its pid and hangs."""
    from vnetrx.lab import qemu

    pidfile = tmp_path / "pid"
    script = tmp_path / "fake-qemu"
    script.write_text(f"#!/bin/sh\necho $$ > {pidfile}\necho booting\nexec sleep 60\n")
    script.chmod(0o755)
    monkeypatch.setattr(qemu, "QEMU", str(script))
    return pidfile
