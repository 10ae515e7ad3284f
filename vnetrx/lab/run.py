"""One ``vnetrx lab virtio`` run: build the initramfs, boot, send, parse, compare."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from vnetrx.errors import InputError, VnetrxError
from vnetrx.kernel.registry import lookup
from vnetrx.lab import initramfs, qemu
from vnetrx.lab.compare import LabReport, base_mode, compare, predict
from vnetrx.lab.initramfs import LabSetupError
from vnetrx.lab.offloads import offload_frames
from vnetrx.observed.guest_log import guest_version, parse_log
from vnetrx.observed.negotiated import lab_mode_for
from vnetrx.paths.virtio_net_hdr import VnetHdr

MODES = ("small", "big", "mergeable", "big-gso", "mergeable-gso")
# Modes with guest GSO negotiated: they need a virtio-net header, so they run on vnetrx's own
# vhost-user backend (vnetrx.lab.vhost_user) instead of -netdev dgram.
VHOST_USER_MODES = ("big-gso", "mergeable-gso")
BIG_DEFAULT_MTU = 9000
BUSYBOX_PATHS = ("/bin/busybox", "/usr/bin/busybox")
MAX_FRAME = 65535

# Default frame lengths per mode (all 6.1-checked): GOOD_COPY_LEN (128/129 before
# eth_type_trans), the largest build_skb frame and the next one (small 1518, mergeable 1204 in a
# 1536-byte buffer, big 3744 in page 0), buffer and page edges, MTU edges, and the drops QEMU makes
# when a frame does not fit a non-mergeable buffer. The mergeable list is ordered so that 1514
# lands in buffer 20, the 2048-byte one that absorbs the rest of its 32 KiB page (build_skb there,
# a copy in any other buffer), and so that 3000 straddles buffers 18-19.
# big-gso (guest GSO, no host_mtu: chains of MAX_SKB_FRAGS + 1 = 18 pages, 73712 bytes, so
# nothing up to 65535 is dropped but the short packet): the copy/build_skb edges 128/129 and
# 3744/3745, page 0 full at 4064/4065, every fourth page edge up to the 18th page
# (65504/65505: nr_frags 17 = MAX_SKB_FRAGS) and 65535. mergeable-gso: the mergeable list (the
# driver's buffers do not depend on guest GSO).
# fmt: off
DEFAULT_LENGTHS = {
    "small": (13, 60, 64, 100, 127, 128, 129, 130, 200, 256, 512, 1000, 1024, 1200, 1400, 1499,
              1500, 1514, 1515, 1517, 1518, 1519, 1600, 9000),
    "big": (13, 60, 100, 127, 128, 129, 200, 1000, 1514, 1515, 2000, 3000, 3744, 3745, 4064,
            4065, 4096, 5000, 8000, 9014, 9018, 12000, 16000, 16352, 16353, 20000),
    "mergeable": (10, 13, 14, 60, 100, 127, 128, 129, 200, 1000, 1204, 1205, 1400, 1524, 1525,
                  2000, 3000, 1514, 3060, 3061, 4000, 9014, 20000, 65535, 1100, 1500),
    "big-gso": (13, 14, 60, 127, 128, 129, 1514, 3744, 3745, 4064, 4065, 4096, 8160, 8161,
                9014, 16352, 16353, 32736, 32737, 61408, 61409, 65504, 65505, 65535),
}
DEFAULT_LENGTHS["mergeable-gso"] = DEFAULT_LENGTHS["mergeable"]
# With --xdp (docs/kernel/xdp-source-notes.md §A.3-§A.4): small mode's short packet, copy-size
# edges and the 1518-byte buffer end; mergeable's 12 + 3508 = one 3520-byte XDP buffer and one
# byte more (xdp_linearize_page drops it without frags), 9014 over three buffers, 18 × 3520 - 12
# = 63348 (the most a multi-buffer xdp_buff takes) and one byte more, 65535.
DEFAULT_XDP_LENGTHS = {
    "small": (13, 14, 60, 128, 129, 1000, 1514, 1518, 1519),
    "mergeable": (13, 14, 60, 128, 129, 1000, 1514, 3000, 3508, 3509, 9014, 20000, 63348, 63349,
                  65535),
}
DEFAULT_XDP_LENGTHS["mergeable-gso"] = DEFAULT_XDP_LENGTHS["mergeable"]
# fmt: on


def cache_dir() -> Path:
    """Where fetched kernels live: $VNETRX_LAB_DIR or <vnetrx's cache>/lab."""
    env = os.environ.get("VNETRX_LAB_DIR")
    if env:
        return Path(env)
    from vnetrx import cache

    base = cache.root()
    if base is None:
        raise LabSetupError("no cache directory: $HOME and $XDG_CACHE_HOME are unset or not "
                            "absolute", hint="set VNETRX_LAB_DIR to a directory of your own")
    return Path(base) / "lab"


