"""``vnetrx lab virtio --xdp-check`` and ``--xdp ACTION``: XDP in the guest. A small static C
program (data/xdpprobe.c) runs in the guest's /init. ``--xdp-check``: bpf(2) BPF_PROG_LOAD of
``r0 = XDP_PASS; exit``, RTM_SETLINK IFLA_XDP in driver mode, the extack text, then a detach so
the frames that follow take the usual path; its answer is compared with
vnetrx.paths.virtio_net.xdp_set for the features the guest negotiated. ``--xdp ACTION``: a
program returning ACTION for the test frames (the sentinel passes) stays attached while they
arrive, and the driver's ethtool counters are read afterwards (``stats``). Building the probe
needs gcc and a static libc (Debian: gcc, libc6-dev)."""

from __future__ import annotations

import errno as errno_mod
import hashlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from vnetrx import cache
from vnetrx.kernel.profile import KernelProfile
from vnetrx.lab.initramfs import LabSetupError
from vnetrx.observed.negotiated import GUEST_GSO
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.paths.virtio_net.xdp_set import XdpAttach, XdpAttachSetup, virtnet_xdp_set
from vnetrx.paths.xdp import ACTIONS

# The queue counters the lab compares, as ethtool -S totals name them on 6.11+ (per queue:
# rx_queue_0_xdp_drops up to 6.10, rx0_xdp_drops from 6.11)
COUNTERS = ("rx_drops", "rx_xdp_packets", "rx_xdp_tx", "rx_xdp_redirects", "rx_xdp_drops",
            "tx_xdp_tx", "tx_xdp_tx_drops")
_PER_QUEUE = re.compile(r"^(rx|tx)(?:_queue_)?(\d+)_(\w+)$")


def source() -> bytes:
    return resources.files("vnetrx.lab").joinpath("data/xdpprobe.c").read_bytes()


def build_probe() -> bytes:
    """The static probe binary (kept in vnetrx's cache, keyed by the source)."""
    return build_static("xdpprobe", source(), "--xdp-check builds a small static program")


def build_static(name: str, code: bytes, why: str) -> bytes:
    """A static C program the guest runs, built with ``gcc -static -Os`` from ``code`` and kept
    in vnetrx's cache under ``<name>-<sha256 of the source>.bin``. ``why``: the first words of
    the error when gcc is missing."""
    cached_name = f"{name}-{hashlib.sha256(code).hexdigest()[:16]}.bin"
    cached = cache.read(cached_name)
    if cached is not None and cached.startswith(b"\x7fELF"):
        return cached
    gcc = shutil.which("gcc")
    if gcc is None:
        raise LabSetupError(f"{why}: gcc is not installed",
                            hint="apt-get install gcc libc6-dev")
    with tempfile.TemporaryDirectory(prefix=f"vnetrx-{name}-") as tmp:
        src, out = Path(tmp, f"{name}.c"), Path(tmp, name)
        src.write_bytes(code)
        run = subprocess.run([gcc, "-static", "-Os", "-o", str(out), str(src)],
                             capture_output=True, text=True, check=False)
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or ["no output"])[-1]
            raise LabSetupError(f"building the {name} probe failed: {last}",
                                hint="a static libc is needed: apt-get install libc6-dev")
        binary = out.read_bytes()
    cache.write(cached_name, binary)
    return binary


@dataclass(frozen=True)
class XdpCheck:
    """The guest's answer to an XDP attach next to the model's."""

    observed_errno: str | None  # None: attached
    observed_message: str
    predicted: XdpAttach
    setup: XdpAttachSetup
    warnings: str  # the guest's dmesg lines about XDP

    @property
    def match(self) -> bool:
        p = self.predicted
        message = (p.message or "").removeprefix("virtio_net: ")
        return (self.observed_errno == p.errno
                and (p.message is None or self.observed_message.endswith(message))
                and all(w in self.warnings for w in p.warnings))  # the netdev_warn lines


def parse_answer(line: str) -> tuple[str | None, str]:
    """``rc N MESSAGE`` as the probe prints it: (errno name or None, the extack text)."""
    parts = line.split(" ", 2)
    if len(parts) < 2 or parts[0] != "rc" or not parts[1].lstrip("-").isdigit():
        raise LabSetupError(f"the guest's XDP probe printed {line!r}, not 'rc N MESSAGE'")
    rc = int(parts[1])
    name = None if rc == 0 else errno_mod.errorcode.get(rc, str(rc))
    return name, parts[2].strip() if len(parts) > 2 else ""


def check(k: KernelProfile, features: tuple[str, ...], mtu: int, cpus: int, answer: str,
          warnings: str, frags: bool = False) -> XdpCheck:
    names = set(features)
    setup = XdpAttachSetup(
        VirtioRxSetup(mergeable="MRG_RXBUF" in names, guest_gso=bool(GUEST_GSO & names),
                      mtu=mtu, xdp_frags=frags),
        guest_csum="GUEST_CSUM" in names,
        ctrl_guest_offloads="CTRL_GUEST_OFFLOADS" in names,
        any_header_sg="ANY_LAYOUT" in names or "VERSION_1" in names,
        queues=1,  # the lab's QEMU device has one queue pair (no MQ)
        cpus=cpus,
    )
    observed, message = parse_answer(answer)
    return XdpCheck(observed, message, virtnet_xdp_set(k, setup), setup, warnings)


def cpus_of(online: str) -> int:
    """The CPU count in a cpu list like "0" or "0-3,5"."""
    total = 0
    for part in online.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        total += int(high or low) - int(low) + 1
    return max(total, 1)


def keep_args(action: str, frags: bool) -> str:
    """The probe's arguments for a program that stays attached: ``keep ACTION FRAGS``."""
    return f"keep {ACTIONS[action]} {int(frags)}"


def parse_stats(text: str) -> dict[str, int] | None:
    """The probe's ``stats`` output, "name value" pairs on one line, as totals: the per-queue
    counters summed into the 6.11+ total names (``rx_queue_0_xdp_drops`` and ``rx0_xdp_drops``
    both count in ``rx_xdp_drops``; 6.11+'s own totals are then ignored, not counted twice).
    None: the probe could not read them."""
    words = text.split()
    if not words or words[0] == "error" or len(words) % 2:
        return None
    pairs = [(words[i], words[i + 1]) for i in range(0, len(words), 2)]
    if not all(value.isdigit() for _, value in pairs):
        return None
    queued: dict[str, int] = {}
    totals: dict[str, int] = {}
    for name, value in pairs:
        match = _PER_QUEUE.match(name)
        if match:
            key = f"{match.group(1)}_{match.group(3)}"
            queued[key] = queued.get(key, 0) + int(value)
        else:
            totals[name] = int(value)
    return queued or totals
