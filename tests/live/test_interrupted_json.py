"""Interrupted runs print a whole document, even before the first result (issue 29): verify tap
stopped while it predicts (live: root, /dev/net/tun, tracefs), observe stopped before the first
skb and lab virtio stopped before the guest finished (both with the tracing/boot replaced by a
stand-in that is interrupted), and a signal while the document is printed waits for it. Also:
verify tap checks privileges before it predicts, and says how far a long run has got."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from tests import ROOT
from tests.live.test_verify_live import MISSING, assert_nothing_left, tracefs_mounts
from vnetrx.cli import cli
from vnetrx.errors import Interrupted
from vnetrx.schemas import schema
from vnetrx.stop import Deferred

live = pytest.mark.skipif(bool(MISSING), reason="live tap check needs " + "; ".join(MISSING))
VERIFY = [sys.executable, "-m", "vnetrx", "verify", "tap"]
# `vnetrx verify tap --len 1-65535 --json`, its progress line (no terminal) at every step
READY_THEN_VERIFY = """
import sys
import vnetrx.cli.verify
vnetrx.cli.verify.PLAIN_EVERY = 0.0
from vnetrx.main import main
sys.argv = ["vnetrx", "verify", "tap", "--len", "1-65535", "--json"]
main()
"""


def valid(name: str, text: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(text)
    Draft202012Validator(schema(name)).validate(doc)
    return doc


@pytest.mark.live
@live
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_verify_interrupted_while_predicting_prints_an_empty_document(signum: int) -> None:
    mounts = tracefs_mounts()
    proc = subprocess.Popen([sys.executable, "-c", READY_THEN_VERIFY], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    # predicting has begun (on a loaded machine a fixed wait once signalled the imports)
    first = proc.stderr.readline()
    assert first.startswith("vnetrx: verify tap: predicting frames: "), first
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    doc = valid("verify", out)
    assert proc.returncode == 130, err
    assert (doc["interrupted"], doc["planned"], doc["total"], doc["frames"]) == (
        True, 65535, 0, [])
    # after the progress lines of the prediction
    assert err.splitlines()[-1] == "vnetrx: interrupted after 0 of 65535 writes"
    assert all(line.startswith("vnetrx: verify tap: predicting frames: ")
               for line in err.splitlines()[:-1])
    assert_nothing_left(mounts)


DROP_PRIVILEGES = """
import os, sys, time
import vnetrx.cli, vnetrx.cli.verify, vnetrx.live.tap, vnetrx.live.verify, vnetrx.live.running
import vnetrx.render.json_out, vnetrx.codec, construct  # noqa: F401  (nobody cannot read the stdlib)
import vnetrx.live.verify as v
predicted = []
plan = v.plan
def counting(k, cases, *args, **kw):
    predicted.append(len(cases))
    return plan(k, cases, *args, **kw)
v.plan = counting
os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
start = time.monotonic()
try:
    vnetrx.cli.cli.main(["verify", "tap", "--len", "1-65535", "--json"])
finally:
    print(f"took {time.monotonic() - start:.2f} predicted {sum(predicted)}", file=sys.stderr)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="drops root to uid 65534")
def test_verify_as_a_normal_user_says_root_before_predicting() -> None:
    """Issue 29: as a normal user `--len 1-65535` predicted for 19 s before saying it needs
    root. The interpreter's modules are loaded as root, then the process becomes nobody."""
    proc = subprocess.run([sys.executable, "-c", DROP_PRIVILEGES], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, check=False)
    doc = valid("error", proc.stdout)
    assert proc.returncode == 1 and doc["exit_code"] == 1
    assert doc["error"].startswith("verify tap needs root")
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("vnetrx: error: verify tap needs root") and len(lines) == 2
    # one case predicted (the shape), not 65535: the check came first (no timing asserted)
    assert lines[1].split()[3] == "1"


