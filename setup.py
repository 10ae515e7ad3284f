"""vnetrx's build: the per-frame modules vnetrx/compiled.py names, compiled to C with mypyc.

The same source runs either way and prints the same output; compiled, a replay and a sweep run
about twice as fast. Left as plain Python: without a C compiler or mypyc at build time (a
warning says so), with VNETRX_PURE=1, and in editable installs (``pip install -e .``: an edited
module must run as written). ``vnetrx --version`` says which an installation is.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent

# vnetrx/compiled.py declares the modules (it imports nothing but the standard library)
_spec = importlib.util.spec_from_file_location("vnetrx_compiled", ROOT / "vnetrx" / "compiled.py")
assert _spec is not None and _spec.loader is not None
_declared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_declared)
COMPILED = _declared.compiled_sources(ROOT)


def _warn(message: str) -> None:
    print(f"vnetrx build: {message}; installing plain Python (same output, slower replay and "
          "sweep)", file=sys.stderr)


def _extensions() -> list[object]:
    """mypyc's extensions, when this run builds a wheel (not for sdists, metadata or editable
    installs)."""
    if os.environ.get("VNETRX_PURE") == "1":
        _warn("VNETRX_PURE=1")
        return []
    if not {"bdist_wheel", "build", "build_ext"} & set(sys.argv[1:]):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _warn("mypyc (mypy) is not importable")
        return []
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said):  # mypyc prints its errors and warnings
            extensions = mypycify(COMPILED, opt_level="3", group_name="vnetrx_native")
    except (Exception, SystemExit) as e:  # mypy's errors exit
        print(said.getvalue(), end="", file=sys.stderr)
        _warn(f"mypyc failed ({e})")
        return []
    warnings = [line for line in said.getvalue().splitlines() if ": warning: " in line]
    if warnings:
        # a warning is a change of meaning: "Treating generator comprehension as list" drains
        # an iterator the plain build reads lazily (a sweep's lengths, which carry Ctrl-C).
        # The compiled build must behave as the plain one, so a warning is an error.
        print("\n".join(warnings), file=sys.stderr)
        _warn(f"mypyc warned ({len(warnings)} warning(s), treated as errors)")
        return []
    for ext in extensions:
        ext.optional = True  # type: ignore[attr-defined]
    return list(extensions)


class BuildExt(build_ext):
    """All or nothing: if one extension fails to compile, none is installed."""

    def run(self) -> None:
        super().run()
        outputs = [Path(p) for p in self.get_outputs()]
        if outputs and not all(p.exists() for p in outputs):
            _warn("a C extension failed to compile")
            for p in outputs:
                p.unlink(missing_ok=True)


class BinaryDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return bool(self.ext_modules)


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildExt}, distclass=BinaryDistribution)
