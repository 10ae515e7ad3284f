"""``vnetrx observe`` live, against a tap device the test creates in a network namespace of its
own (root, /dev/net/tun, tracefs; otherwise skipped with the reason).

A helper process unshares a new network namespace, opens a tap device ``vnx<pid>`` there (IPv6
off, no address), starts ``vnetrx observe --dev vnx<pid>`` as its child (same namespace), waits
for observe's tracefs instance, and writes frames (EtherType 0x88B5) straight into the tap fd.
No other interface is looked at, traced or sent on. The namespace and the tap die with the
helper."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests import ROOT
from tests.live.others import instance_names, of_a_live_run
from vnetrx.live import tap as live_tap
from vnetrx.schemas import schema

MISSING = live_tap.missing_requirements()
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(bool(MISSING), reason="live observe needs " + "; ".join(MISSING)),
]
if MISSING:
    print("test_observe_live skipped: needs " + "; ".join(MISSING))

HELPER = r"""
import ctypes, json, os, signal, subprocess, sys, time
from pathlib import Path
sys.path.append(os.getcwd())  # tests.live (with PYTHONSAFEPATH, see conftest, cwd is not first)
from vnetrx.live import tap as live_tap
from tests.live.others import of_a_live_run

ifname, mode, writes, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4:]
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # die with the test
if libc.unshare(0x40000000) != 0:  # CLONE_NEWNET
    raise SystemExit("unshare failed: " + os.strerror(ctypes.get_errno()))
Path("/proc/sys/net/ipv6/conf/default/disable_ipv6").write_text("1\n")
device = live_tap._Device(ifname)  # IFF_TAP|IFF_NO_PI|IFF_VNET_HDR, up, no address
cmd = [sys.executable, "-m", "vnetrx", "observe", "--dev", ifname, *extra]
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def instance():
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if parts[2:3] == ["tracefs"]:
            for path in (Path(parts[1]) / "instances").glob(f"vnetrx-{proc.pid}x*"):
                return path
    return None


ready = None
deadline = time.monotonic() + 60
while time.monotonic() < deadline and proc.poll() is None:
    found = instance()
    enable = found and found / "events/net/netif_receive_skb_entry/enable"
    if enable and enable.exists() and enable.read_text().strip() == "1":
        ready = str(found)
        break
    time.sleep(0.02)
results = []
if ready and mode in ("frames", "frames-interrupt"):
    for req in writes:
        full = {"blocking": False, "sndbuf": 2**31 - 1, "vnet_hdr": True, "vnet_hdr_sz": None,
                "hdr": None, **req}
        results.append(device.write(full))
    if mode == "frames-interrupt":
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
elif ready and mode == "interrupt":
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
out, err = proc.communicate(timeout=90)
print(json.dumps({"rc": proc.returncode, "stdout": out, "stderr": err, "ready": ready,
                  "writes": results, "left": str(instance()) if instance() else None}))
