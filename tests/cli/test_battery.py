"""A generated battery of bad (and odd) command lines for every subcommand: each ends with exit
0, 1 or 2, never a traceback; a failure is one line on stderr ("vnetrx: error: ..."), and with
--json also a JSON error object on stdout. Plus the environment cases a battery cannot reach
in-process: a full disk, an ASCII-only terminal, devices, FIFOs and unreadable files as
inputs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli


def _tool(name: str) -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"vnetrx_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BATTERY = _tool("battery")  # command lines from the CLI itself, real test data as inputs


@pytest.mark.parametrize("chunk", range(8))
def test_generated_command_lines(chunk: int, tmp_path: Path) -> None:
    """2,400 command lines over every command and option, 300 per chunk: exit 0-3, never a
    traceback; a failure is one error line (notes may precede it), with --json also a
    vnetrx.error/1 object; a check that found a difference exits 1 with its report."""
    runner = CliRunner()
    lines = BATTERY.command_lines(300, 1000 + chunk, str(tmp_path))
    failures = [f for f in (BATTERY.verdict(argv, runner.invoke(cli, argv)) for argv in lines)
                if f is not None]
    assert not failures, failures[:5]


def test_the_battery_reaches_every_command_and_runs_some_of_each(tmp_path: Path) -> None:
    """The table comes from the CLI: a command or option added tomorrow is in it; and the
    careful half of the lines do real work (exit 0) on the main commands."""
    table = BATTERY.command_table()
    assert {"trace", "replay", "sweep", "observe", "lab vhost", "verify gro"} <= set(table)
    assert "--gro-flush-timeout" in table["replay"][0]
    assert table["trace"][0]["--path"] == ["virtio", "tap", "vhost-tx", "vhost-rx"]
    runner = CliRunner()
    ran = {argv[0] for argv in BATTERY.command_lines(600, 7, str(tmp_path))
           if runner.invoke(cli, argv).exit_code == 0}
    assert {"trace", "replay", "sweep", "decode", "headroom", "kernels"} <= ran


def test_a_nul_byte_in_a_path_is_one_line() -> None:
    """click's Path would stat the name and raise ValueError (found by the battery:
    observe --from-recording)."""
    for args in (["observe", "--from-recording", "a\x00b"], ["trace", "--len", "100", "--frame",
                                                              "\x00"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2
        assert result.stderr.strip().endswith(
            "holds a NUL byte, which no path can (valid: a file name)"), result.stderr


def _run(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vnetrx", *args], capture_output=True,
                          text=True, timeout=60, **kw)  # type: ignore[call-overload,no-any-return]


def test_a_full_disk_is_one_line_and_exit_1() -> None:
    for args in (["trace", "--len", "1000", "--mergeable"], ["sweep", "--len", "1-65535",
                                                              "--mergeable", "--jsonl"]):
        with open("/dev/full", "w") as full:
            proc = subprocess.run([sys.executable, "-m", "vnetrx", *args], stdout=full,
                                  stderr=subprocess.PIPE, text=True, timeout=60)
        assert proc.returncode == 1
        assert proc.stderr.strip() == "vnetrx: error: No space left on device"


def test_an_ascii_terminal_gets_question_marks_not_a_traceback() -> None:
    proc = _run(["trace", "--len", "1000", "--mergeable"],
                env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "?" in proc.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["replay", "--from", "/dev/zero"], "it is a device, not a regular file"),
    (["layout", "skb_shared_info", "--btf", "/dev/zero"], "it is a device, not a regular file"),
    (["observe", "--from-trace", "/dev/zero"], "it is a device, not a regular file"),
    (["lab", "virtio", "--from-log", "/dev/zero"], "it is a device, not a regular file"),
    (["lab", "virtio", "--from-log", "/proc/self/mem"], "Input/output error"),
    (["decode", "--file", "/dev/urandom"], "it is a device, not a regular file"),
])
def test_devices_and_unreadable_files_as_inputs(args: list[str], message: str) -> None:
    proc = _run(args)
    assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_fifo_is_refused_instead_of_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = _run(["replay", "--from", str(fifo)])
    assert proc.returncode == 2 and "it is a FIFO" in proc.stderr
    assert "give --from - and redirect it" in proc.stderr


@pytest.mark.parametrize("body", ["[" * 100000 + "]" * 100000, "[" + "9" * 5000 + "]"])
def test_json_files_that_python_cannot_read(tmp_path: Path, body: str) -> None:
    path = tmp_path / "f.json"
    path.write_text(body)
    proc = _run(["replay", "--from", str(path)])
    assert proc.returncode == 2 and "not a JSON array vnetrx reads" in proc.stderr


@pytest.mark.parametrize("seed", [1, 2])
def test_damaged_traces_logs_and_recordings_are_one_line(seed: int, tmp_path: Path) -> None:
    """tools/fuzz_inputs.py --texts: tests/data's traces, lab logs and recordings, cut, with
    lines lost or repeated, numbers replaced and bytes flipped, through the commands that read
    them: never a traceback (it found two, in the GRO recording and vhost log readers)."""
    runs, failures = _tool("fuzz_inputs").text_inputs(40, seed, str(tmp_path))
    assert runs == 40 and not failures, failures[:3]