def check_lab_dir(path: Path) -> None:
    """Refuse a lab directory another user could plant files in or redirect (as root
    especially): under vnetrx's cache, every component from the home down must be a directory
    of this user (vnetrx.cache.open_chain); anywhere, the directories above it must be root's
    or this user's, writable by nobody else (vnetrx.cache.path_problem)."""
    from vnetrx import cache

    base = cache.root()
    problem = None
    if base is not None and (path == Path(base) or Path(base) in path.parents):
        problem = cache.problem(create=True)
    problem = problem or cache.path_problem(str(path))
    if problem:
        raise LabSetupError(f"unsafe lab directory {path}: {problem}",
                            hint="use a directory only you can write (VNETRX_LAB_DIR)")


def image_release(image: Path) -> str:
    """The release string in a bzImage's setup header (``kernel_version``): "6.1.0-57-amd64"."""
    try:
        data = image.read_bytes()[:0x10000]
    except OSError as exc:
        raise LabSetupError(f"cannot read kernel image {image}: {exc.strerror}") from None
    if len(data) < 0x210 or data[0x202:0x206] != b"HdrS":
        raise LabSetupError(f"{image} is not an x86 bzImage kernel")
    pointer = int.from_bytes(data[0x20E:0x210], "little") + 0x200
    end = data.find(b"\0", pointer)
    text = data[pointer:end].decode(errors="replace") if end > pointer else ""
    release = text.split(" ")[0]
    if not release:
        raise LabSetupError(f"{image}: no kernel_version string in the setup header")
    return release


def find_modules(image: Path, modules: Path | None) -> Path:
    """--modules, else <image>/../../lib/modules/<release> (an extracted .deb), else
    /lib/modules/<release>."""
    if modules is not None:
        return modules
    release = image_release(image)
    for candidate in (
        image.resolve().parent.parent / "lib" / "modules" / release,
        Path("/lib/modules") / release,
    ):
        if (candidate / "kernel").is_dir():
            return candidate
    raise LabSetupError(
        f"no modules for {release} next to {image} or in /lib/modules",
        hint="pass --modules DIR, or run `vnetrx lab fetch-kernel`",
    )


def find_busybox() -> Path:
    for candidate in BUSYBOX_PATHS:
        path = Path(candidate)
        if path.is_file():
            return path
    found = shutil.which("busybox")
    if found:
        return Path(found)
    raise LabSetupError("busybox not found", hint="apt-get install busybox-static")


def default_lengths(mode: str, xdp: bool = False) -> tuple[int, ...]:
    """The lengths a run sends without --len (``xdp``: a program stays attached)."""
    return DEFAULT_XDP_LENGTHS.get(mode, DEFAULT_LENGTHS[mode]) if xdp else DEFAULT_LENGTHS[mode]


@dataclass(frozen=True)
class LabRun:
    report: LabReport
    boot_s: float
    total_s: float
    serial: str
    modules: tuple[str, ...]


