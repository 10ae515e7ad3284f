"""vnetrx/kernel/registry.py: every series resolves to its default point release."""

from __future__ import annotations

import pytest

from vnetrx.kernel.registry import SERIES, lookup


@pytest.mark.parametrize("series", SERIES, ids=lambda s: s.name)
def test_every_series_resolves_to_its_default_point(series: object) -> None:
    name = series.name  # type: ignore[attr-defined]
    k = lookup(name)
    assert k.name == f"{name}.{series.default_patch}"  # type: ignore[attr-defined]
