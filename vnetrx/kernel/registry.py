"""Which kernels vnetrx has profiles for, and how a ``--kernel`` argument picks one."""

from __future__ import annotations

import re

from vnetrx.errors import InputError, UnknownProfileError, UnsupportedError
from vnetrx.kernel.build import MAX_HEADER_BY_CONFIG, BuildConfig
from vnetrx.kernel.changes import CHANGES, Change, version_order
from vnetrx.kernel.presets import preset_for
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.version import KernelVersion, ParsedRelease, parse_release
from vnetrx.records import NamedTuple


class Series(NamedTuple):
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


OLDEST_ANY, NEWEST_ANY = (3, 15), (7, 99)  # what a version between read series may be


def supported_names() -> str:
    return ", ".join(s.name for s in SERIES)


def series_of(version: KernelVersion) -> Series | None:
    """The series vnetrx read for this version, if it is one of them."""
    return next((s for s in SERIES if (s.major, s.minor) == version.series), None)


def neighbours(version: KernelVersion) -> tuple[Series | None, Series | None]:
    """The read series just below (or at) and just above a version's series."""
    below = [s for s in SERIES if (s.major, s.minor) <= version.series]
    above = [s for s in SERIES if (s.major, s.minor) > version.series]
    return (below[-1] if below else None), (above[0] if above else None)


def paths_of(version: KernelVersion) -> frozenset[str]:
    """The paths modelled for a version: its series', or the nearest older read series' (the
    change table carries it forward); 4.15-5.11 take 5.12's receive path, the oldest read."""
    series = series_of(version)
    if series is not None:
        return series.paths
    below, above = neighbours(version)
    paths = below.paths if below is not None else frozenset()
    if version.series > (4, 14) and above is not None and "virtio" in above.paths:
        paths = paths | above.paths
    return paths


def require_path(k: KernelProfile, path: str) -> None:
    """Raise UnsupportedError unless ``path`` ("virtio", "tap", "headroom") is modelled for ``k``."""
    if path in paths_of(k.version):
        return
    have = ", ".join(s.name for s in SERIES if path in s.paths)
    raise UnsupportedError(
        f"the {path} path is not modelled for kernel {k.name}", hint=f"series with it: {have}"
    )


def profile_for(
    release: ParsedRelease, build: BuildConfig | None = None, source: str = ""
) -> KernelProfile:
    """The profile for a parsed version; notes say what was assumed. Without ``build``, a
    distribution kernel gets its own .config preset (default_config)."""
    build = build or _default_build(release)
    series = series_of(release.version)
    if series is None:
        return _derived(release, build, source)
    notes: list[str] = []
    patch = release.version.patch
    distro = release.distro
    if patch is None and distro is not None and distro.key == "rhel":
        patch = 0  # a nominal base: the release as tagged, not a stable point
    elif patch is None:
        patch = series.default_patch
        if distro is not None and distro.key == "debian":
            notes.append(
                f"{release.text} is a Debian ABI name: its upstream point release is "
                f"not in it; assumed {series.name}.{patch} ({series.why})"
            )
        elif distro is not None:
            notes.append(
                f"{release.text} is a{'n' if distro.name[0] in 'AEIOU' else ''} {distro.name} "
                f"ABI name: its upstream point release is not in it; assumed "
                f"{series.name}.{patch} ({series.why})"
            )
        elif release.local:
            notes.append(
                f"{release.text} is an ABI name of no vendor scheme vnetrx knows: its upstream "
                f"point release is not in it; assumed {series.name}.{patch} ({series.why})"
            )
        elif patch:
            notes.append(
                f"{series.name} means {series.name}.{patch} ({series.why}); give "
                f"{series.name}.0 for the release as tagged"
            )
    notes.extend(vendor_notes(release, build))
    version = KernelVersion(series.major, series.minor, patch)
    notes.extend(
        f"whether {version} carries '{change.subject}' is not known (seen in {bp}, absent from "
        f"{series.name}.0): assumed absent"
        for change in CHANGES
        for bp in change.backports
        if bp.series == version.series and 0 < patch < (bp.patch or 0)
    )
    return KernelProfile(version, build or BuildConfig(), source or release.text, tuple(notes))


def _derived(release: ParsedRelease, build: BuildConfig | None, source: str) -> KernelProfile:
    """A version in a series vnetrx did not read (6.8, 5.14, a distribution kernel): the change
    table decides it by version, and the notes say which changes that made present or absent
    between the read series around it."""
    version = release.version
    if not OLDEST_ANY <= version.series <= NEWEST_ANY:
        raise UnknownProfileError(
            f"no profile for kernel {release.text}: vnetrx models {OLDEST_ANY[0]}."
            f"{OLDEST_ANY[1]} to {NEWEST_ANY[0]}.x",
            hint=f"series read release by release: {supported_names()}",
        )
    below, above = neighbours(version)
    patch = version.patch if release.point_known and version.patch is not None else 0
    version = KernelVersion(version.major, version.minor, patch)
    k = KernelProfile(version, build or BuildConfig(), source or release.text)
    low = KernelVersion(below.major, below.minor, 0) if below else None
    high = KernelVersion(above.major, above.minor, 0) if above else None
    between = [
        c for c in CHANGES
        if c.since is not None and (low is None or c.since.key() > low.key())
        and (high is None or c.since.key() <= high.key())
    ]
    present = [c.key for c in between if k.has(c)]
    absent = [c.key for c in between if not k.has(c)]
    where = (f"between the series vnetrx read, {below.name} and {above.name}" if below and above
             else f"newer than the newest series vnetrx read, {below.name}" if below
             else f"older than the oldest series vnetrx read, {above.name}" if above else "")
    notes = [
        f"{release.text}: {version.major}.{version.minor} is {where}; its behaviour comes from "
        "the change table by release"
        + (f": assumed present {', '.join(present)}" if present else "")
        + (f"; assumed absent {', '.join(absent)}" if absent else ""),
        *vendor_notes(release, build),
    ]
    if not release.point_known and not (release.distro and release.distro.key == "rhel"):
        notes.append(f"{release.text} does not say its upstream point release: assumed "
                     f"{version.major}.{version.minor}.0, without stable backports")
    if version.series < (5, 12) and "virtio" in paths_of(version):
        notes.append("virtio-net's receive path before 5.12 was not read: 5.12's is used")
    return KernelProfile(version, k.build, k.source, tuple(notes))