def test_interrupted_while_the_modules_load_still_prints_json() -> None:
    """Ctrl-C before the command began (here: before click runs): with --json the error
    object (exit_code 130) on stdout, the one line on stderr."""
    # Ctrl-C's KeyboardInterrupt raised where importing the CLI would be
    code = ("import sys; from vnetrx.main import main; import vnetrx.cli as c\n"
            "def ctrl_c(): raise KeyboardInterrupt\n"
            "c.main = ctrl_c; sys.argv = ['vnetrx', 'replay', '--len', '60', '--json']; main()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, check=False)
    assert proc.returncode == 130 and proc.stderr == "\nvnetrx: interrupted\n"
    doc = valid("error", proc.stdout)
    assert (doc["exit_code"], doc["error"]) == (130, "interrupted before the command began")


def test_verify_progress_without_a_terminal(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Not a terminal: a plain line on stderr each PLAIN_EVERY seconds, none before."""
    from vnetrx.cli import verify as cli_verify

    progress = cli_verify._Progress(65535)
    progress.predicted(256, 65535)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(cli_verify, "PLAIN_EVERY", 0.0)
    progress.predicted(512, 65535)
    progress.written(1000, 65535)
    assert capsys.readouterr().err == ("vnetrx: verify tap: predicting frames: 512 of 65535\n"
                                       "vnetrx: verify tap: writing frames: 1000 of 65535\n")


def test_observe_interrupted_before_the_first_skb_prints_the_empty_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import vnetrx.live.device
    import vnetrx.live.tracefs
    from vnetrx.observed.negotiated import DeviceInfo

    def interrupted(*_args: object, **_kw: object) -> list[str]:
        raise Interrupted([])

    monkeypatch.setattr(vnetrx.live.device, "read_device",
                        lambda name: DeviceInfo(name, "tun", 1500))
    monkeypatch.setattr(vnetrx.live.tracefs, "collect", interrupted)
    monkeypatch.setattr(vnetrx.live.tracefs, "missing_for_tracing", lambda: [])
    result = CliRunner().invoke(cli, ["observe", "--dev", "vnxfake0", "--json"])
    doc = valid("observe", result.stdout)
    assert result.exit_code == 130 and doc["interrupted"] is True and doc["frames"] == []
    assert result.stderr == "vnetrx: interrupted after 0 skbs\n"
    result = CliRunner().invoke(cli, ["observe", "--dev", "vnxfake0"])
    assert result.exit_code == 130 and "0/0 skbs agree" in result.stdout


@pytest.mark.parametrize("as_json", [True, False])
def test_lab_interrupted_before_the_guest_finished_prints_a_whole_document(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, as_json: bool
) -> None:
    def interrupted(*_args: object, **_kw: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("vnetrx.lab.run.run_virtio", interrupted)
    image = tmp_path / "vmlinuz"
    image.write_bytes(b"")
    result = CliRunner().invoke(cli, ["lab", "virtio", "--image", str(image), "--len", "60",
                                      *(["--json"] if as_json else [])])
    assert result.exit_code == 130
    assert result.stderr == "vnetrx: interrupted before the guest's frames were compared\n"
    if as_json:
        doc = valid("error", result.stdout)
        assert doc["interrupted"] is True and doc["exit_code"] == 130
    else:
        assert result.stdout == ""


PRINT_UNDER_SIGNALS = """
import os, signal, sys
from vnetrx.owner import interrupt_once
from vnetrx.stop import Deferred
with interrupt_once():
    with Deferred() as held:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        sys.stdout.write("[" + ",".join(["1"] * 200000) + "]")
        sys.stdout.flush()
print(held.signal, file=sys.stderr)
"""


def test_a_signal_while_printing_waits_for_the_whole_document() -> None:
    proc = subprocess.run([sys.executable, "-c", PRINT_UNDER_SIGNALS], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, check=False)
    assert proc.returncode == 0 and len(json.loads(proc.stdout)) == 200000
    assert proc.stderr == f"{int(signal.SIGTERM)}\n"


def test_deferred_restores_the_handlers_it_replaced() -> None:
    before = signal.getsignal(signal.SIGTERM)
    held = Deferred()
    with held:
        held.__enter__()  # entering again while active changes nothing
        assert signal.getsignal(signal.SIGTERM) != before
    assert signal.getsignal(signal.SIGTERM) == before and held.signal is None
