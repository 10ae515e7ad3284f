"""``vnetrx lab fetch-kernel``: download a Debian kernel package with apt and unpack it into the
lab cache with ``dpkg-deb -x`` (never installed as the host's kernel)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vnetrx.errors import InputError
from vnetrx.lab.initramfs import LabSetupError

_PACKAGE = re.compile(r"^linux-image-(?P<abi>\d+\.\d+(?:\.\d+)?[-.][\w.+-]*?)-amd64$")


@dataclass(frozen=True)
class FetchedKernel:
    package: str
    image: Path
    modules: Path


def _run(argv: list[str], cwd: Path | None = None) -> str:
    if shutil.which(argv[0]) is None:
        raise LabSetupError(f"{argv[0]} not found (a Debian/Ubuntu host is needed to fetch)")
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise LabSetupError(
            f"{' '.join(argv)} failed: {(proc.stderr or proc.stdout).strip()[-400:]}"
        )
    return proc.stdout


def _sort_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name))


def newest_package(series: str, apt_cache_output: str) -> str | None:
    """The newest ``linux-image-<series>…-amd64`` (signed, not -dbg/-unsigned/-cloud/-rt) in
    ``apt-cache search`` output."""
    names = []
    for line in apt_cache_output.splitlines():
        name = line.split(" - ")[0].strip()
        match = _PACKAGE.match(name)
        if match is None or any(x in name for x in ("-cloud-", "-rt-", "-dbg", "-unsigned")):
            continue
        if not match.group("abi").startswith(series.rstrip(".") + "."):
            continue
        names.append(name)
    return max(names, key=_sort_key, default=None)


def fetch(series: str, dest: Path, package: str | None = None,
          on_stage: Callable[[str], None] | None = None) -> FetchedKernel:
    """apt-get download + dpkg-deb -x into ``dest/<package>/``. Idempotent. ``on_stage``
    hears each step, for a progress line."""
    stage = on_stage or (lambda _text: None)
    if package is None:
        if not re.fullmatch(r"\d+\.\d+", series):
            raise InputError(f"kernel series {series!r} is not like 6.1")
        found = newest_package(
            series, _run(["apt-cache", "search", "--names-only", f"^linux-image-{series}"])
        )
        if found is None:
            raise LabSetupError(
                f"no linux-image-{series}.*-amd64 package known to apt",
                hint="run apt-get update, or pass --package",
            )
        package = found
    if not re.fullmatch(r"linux-image-[A-Za-z0-9.+~-]+", package):
        raise InputError(f"package {package!r} is not a linux-image-* package name")
    from vnetrx.lab.run import check_lab_dir

    check_lab_dir(dest)
    root = dest / package
    release = package.removeprefix("linux-image-")
    image = root / "boot" / f"vmlinuz-{release}"
    modules = root / "lib" / "modules" / release
    if image.is_file() and modules.is_dir():
        return FetchedKernel(package, image, modules)
    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    download = dest / "download"
    download.mkdir(exist_ok=True, mode=0o700)
    check_lab_dir(download)  # apt-get runs in it: a real directory of ours
    for old in download.glob("*.deb"):
        old.unlink()
    stage(f"apt-get download {package}")
    _run(["apt-get", "download", package], cwd=download)
    debs = sorted(download.glob(f"{package}_*.deb"))
    if not debs:
        raise LabSetupError(f"apt-get download {package} left no .deb in {download}")
    stage(f"unpacking {debs[-1].name}")
    _run(["dpkg-deb", "-x", str(debs[-1]), str(root)])
    debs[-1].unlink()
    if not image.is_file():
        raise LabSetupError(f"{package} has no {image.relative_to(root)}")
    return FetchedKernel(package, image, modules)
