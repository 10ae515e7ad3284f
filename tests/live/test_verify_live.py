"""``vnetrx verify tap`` against the running kernel (root, /dev/net/tun, tracefs), and cleanup.

These run on the CI machine (root). They skip, with the reason, only where a requirement is absent.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.errors import VnetrxError
from vnetrx.kernel.running import running_profile
from vnetrx.live import tap as live_tap
from vnetrx.live import verify as live_verify
from vnetrx.live.parse import parse_lengths
from vnetrx.live.tap import WriteCase
from vnetrx.live.verify import DEFAULT_LENGTHS

MISSING = live_tap.missing_requirements()
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(bool(MISSING), reason="live tap check needs " + "; ".join(MISSING)),
]


def tracefs_mounts() -> list[str]:
    lines = Path("/proc/mounts").read_text().splitlines()
    return sorted(line for line in lines if line.split()[2:3] == ["tracefs"])


@contextlib.contextmanager
def tracefs() -> Iterator[Path]:
    """Some tracefs mount point (a temporary one of our own when none exists)."""
    mounts = tracefs_mounts()
    if mounts:
        yield Path(mounts[0].split()[1])
        return
    point = tempfile.mkdtemp(prefix="vnetrx-test-tracefs-")
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.mount(b"nodev", point.encode(), b"tracefs", 0, None) == 0
    try:
        yield Path(point)
    finally:
        libc.umount2(point.encode(), 2)
        os.rmdir(point)


def our_instances() -> list[str]:
    with tracefs() as root:
        return sorted(
            p.name for p in (root / "instances").iterdir() if p.name.startswith("vnetrx-")
        )


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def processes_running(cmdline: list[str]) -> list[int]:
    wanted = "\0".join(cmdline)
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "cmdline").read_text().rstrip("\0") == wanted:
                    found.append(int(entry.name))
    return found


def assert_nothing_left(mounts_before: list[str]) -> None:
    assert tracefs_mounts() == mounts_before, "a tracefs mount was left behind"
    assert our_instances() == [], "a vnetrx tracefs instance was left behind"
    assert [p for p in children_of(os.getpid()) if Path(f"/proc/{p}/stat").exists()] == []
    assert stale_locks() == [], "a dead run's lock file was left behind"


def stale_locks() -> list[str]:
    """Lock files nobody holds (vnetrx.owner): a run that did not release its own."""
    from vnetrx import owner

    folder = owner.lock_dir()
    names = sorted(p.name for p in folder.glob("*.lock")) if folder.is_dir() else []
    return [n for n in names if owner.is_stale(n.removesuffix(".lock"))]


# --- the check itself ------------------------------------------------------------------------


def test_verify_default_lengths_all_variants() -> None:
    mounts = tracefs_mounts()
    assert len(parse_lengths(DEFAULT_LENGTHS)) >= 40
    result = CliRunner().invoke(cli, ["verify", "tap", "--variants", "--json"])
    print(result.output[-2000:])
    doc = json.loads(result.output)
    bad = [f for f in doc["frames"] if not f["match"]]
    assert result.exit_code == 0 and bad == [], json.dumps(bad[:5], indent=1)
    assert doc["total"] >= 5 * 40 and doc["kernel"]["name"]
    kinds = {json.dumps(f["options"], sort_keys=True) for f in doc["frames"]}
    assert len(kinds) == 5  # default, blocking, sndbuf 65536, vnet_hdr_sz 12, no vnet_hdr
    lengths = {f["frame_len"] for f in doc["frames"]}
    assert min(lengths) <= 14 and max(lengths) == 65535
    assert_nothing_left(mounts)


def test_verify_hdr_len_hint_and_csum() -> None:
    for hdr in ("0000360000000000", "01000000000022000600"):
        result = CliRunner().invoke(
            cli, ["verify", "tap", "--len", "60,1000,3456,3457,4000,9000,20000", "--hdr", hdr]
        )
        assert result.exit_code == 0, result.output


def test_issue_numbers_observed() -> None:
    if not os.uname().release.startswith("6.18.44"):
        pytest.skip(f"the issue's numbers were measured on 6.18.44, this is {os.uname().release}")
    cases = [WriteCase(n) for n in (60, 1000, 3456, 3457, 9000, 13)] + [
        WriteCase(1000, blocking=True),
        WriteCase(1000, sndbuf=65536),
    ]
    seen = [
        (r.errno, *((e.len, e.data_len, e.truesize, e.nr_frags) for e in r.events))
        for r in live_tap.run_writes(cases)
    ]
    assert seen == [
        (None, (46, 0, 704, 0)),
        (None, (986, 0, 1664, 0)),
        (None, (3442, 0, 4096, 0)),
        (None, (3443, 0, 4352, 0)),
        (None, (8986, 5288, 12544, 1)),
        ("EINVAL",),
        (None, (986, 0, 2304, 0)),
        (None, (986, 0, 2304, 0)),
    ]


def test_text_table() -> None:
    result = CliRunner().invoke(cli, ["verify", "tap", "--len", "60,13,9000", "--blocking"])
    assert result.exit_code == 0, result.output
    assert "3/3 frames match" in result.output and "EINVAL ✓" in result.output


# --- cleanup -----------------------------------------------------------------------------------


def test_cleanup_after_failure_mid_run() -> None:
    mounts = tracefs_mounts()
    profile = running_profile()

    def fail(done: int, total: int) -> None:
        if done == 3:
            raise RuntimeError("forced failure")

    with pytest.raises(RuntimeError, match="forced failure"):
        live_verify.run(profile, [WriteCase(n) for n in (60, 100, 200, 300, 400)], fail)
    assert_nothing_left(mounts)


def test_cleanup_after_setup_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    mounts = tracefs_mounts()

    def broken(self: object, ifname: str) -> None:
        raise OSError(1, "forced TUNSETIFF failure")

    monkeypatch.setattr(live_tap._Device, "__init__", broken)  # the forked child inherits it
    with pytest.raises(VnetrxError, match="forced TUNSETIFF failure"):
        live_tap.run_writes([WriteCase(60)])
    assert_nothing_left(mounts)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_cleanup_after_signal(signum: int) -> None:
    mounts = tracefs_mounts()
    cmd = [sys.executable, "-m", "vnetrx", "verify", "tap", "--len", "14-65535:2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if any(n.startswith(f"vnetrx-{proc.pid}x") for n in our_instances()) and children_of(
                    proc.pid):
                break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        else:
            pytest.fail("verify tap did not start writing within 90 s")
        time.sleep(0.3)  # let it write a few frames
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert processes_running(cmd) == []
    assert_nothing_left(mounts)


def test_verify_offload_matrix() -> None:
    """TCP/UDP over IPv4/IPv6 with NEEDS_CSUM / DATA_VALID / GSO, hdr_len 0/exact/larger,
    blocking or not, and every refused class: all fields and errnos as predicted."""
    mounts = tracefs_mounts()
    result = CliRunner().invoke(cli, ["verify", "tap", "--offloads", "--json"])
    doc = json.loads(result.output)
    bad = [f for f in doc["frames"] if not f["match"]]
    assert result.exit_code == 0 and bad == [], json.dumps(bad[:5], indent=1)
    frames = doc["frames"]
    assert len(frames) >= 400
    assert {f["options"]["l4"] for f in frames} == {"tcp4", "tcp6", "udp4", "udp6"}
    assert sum(f["observed"]["errno"] == "EINVAL" for f in frames) >= 12
    assert any(f["observed"]["gso_size"] for f in frames)
    assert {f["observed"]["ip_summed"] for f in frames} >= {0, 3}
    assert_nothing_left(mounts)
