"""Distribution kernels: which vendor's naming scheme a ``uname -r`` string follows, whether the
upstream point release is in it, and what vnetrx must assume about it. Pure: strings in,
records out (vnetrx.live.running reads what pins the point release on a machine).

The schemes and strings are those of /work/shared/reference/gro-vhost-captures.md §4 ("Kernels
users really run"):

* Debian: ``6.1.0-57-amd64`` (an ABI number; the package is 6.1.192-3, which ``/proc/version``
  prints: "… Debian 6.1.192-3"), and from bookworm-security/trixie ``6.12.38+deb13-amd64``
  with the point release in the name.
* Ubuntu: ``5.15.0-91-generic``, ``6.8.0-45-generic``, cloud flavours ``-aws/-azure/-gcp/
  -gke/-kvm``: the ``.0`` is not the stable point; ``/proc/version_signature`` gives it
  ("Ubuntu 5.4.0-12.15-generic 5.4.8", ubuntu.com/kernel). Only series Ubuntu bases kernels
  on are Ubuntu's: ``6.6.0-1005-gke`` matches no Ubuntu series (23.10 is 6.5, 24.04 is 6.8).
* RHEL (and its rebuilds): ``4.18.0-553.el8_10.x86_64``, ``5.14.0-427.13.1.el9_4.x86_64``,
  ``6.12.0-55.…el10_0.x86_64``: the X.Y is nominal (Red Hat rebases net and virtio drivers
  each minor release), so no upstream version matches.
* Amazon Linux: ``5.10.237-230.949.amzn2.x86_64``, ``6.1.109-118.189.amzn2023.x86_64``: the
  first three numbers are the upstream stable point.
* Azure Linux: ``5.15.167.1-1.cm2``, ``6.6.145.2-1.azl3``: upstream 6.6.145 plus Azure's patch
  level .2; CBL-Mariner 1.0 alike (``5.10.52.1-3.cm1``, its config's LOCALVERSION).
* Container-Optimized OS (GKE): ``6.1.100+``: the upstream point.
* Fedora: ``6.11.4-301.fc41.x86_64``: the upstream stable point.
"""

from __future__ import annotations

import re

from vnetrx.records import NamedTuple


class Distro(NamedTuple):
    """A vendor scheme a release string follows, and what it leaves open."""

    key: str  # "debian", "ubuntu", "rhel", "amazon", "azure", "cos", "fedora"
    name: str  # e.g. "Ubuntu", "Amazon Linux 2023"
    point_known: bool  # the string carries the upstream stable point release
    detail: str  # what the string says beyond the version (ABI, flavour, vendor release)
    assumption: str  # what vnetrx assumes, and why (one sentence, for the profile's notes)
    pin: str  # where a running machine says the point release (or how to check it)
    flavour: str = ""  # the build flavour the string names: "cloud-amd64", "aws", "64k"
    release: str = ""  # the vendor's release tag: "amzn2", "amzn2023", "azl3", "cm2", "cm1"
    arch: str = ""  # the architecture the string names ("x86_64", "arm64"), or "" if it does not
    page_size: int = 0  # PAGE_SIZE the string names (65536 for -64k flavours), or 0


# The schemes' patterns, compiled when first matched (re's own cache keeps them): a release
# string without a local part, what vnetrx's own profiles are, needs none of them, and
# compiling all seven was ~3 ms of every command's start-up.
# Debian's kernel flavours (the suffix after the ABI number; linux-image-<abi>-<flavour>)
_DEBIAN_FLAVOURS = (r"(?:cloud-|rt-)?(?:amd64|arm64|armmp|armmp-lpae|686|686-pae|ppc64el|"
                    r"powerpc64le|s390x|loong64|riscv64|marvell|rpi|octeon|mips32r2el|"
                    r"mips64r2el|loongson-3|4kc-malta|5kc-malta)")
_DEBIAN_ABI = rf"^-(?P<abi>\d+)-(?P<flavour>{_DEBIAN_FLAVOURS})$"
_DEBIAN_POINT = rf"^\+(?P<suite>deb\d+|bpo)(?:-(?P<flavour>{_DEBIAN_FLAVOURS}))?$"
# Ubuntu's flavours, generic and the cloud/OEM kernels
_UBUNTU = (r"^-(?P<abi>\d+)-(?P<flavour>generic(?:-64k|-lpae)?|lowlatency(?:-64k)?|"
           r"aws(?:-fips)?|azure(?:-fde|-fips)?|gcp(?:-fips)?|gke|gkeop|kvm|oracle|"
           r"ibm|nvidia(?:-64k)?|raspi|realtime|oem|intel-iotg|intel|fips)$")
# The series Ubuntu released kernels on (GA and HWE; reference §4.1, and Ubuntu's kernel
# lifecycle: 16.04 4.4, 18.04 4.15 (+HWE 4.18/5.0/5.3), 20.04 5.4 (+5.8/5.11/5.13/5.15),
# 22.04 5.15 (+5.19/6.2/6.5/6.8), 24.04 6.8 (+6.11/6.14/6.17))
UBUNTU_SERIES = frozenset({(4, 4), (4, 15), (4, 18), (5, 0), (5, 3), (5, 4), (5, 8), (5, 11),
                           (5, 13), (5, 15), (5, 19), (6, 2), (6, 5), (6, 8), (6, 11), (6, 14),
                           (6, 17)})
