"""What a user downloading vnetrx gets: the licence, runnable examples, and an sdist that holds
what the tests and the README need."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_licence_is_the_mit_licence_pyproject_names() -> None:
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert 'license = "MIT"' in (ROOT / "pyproject.toml").read_text()


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "examples").glob("*.sh")))
def test_example_scripts_are_executable(script: str) -> None:
    assert os.access(ROOT / "examples" / script, os.X_OK)


def test_sdist_holds_goldens_data_examples_and_licence(tmp_path: Path) -> None:
    pytest.importorskip("build")
    import setuptools

    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} < 77 (pyproject's build requirement)")
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation",
                    "--skip-dependency-check", "-o",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (sdist,) = tmp_path.glob("vnetrx-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"LICENSE", "CHANGELOG.md", "examples/decode_tso_write.sh",
            "tests/golden/trace/small-1000-6.1.json"} <= names
    assert any(n.startswith("tests/data/replay/") for n in names)
    assert not any("__pycache__" in n or n.startswith("tests/actual") for n in names)
