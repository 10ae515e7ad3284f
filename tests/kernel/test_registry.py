"""vnetrx/kernel/registry.py: every series resolves to its default point release."""

from __future__ import annotations

import pytest

from vnetrx.errors import InputError
from vnetrx.kernel.registry import SERIES, changes_between, lookup


@pytest.mark.parametrize("series", SERIES, ids=lambda s: s.name)
def test_every_series_resolves_to_its_default_point(series: object) -> None:
    name = series.name  # type: ignore[attr-defined]
    k = lookup(name)
    assert k.name == f"{name}.{series.default_patch}"  # type: ignore[attr-defined]


def test_changes_between_5_12_and_5_13() -> None:
    """5.13 brought page_to_skb's build_skb path (fb32856b16ad) and shared XDP_TX queues
    (97c2c69e1926); 6.1.76 the tun_xdp_act stats backport; reversed kernels are refused."""
    assert [c.key for c in changes_between("5.12", "5.13")] == [
        "page_to_skb_build_skb", "virtio_xdp_shared_tx_queues"]
    assert [c.key for c in changes_between("6.1.75", "6.1.76")] == ["tun_xdp_act_stats"]
    assert changes_between("6.12", "6.12") == []
    with pytest.raises(InputError, match=r"6\.13\.\.6\.12 is reversed"):
        changes_between("6.13", "6.12")
