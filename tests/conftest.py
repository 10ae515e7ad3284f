"""Which vnetrx is tested, and shared fixtures: golden files, a CLI runner, hypothesis
profiles, the lab's temporary directories and a stand-in QEMU."""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings

from tests.goldens import Golden, Scrub, compare  # imports no vnetrx (see _import_installed)

SOURCE = Path(__file__).resolve().parents[1] / "vnetrx"


def _installed_build() -> tuple[Path | None, str]:
    """The vnetrx ``pip install .`` put on sys.path, when it holds exactly this tree's modules
    and some of them compiled (setup.py): then the tests run what users run. Else the source."""
    for entry in sys.path:
        candidate = Path(entry or ".").resolve() / "vnetrx"
        if candidate != SOURCE and (candidate / "__init__.py").is_file():
            break
    else:
        return None, "no installed copy"
    if not any(candidate.rglob(f"*{suffix}") for suffix in EXTENSION_SUFFIXES):
        return None, f"{candidate} is plain Python"
    sources = sorted(p.relative_to(SOURCE) for p in SOURCE.rglob("*.py"))
    if sources != sorted(p.relative_to(candidate) for p in candidate.rglob("*.py")) or any(
            (SOURCE / p).read_bytes() != (candidate / p).read_bytes() for p in sources):
        return None, f"{candidate} was built from other sources (reinstall: pip install .)"
    return candidate, ""


def _import_installed() -> str:
    """Import the installed compiled build as ``vnetrx`` before any test imports the source."""
    installed, why_not = _installed_build()
    if installed is None:
        return f"the source tree, plain Python ({why_not})"
    spec = importlib.util.spec_from_file_location(
        "vnetrx", installed / "__init__.py", submodule_search_locations=[str(installed)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["vnetrx"] = module
    spec.loader.exec_module(module)
    # the tests' `python -m vnetrx` subprocesses too (Python 3.11+: the working directory, this
    # tree, is then not put ahead of the installed build; 3.10 runs them on the source)
    os.environ["PYTHONSAFEPATH"] = "1"
    from vnetrx.compiled import build_line

    return f"the installed build, {installed} ({build_line()})"


UNDER_TEST = _import_installed()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(f"vnetrx under test: {UNDER_TEST}")  # shown with -q too

GOLDEN = Path(__file__).parent / "golden"
ACTUAL = Path(__file__).parent / "actual"

settings.register_profile("dev", max_examples=60)
settings.register_profile("ci", max_examples=300, deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite golden files")


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    """``golden(name, actual, scrub=None)``: tests/golden/NAME must hold ``actual`` once
    ``scrub`` has dropped what the golden should not pin (tests/goldens.py)."""
    update = bool(request.config.getoption("--update-golden")
                  or os.environ.get("VNETRX_UPDATE_GOLDEN"))

    def check(name: str, actual: str, scrub: Scrub | None = None) -> None:
        __tracebackhide__ = True
        compare(GOLDEN, ACTUAL, name, actual, scrub, update)

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
