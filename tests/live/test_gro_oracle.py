"""The GRO oracle against the running kernel: a handful of the cases in
tests/data/gro/linux-<release>.json written again, every input's verdict and every skb that
leaves GRO compared exactly; and what a run leaves behind (nothing), also after SIGTERM.

Root, /dev/net/tun and BPF (raw tracepoints) are needed; the data file must be this kernel's.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from vnetrx.live import bpf, gro_cases
from vnetrx.live import gro as live_gro

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "gro" / f"linux-{os.uname().release.split('-')[0]}.json"
MISSING = live_gro.missing_requirements()
PROGRAM = b"vnetrx_gro"
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(bool(MISSING), reason="live GRO check needs " + "; ".join(MISSING)),
    pytest.mark.skipif(not DATA.exists(), reason=f"no GRO data for this kernel ({DATA.name})"),
]

# Around MAX_SKB_FRAGS and 64 KiB, both skb heads (case B head_frag / case C frag_list), the
# flush triggers, eviction by a 9th flow, DODGY GSO, NAPI_FRAGS, 6.18's fixed IP id without
# DF, IPv6, and both ways of making a burst one GRO run (flush timeout; pinned threaded NAPI).
CASES = ("seg8", "seg18", "seg19", "seg46", "seg8-blocking", "payload3390", "payload3391",
         "psh3", "bad-tcp-csum3", "flows9", "ipid-fixed-nodf", "vnet-gso2",
         "vnet-needs_csum", "ipv6-seg8", "napi-frags-split14", "timeout0",
         "seg46-threaded-pinned", "udp4-between", "ip-options4", "gro-max-size32768",
         "ipv6-big-tcp")


def saved() -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in json.loads(DATA.read_text())["cases"]}


def programs_gone(timeout: float = 5.0) -> bool:
    """No vnetrx_gro program is loaded (freeing is RCU-deferred: wait a little)."""
    deadline = time.monotonic() + timeout
    while bpf.loaded_vnetrx_programs(PROGRAM):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def children() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                    found.append(int(entry.name))
    return found


def test_saved_cases_still_hold() -> None:
    cases = saved()
    todo = [{"name": name, "burst": cases[name]["burst"], **cases[name]["tap"]}
            for name in CASES]
    results = live_gro.run_cases(todo, repeats=1)
    wrong = [name for name, result in zip(CASES, results, strict=True)
             if result["observed"] != cases[name]["observed"]]
    detail = {name: results[CASES.index(name)]["observed"] for name in wrong[:1]}
    assert wrong == [], json.dumps(detail)[:4000]
    assert programs_gone(), "a vnetrx_gro BPF program outlived the run"
    assert children() == []


def _jiffy_changes(records: list[dict[str, Any]]) -> list[int]:
    """The inputs (by entry order) whose jiffies differ from the input before them."""
    jiffies = [r["jiffies"] for r in records if r["kind"] in ("entry", "frags_entry")]
    return [i for i in range(1, len(jiffies)) if jiffies[i] != jiffies[i - 1]]


def test_a_burst_split_by_a_jiffy_is_detected() -> None:
    """Writes 6 ms apart cross a jiffy (HZ=250): the kernel splits the aggregate (flush_old),
    and the harness says so instead of taking the split for the frames' doing."""
    case = {"name": "paused", "burst": {"segments": 8}, "pause": {"after": 3, "ms": 6}}
    with live_gro.GroTap() as tap:
        # a busy machine can delay a write past a jiffy of its own: the burst is then split
        # twice, which is not what this test is about; take a burst with the pause's tick alone
        for _ in range(10):
            reply = tap.burst(case)
            if _jiffy_changes(reply["records"]) == [4] and \
                    live_gro.incomplete_reason(reply) is None:
                break
        else:
            pytest.fail("no burst in 10 whose only jiffy tick was at the pause")
    reason = live_gro.split_reason(reply["records"], gro_cases.DEFAULT_TIMEOUT_NS)
    assert reason is not None and "jiff" in reason
    from vnetrx.live import gro_frames

    observed = live_gro.analyse(reply["records"], gro_frames.build(case["burst"]),
                                reply["writes"])
    assert len(observed["skbs"]) == 2  # one run would have given one skb of 8 segments
    assert programs_gone()


def test_sigterm_removes_everything(tmp_path: Path) -> None:
    out = tmp_path / "gro.json"
    cmd = [sys.executable, str(ROOT / "tools" / "gro_oracle.py"), str(out), "--only", "seg50",
           "--repeats", "500"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not bpf.loaded_vnetrx_programs(PROGRAM):
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the oracle never loaded its programs"
            time.sleep(0.05)
        time.sleep(0.5)  # a few bursts
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert not out.exists()
    assert programs_gone(), "a vnetrx_gro BPF program outlived SIGTERM"
    assert children() == []


def _mismatches(proc: subprocess.CompletedProcess[str]) -> str:
    """What a failed ``verify gro --json`` said: each case that differed, its first difference
    and both sides (the whole document is long; its tail names no case)."""
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        return proc.stderr + proc.stdout[-2000:]
    return proc.stderr + "\n".join(
        f"{c['name']}: {c['difference']}\n  kernel {json.dumps(c['kernel'])}\n"
        f"  model {json.dumps(c['model'])}" for c in doc["cases"] if not c["match"])


def test_verify_gro_matches_and_leaves_nothing() -> None:
    proc = subprocess.run([sys.executable, "-m", "vnetrx", "verify", "gro", "--cases",
                           "seg8,seg46,psh3,flows9,vnet-gso2,napi-frags-split14", "--json"],
                          capture_output=True, text=True, cwd=ROOT, check=False, timeout=300)
    assert proc.returncode == 0, _mismatches(proc)
    doc = json.loads(proc.stdout)
    assert doc["summary"] == {"cases": 6, "matched": 6}
    assert programs_gone(), "a vnetrx_gro BPF program outlived verify gro"
    assert children() == []