_RHEL = (r"^-(?P<build>\d+(?:\.\d+)*)\.el(?P<major>\d+)(?:_(?P<minor>\d+))?"
         r"(?:\.(?P<arch>x86_64|aarch64|ppc64le|s390x))?(?:\+(?P<variant>rt|debug|64k))?$")
_AMAZON = (r"^-(?P<build>\d+(?:\.\d+)*)\.(?P<release>amzn2023|amzn2)"
           r"(?:\.(?P<arch>x86_64|aarch64))?$")
_AZURE = (r"^\.(?P<level>\d+)-(?P<build>\d+)\.(?P<release>azl3|cm2|cm1)"
          r"(?:\.(?P<arch>x86_64|aarch64))?$")
_FEDORA = (r"^-(?P<build>\d+)\.fc(?P<release>\d+)"
           r"(?:\.(?P<arch>x86_64|aarch64|ppc64le|s390x))?$")
_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}


def _arch(name: str | None) -> str:
    return _ARCH.get(name or "", "")

_BACKPORTS = "its vendor's backports and patches are not in the change table"


def distro_of(series: tuple[int, int], patch: int | None, local: str) -> Distro | None:
    """The vendor scheme of a release string ``X.Y[.Z]<local>``, or None (upstream, or a
    scheme vnetrx does not know)."""
    if not local:  # upstream: every scheme has a local part
        return None
    x_y = f"{series[0]}.{series[1]}"
    if patch == 0 and (m := re.match(_DEBIAN_ABI, local)):
        return Distro(
            "debian", "Debian", False, f"ABI {m['abi']}, flavour {m['flavour']}",
            f"Debian follows {x_y}.y stable; {_BACKPORTS}",
            "on that machine /proc/version prints the package version (\"Debian 6.1.192-3\"), "
            "which --kernel running reads (or: dpkg -s linux-image-$(uname -r))",
            flavour=m["flavour"], arch=_arch(m["flavour"].rsplit("-", 1)[-1]))
    if patch is not None and (m := re.match(_DEBIAN_POINT, local)):
        return Distro(
            "debian", "Debian", True,
            f"{m['suite']}" + (f", flavour {m['flavour']}" if m["flavour"] else ""),
            f"the point release is in the name; {_BACKPORTS}", "the release string itself",
            flavour=m["flavour"] or "", arch=_arch((m["flavour"] or "").rsplit("-", 1)[-1]))
    if patch == 0 and series in UBUNTU_SERIES and (m := re.match(_UBUNTU, local)):
        return Distro(
            "ubuntu", "Ubuntu", False, f"ABI {m['abi']}, flavour {m['flavour']}",
            f"Ubuntu's {x_y} kernels follow {x_y}.y stable (SRU) and carry Ubuntu's own "
            f"backports; {_BACKPORTS}",
            "on that machine /proc/version_signature gives the upstream point release (its "
            "last field: \"Ubuntu 5.4.0-12.15-generic 5.4.8\"), which --kernel running reads",
            flavour=m["flavour"], arch="arm64" if m["flavour"].endswith("-64k") else "",
            page_size=65536 if m["flavour"].endswith("-64k") else 0)
    if patch is not None and (m := re.match(_RHEL, local)):
        minor = f".{m['minor']}" if m["minor"] else ""
        return Distro(
            "rhel", f"RHEL {m['major']}{minor}", False,
            f"build {m['build']}; CentOS Stream, Rocky and AlmaLinux name theirs alike",
            f"{x_y} is nominal: Red Hat rebases the network and virtio drivers each minor "
            "release, so no upstream version is this kernel; upstream "
            f"{x_y}.0 is what vnetrx models, and the real driver may be much newer",
            "no version field says which upstream driver it carries: on that machine, "
            "`vnetrx layout` reads its BTF (which structs and fields exist)",
            flavour=m["variant"] or "", release=f"el{m['major']}",
            arch="arm64" if m["variant"] == "64k" else _arch(m["arch"]),
            page_size=65536 if m["variant"] == "64k" else 0)
    if patch is not None and (m := re.match(_AMAZON, local)):
        name = "Amazon Linux 2023" if m["release"] == "amzn2023" else "Amazon Linux 2"
        return Distro("amazon", name, True, f"build {m['build']}",
                      f"the first three numbers are its upstream stable point release; "
                      f"{_BACKPORTS}", "the release string itself", release=m["release"],
                      arch=_arch(m["arch"]))
    if patch is not None and (m := re.match(_AZURE, local)):
        name = {"azl3": "Azure Linux 3.0", "cm2": "CBL-Mariner 2.0"}.get(m["release"],
                                                                          "CBL-Mariner 1.0")
        return Distro("azure", name, True, f"Azure patch level {m['level']}, build {m['build']}",
                      f"upstream {x_y}.{patch} plus Azure's patch level {m['level']}; "
                      f"{_BACKPORTS}", "the release string itself", release=m["release"],
                      arch=_arch(m["arch"]))
    if patch is not None and local == "+":
        return Distro("cos", "Container-Optimized OS", True, "",
                      f"the upstream stable point release; {_BACKPORTS}",
                      "the release string itself")
    if patch is not None and (m := re.match(_FEDORA, local)):
        return Distro("fedora", f"Fedora {m['release']}", True, f"build {m['build']}",
                      f"Fedora follows upstream stable; {_BACKPORTS}",
                      "the release string itself", release=f"fc{m['release']}",
                      arch=_arch(m["arch"]))
    return None
