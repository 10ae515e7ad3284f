"""``vnetrx verify tap`` against the running kernel (root, /dev/net/tun, tracefs), and cleanup.

These run on the CI machine (root). They skip, with the reason, only where a requirement is absent.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.live.others import instance_names, of_a_live_run
from vnetrx.cli import cli
from vnetrx.errors import VnetrxError
from vnetrx.live import tap as live_tap
from vnetrx.live import verify as live_verify
from vnetrx.live.parse import parse_lengths
from vnetrx.live.running import running_profile
from vnetrx.live.verify import DEFAULT_LENGTHS
from vnetrx.observed.tap_write import WriteCase

MISSING = live_tap.missing_requirements()
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(bool(MISSING), reason="live tap check needs " + "; ".join(MISSING)),
]


def tracefs_mounts() -> list[str]:
    """tracefs mounts, less those of another vnetrx run still going (tests.live.others)."""
    lines = Path("/proc/mounts").read_text().splitlines()
    return sorted(line for line in lines if line.split()[2:3] == ["tracefs"]
                  and not of_a_live_run(os.path.basename(line.split()[1])))


def our_instances(live_too: bool = False) -> list[str]:
    """vnetrx instances left behind (``live_too``: also those of runs still going)."""
    return [name for name in instance_names()
            if name.startswith("vnetrx-") and (live_too or not of_a_live_run(name))]


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


def interrupt_when(cmd: list[str], ready: Callable[[int], bool], signum: int,
                   what: str) -> tuple[int, str]:
    """Start ``cmd``, wait (at most 90 s) until ``ready(pid)``, let it run 0.3 s more, send
    ``signum``; its exit status and stderr (killed, whatever happens, before returning)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while not ready(proc.pid):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, f"{what} within 90 s"
            time.sleep(0.05)
        time.sleep(0.3)  # let it write a few frames
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_cleanup_after_signal(signum: int) -> None:
    mounts = tracefs_mounts()
    cmd = [sys.executable, "-m", "vnetrx", "verify", "tap", "--len", "14-65535:2"]

    def writing(pid: int) -> bool:
        return any(n.startswith(f"vnetrx-{pid}x") for n in our_instances(True)) and bool(
            children_of(pid))

    code, err = interrupt_when(cmd, writing, signum, "verify tap did not start writing")
    assert code == 130, err
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


# --- XDP: a program of vnetrx's own on the tap ---------------------------------------------


def vnetrx_programs_gone(timeout: float = 5.0) -> bool:
    """No BPF program named vnetrx_xdp is loaded (freeing one is RCU-deferred: wait a bit)."""
    from vnetrx.live import bpf

    deadline = time.monotonic() + timeout
    while bpf.loaded_vnetrx_programs():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_verify_xdp_every_action_and_variant() -> None:
    """Native XDP in tun_build_skb (up to 3456 bytes, non-blocking) and generic XDP (blocking,
    sndbuf, longer frames) for every verdict: write(), the skb (PASS), what read() returns
    (TX, REDIRECT back to the tap up to 1518 bytes) and the counters agree; no program stays."""
    mounts = tracefs_mounts()
    result = CliRunner().invoke(cli, ["verify", "tap", "--xdp", "all", "--variants", "--json"])
    doc = json.loads(result.output)
    bad = [f for f in doc["frames"] if not f["match"]]
    assert result.exit_code == 0 and bad == [], json.dumps(bad[:3], indent=1)
    frames = doc["frames"]
    assert len(frames) == 5 * 14 * 5
    by = {(f["options"]["xdp"], f["frame_len"], f["options"]["blocking"]): f for f in frames
          if f["options"]["sndbuf"] is None and f["options"]["vnet_hdr"]
          and f["options"]["vnet_hdr_sz"] is None}
    # kernel facts seen on the tap, not just agreement:
    assert by[("pass", 1000, False)]["observed"]["truesize"] == 1920  # SKB_TRUESIZE(1344)
    assert by[("tx", 1000, False)]["observed"]["reads"] == "1010"  # vnet header + frame
    assert by[("tx", 1000, False)]["observed"]["tx_bytes"] == 1010  # xdp_frame: header counted
    assert by[("tx", 1000, True)]["observed"]["tx_bytes"] == 1000  # generic: skb->len
    assert by[("redirect", 1518, False)]["observed"]["reads"] == "1528"
    assert by[("redirect", 1519, False)]["observed"]["rx_dropped"] == 1  # -EMSGSIZE
    assert by[("drop", 3456, False)]["observed"]["rx_dropped"] == 1  # native: tun_xdp_act
    assert by[("drop", 3457, False)]["observed"]["rx_dropped"] == 0  # generic: kfree_skb only
    assert by[("pass", 9000, False)]["observed"]["data_len"] == 0  # generic XDP linearised
    assert vnetrx_programs_gone(), "a vnetrx XDP program is still loaded"
    assert_nothing_left(mounts)


