"""One ``vnetrx lab vhost`` boot: build the probe and the initramfs, boot the guest kernel
under QEMU with no NIC at all, and read back what its vhost-net did (vnetrx.observed.vhost,
vnetrx.lab.vhost_records)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from vnetrx.lab import initramfs, qemu
from vnetrx.lab.initramfs import LabSetupError
from vnetrx.lab.run import cache_dir, find_busybox, find_modules, image_release
from vnetrx.lab.vhost_cases import (
    RxCase,
    TxCase,
    case_file,
    rx_cases,
    tx_cases,
    uses_xdp,
    zcopy_tx_cases,
)
from vnetrx.lab.vhost_records import document
from vnetrx.lab.xdp_probe import build_static
from vnetrx.observed.vhost import parse_vhost_log

SERIES = ("6.1", "6.12")
HEADER = "# serial console of: vnetrx lab vhost"


def source() -> bytes:
    return resources.files("vnetrx.lab").joinpath("data/vhostprobe.c").read_bytes()


def build_probe() -> bytes:
    return build_static("vhostprobe", source(), "lab vhost builds a small static program")


def images(series: tuple[str, ...], lab_dir: Path | None = None) -> list[Path]:
    """The newest cached Debian kernel of each series (`vnetrx lab fetch-kernel --series S`)."""
    base = lab_dir or cache_dir()
    found = []
    for name in series:
        pattern = re.compile(rf"^linux-image-{re.escape(name)}[.-]")
        candidates = sorted(p for p in base.glob("linux-image-*-amd64/boot/vmlinuz-*")
                            if pattern.match(p.parent.parent.name))
        if not candidates:
            raise LabSetupError(f"no Debian {name} kernel in {base}",
                                hint=f"run `vnetrx lab fetch-kernel --series {name}`")
        found.append(candidates[-1])
    return found


@dataclass(frozen=True)
class VhostRun:
    document: dict[str, Any]
    serial: str
    boot_s: float
    total_s: float


def run_vhost(image: Path, *, modules: Path | None = None, accel: str = "tcg",
              timeout_s: float = 120.0, on_stage: Callable[[str], None] | None = None,
              txs: tuple[TxCase, ...] | None = None, rxs: tuple[RxCase, ...] | None = None,
              zcopy: bool = False) -> VhostRun:
    """Boot ``image`` once and run every case in its guest; ``zcopy``: vhost_net loaded with
    experimental_zcopytx=1 and the zerocopy TX cases (no RX case) instead."""
    stage = on_stage or (lambda _text: None)
    txs = (zcopy_tx_cases() if zcopy else tx_cases()) if txs is None else txs
    rxs = (() if zcopy else rx_cases()) if rxs is None else rxs
    if not image.is_file():
        raise LabSetupError(f"kernel image {image} not found")
    release = image_release(image)
    stage("building the vhost-net probe")
    probe = build_probe()
    stage(f"building the initramfs for Linux {release}")
    tree = initramfs.ModuleTree.scan(find_modules(image, modules))
    xdp = None
    if uses_xdp(txs):
        from vnetrx.lab.xdp_probe import build_probe as build_xdp_probe

        xdp = build_xdp_probe()
    archive, _order = initramfs.build_vhost(find_busybox(), tree, probe, case_file(txs, rxs),
                                            xdp, zcopy)
    boot = qemu.Boot(image, mergeable=False, mtu=None, accel=accel, ready_timeout_s=timeout_s,
                     finish_timeout_s=timeout_s, backend="none")
    stage(f"booting Linux {release} under QEMU ({accel}): {len(txs)} TX and {len(rxs)} RX "
          "cases on its own /dev/vhost-net" + (" (experimental_zcopytx=1)" if zcopy else ""))
    started = time.monotonic()
    result = qemu.run(boot, archive, [])
    log = parse_vhost_log(result.serial)
    if not log.complete:
        raise qemu.GuestError("the guest's vhost probe did not finish"
                              + (": " + "; ".join(log.errors) if log.errors else ""))
    return VhostRun(document(log, txs, rxs), f"{HEADER} {release}\n" + result.serial,
                    result.boot_s, time.monotonic() - started)


def recheck(text: str) -> dict[str, Any]:
    """The document of a saved serial log (``--serial-log``), with today's case definitions."""
    log = parse_vhost_log(text)
    if not log.complete:
        from vnetrx.errors import InputError

        raise InputError("the log has no complete vhost run (no 'VNETRX vhost-finished' and "
                         "'trace-end' lines)")
    if log.zcopy:
        return document(log, zcopy_tx_cases(), ())
    return document(log, tx_cases(), rx_cases())