def vendor_notes(release: ParsedRelease, build: BuildConfig | None) -> list[str]:
    """What a distribution kernel's string leaves open: its scheme and what vnetrx assumed
    (vnetrx.kernel.distro), where the machine pins the point release, and the .config preset
    it was given (config_notes). A plain upstream version gets none; a suffix of no known
    scheme gets the general caveat."""
    d = release.distro
    if d is None:
        if not release.local or not _VENDOR_LIKE.match(release.local):
            return []
        return ["a vendor kernel carries backports the change table cannot know: where its "
                "vendor backported a change, the real kernel differs"]
    notes = [f"{d.name} kernel ({d.detail}): {d.assumption}" if d.detail else
             f"{d.name} kernel: {d.assumption}"]
    if not d.point_known:
        notes.append(d.pin)
    notes.extend(config_notes(release, build or BuildConfig()))
    return notes


def config_notes(release: ParsedRelease, build: BuildConfig) -> list[str]:
    """Which .config preset a distribution kernel's profile used, where it was read from, and
    what stays unverified; and the architecture or page size the string names when the build
    differs from it."""
    d = release.distro
    if d is None:
        return []
    choice = preset_for(d, release.version.series)
    own = choice.preset
    notes = []
    if build.config == "running":
        pass  # read from the machine (vnetrx.live.running says what it read)
    elif build.config != own.name:
        notes.append(f"config: the {build.config} preset (MAX_HEADER {build.max_header}) was "
                     f"asked for; {d.name}'s own is {own.name} (MAX_HEADER {own.max_header})")
    elif choice.read:
        notes.append(f"config: the {own.name} preset, {own.title} (MAX_HEADER {own.max_header}: "
                     f"{own.symbols() or 'none of WLAN, HYPERV_NET, AX25 or the tunnels'}), "
                     f"read from {own.sources}; --kernel running on that machine reads its own")
    else:
        notes.append(f"config: {d.name}" + (f" ({d.detail})" if d.detail else "")
                     + f": {choice.why} (MAX_HEADER "
                     f"{own.max_header}, unverified: --config for another preset, or --kernel "
                     "running on that machine)")
    arch = d.arch or (own.arch if build.config == own.name and own.arch != "x86_64" else "")
    page_size = d.page_size or (own.page_size if build.config == own.name else 0)
    if arch and arch != build.arch:
        notes.append(f"{release.text} is an {arch} kernel: this profile is {build.arch} "
                     f"(--arch {arch} for that build)")
    if page_size and page_size != build.page_size:
        notes.append(f"{release.text} is built with {page_size // 1024} KiB pages: this profile "
                     f"has {build.page_size // 1024} KiB (--page-size {page_size // 1024}k)")
    return notes


def default_config(kernel: str | None) -> str:
    """The .config preset ``--kernel`` gets when --config is not given: a distribution kernel's
    own (vnetrx.kernel.presets), else debian."""
    if kernel is None or kernel == "running":
        return "debian"
    release = parse_release(kernel)
    return preset_for(release.distro, release.version.series).preset.name


# a local suffix that is not just a build tag: an ABI number or a vendor release field
_VENDOR_LIKE = re.compile(r"^[-+_~.]\d")


def _default_build(release: ParsedRelease) -> BuildConfig:
    name = preset_for(release.distro, release.version.series).preset.name
    return BuildConfig(config=name, max_header=MAX_HEADER_BY_CONFIG[name])


def lookup(text: str, build: BuildConfig | None = None) -> KernelProfile:
    """``--kernel`` for anything but ``running`` (see vnetrx.live.running for that)."""
    return profile_for(parse_release(text), build)


def changes_between(older: str, newer: str, said: str | None = None) -> list[Change]:
    """``vnetrx kernels --between OLDER..NEWER`` (``said``: as the user wrote it): the changes
    kernel ``newer``'s profile carries and ``older``'s does not (stable windows included), in
    version order."""
    old, new = lookup(older), lookup(newer)
    if old.version > new.version:
        raise InputError(
            f"--between {said or f'{older}..{newer}'} is reversed: {older} ({old.version}) is "
            f"newer than {newer} ({new.version}); give the older kernel first"
        )
    return [c for c in sorted(CHANGES, key=version_order)
            if c.key in new.change_keys and c.key not in old.change_keys]


def newest(build: BuildConfig | None = None) -> KernelProfile:
    return KernelProfile(
        KernelVersion(NEWEST.major, NEWEST.minor, NEWEST.default_patch),
        build or BuildConfig(),
        "default: the newest profile",
    )
