"""Version and release-string parsing, and what each resolves to."""

from __future__ import annotations

import pytest

from vnetrx.errors import UnknownProfileError
from vnetrx.kernel.changes import BIG_RECV_LEN_CHECK, PAGE_TO_SKB_BUILD_SKB, SMALL_HEAD_GRO_SIZED
from vnetrx.kernel.registry import lookup
from vnetrx.kernel.version import KernelVersion, parse_release


@pytest.mark.parametrize(
    ("text", "name"),
    [("5.13", "5.13.0"), ("6.1", "6.1.192"), ("6.1.0", "6.1.0"), ("6.1.192", "6.1.192"),
     ("6.1.0-57-amd64", "6.1.192"), ("6.18.44-fc-v782", "6.18.44"), ("6.12", "6.12.117"),
     ("6.12.0-37-cloud-amd64", "6.12.117")],
)
def test_resolve(text: str, name: str) -> None:
    assert lookup(text).name == name


def test_parse_keeps_local_version() -> None:
    parsed = parse_release("6.18.44-fc-v782")
    assert parsed.version == KernelVersion(6, 18, 44) and parsed.local == "-fc-v782"
    assert parsed.point_known


@pytest.mark.parametrize("text", ["", "nope", "6", "6.x", "6.1abc"])
def test_unreadable(text: str) -> None:
    with pytest.raises(UnknownProfileError):
        lookup(text)


def test_unknown_series_lists_supported() -> None:
    with pytest.raises(UnknownProfileError) as info:
        lookup("9.99")
    assert info.value.hint is not None and "6.18" in info.value.hint


def test_point_releases_and_backports() -> None:
    assert not lookup("6.1.0").has(BIG_RECV_LEN_CHECK)
    assert lookup("6.1.192").has(BIG_RECV_LEN_CHECK)
    assert lookup("6.1.200").has(BIG_RECV_LEN_CHECK)
    uncertain = lookup("6.1.100")
    assert not uncertain.has(BIG_RECV_LEN_CHECK)
    assert any("not known" in n for n in uncertain.notes)
    assert lookup("6.12.117").has(SMALL_HEAD_GRO_SIZED) and not lookup("6.12.0").has(
        SMALL_HEAD_GRO_SIZED)
    assert not lookup("5.12").has(PAGE_TO_SKB_BUILD_SKB) and lookup("5.13").has(
        PAGE_TO_SKB_BUILD_SKB)
