"""Which kernels vnetrx has profiles for, and how a ``--kernel`` argument picks one."""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.errors import UnknownProfileError, UnsupportedError
from vnetrx.kernel.build import BuildConfig
from vnetrx.kernel.changes import CHANGES
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.version import KernelVersion, ParsedRelease, parse_release


@dataclass(frozen=True)
class Series:
    """One supported release series and the point release a bare ``X.Y`` means."""

    major: int
    minor: int
    default_patch: int
    why: str  # why that point release is the default
    paths: frozenset[str]  # which paths vnetrx models for this series: virtio, tap, headroom

    @property
    def name(self) -> str:
        return f"{self.major}.{self.minor}"


_RX = frozenset({"virtio", "tap", "headroom"})
_TX_TAP = frozenset({"tap", "headroom"})
_TX = frozenset({"headroom"})

SERIES: tuple[Series, ...] = (
    Series(3, 15, 0, "as released (the version before needed_headroom)", _TX),
    Series(3, 16, 0, "as released", _TX),
    Series(3, 19, 0, "as released", _TX),
    Series(4, 13, 0, "as released (no tun_build_skb yet)", _TX_TAP),
    Series(4, 14, 0, "as released", _TX_TAP),
    Series(5, 12, 0, "as released", _RX),
    Series(5, 13, 0, "as released", _RX),
    Series(5, 15, 0, "as released", _RX),
    Series(
        6, 1, 192, "the LTS point release whose source was read and checked in a real guest", _RX
    ),
    Series(6, 6, 0, "as released", _RX),
    Series(
        6, 12, 117, "the LTS point release whose source was read and checked in a real guest", _RX
    ),
    Series(6, 18, 44, "the release measured on the reference machine", _RX),
    Series(7, 2, 13, "the point release whose virtio_net.c was read", _RX),
    Series(7, 3, 4, "the newest release read (Debian trixie-backports)", _RX),
)
NEWEST = SERIES[-1]


def supported_names() -> str:
    return ", ".join(s.name for s in SERIES)


def series_of(version: KernelVersion) -> Series | None:
    return next((s for s in SERIES if (s.major, s.minor) == version.series), None)


def require_path(k: KernelProfile, path: str) -> None:
    """Raise UnsupportedError unless ``path`` ("virtio", "tap", "headroom") is modelled for ``k``."""
    series = series_of(k.version)
    if series is not None and path in series.paths:
        return
    have = ", ".join(s.name for s in SERIES if path in s.paths)
    raise UnsupportedError(
        f"the {path} path is not modelled for kernel {k.name}", hint=f"series with it: {have}"
    )


def profile_for(
    release: ParsedRelease, build: BuildConfig | None = None, source: str = ""
) -> KernelProfile:
    """The profile for a parsed version; notes say what was assumed."""
    series = series_of(release.version)
    if series is None:
        raise UnknownProfileError(
            f"no profile for kernel {release.text}",
            hint=f"supported series: {supported_names()} (a point release such as 6.1.192 or a "
            "release string such as 6.1.0-57-amd64 selects its series)",
        )
    notes: list[str] = []
    patch = release.version.patch
    if patch is None:
        patch = series.default_patch
        if release.local:
            notes.append(
                f"{release.text} is a Debian ABI name: its upstream point release is "
                f"not in it; assumed {series.name}.{patch} ({series.why})"
            )
        elif patch:
            notes.append(
                f"{series.name} means {series.name}.{patch} ({series.why}); give "
                f"{series.name}.0 for the release as tagged"
            )
    version = KernelVersion(series.major, series.minor, patch)
    notes.extend(
        f"whether {version} carries '{change.subject}' is not known (seen in {bp}, absent from "
        f"{series.name}.0): assumed absent"
        for change in CHANGES
        for bp in change.backports
        if bp.series == version.series and 0 < patch < (bp.patch or 0)
    )
    return KernelProfile(version, build or BuildConfig(), source or release.text, tuple(notes))


def lookup(text: str, build: BuildConfig | None = None) -> KernelProfile:
    """``--kernel`` for anything but ``running`` (see vnetrx.kernel.running for that)."""
    return profile_for(parse_release(text), build)


def newest(build: BuildConfig | None = None) -> KernelProfile:
    return KernelProfile(
        KernelVersion(NEWEST.major, NEWEST.minor, NEWEST.default_patch),
        build or BuildConfig(),
        "default: the newest profile",
    )
