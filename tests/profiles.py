"""The kernels "every profiled kernel" means in the tests, read from the registry
(vnetrx.kernel.registry.SERIES): a series added there is tested everywhere without editing a list.
Tests that pin a fact of particular kernels (5.12 against 5.13, a stable window) name them."""

from __future__ import annotations

from vnetrx.kernel.registry import SERIES


def version_key(name: str) -> tuple[int, ...]:
    """A sort key: 6.1 -> (6, 1) and 6.1.0 -> (6, 1, 0), the series' default before the release
    as tagged."""
    return tuple(map(int, name.split(".")))


def series(path: str, since: tuple[int, int] = (0, 0)) -> list[str]:
    """The series vnetrx models ``path`` for ("virtio", "tap", "headroom"), oldest first; with
    ``since``, only those from that (major, minor) on."""
    names = [s.name for s in SERIES if path in s.paths and (s.major, s.minor) >= since]
    assert names, f"no profiled series has the {path} path from {since}"
    return names


# The two LTS series as tagged: their defaults (6.1.192, 6.12.117) carry the stable backports
# these releases lack.
LTS_AS_TAGGED = ["6.1.0", "6.12.0"]

VIRTIO = series("virtio")
TAP = series("tap")
VIRTIO_AND_LTS_AS_TAGGED = sorted(VIRTIO + LTS_AS_TAGGED, key=version_key)
