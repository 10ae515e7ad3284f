"""`vnetrx lab`, the parts that run anywhere: the cpio writer, module dependencies, the guest's
/init, the QEMU command line, cleanup on failure, and the model against serial logs saved from
real 6.1 guests (tests/data/lab). The serial log's and the features' parsers are pure:
tests/observed/."""

from __future__ import annotations

import json
import lzma
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests import DATA as TESTS_DATA
from vnetrx.cli import cli
from vnetrx.errors import InputError
from vnetrx.kernel.registry import lookup
from vnetrx.lab import cpio, initramfs, qemu
from vnetrx.lab.compare import compare, match_events, predict, report_to_dict
from vnetrx.lab.fetch import newest_package
from vnetrx.lab.initramfs import Kprobe, LabSetupError, ModuleTree, resolve_modules
from vnetrx.lab.run import (
    DEFAULT_LENGTHS,
    check_request,
    image_release,
    lengths_from_header,
    serial_header,
)
from vnetrx.lab.vmlinux import elf_section
from vnetrx.observed.guest_log import parse_log
from vnetrx.observed.rx_event import RxEvent

DATA = TESTS_DATA / "lab"


# --- cpio -----------------------------------------------------------------------------------


def _sample_entries() -> list[cpio.Entry]:
    return [
        cpio.directory("bin"),
        cpio.directory("dev"),
        cpio.char_device("dev/console", 5, 1),
        cpio.regular("bin/busybox", b"\x7fELF" + bytes(range(256)) * 3, 0o755),
        cpio.symlink("bin/sh", "busybox"),
        cpio.regular("init", b"#!/bin/sh\necho hi\n", 0o755),
        cpio.regular("empty", b""),
    ]


def test_cpio_round_trip_and_alignment() -> None:
    entries = _sample_entries()
    data = cpio.archive(entries)
    assert len(data) % 4 == 0
    assert data.startswith(b"070701")
    assert b"TRAILER!!!\0" in data
    assert cpio.read_archive(data) == entries


def test_cpio_header_fields() -> None:
    data = cpio.archive([cpio.char_device("dev/console", 5, 1)])
    fields = [int(data[6 + 8 * i : 14 + 8 * i], 16) for i in range(13)]
    assert stat.S_ISCHR(fields[1])
    assert (fields[9], fields[10]) == (5, 1)  # rdevmajor, rdevminor
    assert fields[11] == len("dev/console") + 1  # namesize counts the NUL


