"""vnetrx/kernel/changes.py: the behaviour table. Every change is straddled by profiled kernels
(some carry it, some do not) and is asked about by code that runs, not only named in a comment."""

from __future__ import annotations

import ast

import pytest

from tests import ROOT
from vnetrx.kernel import changes as changes_module
from vnetrx.kernel.changes import CHANGES, Change
from vnetrx.kernel.registry import SERIES, lookup

# every series' default point release, plus point releases inside the stable windows of
# virtio_net_hdr_to_skb's short-lived changes (6.6.44: "missing check"; 6.6.46: unconditional TCP
# csum_offset)
PROFILES = [lookup(s.name) for s in SERIES] + [
    lookup(name) for name in ("6.1.0", "6.12.0", "6.6.44", "6.6.46")
]


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.key)
def test_every_change_is_straddled_by_profiles(change: Change) -> None:
    carriers = {k.name for k in PROFILES if k.has(change)}
    assert carriers, f"no profiled kernel carries {change.key}"
    assert len(carriers) < len(PROFILES), f"every profiled kernel carries {change.key}"


def _names_used(path: object) -> set[str]:
    """Names the code loads (not imports, comments or strings)."""
    tree = ast.parse(path.read_text())  # type: ignore[attr-defined]
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def test_every_change_is_in_the_table_and_used_by_code() -> None:
    constants = {name for name, value in vars(changes_module).items() if isinstance(value, Change)}
    assert {getattr(changes_module, n) for n in constants} == set(CHANGES)
    used: set[str] = set()
    for path in (ROOT / "vnetrx").rglob("*.py"):
        if path.name != "changes.py":
            used |= _names_used(path)
    unused = sorted(constants - used)
    assert unused == [], f"changes no code asks about: {unused}"


def test_a_change_named_only_in_a_comment_is_not_used(tmp_path: object) -> None:
    """The check above can fail."""
    source = tmp_path / "m.py"  # type: ignore[operator]
    source.write_text("from x import A, B\n# B is mentioned here\nif k.has(A):\n    pass\n")
    assert _names_used(source) == {"k", "A"}


def test_keys_are_unique() -> None:
    assert len({c.key for c in CHANGES}) == len(CHANGES)
