"""The behaviour table and the profiles fit together: every change is straddled by profiled
kernels and consulted by some code; every series resolves and runs its paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetrx.kernel import changes as changes_module
from vnetrx.kernel.changes import CHANGES, Change
from vnetrx.kernel.registry import SERIES, lookup

SOURCE = Path(__file__).parent.parent / "vnetrx"
PROFILES = [lookup(s.name) for s in SERIES] + [lookup("6.1.0"), lookup("6.12.0")]


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.key)
def test_every_change_is_straddled_by_profiles(change: Change) -> None:
    carriers = {k.name for k in PROFILES if k.has(change)}
    assert carriers, f"no profiled kernel carries {change.key}"
    assert len(carriers) < len(PROFILES), f"every profiled kernel carries {change.key}"


def test_every_change_is_in_the_table_and_consulted() -> None:
    constants = {name for name, value in vars(changes_module).items() if isinstance(value, Change)}
    assert {getattr(changes_module, n) for n in constants} == set(CHANGES)
    code = "\n".join(p.read_text() for p in SOURCE.rglob("*.py")
                     if p.name != "changes.py")
    unused = sorted(n for n in constants if n not in code)
    assert unused == [], f"changes no code asks about: {unused}"


def test_keys_are_unique() -> None:
    assert len({c.key for c in CHANGES}) == len(CHANGES)


@pytest.mark.parametrize("series", SERIES, ids=lambda s: s.name)
def test_every_series_resolves_to_its_default_point(series: object) -> None:
    name = series.name  # type: ignore[attr-defined]
    k = lookup(name)
    assert k.name == f"{name}.{series.default_patch}"  # type: ignore[attr-defined]
