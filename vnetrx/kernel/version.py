"""Kernel version numbers: parse ``5.13``, ``6.1.192``, ``6.1.0-57-amd64``; order them."""

from __future__ import annotations

import re

from vnetrx.errors import UnknownProfileError
from vnetrx.records import NamedTuple

_RELEASE = re.compile(r"^(\d{1,4})\.(\d{1,4})(?:\.(\d{1,6}))?(.{0,200})$")
# Debian, Ubuntu and RHEL name their kernels by ABI, not by upstream point release:
# "6.1.0-57-amd64" (Debian), "6.8.0-45-generic" (Ubuntu), "5.14.0-427.13.1.el9_4.x86_64" (RHEL)
# are some X.Y.z whose z is not in the name. A ".0" followed by "-<number>" is such a name;
# "6.11.4-301.fc41.x86_64" (Fedora) and "6.1.102-111.182.amzn2023.x86_64" carry the real one.
_DEBIAN_ABI = re.compile(r"^-\d+[.\-_+~a-zA-Z0-9]*$")


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
    point_known: bool  # False for "6.1" and for Debian ABI names such as "6.1.0-57-amd64"
    local: str  # the local-version suffix ("-57-amd64", "-fc-v782"), or ""


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
    if local and not local.startswith(("-", "+", "_", "~")):
        raise UnknownProfileError(f"cannot read kernel version {text!r}")
    point_known = patch is not None
    if patch == 0 and _DEBIAN_ABI.match(local):
        patch, point_known = None, False
    return ParsedRelease(
        KernelVersion(int(major), int(minor), patch), text.strip(), point_known, local
    )