"""

WRITES: list[dict[str, Any]] = [
    {"frame_len": n} for n in (14, 60, 200, 1000, 1514, 3000, 3457, 9000, 20000, 65535)
] + [
    {"frame_len": 1000, "blocking": True},
    {"frame_len": 2000, "sndbuf": 65536},
    {"frame_len": 500, "vnet_hdr": False},
]


def tracefs_mounts() -> list[str]:
    """tracefs mounts, less those of another vnetrx run still going (tests.live.others)."""
    lines = Path("/proc/mounts").read_text().splitlines()
    return sorted(line for line in lines if line.split()[2:3] == ["tracefs"]
                  and not of_a_live_run(os.path.basename(line.split()[1])))


def stale_instances() -> list[str]:
    """vnetrx-* instances of no live run, under any tracefs mount (or none)."""
    return [name for name in instance_names()
            if name.startswith("vnetrx-") and not of_a_live_run(name)]


def run_helper(mode: str, writes: list[dict[str, Any]], *extra: str) -> dict[str, Any]:
    ifname = f"vnx{os.getpid() % 10_000_000}"
    proc = subprocess.run(
        [sys.executable, "-c", HELPER, ifname, mode, json.dumps(writes), *extra],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    report["ifname"] = ifname
    return report


def assert_nothing_left(mounts_before: list[str], ifname: str) -> None:
    assert tracefs_mounts() == mounts_before, "a tracefs mount was left behind"
    assert stale_instances() == [], "a vnetrx tracefs instance was left behind"
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                cmdline = (entry / "cmdline").read_text()
                assert f"--dev\0{ifname}" not in cmdline, f"observe still running: {entry}"
    assert not Path(f"/sys/class/net/{ifname}").exists()


def test_observe_reports_tap_frames() -> None:
    mounts = tracefs_mounts()
    count = len(WRITES)
    out = run_helper("frames", WRITES, "--json", "--count", str(count), "--timeout", "60")
    assert out["ready"], out["stderr"]
    assert [w.get("ret") for w in out["writes"]] == [
        w["frame_len"] + (0 if w.get("vnet_hdr") is False else 10) for w in WRITES
    ]
    assert out["rc"] == 0, out["stderr"] + out["stdout"][-3000:]
    doc = json.loads(out["stdout"])
    Draft202012Validator(schema("observe")).validate(doc)
    assert (doc["device"], doc["driver"], doc["mode"]) == (out["ifname"], "tun", "tap")
    assert doc["source"] == "device" and doc["mtu"] == 1500
    frames = doc["frames"]
    assert [f["frame_len"] for f in frames] == [w["frame_len"] for w in WRITES]
    assert all(f["match"] is True for f in frames), json.dumps(frames, indent=1)[:3000]
    by_len = {(f["frame_len"], f["agreement"]): f for f in frames}
    f = by_len[(60, "exact")]
    assert f["path"] == "tap/build_skb" and f["observed"]["len"] == 46
    assert f["observed"]["data_len"] == 0 and f["observed"]["truesize"] > 46
    assert by_len[(14, "exact")]["observed"]["len"] == 0
    assert by_len[(65535, "exact")]["observed"]["len"] == 65521
    big = by_len[(20000, "exact")]["observed"]
    assert big["data_len"] > 0 and big["nr_frags"] >= 1
    # the blocking write and the small sndbuf cannot use tun_build_skb: vnetrx says so
    blocking = by_len[(1000, "consistent")]
    assert blocking["path"] == "tap/alloc_skb" and "blocking write" in blocking["note"]
    assert blocking["observed"]["truesize"] != by_len[(1000, "exact")]["observed"]["truesize"]
    assert by_len[(2000, "consistent")]["path"] == "tap/alloc_skb"
    assert_nothing_left(mounts, out["ifname"])


def test_observe_text_output_live() -> None:
    mounts = tracefs_mounts()
    writes: list[dict[str, Any]] = [{"frame_len": n} for n in (100, 1000, 9000)]
    out = run_helper("frames", writes, "--count", "3", "--timeout", "60")
    assert out["rc"] == 0, out["stderr"]
    assert f"vnetrx observe {out['ifname']}: tun, tap mode, MTU 1500" in out["stdout"]
    assert "3/3 skbs agree" in out["stdout"]
    assert_nothing_left(mounts, out["ifname"])


def test_observe_times_out_cleanly() -> None:
    mounts = tracefs_mounts()
    out = run_helper("quiet", [], "--count", "5", "--timeout", "1")
    assert out["rc"] == 1
    assert out["stderr"].strip() == f"vnetrx: error: no skb arrived on {out['ifname']} within 1 s"
    assert out["left"] is None
    assert_nothing_left(mounts, out["ifname"])


def test_observe_ctrl_c_cleans_up() -> None:
    mounts = tracefs_mounts()
    out = run_helper("interrupt", [], "--count", "5", "--timeout", "120")
    assert out["ready"], out["stderr"]
    assert out["rc"] == 130 and "interrupted" in out["stderr"]
    assert out["left"] is None
    assert_nothing_left(mounts, out["ifname"])


@contextlib.contextmanager
def own_tracefs_mount() -> Iterator[None]:
    """A tracefs mount of the test's own while it runs, so that a SIGKILLed observe (which
    cannot unmount) only leaves its instance behind."""
    import ctypes
    import tempfile

    point = tempfile.mkdtemp(prefix="vnetrx-test-tracefs-")
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.mount(b"nodev", point.encode(), b"tracefs", 0, None) == 0
    try:
        yield
    finally:
        libc.umount2(point.encode(), 2)
        os.rmdir(point)


def test_observe_sigkill_leftover_is_removed_next_time() -> None:
    """A SIGKILLed observe leaves its instance (a kernel object); the next run removes it."""
    mounts_outside = tracefs_mounts()
    with own_tracefs_mount():
        mounts = tracefs_mounts()
        ifname = f"vnx{os.getpid() % 10_000_000}"
        code = HELPER.replace("proc.send_signal(signal.SIGINT)", "proc.send_signal(signal.SIGKILL)")
        proc = subprocess.run(
            [sys.executable, "-c", code, ifname, "interrupt", "[]", "--timeout", "120"],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
            cwd=ROOT,
        )
        report = json.loads(proc.stdout)
        assert report["ready"] and report["rc"] == -signal.SIGKILL
        assert report["left"] is not None and stale_instances() != []
        out = run_helper("quiet", [], "--count", "1", "--timeout", "1")
        assert out["rc"] == 1 and out["left"] is None
        assert_nothing_left(mounts, ifname)
    assert tracefs_mounts() == mounts_outside


def test_observe_ctrl_c_keeps_what_was_seen() -> None:
    """Interrupted after traffic arrived, observe prints (here: as JSON) the skbs it saw, each
    judged, then exits 130; the tracing is gone."""
    mounts = tracefs_mounts()
    writes = [{"frame_len": n} for n in (60, 1000, 3000)]
    out = run_helper("frames-interrupt", writes, "--count", "100000", "--timeout", "120",
                     "--json")
    assert out["ready"], out["stderr"]
    assert out["rc"] == 130 and out["stderr"].strip() == "vnetrx: interrupted after 3 skbs"
    doc = json.loads(out["stdout"])
    Draft202012Validator(schema("observe")).validate(doc)
    assert doc["interrupted"] is True and doc["match"] is True
    assert [f["frame_len"] for f in doc["frames"]] == [60, 1000, 3000]
    assert out["left"] is None
    assert_nothing_left(mounts, out["ifname"])
