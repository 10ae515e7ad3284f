"""vnetrx/compiled.py: the modules setup.py compiles, and what an installation holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vnetrx.compiled import COMPILED_MODULES, COMPILED_PACKAGES, compiled_modules, compiled_sources

ROOT = Path(__file__).resolve().parents[1]


def test_compiled_sources_are_the_declared_modules_and_packages() -> None:
    sources = compiled_sources(ROOT)
    assert all((ROOT / s).is_file() for s in sources)
    # the ring model and the plans, every module of them
    assert {"vnetrx/replay/napi.py", "vnetrx/replay/refill.py", "vnetrx/replay/state.py",
            "vnetrx/paths/virtio_net/mergeable.py", "vnetrx/paths/virtio_net/page_to_skb.py",
            "vnetrx/sweep.py", "vnetrx/render/replay_json.py"} <= set(sources)
    for package in COMPILED_PACKAGES:
        folder = ROOT / package.replace(".", "/")
        assert {p.relative_to(ROOT).as_posix() for p in folder.glob("*.py")} <= set(sources)
    assert len(sources) == len(COMPILED_MODULES) + sum(
        len(list((ROOT / p.replace(".", "/")).glob("*.py"))) for p in COMPILED_PACKAGES)
    # neither click's commands nor the records' maker: they stay Python
    assert not any(s.startswith("vnetrx/cli/") or s == "vnetrx/records.py" for s in sources)


def test_an_installation_is_all_compiled_or_all_python() -> None:
    """setup.py installs every declared module compiled or none (a failed compile removes the
    others): the build under test (tests/conftest.py picks it) is one or the other."""
    declared = sorted(s[: -len(".py")].replace("/", ".") for s in compiled_sources(ROOT))
    assert compiled_modules() in ([], declared)


def test_the_plain_classes_are_immutable_when_compiled() -> None:
    """PostedBuffer, Posted, Frame, Plan and Row declare their fields Final: mypy refuses an
    assignment, and mypyc's native classes refuse it at run time too."""
    from vnetrx.paths.virtio_net.buffers import PostedBuffer

    if not compiled_modules():
        pytest.skip("plain Python: Final is checked by mypy only")
    buf = PostedBuffer(0, 0, 1536)
    with pytest.raises(AttributeError):
        buf.len = 2048  # type: ignore[misc]
    assert buf.len == 1536


MYPYC = """
import contextlib, io, sys
from pathlib import Path
from mypyc.build import mypycify
sys.path.insert(0, {root!r})
from vnetrx.compiled import compiled_sources
said = io.StringIO()
with contextlib.redirect_stdout(said):
    mypycify(compiled_sources(Path({root!r})), opt_level="0", group_name="vnetrx_native",
             target_dir={target!r})
print(said.getvalue())
"""


def test_mypyc_compiles_the_declared_modules_without_a_warning(tmp_path: Path) -> None:
    """setup.py installs plain Python when mypyc warns: a warning changes what the code means
    (``Treating generator comprehension as list`` drained a sweep's lengths, which carry
    Ctrl-C, before the first row). The declared modules translate without one."""
    pytest.importorskip("mypyc.build")
    done = subprocess.run([sys.executable, "-c", MYPYC.format(root=str(ROOT),
                                                              target=str(tmp_path))],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ": warning: " not in done.stdout and ": error: " not in done.stdout, done.stdout
