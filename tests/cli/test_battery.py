"""A generated battery of bad (and odd) command lines for every subcommand: each ends with exit
0, 1 or 2, never a traceback; a failure is one line on stderr ("vnetrx: error: ..."), and with
--json also a JSON error object on stdout. Plus the environment cases a battery cannot reach
in-process: a full disk, an ASCII-only terminal, devices, FIFOs and unreadable files as
inputs."""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli

HUGE = "9" * 5000
VALUES = ["", "0", "-1", "1", "13", "60", "1514", "65535", "65536", "1e3", "0x10", "abc", HUGE,
          "1-" + HUGE, "60,1000", "60-1514:0", "9-3", "6.1", "99.99", "\x00", "--", "☃"]
COMMANDS: dict[str, tuple[list[str], list[str]]] = {
    # command → (options that take a value, flags)
    "trace": (["--len", "--mtu", "--hdr-len", "--buf-len", "--ewma", "--buffer-index", "--kernel",
               "--hdr", "--l4", "--tcp-options", "--csum", "--gso", "--sndbuf", "--vnet-hdr-sz",
               "--max-skb-frags", "--page-size", "--arch", "--frag-source", "--path"],
              ["--mergeable", "--big", "--json", "--blocking", "--tun", "--xdp", "--no-vnet-hdr"]),
    "sweep": (["--len", "--kernel", "--mtu", "--hdr-len", "--l4", "--gso", "--path"],
              ["--mergeable", "--big", "--json", "--jsonl", "--csv"]),
    "replay": (["--len", "--mtu", "--hdr-len", "--ring-size", "--batch", "--polls", "--kernel",
                "--show", "--offload", "--mss"],
               ["--mergeable", "--guest-gso", "--json", "--jsonl", "--summary", "--detail"]),
    "decode": (["--hdr-len", "--len", "--kernel"], ["--json"]),
    "headroom": (["--kernel", "--payload"], ["--tcp", "--ipv6", "--no-mergeable", "--json"]),
    "kernels": ([], ["--json", "--changes"]),
    "diff": (["--kernel"], ["--json"]),
    "layout": (["--kernel", "--btf"], ["--json", "--check", "--list"]),
    "schema": ([], []),
}


def command_lines(count: int) -> list[list[str]]:
    rng = random.Random(17)
    out: list[list[str]] = []
    for command, (options, flags) in itertools.cycle(COMMANDS.items()):
        if len(out) >= count:
            break
        argv = [command]
        for _ in range(rng.randint(0, 4)):
            if options and rng.random() < 0.7:
                argv += [rng.choice(options), rng.choice(VALUES)]
            elif flags:
                argv.append(rng.choice(flags))
        if command in ("decode", "schema", "layout") and rng.random() < 0.5:
            argv.append(rng.choice(["0100", "zz", "skb_shared_info", "trace", "nope", HUGE]))
        if command == "diff" and rng.random() < 0.7:
            argv += ["--", "--len", rng.choice(VALUES)]
        out.append(argv)
    return out


@pytest.mark.parametrize("chunk", range(8))
def test_generated_command_lines(chunk: int) -> None:
    """1,600 command lines, 200 per chunk."""
    runner = CliRunner()
    lines = command_lines(1600)[chunk * 200:(chunk + 1) * 200]
    for argv in lines:
        result = runner.invoke(cli, argv)
        shown = " ".join(a[:30] for a in argv)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"vnetrx {shown}: {result.exception!r}") from result.exception
        assert result.exit_code in (0, 1, 2), (shown, result.exit_code)
        if result.exit_code:
            errors = [line for line in result.stderr.splitlines() if line.strip()]
            assert len(errors) == 1 and errors[0].startswith("vnetrx: error: "), (
                shown, result.stderr[-300:])
            if "--json" in argv[:argv.index("--")] if "--" in argv else "--json" in argv:
                doc = json.loads(result.stdout.strip().splitlines()[-1])
                assert doc["schema"] == "vnetrx.error/1" and doc["exit_code"] == result.exit_code


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