def check_request(mode: str, mtu: int | None, lengths: tuple[int, ...]) -> int | None:
    """The host_mtu to offer (None: no VIRTIO_NET_F_MTU). Raises InputError for bad requests."""
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r} (valid: {', '.join(MODES)})")
    if mode in VHOST_USER_MODES and mtu is not None:
        raise InputError(
            f"{mode} mode offers no VIRTIO_NET_F_MTU (--mtu): guest GSO alone selects its "
            "buffers, and vnetrx's vhost-user backend does not offer an MTU"
        )
    if mode == "small" and mtu is not None and mtu > 1500:
        raise InputError("small mode needs an MTU of at most 1500 (a bigger one selects big mode)")
    if mode == "big":
        mtu = BIG_DEFAULT_MTU if mtu is None else mtu
        if mtu <= 1500:
            raise InputError(
                "big mode needs --mtu above 1500: a dgram backend has no vnet header, so "
                "QEMU offers no guest TSO, and only host_mtu > 1500 selects big mode"
            )
    if len(set(lengths)) != len(lengths):
        raise InputError("frame lengths must be distinct (frames are matched by length)")
    # a header-only write (length 0) goes through the vhost-user backend (real 6.1.192 and
    # 6.12.117 guests count it in rx_length_errors); a dgram backend cannot send an empty
    # datagram (the guest never receives it: measured, 120 s without a frame)
    low = 0 if mode in VHOST_USER_MODES else 1
    for length in lengths:
        if length == 0 and low:
            raise InputError(
                f"frame length 0 (the header alone) needs a vhost-user mode (--mode "
                f"{' or '.join(VHOST_USER_MODES)}): QEMU's dgram backend sends no empty datagram"
            )
        if not low <= length <= MAX_FRAME:
            raise InputError(f"frame length {length} out of range (valid: {low}..{MAX_FRAME})")
    return mtu


