"""Golden files: compare a command's output with tests/golden/NAME, after scrubbing what the golden
should not pin. Imports no vnetrx: conftest.py imports this before it chooses which vnetrx is
tested.

A scrub (like coverage.py's goldtest scrubs) is either a callable ``str -> str`` or a sequence of
``(regex, replacement)`` pairs applied in order (re.MULTILINE). Every scrub must find what it
removes: a pattern that matches nothing or a JSON key that is not there fails the test, so a
stale scrub cannot hide a change in the output."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import pytest

Scrub = Callable[[str], str] | Sequence[tuple[str, str]]


class Golden(Protocol):
    """The ``golden`` fixture: ``golden(name, actual, scrub=None)``."""

    def __call__(self, name: str, actual: str, scrub: Scrub | None = None) -> None: ...


def scrubbed(text: str, scrub: Scrub | None) -> str:
    if scrub is None:
        return text
    if callable(scrub):
        return scrub(text)
    for pattern, replacement in scrub:
        text, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
        if not count:
            raise AssertionError(f"scrub {pattern!r} matched nothing")
    return text


def cli_json(doc: object) -> str:
    """JSON as vnetrx prints it (vnetrx/render/json_out.py: ``json.dumps(obj, indent=2)`` and a
    newline), so a scrubbed document stays byte for byte in the form of the real output."""
    return json.dumps(doc, indent=2) + "\n"


def drop_json(*paths: str) -> Callable[[str], str]:
    """A scrub that deletes the keys at the dotted ``paths`` (``"kernel.changes"``) from a JSON
    document printed by vnetrx, and prints it again the same way."""

    def scrub(text: str) -> str:
        doc = json.loads(text)
        if cli_json(doc) != text:
            raise AssertionError("not JSON as vnetrx prints it (indent 2, ASCII, a final newline): "
                                 "scrubbing it would reformat it")
        for path in paths:
            node: Any = doc
            *parents, last = path.split(".")
            for key in parents:
                if not isinstance(node, dict) or key not in node:
                    raise AssertionError(f"scrub: {path} is not in the document")
                node = node[key]
            if not isinstance(node, dict) or last not in node:
                raise AssertionError(f"scrub: {path} is not in the document")
            del node[last]
        return cli_json(doc)

    return scrub


# Every kernel's change keys (`kernel.changes`): a trace pins the steps and values its kernel's
# changes chose (and the keys in its steps' `because`), not the whole list; an entry of the
# change table would otherwise rewrite every golden of every kernel that has it. The table is
# pinned once, by tests/golden/kernels/changes.json.
NO_KERNEL_CHANGES = drop_json("kernel.changes")


def compare(golden_dir: Path, actual_dir: Path, name: str, actual: str,
            scrub: Scrub | None = None, update: bool = False) -> None:
    """Fail unless ``golden_dir/name`` holds ``actual`` once scrubbed (then save the scrubbed
    output to ``actual_dir/name`` and show the start of the diff); ``update`` rewrites it."""
    __tracebackhide__ = True
    actual = scrubbed(actual, scrub)
    expected = golden_dir / name
    if update:
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(actual)
        return
    old = expected.read_text() if expected.exists() else None
    if old == actual:
        return
    saved = actual_dir / name
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(actual)
    if old is None:
        pytest.fail(f"{name}: no golden file; actual output saved to {saved} "
                    "(review, then rerun with --update-golden)")
    diff = list(difflib.unified_diff(old.splitlines(), actual.splitlines(),
                                     f"golden/{name}", f"actual/{name}", lineterm=""))
    shown = "\n".join(diff[:60]) + (f"\n... {len(diff) - 60} more diff lines" if len(diff) > 60
                                   else "")
    pytest.fail(f"{name} differs from golden; actual output saved to {saved} "
                f"(review, then rerun with --update-golden)\n{shown}")
