"""Every examples/*.sh runs and prints exactly its .expected.txt."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.sh"))


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example(script: Path) -> None:
    if shutil.which("vnetrx") is None:
        pytest.skip("the vnetrx command is not installed (pip install .)")
    env = {**os.environ, "NO_COLOR": "1", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out = subprocess.run(["sh", str(script)], capture_output=True, text=True, env=env, check=True)
    expected = script.with_suffix(".expected.txt").read_text()
    assert out.stdout == expected
