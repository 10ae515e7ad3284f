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


@pytest.mark.parametrize(
    ("key", "without", "with_it"),
    [
        # vhost's own page_frag refill up to 6.8, pf_cache from 6.9 (4051bd8129ac)
        ("vhost_net_pf_cache", "6.8", "6.9"),
        # struct tun_xdp_hdr up to 6.16, the header at buf + 0 from 6.17
        ("vhost_xdp_hdr_at_hard_start", "6.16", "6.17"),
        # tun_xdp_one's short-frame check: CVE-2024-41091's fixed releases, one below each
        ("tun_xdp_one_short_frame", "5.15.163", "5.15.164"),
        ("tun_xdp_one_short_frame", "6.1.101", "6.1.102"),
        ("tun_xdp_one_short_frame", "6.6.42", "6.6.43"),
        ("tun_xdp_one_short_frame", "6.10.1", "6.10.2"),
        ("tun_xdp_one_short_frame", "6.10.1", "6.11.0"),
        ("vhost_net_tx_batch", "4.19", "4.20"),
    ],
)
def test_vhost_change_boundaries(key: str, without: str, with_it: str) -> None:
    assert key not in lookup(without).change_keys
    assert key in lookup(with_it).change_keys
