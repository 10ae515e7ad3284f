"""Run one guest under QEMU and feed it frames.

The NIC is a ``virtio-net-pci`` on one of two backends, both on unix-domain sockets in a private
temporary directory (no IP networking, no tap, no user-mode network):

- ``dgram`` (the default): ``-netdev dgram``; the host binds its own socket there and writes each
  frame as one datagram. No virtio-net header travels, so QEMU clears every guest offload.
- ``vhost-user``: ``-netdev vhost-user`` connected to vnetrx's own backend
  (:mod:`vnetrx.lab.vhost_user`), which offers the guest receive offloads and writes each frame
  behind a virtio-net header straight into the guest's rings. Guest RAM is a shared memfd, and
  the device has no MSI-X vectors (QEMU 7.2 under TCG crashes with vhost-user and MSI-X).

QEMU's stdout is the guest's serial console; the guest prints ``VNETRX ready`` when its trace is
armed. Everything this module creates (the temporary directory, the sockets, the backend and its
thread, fds and mappings, the QEMU process) is removed or killed on success, error,
KeyboardInterrupt and (with :func:`vnetrx.owner.interrupt_once`) SIGTERM; a second
signal waits until that is done. After SIGKILL, QEMU dies by its parent-death signal and the
next run removes the directory (it carries the dead run's :class:`vnetrx.owner.Owner` token).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vnetrx import owner as owners
from vnetrx.errors import VnetrxError
from vnetrx.lab import vhost_user
from vnetrx.lab.initramfs import SENTINEL_ETHERTYPE, TEST_ETHERTYPE, LabSetupError

GUEST_MAC = "52:54:00:12:34:56"
HOST_MAC = "02:00:00:00:00:01"
QEMU = "qemu-system-x86_64"
OFFLOADS_OFF = (
    "csum",
    "guest_csum",
    "guest_tso4",
    "guest_tso6",
    "guest_ecn",
    "guest_ufo",
    "host_tso4",
    "host_tso6",
    "host_ecn",
    "host_ufo",
)
# vhost-user: the guest's receive offloads stay on (the backend offers them); transmit offloads
# stay off so the guest never sends GSO frames to a backend that only drains the TX queue.
HOST_OFFLOADS_OFF = ("csum", "host_tso4", "host_tso6", "host_ecn", "host_ufo")
BACKENDS = ("dgram", "vhost-user", "none")  # none: no NIC at all (lab vhost)
LAB_KIND = "lab"  # <tmp>/vnetrx-lab-<token>: the run's sockets and initrd
PR_SET_PDEATHSIG = 1  # include/uapi/linux/prctl.h


class GuestError(VnetrxError):
    """The guest did not boot, did not get ready, or did not finish in time."""


@dataclass(frozen=True)
class Boot:
    """What one guest boot looks like on the QEMU command line."""

    image: Path
    mergeable: bool
    mtu: int | None  # host_mtu (VIRTIO_NET_F_MTU); None: not offered
    accel: str = "tcg"  # "tcg" | "kvm"
    memory_mb: int = 256
    ready_timeout_s: float = 60.0
    finish_timeout_s: float = 60.0
    backend: str = "dgram"  # "dgram" | "vhost-user" (vnetrx's own, with guest offloads) | "none"
    guest_gso: bool = True  # vhost-user: offer GUEST_TSO4/TSO6/ECN/UFO (else GUEST_CSUM only)


def device_properties(boot: Boot) -> str:
    vhost = boot.backend == "vhost-user"
    props = [
        "virtio-net-pci",
        "netdev=n0",
        f"mac={GUEST_MAC}",
        f"mrg_rxbuf={'on' if boot.mergeable else 'off'}",
        *(f"{name}=off" for name in (HOST_OFFLOADS_OFF if vhost else OFFLOADS_OFF)),
        "mq=off",
        *(("vectors=0",) if vhost else ()),
        "romfile=",
    ]
    if boot.mtu is not None:
        props.append(f"host_mtu={boot.mtu}")
    return ",".join(props)


def netdev_arguments(boot: Boot, guest_sock: Path, host_sock: Path) -> list[str]:
    """dgram: QEMU binds ``guest_sock`` and sends to ``host_sock``. vhost-user: QEMU connects
    to the backend listening on ``guest_sock`` (``host_sock`` is unused); guest RAM must be a
    shared memfd for the backend to map it. none: no NIC (the guest talks to nobody)."""
    if boot.backend == "none":
        return []
    if boot.backend == "dgram":
        return [
            "-netdev",
            f"dgram,id=n0,local.type=unix,local.path={guest_sock},"
            f"remote.type=unix,remote.path={host_sock}",
        ]
    if boot.backend != "vhost-user":
        raise ValueError(f"unknown NIC backend {boot.backend!r} (valid: {', '.join(BACKENDS)})")
    return [
        "-object",
        f"memory-backend-memfd,id=mem,size={boot.memory_mb}M,share=on",
        "-machine",
        "memory-backend=mem",
        "-chardev",
        f"socket,id=c0,path={guest_sock}",
        "-netdev",
        "vhost-user,id=n0,chardev=c0",
    ]


def qemu_command(boot: Boot, initrd: Path, guest_sock: Path, host_sock: Path) -> list[str]:
    """The QEMU argv: no default devices, serial console on stdout, one NIC."""
    return [
        QEMU,
        "-nodefaults",
        "-nographic",
        "-no-reboot",
        "-accel",
        boot.accel,
        "-m",
        str(boot.memory_mb),
        "-smp",
        "1",
        "-serial",
        "stdio",
        "-kernel",
        str(boot.image),
        "-initrd",
        str(initrd),
        "-append",
        "console=ttyS0 quiet loglevel=1 panic=-1 mitigations=off rdinit=/init",
        *netdev_arguments(boot, guest_sock, host_sock),
        *(() if boot.backend == "none" else ("-device", device_properties(boot))),
    ]


def ethernet_frame(length: int, seq: int, ethertype: int = TEST_ETHERTYPE) -> bytes:
    """``length`` bytes: destination the guest's MAC, our source, the EtherType, then a payload
    that starts with the 32-bit sequence number. Below 14 bytes, the header cut short (the
    driver's "short packet" case)."""
    if length < 0:
        raise ValueError("a frame length is not negative")
    header = (
        bytes.fromhex(GUEST_MAC.replace(":", ""))
        + bytes.fromhex(HOST_MAC.replace(":", ""))
        + ethertype.to_bytes(2, "big")
    )
    payload = seq.to_bytes(4, "big") + bytes(
        (i * 7 + seq) & 0xFF for i in range(max(0, length - 18))
    )
    return (header + payload)[:length]


def sentinel_frame() -> bytes:
    return ethernet_frame(64, 0xFFFFFFFF, SENTINEL_ETHERTYPE)


@dataclass(frozen=True)
class RunResult:
    serial: str  # everything the guest printed
    stderr: str
    boot_s: float  # QEMU start → "VNETRX ready"
    total_s: float
    returncode: int | None
    backend_log: tuple[str, ...] = ()  # vhost-user: the requests QEMU sent, in order
    backend_dropped: tuple[int, ...] = ()  # vhost-user: lengths dropped (larger than a chain)
    backend_transmitted: tuple[int, ...] = ()  # vhost-user: bytes of each chain the guest sent
    # vhost-user bursts: the virtio-net header written in front of each frame (None: dropped)
    backend_written: tuple[bytes | None, ...] = ()


def qemu_available() -> str | None:
    return shutil.which(QEMU)


class _Reader(threading.Thread):
    def __init__(self, stream: object) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.lines: list[str] = []
        self.ready = threading.Event()
        self.done = threading.Event()

    def run(self) -> None:
        try:
            for raw in self.stream:  # type: ignore[attr-defined]
                line = raw.decode("utf-8", "replace")
                self.lines.append(line)
                if "VNETRX ready" in line:
                    self.ready.set()
        finally:
            self.done.set()
            self.ready.set()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        proc.wait(timeout=3)


def remove_stale() -> None:
    """What lab runs that died hard left: their temporary directories, and the lock files of
    runs killed right after taking their lock (none of any vnetrx run's tracefs instance or
    mount that still exists)."""
    owners.remove_stale_dirs(LAB_KIND)
    from vnetrx.live.tracefs import names_in_use  # here: a boot needs no tracefs otherwise

    owners.remove_stale_locks(names_in_use())

def run(boot: Boot, initrd: bytes, frames: Sequence[bytes],
        hdrs: Sequence[bytes] | None = None,
        bursts: Sequence[Sequence[tuple[bytes, bytes]]] | None = None,
        burst_gap_s: float = 1.0) -> RunResult:
    """Boot, wait for the guest to arm its trace, send ``frames`` (behind ``hdrs``, the
    virtio_net_hdr of each: vhost-user only) and the sentinel, and collect the serial output
    until the guest powers off. ``bursts`` (vhost-user only, instead of ``frames``): bursts of
    ``(hdr, frame)``, each written with one used-ring update and one interrupt, ``burst_gap_s``
    apart; the sentinel is a burst of its own after them. Backend ``none``: no NIC and nothing
    sent (``frames`` must be empty); the guest's own probe does the work."""
    if boot.backend == "none" and frames:
        raise LabSetupError("a guest without a NIC is sent no frames")
    if (hdrs is not None or bursts is not None) and boot.backend != "vhost-user":
        raise LabSetupError("virtio-net headers need the vhost-user backend (a dgram "
                            "backend carries none)")
    qemu = qemu_available()
    if qemu is None:
        raise LabSetupError(f"{QEMU} not found", hint="apt-get install qemu-system-x86")
    owner = owners.Owner().__enter__()
    try:
        remove_stale()
        tmp = owner.make_dir(LAB_KIND)
    except OSError as exc:
        owner.release()
        raise GuestError(f"cannot make the run's temporary directory: {exc}") from None
    sock: socket.socket | None = None
    backend: vhost_user.VhostUserNet | None = None
    proc: subprocess.Popen[bytes] | None = None
    started = time.monotonic()
    try:
        initrd_path = tmp / "initrd.cpio"
        initrd_path.write_bytes(initrd)
        guest_sock, host_sock = tmp / "guest.sock", tmp / "host.sock"
        if boot.backend == "vhost-user":
            # QEMU connects at start-up and waits for the backend: serve before it runs.
            backend = vhost_user.VhostUserNet(guest_sock, mergeable=boot.mergeable,
                                              guest_gso=boot.guest_gso, mtu=boot.mtu)
            backend.start()
        else:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(str(host_sock))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        argv = qemu_command(boot, initrd_path, guest_sock, host_sock)
        argv[0] = qemu
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # our own process group: we stop exactly it
            preexec_fn=_die_with(os.getpid()),
        )
        reader = _Reader(proc.stdout)
        reader.start()
        if not reader.ready.wait(boot.ready_timeout_s) or reader.done.is_set():
            timed_out = not reader.done.is_set()
            _stop(proc)
            reader.join(timeout=2)
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise GuestError(
                "the guest did not get ready"
                + (f" within {boot.ready_timeout_s:.0f} s" if timed_out else " (QEMU exited)")
                + _tail(reader.lines, err)
                + _backend_tail(backend)
            )
        boot_s = time.monotonic() - started
        if boot.backend == "none":
            pass  # nothing to send: the guest runs its own probe and powers off
        elif backend is not None and bursts is not None:
            backend.send_bursts([*(list(b) for b in bursts), [(b"", sentinel_frame())]],
                                burst_gap_s)
        elif backend is not None:
            backend.send([*frames, sentinel_frame()],
                         None if hdrs is None else [*hdrs, b""])
        else:
            assert sock is not None
            sock.settimeout(boot.finish_timeout_s)
            for frame in (*frames, sentinel_frame()):
                sock.sendto(frame, str(guest_sock))
        try:
            proc.wait(timeout=boot.finish_timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            reader.join(timeout=2)
            raise GuestError(
                f"the guest did not finish within {boot.finish_timeout_s:.0f} s"
                + _tail(reader.lines, "")
                + _backend_tail(backend)
            ) from None
        reader.join(timeout=5)
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if backend is not None and backend.error is not None:
            raise GuestError(
                f"the vhost-user backend failed: {backend.error}" + _backend_tail(backend)
            )
        return RunResult(
            "".join(reader.lines),
            stderr,
            boot_s,
            time.monotonic() - started,
            proc.returncode,
            backend_log=tuple(backend.log) if backend is not None else (),
            backend_dropped=tuple(backend.dropped) if backend is not None else (),
            backend_transmitted=tuple(backend.transmitted) if backend is not None else (),
            backend_written=tuple(backend.written) if backend is not None else (),
        )
    except OSError as exc:
        raise GuestError(f"cannot run the guest: {exc}") from None
    finally:
        with owners.shielded():  # a second Ctrl-C or SIGTERM waits until all is removed
            if proc is not None:
                _stop(proc)
                for stream in (proc.stdout, proc.stderr):
                    if stream is not None:
                        stream.close()
            if sock is not None:
                sock.close()
            if backend is not None:
                backend.close()
            shutil.rmtree(tmp, ignore_errors=True)
            owner.release()


def _die_with(parent: int) -> Callable[[], None]:
    """QEMU's pre-exec step: a parent-death signal, so that QEMU cannot outlive a vnetrx killed
    with SIGKILL (the process group only helps when vnetrx lives to signal it). prctl is looked
    up before the fork: the child only calls it."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def step() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # vnetrx died before the prctl took effect
            os._exit(1)

    return step


def _backend_tail(backend: vhost_user.VhostUserNet | None) -> str:
    if backend is None:
        return ""
    return "; vhost-user backend: " + (" | ".join(backend.log[-12:]) or "QEMU never connected")


def _tail(lines: list[str], stderr: str) -> str:
    text = ("".join(lines[-8:]) + stderr[-800:]).strip()
    return f"; last output: {text}" if text else ""
