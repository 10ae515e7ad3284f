"""What setup.py compiles with mypyc, and what this installation runs compiled.

The modules a replay or a sweep runs per frame: replay's ring model and reader, the virtio-net
plans, the skb and virtio_net_hdr helpers they call, GRO (``replay --gro``), the row
writers, and the signal check every frame passes (``stop.items``). Compiled from the same
source (mypyc turns the type hints ``mypy --strict`` checks into C), a replay and a sweep run
about twice as fast; without a C compiler, with VNETRX_PURE=1 and in editable installs they stay
plain Python, with the same output (issue 15; benchmarks/ measure both). Everything else stays
Python: start-up imports little of the compiled part. Standard library only: setup.py loads this
file before anything is installed.
"""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# every module of these packages, and these modules
COMPILED_PACKAGES = ("vnetrx.replay", "vnetrx.paths.virtio_net", "vnetrx.paths.tun",
                     "vnetrx.paths.vhost")
COMPILED_MODULES = ("vnetrx.packet", "vnetrx.paths.maps", "vnetrx.paths.reason",
                    "vnetrx.paths.skbuff", "vnetrx.paths.steps", "vnetrx.paths.virtio_net_hdr",
                    "vnetrx.paths.gro", "vnetrx.paths.xdp", "vnetrx.render.gro_json",
                    "vnetrx.render.int_text",
                    "vnetrx.render.replay_json", "vnetrx.skb_row", "vnetrx.stop",
                    "vnetrx.sweep", "vnetrx.sweep_gro",
                    "vnetrx.values")


def compiled_sources(root: Path) -> list[str]:
    """The .py files setup.py compiles, relative to the project root ``root``."""
    files = {f"{name.replace('.', '/')}.py" for name in COMPILED_MODULES}
    for package in COMPILED_PACKAGES:
        folder = root / package.replace(".", "/")
        files |= {p.relative_to(root).as_posix() for p in folder.glob("*.py")}
    return sorted(files)


def compiled_modules() -> list[str]:
    """The vnetrx modules this installation holds as C extensions, dotted, sorted."""
    found = set()
    for path in PACKAGE.rglob("*.so"):
        for suffix in sorted(EXTENSION_SUFFIXES, key=len, reverse=True):
            if path.name.endswith(suffix):
                rel = path.relative_to(PACKAGE.parent).as_posix()[: -len(suffix)]
                found.add(rel.replace("/", "."))
                break
    return sorted(found)


def build_line() -> str:
    """For --version and the benchmarks: how this installation runs."""
    modules = compiled_modules()
    if not modules:
        return "plain Python (no module compiled)"
    return f"{len(modules)} modules compiled with mypyc (the per-frame path; setup.py)"