def test_verify_xdp_gso_frames_skip_native_xdp() -> None:
    result = CliRunner().invoke(cli, ["verify", "tap", "--xdp", "pass,tx", "--l4", "tcp4",
                                      "--gso", "tcpv4:1448", "--len", "1000,3000,3457",
                                      "--json"])
    doc = json.loads(result.output)
    assert result.exit_code == 0, json.dumps([f for f in doc["frames"] if not f["match"]][:2])
    tx = {f["frame_len"]: f["observed"]["read_hdr"] for f in doc["frames"]
          if f["options"]["xdp"] == "tx"}
    # generic XDP_TX of a GSO skb: read() carries virtio_net_hdr_from_skb's header: GSO_TCPV4,
    # hdr_len = the whole linear frame (3000 = 0x0bb8), gso_size 1448; a 1000-byte frame's
    # payload fits one segment, so its skb is not GSO
    assert tx[3000] == "0101b80ba80522001000"
    assert tx[1000][2:4] == "00"
    assert vnetrx_programs_gone()


def test_xdp_program_gone_after_sigterm() -> None:
    from vnetrx.live import bpf

    mounts = tracefs_mounts()
    cmd = [sys.executable, "-m", "vnetrx", "verify", "tap", "--xdp", "tx", "--len",
           "14-65535:2"]
    code, err = interrupt_when(cmd, lambda _pid: bool(bpf.loaded_vnetrx_programs()),
                               signal.SIGTERM, "no program was attached")
    assert code == 130, err
    assert vnetrx_programs_gone(), "the XDP program outlived the run"
    assert_nothing_left(mounts)


def test_verify_xdp_adjust_head_native_and_generic() -> None:
    """bpf_xdp_adjust_head(ctx, -250): native XDP (headroom 320) grows the frame, generic XDP
    (headroom 256 at the MAC header) refuses it (256 - 250 < sizeof(struct xdp_frame))."""
    result = CliRunner().invoke(cli, ["verify", "tap", "--xdp", "pass,tx", "--xdp-adjust-head",
                                      "-250", "--len", "1000,3456,3457,9000", "--variants",
                                      "--json"])
    doc = json.loads(result.output)
    bad = [f for f in doc["frames"] if not f["match"]]
    assert result.exit_code == 0 and bad == [], json.dumps(bad[:2], indent=1)
    lens = {(f["options"]["xdp"], f["frame_len"], f["options"]["blocking"]): f["observed"]
            for f in doc["frames"] if f["options"]["sndbuf"] is None and f["options"]["vnet_hdr"]
            and f["options"]["vnet_hdr_sz"] is None}
    assert lens[("pass", 1000, False)]["len"] == 1236 and lens[("pass", 1000, True)]["len"] == 986
    assert lens[("tx", 1000, False)]["reads"] == "1260"  # 10 + 1250
    assert vnetrx_programs_gone()


def test_verify_xdp_adjust_tail_to_the_slack() -> None:
    result = CliRunner().invoke(cli, ["verify", "tap", "--xdp", "pass", "--xdp-adjust-tail",
                                      "24", "--len", "1000,1024", "--json"])
    doc = json.loads(result.output)
    assert result.exit_code == 0, json.dumps([f for f in doc["frames"] if not f["match"]][:2])
    assert [f["observed"]["len"] for f in doc["frames"]] == [1010, 1010]  # +24 / refused
