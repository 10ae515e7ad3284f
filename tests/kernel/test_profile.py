"""vnetrx/kernel/profile.py: a profile is an immutable value, equal and hashed by its four
fields, with what it derives resolved once."""

from __future__ import annotations

import pytest

from vnetrx.kernel.build import BuildConfig
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.version import KernelVersion


def v(text: str) -> KernelVersion:
    return KernelVersion(*map(int, text.split(".")))


def test_equal_and_hashed_by_its_fields() -> None:
    a = KernelProfile(v("6.1.192"), BuildConfig(), "uname -r", ("note",))
    b = KernelProfile(v("6.1.192"), BuildConfig(), "uname -r", ("note",))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    for other in (KernelProfile(v("6.1.191"), BuildConfig(), "uname -r", ("note",)),
                  KernelProfile(v("6.1.192"), BuildConfig(page_size=16384), "uname -r", ("note",)),
                  KernelProfile(v("6.1.192"), BuildConfig(), "--kernel", ("note",)),
                  KernelProfile(v("6.1.192"), BuildConfig(), "uname -r")):
        assert other != a
    assert a != (a.version, a.build, a.source, a.notes)  # not equal to a tuple of its fields


def test_immutable() -> None:
    k = KernelProfile(v("6.12.117"))
    with pytest.raises(AttributeError, match="immutable"):
        k.source = "x"
    with pytest.raises(AttributeError, match="immutable"):
        del k.notes
    with pytest.raises(AttributeError):
        k.anything = 1  # type: ignore[attr-defined]


def test_the_default_max_skb_frags_is_resolved_once() -> None:
    """MAX_SKB_FRAGS: CONFIG_MAX_SKB_FRAGS's default 17 from 6.4 (the change table's
    max_skb_frags_configurable), max(16, 65536 / PAGE_SIZE + 1) before: 17 with 4 KiB pages,
    16 with 64 KiB."""
    assert KernelProfile(v("6.12.117")).build.max_skb_frags == 17
    assert KernelProfile(v("6.1.192")).build.max_skb_frags == 17
    assert KernelProfile(v("6.1.192"), BuildConfig(page_size=65536)).build.max_skb_frags == 16
    assert KernelProfile(v("6.12.117"), BuildConfig(page_size=65536)).build.max_skb_frags == 17
    # a default and an explicit 17 are the same profile once resolved
    assert KernelProfile(v("6.12.117")) == KernelProfile(v("6.12.117"),
                                                           BuildConfig(max_skb_frags=17))


def test_repr_names_the_fields() -> None:
    k = KernelProfile(v("6.6.44"), source="--kernel 6.6.44")
    assert repr(k).startswith("KernelProfile(version=KernelVersion(")
    assert "source='--kernel 6.6.44', notes=())" in repr(k)
