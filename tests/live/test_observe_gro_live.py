"""``vnetrx observe --dev eth0 --gro`` on this machine's own NIC for a few seconds, read-only:
the test generates no traffic and configures nothing. Whatever eth0 receives meanwhile (maybe
nothing) is recorded and checked; with no whole poll to compare the run must still pass, with
"nothing to compare". Root, BTF and a virtio_net eth0 are needed; otherwise skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.live.test_gro_oracle import PROGRAM
from vnetrx.errors import VnetrxError
from vnetrx.live import bpf
from vnetrx.live.device import read_device
from vnetrx.schemas import schema

ROOT = Path(__file__).resolve().parents[2]


def _missing() -> list[str]:
    missing = []
    if os.geteuid() != 0:
        missing.append("root")
    if not Path("/sys/kernel/btf/vmlinux").exists():
        missing.append("/sys/kernel/btf/vmlinux")
    try:
        if read_device("eth0").driver != "virtio_net":
            missing.append("a virtio_net eth0")
    except VnetrxError:  # no eth0 at all
        missing.append("an eth0")
    return missing


MISSING = _missing()
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(bool(MISSING), reason="observe --gro on eth0 needs " + "; ".join(MISSING)),
]


def test_observe_gro_on_eth0_for_three_seconds() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "vnetrx", "observe", "--dev", "eth0", "--gro", "--count",
         "100000", "--timeout", "3", "--json"],
        capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr)
    doc = json.loads(proc.stdout)
    Draft202012Validator(schema("observe-gro")).validate(doc)
    counts = doc["counts"]
    assert doc["napi"]["gro_flush_timeout"] is not None and doc["napi"]["hz"] is not None
    assert counts["lost_records"] == 0
    assert counts["mismatches"] == 0
    assert counts["compared"] == counts["matches"] == len(doc["skbs"])
    if counts["compared"] == 0:
        text = subprocess.run(
            [sys.executable, "-m", "vnetrx", "observe", "--dev", "eth0", "--gro", "--count",
             "100000", "--timeout", "1"],
            capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
        assert text.returncode == 0
        if "compared: 0" in text.stdout:
            assert "nothing to compare" in text.stdout
    # the programs went with the process
    deadline = time.monotonic() + 5
    while bpf.loaded_vnetrx_programs(PROGRAM) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not bpf.loaded_vnetrx_programs(PROGRAM)


def test_sigint_prints_what_was_recorded_and_leaves_nothing() -> None:
    import signal

    proc = subprocess.Popen(
        [sys.executable, "-m", "vnetrx", "observe", "--dev", "eth0", "--gro", "--count",
         "100000", "--timeout", "60", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 30
    while not bpf.loaded_vnetrx_programs(PROGRAM) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    doc = json.loads(out)
    Draft202012Validator(schema("observe-gro")).validate(doc)
    assert doc["interrupted"] is True
    assert err.strip().splitlines()[-1].startswith("vnetrx: interrupted after ")
    deadline = time.monotonic() + 5
    while bpf.loaded_vnetrx_programs(PROGRAM) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not bpf.loaded_vnetrx_programs(PROGRAM)