@pytest.mark.skipif(shutil.which("cpio") is None, reason="GNU cpio not installed")
def test_cpio_archive_is_read_by_gnu_cpio(tmp_path: Path) -> None:
    archive = tmp_path / "a.cpio"
    archive.write_bytes(cpio.archive(_sample_entries()))
    listing = subprocess.run(
        ["cpio", "-it", "--quiet", "-F", str(archive)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert listing == [e.name for e in _sample_entries()]


def test_cpio_rejects_empty_name() -> None:
    with pytest.raises(ValueError, match="empty name"):
        cpio.archive([cpio.regular("/", b"")])


# --- modules ----------------------------------------------------------------------------------


def _module(depends: str) -> bytes:
    return b"\x7fELF....\0license=GPL\0depends=" + depends.encode() + b"\0vermagic=6.1.0 SMP\0"


FAKE = {
    "virtio_net": _module("virtio_ring,virtio,net_failover"),
    "net_failover": _module("failover"),
    "failover": _module(""),
    "virtio": _module(""),
    "virtio_ring": _module(""),
    "virtio_pci": _module("virtio_ring,virtio_pci_modern_dev,virtio_pci_legacy_dev,virtio"),
    "virtio_pci_modern_dev": _module(""),
    "virtio_pci_legacy_dev": _module(""),
}


def test_modinfo_depends() -> None:
    assert initramfs.modinfo_depends(FAKE["virtio_net"]) == (
        "virtio_ring",
        "virtio",
        "net_failover",
    )
    assert initramfs.modinfo_depends(FAKE["virtio"]) == ()
    assert initramfs.modinfo_depends(b"no modinfo here") == ()
    assert initramfs.modinfo_vermagic(FAKE["virtio"]) == "6.1.0"


def test_resolve_modules_puts_dependencies_first() -> None:
    order = resolve_modules(("virtio_pci", "virtio_net"), FAKE.get)
    assert sorted(order) == sorted(FAKE)
    for name, data in FAKE.items():
        for dep in initramfs.modinfo_depends(data):
            assert order.index(dep) < order.index(name)


def test_resolve_modules_skips_builtins_and_reports_missing() -> None:
    lookup = {k: v for k, v in FAKE.items() if k not in ("virtio", "virtio_ring")}.get
    order = resolve_modules(("virtio_net",), lookup, frozenset({"virtio", "virtio_ring"}))
    assert order == ["failover", "net_failover", "virtio_net"]
    with pytest.raises(LabSetupError, match=r"virtio_ring not found \(needed by virtio_net\)"):
        resolve_modules(("virtio_net",), lookup)


def test_resolve_modules_cycle() -> None:
    cyclic = {"a": _module("b"), "b": _module("a")}
    with pytest.raises(LabSetupError, match="cycle"):
        resolve_modules(("a",), cyclic.get)


def test_module_tree_scan_and_xz(tmp_path: Path) -> None:
    root = tmp_path / "6.1.0-test"
    (root / "kernel" / "drivers" / "net").mkdir(parents=True)
    (root / "kernel" / "drivers" / "net" / "virtio_net.ko.xz").write_bytes(
        lzma.compress(FAKE["virtio_net"])
    )
    (root / "kernel" / "drivers" / "net" / "net-failover.ko").write_bytes(FAKE["net_failover"])
    (root / "modules.builtin").write_text("kernel/drivers/virtio/virtio.ko\n")
    tree = ModuleTree.scan(root)
    assert set(tree.files) == {"virtio_net", "net_failover"}
    assert "virtio" in tree.builtin
    assert initramfs.decompress_module(tree.files["virtio_net"]) == FAKE["virtio_net"]
    with pytest.raises(LabSetupError, match="does not exist"):
        ModuleTree.scan(tmp_path / "nowhere")


# --- /init ------------------------------------------------------------------------------------

OFFSETS = Kprobe(head=200, data=208, tail=188, end=192, mac_header=186, len=112)


def test_kprobe_definition() -> None:
    assert OFFSETS.definition() == (
        "p:vnetrx/gro napi_gro_receive head=+200(%si):x64 data=+208(%si):x64 "
        "tail=+188(%si):u32 end=+192(%si):u32 mac_header=+186(%si):u16 len=+112(%si):u32"
    )


def test_init_script_content() -> None:
    script = initramfs.init_script(["virtio", "virtio_net"], qemu.GUEST_MAC, OFFSETS, 30)
    assert script.startswith("#!/bin/sh\n")
    assert "for m in virtio virtio_net; do" in script
    assert qemu.GUEST_MAC in script
    assert "napi_gro_receive_entry/filter" in script
    assert "'p:vnetrx/gro napi_gro_receive head=+200(%si):x64" in script
    assert 'grep -q "protocol=0x88b6"' in script
    assert "-gt 300 ]" in script
    assert "poweroff -f" in script


@pytest.mark.parametrize("kprobe", [OFFSETS, None])
def test_init_script_parses_as_shell(kprobe: Kprobe | None, tmp_path: Path) -> None:
    path = tmp_path / "init"
    path.write_text(initramfs.init_script(["virtio_net"], qemu.GUEST_MAC, kprobe))
    subprocess.run(["sh", "-n", str(path)], check=True)


def test_initramfs_build(tmp_path: Path) -> None:
    root = tmp_path / "mods"
    for name, data in FAKE.items():
        path = root / "kernel" / f"{name}.ko"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    busybox = tmp_path / "busybox"
    busybox.write_bytes(b"\x7fELF busybox")
    archive, order = initramfs.build(busybox, ModuleTree.scan(root), qemu.GUEST_MAC, None)
    names = {e.name: e for e in cpio.read_archive(archive)}
    assert order[-1] == "virtio_net"
    assert {f"lib/modules/{m}.ko" for m in order} <= names.keys()
    assert names["init"].mode & 0o111
    assert names["bin/sh"].data == b"busybox"
    assert stat.S_ISCHR(names["dev/console"].mode)
    with pytest.raises(LabSetupError, match="busybox not found"):
        initramfs.build(tmp_path / "nope", ModuleTree.scan(root), qemu.GUEST_MAC, None)


# --- the guest's output (its parsers: tests/observed/test_guest_log.py) ----------------------


def test_match_events_by_length_in_order() -> None:
    def ev(length: int, protocol: int = 0x88B5) -> RxEvent:
        return RxEvent(len=length, data_len=0, truesize=0, nr_frags=0, protocol=protocol)

    events = [ev(46), ev(86), ev(50, 0x88B6)]
    assert match_events([60, 1519, 100, 64], events) == [ev(46), None, ev(86), None]


# --- the model against logs saved from real guests ---------------------------------------------


SAVED = {"6.1.0-57-amd64": "6.1.192", "6.12.117+deb12-amd64": "6.12.117"}


def _saved(mode: str, release: str = "6.1.0-57-amd64") -> tuple[tuple[int, ...], str]:
    text = (DATA / f"{mode}-{release}.log").read_text()
    header = text.splitlines()[0]
    lengths = tuple(int(x) for x in header.split("--len ")[1].split(","))
    return lengths, text


@pytest.mark.parametrize("release", sorted(SAVED))
@pytest.mark.parametrize("mode", ["small", "big", "mergeable"])
def test_saved_guest_logs_match_the_model(mode: str, release: str) -> None:
    """Recorded with `vnetrx lab virtio --mode MODE --serial-log` on Debian 6.1.0-57 (6.1.192)
    and 6.12.117+deb12 (the kprobe there sits at napi_gro_receive+0x4, after endbr64)."""
    lengths, text = _saved(mode, release)
    log = parse_log(text)
    assert log.complete and log.kprobe and not log.errors
    assert log.release == release
    report = compare(lookup(SAVED[release]), mode, lengths, log)
    assert report.mode == mode
    assert len(report.frames) >= 20
    mismatches = [
        (f.frame_len, [(c.name, c.predicted, c.observed) for c in f.checks if not c.ok])
        for f in report.frames
        if not f.match
    ]
    assert mismatches == []
    assert report.counters_match
    outcomes = {f.frame_len: f.predicted["outcome"] for f in report.frames}
    if mode == "mergeable":
        assert (outcomes[128], outcomes[129]) == ("copy", "build_skb")
        assert (outcomes[1204], outcomes[1205]) == ("build_skb", "copy")
        # 1514 lands in buffer 20, the 2048-byte one that absorbs the rest of its page
        frame = next(f for f in report.frames if f.frame_len == 1514)
        assert (frame.buffer_index, frame.predicted["outcome"]) == (20, "build_skb")
        assert report.mergeable_rx_buffer_size == 1536
    if mode == "big":
        assert (outcomes[3744], outcomes[3745]) == ("build_skb", "copy")
        assert outcomes[16353] == "drop"
    if mode == "small":
        assert outcomes[1518] == "build_skb"
        assert outcomes[1519] == "drop"
    assert outcomes[13] == "drop"  # a short packet, counted in rx_length_errors
    as_json = report_to_dict(report)
    assert json.loads(json.dumps(as_json))["frames"][0]["frame_len"] == lengths[0]


def test_saved_log_mismatch_is_reported() -> None:
    lengths, text = _saved("small")
    doctored = text.replace("len=986 data_len=0 truesize=2176", "len=986 data_len=0 truesize=2177")
    report = compare(lookup("6.1.192"), "small", lengths, parse_log(doctored))
    bad = [f for f in report.frames if not f.match]
    assert [f.frame_len for f in bad] == [1000]
    assert [(c.name, c.predicted, c.observed) for c in bad[0].checks if not c.ok] == [
        ("truesize", 2176, 2177)
    ]
    assert not report.match


def test_default_lengths_cover_the_boundaries() -> None:
    for mode, lengths in DEFAULT_LENGTHS.items():
        assert len(lengths) >= 20, mode
        assert len(set(lengths)) == len(lengths), mode
        assert {128, 129} <= set(lengths), mode


def test_mergeable_ring_limit() -> None:
    with pytest.raises(InputError, match="mergeable buffers"):
        predict(lookup("6.1.192"), "mergeable", [65535 - i for i in range(7)], 1500, 12)


@pytest.mark.parametrize(
    ("mode", "mtu", "lengths", "message"),
    [
        ("small", 9000, (60,), "small mode needs an MTU"),
        ("big", 1500, (60,), "big mode needs --mtu above 1500"),
        ("mergeable", None, (60, 60), "distinct"),
        ("mergeable", None, (0,), "needs a vhost-user mode"),  # a dgram backend sends no empty datagram
        ("mergeable-gso", None, (65536,), "out of range"),
        ("tiny", None, (60,), "unknown mode"),
    ],
)
def test_check_request(mode: str, mtu: int | None, lengths: tuple[int, ...], message: str) -> None:
    with pytest.raises(InputError, match=message):
        check_request(mode, mtu, lengths)


def test_check_request_host_mtu() -> None:
    assert check_request("big", None, (60,)) == 9000
    assert check_request("mergeable", None, (60,)) is None
    assert check_request("mergeable", 4000, (60,)) == 4000


# --- QEMU command line, frames, files ---------------------------------------------------------


def test_qemu_command_has_no_ip_networking(tmp_path: Path) -> None:
    boot = qemu.Boot(tmp_path / "vmlinuz", mergeable=False, mtu=9000)
    argv = qemu.qemu_command(boot, tmp_path / "i", tmp_path / "g.sock", tmp_path / "h.sock")
    text = " ".join(argv)
    assert "-nodefaults" in argv and "-nographic" in argv and "-no-reboot" in argv
    assert argv[argv.index("-accel") + 1] == "tcg"
    assert "-nic" not in argv
    netdevs = [argv[i + 1] for i, a in enumerate(argv) if a == "-netdev"]
    assert netdevs == [
        f"dgram,id=n0,local.type=unix,local.path={tmp_path}/g.sock,"
        f"remote.type=unix,remote.path={tmp_path}/h.sock"
    ]
    for banned in ("user", "tap", "bridge", "hostfwd", "socket,"):
        assert banned not in text
    device = argv[argv.index("-device") + 1]
    assert device.startswith("virtio-net-pci,netdev=n0,")
    assert "mrg_rxbuf=off" in device and "host_mtu=9000" in device and "guest_tso4=off" in device
    merge = qemu.device_properties(qemu.Boot(tmp_path, mergeable=True, mtu=None))
    assert "mrg_rxbuf=on" in merge and "host_mtu" not in merge


def test_ethernet_frame() -> None:
    frame = qemu.ethernet_frame(60, 7)
    assert len(frame) == 60
    assert frame[:6] == bytes.fromhex("525400123456")
    assert frame[12:14] == b"\x88\xb5"
    assert frame[14:18] == (7).to_bytes(4, "big")
    assert len(qemu.ethernet_frame(13, 0)) == 13
    assert qemu.sentinel_frame()[12:14] == b"\x88\xb6"
    assert qemu.ethernet_frame(0, 0) == b""  # a header-only write (vhost-user modes)
    with pytest.raises(ValueError, match="not negative"):
        qemu.ethernet_frame(-1, 0)


def test_newest_package() -> None:
    listing = "\n".join(
        [
            "linux-image-6.1.0-9-amd64 - Linux 6.1 for 64-bit PCs (signed)",
            "linux-image-6.1.0-57-amd64 - Linux 6.1 for 64-bit PCs (signed)",
            "linux-image-6.1.0-57-cloud-amd64 - Linux 6.1 for x86-64 cloud (signed)",
            "linux-image-6.1.0-58-amd64-dbg - Debug symbols",
            "linux-image-6.1.0-58-amd64-unsigned - Linux 6.1 for 64-bit PCs",
            "linux-image-6.12.117+deb12-amd64 - Linux 6.12 for 64-bit PCs (signed)",
        ]
    )
    assert newest_package("6.1", listing) == "linux-image-6.1.0-57-amd64"
    assert newest_package("6.12", listing) == "linux-image-6.12.117+deb12-amd64"
    assert newest_package("5.10", listing) is None


def test_image_release(tmp_path: Path) -> None:
    image = bytearray(0x1000)
    image[0x202:0x206] = b"HdrS"
    image[0x20E:0x210] = (0x300).to_bytes(2, "little")
    image[0x500 : 0x500 + 40] = b"6.1.0-57-amd64 (debian-kernel@lists)\0\0\0\0"
    path = tmp_path / "vmlinuz"
    path.write_bytes(bytes(image))
    assert image_release(path) == "6.1.0-57-amd64"
    path.write_bytes(b"not a kernel" * 100)
    with pytest.raises(LabSetupError, match="not an x86 bzImage"):
        image_release(path)


def _tiny_elf(sections: dict[str, bytes]) -> bytes:
    names = b"\0" + b"".join(n.encode() + b"\0" for n in [*sections, ".shstrtab"])
    body, offsets, pos = b"", [], 64
    for data in [*sections.values(), names]:
        offsets.append((pos + len(body), len(data)))
        body += data
    shoff = 64 + len(body)
    name_offsets = [names.index(n.encode() + b"\0") for n in [*sections, ".shstrtab"]]
    headers = bytes(64)  # the null section
    for (offset, size), name in zip(offsets, name_offsets, strict=True):
        headers += struct.pack("<IIQQQQIIQQ", name, 1, 0, 0, offset, size, 0, 0, 1, 0)
    count = len(sections) + 2
    elf = bytearray(64)
    elf[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", elf, 0x28, shoff)
    struct.pack_into("<HHH", elf, 0x3A, 64, count, count - 1)
    return bytes(elf) + body + headers


def test_elf_section() -> None:
    elf = _tiny_elf({".text": b"\x90" * 5, ".BTF": b"\x9f\xeb\x01\x00btf"})
    assert elf_section(elf, ".BTF") == b"\x9f\xeb\x01\x00btf"
    assert elf_section(elf, ".text") == b"\x90" * 5
    assert elf_section(elf, ".missing") is None


# --- cleanup ----------------------------------------------------------------------------------


def _gone(pidfile: Path) -> bool:
    pid = int(pidfile.read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_guest_that_never_gets_ready_is_killed_and_cleaned_up(
    fake_qemu: Path, tmp_path: Path, made_dirs: list[Path]
) -> None:
    boot = qemu.Boot(tmp_path / "vmlinuz", mergeable=True, mtu=None, ready_timeout_s=1.5)
    started = time.monotonic()
    with pytest.raises(qemu.GuestError, match="did not get ready within 2 s; last output: booting"):
        qemu.run(boot, b"initrd", [qemu.ethernet_frame(60, 0)])
    assert time.monotonic() - started < 10
    assert _gone(fake_qemu)
    assert len(made_dirs) == 1
    assert not made_dirs[0].exists()


def test_ctrl_c_kills_qemu_and_cleans_up(
    fake_qemu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made_dirs: list[Path]
) -> None:

    def interrupted(self: object, timeout: float | None = None) -> bool:
        time.sleep(1)  # QEMU (the fake) is running by now
        raise KeyboardInterrupt

    monkeypatch.setattr(qemu.threading.Event, "wait", interrupted)
    boot = qemu.Boot(tmp_path / "vmlinuz", mergeable=True, mtu=None)
    with pytest.raises(KeyboardInterrupt):
        qemu.run(boot, b"initrd", [])
    monkeypatch.undo()
    assert _gone(fake_qemu)
    assert len(made_dirs) == 1
    assert not made_dirs[0].exists()


LAB_RUN = r"""
import sys
from pathlib import Path
from vnetrx.lab import qemu
from vnetrx.owner import interrupt_once

qemu.QEMU = sys.argv[1]
try:
    with interrupt_once():
        qemu.run(qemu.Boot(Path("vmlinuz"), mergeable=True, mtu=None), b"initrd", [])
except KeyboardInterrupt:
    sys.exit(130)
"""


def _lab_dirs(pid: int) -> list[Path]:
    import tempfile

    return sorted(Path(tempfile.gettempdir()).glob(f"vnetrx-lab-{pid}x*"))


def _start_lab_run(fake_qemu: Path, stubborn: bool = False) -> subprocess.Popen[bytes]:
    script = fake_qemu.parent / "fake-qemu"
    if stubborn:  # ignores SIGTERM: stopping it takes vnetrx's 3 s grace, then SIGKILL
        script.write_text(script.read_text().replace("#!/bin/sh\n", "#!/bin/sh\ntrap '' TERM\n"))
    proc = subprocess.Popen([sys.executable, "-c", LAB_RUN, str(script)],
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not (fake_qemu.exists() and fake_qemu.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None, "QEMU never started"
        time.sleep(0.02)
    assert len(_lab_dirs(proc.pid)) == 1
    return proc


@pytest.mark.parametrize("signals", [(signal.SIGTERM,), (signal.SIGTERM, signal.SIGTERM),
                                     (signal.SIGINT, signal.SIGTERM)])
def test_sigterm_kills_qemu_and_cleans_up(fake_qemu: Path, signals: tuple[int, ...]) -> None:
    """SIGTERM (once, or again while cleaning up) stops QEMU and removes the run's directory
    (the issue: QEMU kept running with ppid 1 and the directory stayed, 8 of 8 tries). With
    two signals, QEMU ignores the first SIGTERM, so the second lands mid-cleanup."""
    proc = _start_lab_run(fake_qemu, stubborn=len(signals) > 1)
    for signum in signals:
        proc.send_signal(signum)
        time.sleep(0.3)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert _gone(fake_qemu)
    assert _lab_dirs(proc.pid) == []


def test_after_sigkill_qemu_dies_and_the_next_run_removes_the_directory(
    fake_qemu: Path, tmp_path: Path, made_dirs: list[Path]
) -> None:
    proc = _start_lab_run(fake_qemu)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    while not _gone(fake_qemu):  # the parent-death signal
        assert time.monotonic() < deadline, "QEMU outlived a SIGKILLed vnetrx"
        time.sleep(0.02)
    left = _lab_dirs(proc.pid)
    # nothing in the killed run could remove it: the next run does (on a busy machine another
    # vnetrx lab run may have been that next run already)
    assert len(left) <= 1
    fake_qemu.unlink()
    boot = qemu.Boot(tmp_path / "vmlinuz", mergeable=True, mtu=None, ready_timeout_s=0.5)
    with pytest.raises(qemu.GuestError):
        qemu.run(boot, b"initrd", [])
    assert not any(d.exists() for d in left)
    assert _lab_dirs(proc.pid) == []
    assert len(made_dirs) == 1 and not made_dirs[0].exists()


def test_a_live_runs_directory_is_left_alone(fake_qemu: Path, tmp_path: Path) -> None:
    proc = _start_lab_run(fake_qemu)
    try:
        mine = _lab_dirs(proc.pid)
        boot = qemu.Boot(tmp_path / "vmlinuz", mergeable=True, mtu=None, ready_timeout_s=0.5)
        with pytest.raises(qemu.GuestError):
            qemu.run(boot, b"initrd", [])  # its stale-directory sweep sees a held lock
        assert all(d.exists() for d in mine)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert _lab_dirs(proc.pid) == []


# --- CLI (no boot) ----------------------------------------------------------------------------


def test_cli_rejects_bad_requests_before_booting(runner: CliRunner, tmp_path: Path) -> None:
    image = tmp_path / "vmlinuz"
    image.write_bytes(b"x")
    args = ["lab", "virtio", "--image", str(image)]
    out = runner.invoke(cli, [*args, "--mode", "small", "--mtu", "9000"])
    assert out.exit_code == 2
    assert "small mode needs an MTU" in out.output
    out = runner.invoke(cli, [*args, "--len", "60,x", "--json"])
    assert out.exit_code == 2
    assert json.loads(out.stdout.splitlines()[-1])["exit_code"] == 2
    out = runner.invoke(cli, [*args, "--mode", "big"])
    assert out.exit_code == 1
    assert "not an x86 bzImage" in out.output
    out = runner.invoke(cli, ["lab", "virtio", "--image", str(tmp_path / "missing")])
    assert out.exit_code == 2


def test_serial_header_round_trip() -> None:
    header = serial_header("big", 9000, (13, 60, 16353))
    assert (
        header == "# serial console of: vnetrx lab virtio --mode big --mtu 9000 --len 13,60,16353\n"
    )
    assert lengths_from_header(header + "VNETRX release x\n") == (13, 60, 16353)
    assert lengths_from_header("VNETRX release x\n") is None


@pytest.mark.parametrize("release", sorted(SAVED))
def test_cli_from_log(runner: CliRunner, release: str) -> None:
    path = DATA / f"mergeable-{release}.log"
    out = runner.invoke(cli, ["lab", "virtio", "--from-log", str(path)])
    assert out.exit_code == 0, out.output
    assert "26/26 frames match" in out.output
    assert "(from a saved log)" in out.output
    out = runner.invoke(cli, ["lab", "virtio", "--from-log", str(path), "--json"])
    data = json.loads(out.stdout)
    assert (data["kernel"], data["mode"], data["match"]) == (SAVED[release], "mergeable", True)
    assert data["frames"][0] == {
        "frame_len": 10,
        "buffer_index": 0,
        "match": True,
        "predicted": {"outcome": "drop", "reason": "short_packet"},
        "observed": {"outcome": "drop"},
        "mismatched": [],
    }


def test_cli_from_log_mismatch_and_usage(runner: CliRunner, tmp_path: Path) -> None:
    _, text = _saved("small")
    doctored = tmp_path / "small.log"
    doctored.write_text(text.replace("tail=1076 end=1600", "tail=1076 end=1601"))
    out = runner.invoke(cli, ["lab", "virtio", "--from-log", str(doctored)])
    assert out.exit_code == 1
    assert "1600≠1601 ✗" in out.output
    assert "23/24 frames match" in out.output
    out = runner.invoke(cli, ["lab", "virtio"])
    assert out.exit_code == 2
    assert "exactly one of --image" in out.output
    headless = tmp_path / "headless.log"
    headless.write_text(text.split("\n", 1)[1])
    out = runner.invoke(cli, ["lab", "virtio", "--from-log", str(headless)])
    assert out.exit_code == 2
    assert "does not say which frames" in out.output
    out = runner.invoke(cli, ["lab", "virtio", "--from-log", str(headless), "--len", "13,60,1000"])
    assert out.exit_code == 0, out.output


def test_lab_core_imports_neither_click_nor_rich() -> None:
    code = (
        "import sys, vnetrx.lab.run, vnetrx.lab.vmlinux, vnetrx.lab.fetch\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'click', 'rich'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_offload_frames_are_distinct_and_cover_every_kind() -> None:
    """Frames are matched to the guest's events by length; the set has IPv4 and IPv6, TCP and
    UDP, NEEDS_CSUM, DATA_VALID, TSO/UFO/USO, and refused headers."""
    from vnetrx.lab.compare import predict
    from vnetrx.lab.offloads import offload_frames
    from vnetrx.paths.virtio_net_hdr import DATA_VALID, GSO_UDP, GSO_UDP_L4, NEEDS_CSUM

    frames = offload_frames()
    assert len({f.length for f in frames}) == len(frames)
    assert {f.l4 for f in frames} == {"tcp4", "tcp6", "udp4", "udp6"}
    assert any(f.hdr.flags & DATA_VALID and f.hdr.gso for f in frames)
    assert {GSO_UDP, GSO_UDP_L4} <= {f.hdr.gso_type for f in frames}
    assert all(len(f.frame()) == f.length for f in frames)
    assert any(f.hdr.flags & NEEDS_CSUM and not f.hdr.gso for f in frames)
    for kernel, refused in (("6.1", 7), ("6.12", 7)):
        traces = predict(lookup(kernel), "mergeable-gso", [f.length for f in frames], 1500, 12,
                         [f.hdr for f in frames])
        assert sum(t.reason == "bad_gso" for _, t in traces) == refused
