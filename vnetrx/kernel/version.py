"""Kernel version numbers: parse ``5.13``, ``6.1.192``, ``6.1.0-57-amd64``; order them."""

from __future__ import annotations

import re

from vnetrx.errors import UnknownProfileError
from vnetrx.kernel.distro import Distro, distro_of
from vnetrx.records import NamedTuple

_RELEASE = re.compile(r"^(\d{1,4})\.(\d{1,4})(?:\.(\d{1,6}))?(.{0,200})$")
# A vendor's ABI name that vnetrx.kernel.distro does not know ("6.6.0-1005-gke"): a ".0"
# followed by "-<number>" is some X.Y.z whose z is not in the name.
# (a pattern, compiled when first matched: only such names need it)
_ABI_NAME = r"^-\d+[.\-_+~a-zA-Z0-9]*$"


class KernelVersion(NamedTuple):
    """An upstream version. ``patch`` is None when only the series is known (``6.1``)."""

    major: int
    minor: int
    patch: int | None = None

    @property
    def series(self) -> tuple[int, int]:
        return (self.major, self.minor)

    def key(self) -> tuple[int, int, int]:
        """Order key: an unknown point release sorts as ``.0``."""
        return (self.major, self.minor, self.patch or 0)

    def __str__(self) -> str:
        base = f"{self.major}.{self.minor}"
        return base if self.patch is None else f"{base}.{self.patch}"


class ParsedRelease(NamedTuple):
    """What a version or release string said, and what it left open."""

    version: KernelVersion
    text: str
    point_known: bool  # False for "6.1" and for ABI names such as "6.1.0-57-amd64"
    local: str  # the local-version suffix ("-57-amd64", "-fc-v782"), or ""
    distro: Distro | None = None  # the vendor scheme the string follows (None: upstream/unknown)


def v(text: str) -> KernelVersion:
    """Shorthand for literals in tables: ``v("5.13")``, ``v("6.1.192")``."""
    return parse_release(text).version


def parse_release(text: str) -> ParsedRelease:
    """Parse a version (``5.13``, ``6.1.192``) or a release string (``6.1.0-57-amd64``)."""
    match = _RELEASE.match(text.strip())
    if match is None:
        raise UnknownProfileError(
            f"cannot read kernel version {text!r}",
            hint="give MAJOR.MINOR[.PATCH] (e.g. 6.1 or 6.1.192), a release string such as "
            "6.1.0-57-amd64, or 'running'",
        )
    major, minor, patch_text, local = match.groups()
    patch = None if patch_text is None else int(patch_text)
    distro = distro_of((int(major), int(minor)), patch, local)
    if local and not local.startswith(("-", "+", "_", "~")) and distro is None:
        raise UnknownProfileError(f"cannot read kernel version {text!r}")
    point_known = patch is not None if distro is None else distro.point_known
    if not point_known or (patch == 0 and distro is None and local
                           and re.match(_ABI_NAME, local)):
        patch, point_known = None, False
    return ParsedRelease(
        KernelVersion(int(major), int(minor), patch), text.strip(), point_known, local, distro
    )