def run_virtio(
    image: Path,
    mode: str,
    lengths: tuple[int, ...],
    *,
    modules: Path | None = None,
    mtu: int | None = None,
    accel: str = "tcg",
    kprobe: bool = True,
    timeout_s: float = 90.0,
    offloads: bool = False,
    on_stage: Callable[[str], None] | None = None,
    xdp_check: bool = False,
    xdp: str | None = None,
    xdp_frags: bool = False,
    xdp_late: bool = False,
) -> LabRun:
    """Boot, send, compare. ``offloads``: send ``offload_frames()`` (real TCP/UDP frames behind
    offload headers) instead of ``lengths``; needs a vhost-user mode. ``on_stage`` hears what
    is happening ("booting Linux 6.1.0-57-amd64 under QEMU …"), for a progress line.
    ``xdp``: a program returning this action stays attached in the guest while the frames
    arrive (``xdp_frags``: loaded with BPF_F_XDP_HAS_FRAGS; ``xdp_late``: attached after the
    device started, so the frames meet buffers posted without XDP headroom)."""
    stage = on_stage or (lambda _text: None)
    hdrs: list[VnetHdr | None] | None = None
    payloads: list[bytes] | None = None
    if offloads:
        if mode not in VHOST_USER_MODES:
            raise InputError(
                f"--offloads needs a virtio-net header: use --mode {' or '.join(VHOST_USER_MODES)} "
                f"(not {mode}, whose -netdev dgram backend carries none)"
            )
        chosen = offload_frames()
        lengths = tuple(f.length for f in chosen)
        hdrs = [f.hdr for f in chosen]
        payloads = [f.frame() for f in chosen]
    host_mtu = check_request(mode, mtu, lengths)
    if not image.is_file():
        raise LabSetupError(f"kernel image {image} not found")
    # Fail on lengths the model cannot place before paying for a boot.
    release = image_release(image)
    if (xdp_frags or xdp_late) and xdp is None:
        raise InputError("--xdp-frags/--xdp-late describe the program: give --xdp ACTION too")
    if xdp is not None and base_mode(mode) == "big":
        raise InputError(f"--xdp: big mode ({mode}) has no XDP hook, the program would never run",
                         hint="use --mode small, mergeable or mergeable-gso")
    predict(lookup(release), mode, lengths, host_mtu or 1500, 12, hdrs, xdp, xdp_frags,
            xdp_late)
    stage(f"building the initramfs for Linux {release}")
    tree = initramfs.ModuleTree.scan(find_modules(image, modules))
    offsets = None
    kprobe_note = None if kprobe else "--no-kprobe given"
    if kprobe:
        from vnetrx.lab.vmlinux import kprobe_offsets

        try:
            offsets = kprobe_offsets(image)
        except VnetrxError as exc:  # the tracepoint alone still checks len/truesize/frags
            kprobe_note = f"no struct sk_buff offsets for the kprobe: {exc.message}"
    probe = None
    keep = None
    if xdp_check or xdp is not None:
        from vnetrx.lab.xdp_probe import build_probe, keep_args

        stage("building the XDP probe")
        probe = build_probe()
        keep = None if xdp is None else keep_args(xdp, xdp_frags)
    archive, order = initramfs.build(
        find_busybox(), tree, qemu.GUEST_MAC, offsets, timeout_s=int(timeout_s), xdp_probe=probe,
        xdp_keep=keep, xdp_late=xdp_late,
    )
    boot = qemu.Boot(
        image,
        mergeable=base_mode(mode) == "mergeable",
        mtu=host_mtu,
        accel=accel,
        ready_timeout_s=timeout_s,
        finish_timeout_s=timeout_s,
        backend="vhost-user" if mode in VHOST_USER_MODES else "dgram",
    )
    frames = payloads or [qemu.ethernet_frame(length, seq) for seq, length in enumerate(lengths)]
    stage(f"booting Linux {release} under QEMU ({accel}) and sending {len(frames)} frames")
    result = qemu.run(boot, archive, frames,
                      None if hdrs is None else [h.to_bytes(10) if h else b"" for h in hdrs])
    stage("comparing what the guest built with the model")
    log = parse_log(result.serial)
    if log.errors:
        raise qemu.GuestError("the guest reported: " + "; ".join(log.errors))
    if not log.complete:
        raise qemu.GuestError("the guest powered off without dumping its trace")
    profile = lookup(guest_version(log.status, log.release or release))
    report = compare(profile, mode, lengths, log, hdrs, xdp, xdp_frags,
                     result.backend_transmitted if boot.backend == "vhost-user" else None,
                     xdp_late)
    if xdp_check or xdp is not None:
        from vnetrx.lab.xdp_probe import check, cpus_of

        answer = log.status.get("xdp-attach", "")
        report = replace(report, xdp=check(
            profile, log.features, log.mtu, cpus_of(log.status.get("xdp-cpus", "0")), answer,
            log.status.get("xdp-dmesg", "").strip("| "), xdp_frags))
    if kprobe_note is not None:
        report = replace(report, notes=(*report.notes, kprobe_note))
    if result.backend_dropped:
        dropped = ", ".join(map(str, result.backend_dropped))
        report = replace(
            report,
            notes=(
                *report.notes,
                f"vnetrx's vhost-user backend dropped frames larger than a posted chain "
                f"(as QEMU does): {dropped} bytes",
            ),
        )
    serial = serial_header(mode, host_mtu, lengths, offloads, xdp, xdp_frags, xdp_late) + \
        result.serial
    return LabRun(report, result.boot_s, result.total_s, serial, tuple(order))


HEADER = "# serial console of: vnetrx lab virtio"


def serial_header(mode: str, mtu: int | None, lengths: tuple[int, ...],
                  offloads: bool = False, xdp: str | None = None, xdp_frags: bool = False,
                  xdp_late: bool = False) -> str:
    """The first line ``--serial-log`` writes, so that ``--from-log`` knows what was sent."""
    mtu_part = f" --mtu {mtu}" if mtu is not None else ""
    program = (("" if xdp is None else f" --xdp {xdp}") + (" --xdp-frags" if xdp_frags else "")
               + (" --xdp-late" if xdp_late else ""))
    sent = " --offloads" if offloads else f" --len {','.join(map(str, lengths))}"
    return f"{HEADER} --mode {mode}{mtu_part}{program}{sent}\n"


