"""docs/vnetrx.1 is what tools/make_man.py makes from the current commands (regenerate it with
`python tools/make_man.py` after changing an option or a help text)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from vnetrx.cli import cli
from vnetrx.cli.manpage import man_page

PAGE = Path(__file__).resolve().parents[1] / "docs" / "vnetrx.1"


def test_man_page_is_current() -> None:
    text = PAGE.read_text()
    date = re.search(r'^\.TH VNETRX 1 "([^"]+)"', text, re.M)
    assert date is not None
    assert man_page(cli, date.group(1)) == text, "run: python tools/make_man.py"


def test_man_page_covers_every_command() -> None:
    text = PAGE.read_text()
    for name in ("trace", "verify tap", "xdp check", "replay", "sweep", "lab virtio", "layout"):
        assert f'.SS "vnetrx {name}"' in text
    assert "\\-\\-xdp" in text


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_page_renders_without_warnings() -> None:
    run = subprocess.run(["groff", "-man", "-Tutf8", "-ww", str(PAGE)], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0 and run.stderr == "", run.stderr[:500]