def lengths_from_header(text: str) -> tuple[int, ...] | None:
    first = text.split("\n", 1)[0]
    match = re.search(r"--len ([\d,]+)\s*$", first) if first.startswith(HEADER) else None
    return tuple(int(x) for x in match.group(1).split(",")) if match else None


def xdp_from_header(text: str) -> tuple[str | None, bool, bool]:
    """The program a ``--serial-log`` says stayed attached: (action, frags, late)."""
    first = text.split("\n", 1)[0]
    if not first.startswith(HEADER):
        return None, False, False
    match = re.search(r" --xdp (\w+)", first)
    return (match.group(1) if match else None), " --xdp-frags" in first, " --xdp-late" in first


def recheck_log(text: str, lengths: tuple[int, ...] | None) -> LabReport:
    """Compare a saved serial log (``--serial-log``) with the model again, without a boot.
    ``lengths`` (--len) picks frames among those the log's first line says were sent: every
    frame sent is predicted (a mergeable frame's buffer depends on the frames before it), then
    only the chosen ones are reported. A length the log did not send is refused: its missing
    event would otherwise read as a drop."""
    log = parse_log(text)
    if not log.complete:
        raise InputError("the log has no complete trace (no 'VNETRX trace-end' line)")
    hdrs: list[VnetHdr | None] | None = None
    first = text.split("\n", 1)[0]
    sent = lengths_from_header(text)
    if first.startswith(HEADER) and first.rstrip().endswith("--offloads"):
        chosen = offload_frames()
        sent = tuple(f.length for f in chosen)
        hdrs = [f.hdr for f in chosen]
    wanted = lengths
    if sent is not None:
        if wanted is not None:
            _check_sent(wanted, sent)
        lengths = sent
    elif hdrs is None and lengths is None:
        raise InputError(
            "the log does not say which frames were sent",
            hint="pass --len, or use a log written by --serial-log",
        )
    assert lengths is not None
    try:
        mode = lab_mode_for(log.features, log.mtu)
    except ValueError as exc:
        raise InputError(f"the log's feature bits or MTU are unreadable: {exc}") from None
    check_request(mode, None, lengths)
    xdp, xdp_frags, xdp_late = xdp_from_header(text)
    profile = lookup(guest_version(log.status, log.release))
    report = compare(profile, mode, lengths, log, hdrs, xdp, xdp_frags, xdp_late=xdp_late)
    if xdp is not None:
        from vnetrx.lab.xdp_probe import check, cpus_of

        report = replace(report, xdp=check(
            profile, log.features, log.mtu, cpus_of(log.status.get("xdp-cpus", "0")),
            log.status.get("xdp-attach", ""), log.status.get("xdp-dmesg", "").strip("| "),
            xdp_frags))
    if wanted is not None and sent is not None:
        chosen_frames = set(wanted)
        report = replace(report, frames=tuple(f for f in report.frames
                                               if f.frame_len in chosen_frames))
    return report


def _check_sent(wanted: tuple[int, ...], sent: tuple[int, ...]) -> None:
    """Refuse --len values the log never sent (they are not in the log: neither a match nor a
    drop)."""
    known = set(sent)
    absent = [n for n in wanted if n not in known]
    if absent:
        shown = ",".join(map(str, absent[:5])) + (",…" if len(absent) > 5 else "")
        raise InputError(
            f"--len: {len(absent)} of {len(wanted)} lengths are not in the log ({shown}): it "
            f"sent {len(sent)} frames",
            hint="choose among the lengths on the log's first line: "
            + ",".join(map(str, sorted(known)))[:200],
        )
