"""A reliability battery: many generated command lines, in-process and as processes with closed,
full and broken standard streams; counts tracebacks, hangs and exit statuses outside 0/1/2/3.

Run: python tools/battery.py [--lines N] [--processes M] [--seed S]

In-process lines go through click's CliRunner (fast); a sample runs as real processes, each
under one of: ordinary streams, stdout closed, stderr closed, stdin closed, stdout /dev/full,
stdout a pipe whose reader is gone. Live and guest commands are given only options that fail
before any privileged work (a bad value) or --help, so the battery needs no root, QEMU or
network. Prints a summary and every failing command line; exit 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from click.testing import CliRunner

HUGE = "9" * 5000
VALUES = ["", "0", "-1", "1", "13", "14", "60", "1514", "3000", "9014", "65535", "65536",
          "1e3", "0x10", "abc", HUGE, "1-" + HUGE, "60,1000", "60-1514:7", "9-3", "6.1", "5.12",
          "7.3", "99.99", "6.1.0-57-amd64", "5.15.0-91-generic", "\x00", "--", "☃", "a\nb",
          "sk_buff\udcff", "tcpv4:1448", "tcpv4:" + HUGE, "udp_l4:1472", "partial", "valid",
          "none", "tcp4", "tcp6", "udp4", "/dev/zero", "/dev/null", "/nonexistent", "-"]
# values that an option takes: half the options get one, so that lines also do real work
GOOD = {"--len": ["60", "1000", "1514", "9014", "60-70", "100x3"], "--kernel": ["5.12", "6.1",
        "6.12", "6.18", "7.3", "6.1.0-57-amd64", "5.15.0-91-generic"], "--mtu": ["1500", "9000"],
        "--gso": ["tcpv4:1448", "udp_l4:1472"], "--segments": ["3", "50"],
        "--ring-size": ["256", "4"], "--batch": ["1", "64"], "--between": ["5.12..6.1"],
        "--payload": ["1000"], "--buf-len": ["1536", "4096"], "--ewma": ["1500"],
        "--polls": ["1,2", "64"], "--gro-flush-timeout": ["0", "1000000"],
        "--gro-max-size": ["65536", "185000"], "--sndbuf": ["4096"], "--vnet-hdr-sz": ["12"],
        "--mss": ["1448"], "-c": ["3"], "--count": ["3"], "--show": ["0", "2"],
        "--tcp-options": ["12"], "--hdr": ["0100", "01000000000000000000"]}
# options that write: always a path inside the battery's temporary directory (it runs as root)
WRITES = ("--svg", "--html", "--dest", "--save-dir", "--save-input", "--save-recording",
          "--serial-log")
# commands that would do privileged or network work with good values: each line also gets an
# option they refuse at parse time, so that they fail before any of it (or --help); observe
# reading a file (--from-trace, --from-recording) without --dev is offline and runs
PRIVILEGED = ("verify", "lab", "observe")
# what a careful line gives a command that needs its frames (one of these options)
NEEDS = {"trace": ["--len"], "sweep": ["--len"], "replay": ["--len", "--from"]}
BAD_FOR_PRIVILEGED = ["--no-such-option"]


def command_table() -> dict[str, tuple[dict[str, list[str]], list[str]]]:
    """Every command of the CLI as it is now (so that a new option is in the battery the day it
    exists): its value options, each with the values a good run would give it (a Choice's
    choices, GOOD's, or none) and its flags."""
    import click

    from vnetrx.cli import cli

    table: dict[str, tuple[dict[str, list[str]], list[str]]] = {}

    def walk(cmd: click.Command, path: list[str], parent: click.Context | None) -> None:
        ctx = click.Context(cmd, info_name=path[-1] if path else "vnetrx", parent=parent)
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(sub, [*path, name], ctx)
            return
        options: dict[str, list[str]] = {}
        flags: list[str] = []
        for p in cmd.params:
            if not isinstance(p, click.Option):
                continue
            name = p.opts[0]
            if p.is_flag:
                flags.append(name)
            elif isinstance(p.type, click.Choice):
                options[name] = [str(c) for c in p.type.choices]
            else:
                options[name] = GOOD.get(name, [])
        table[" ".join(path)] = (options, [*flags, "--help"])

    walk(cli, [], None)
    return table


def inputs(tmp: str) -> dict[str, list[str]]:
    """Files the reading options get: real test data and captures written here."""
    import struct
    from pathlib import Path

    data = Path(__file__).resolve().parent.parent / "tests" / "data"
    frame = bytes(12) + b"\x08\x00\x45" + bytes(8) + b"\x06" + bytes(10) + bytes(12) + b"\x50" \
        + bytes(7) + bytes(1000)
    pcap = Path(tmp, "mixed.pcap")
    with pcap.open("wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, n in enumerate((60, 1514, 9014, 66, len(frame))):
            body = (frame + bytes(n))[:n]
            out.write(struct.pack("<IIII", i, 0, n, n) + body)
    cut = Path(tmp, "cut.pcap")
    cut.write_bytes(pcap.read_bytes()[:-100])
    frame_file = Path(tmp, "frame.bin")
    frame_file.write_bytes(frame)
    traces = sorted(str(p) for p in (data / "traces").glob("*") if p.suffix != ".md")
    return {
        "--from": [str(pcap), str(cut), str(data / "replay" / "length-mix.txt"),
                   str(data / "gro" / "linux-6.18.44.json"), "-"],
        "--frame": [str(frame_file)],
        "--from-trace": traces,
        "--from-log": sorted(str(p) for p in (data / "vhost").glob("*.log"))[:1]
        + sorted(str(p) for p in (data / "lab").glob("*.log"))[:1],
        "--from-recording": [str(data / "observe" / "eth0-6.18.44-download.json")],
        "--load": [str(data / "traces" / "eth0-6.18.44-bpftrace.json")],
        "--file": [str(frame_file)],
    }


def command_lines(count: int, seed: int, tmp: str) -> list[list[str]]:
    rng = random.Random(seed)
    table = command_table()
    files = inputs(tmp)
    names = sorted(table)
    out: list[list[str]] = []
    while len(out) < count:
        command = rng.choice(names)
        options, flags = table[command]
        argv = command.split()
        # half the lines take only good values (and fewer options): most mixes of bad ones stop
        # at the first check, and the work behind it must run too
        careful = rng.random() < 0.5
        if careful and command in NEEDS:
            option = rng.choice(NEEDS[command])
            argv += [option, rng.choice(files.get(option) or options[option])]
        for _ in range(rng.randint(0, 3 if careful else 5)):
            if options and rng.random() < 0.7:
                option = rng.choice(sorted(options))
                if option in WRITES:
                    argv += [option, os.path.join(tmp, f"out-{len(out)}")]
                    continue
                good = files.get(option) or options[option]
                if careful and not good:
                    continue
                bad = not good or (not careful and rng.random() >= 0.6)
                argv += [option, rng.choice(VALUES if bad else good)]
            elif flags and not (careful and rng.random() < 0.5):
                argv.append(rng.choice([f for f in flags if f != "--help"] or flags)
                            if careful else rng.choice(flags))
        offline = (command == "observe" and "--dev" not in argv
                   and ("--from-trace" in argv or "--from-recording" in argv))
        if argv[0] in PRIVILEGED and "--help" not in argv and not offline:
            argv += BAD_FOR_PRIVILEGED
        if command in ("decode", "schema", "layout") and rng.random() < 0.5:
            argv.append(rng.choice(["0100", "zz", "skb_shared_info", "trace", "nope", HUGE]))
        if command == "diff" and rng.random() < 0.7:
            argv += ["--", "--len", rng.choice(VALUES)]
        out.append(argv)
    return out


NOTES = ("vnetrx: note: ", "vnetrx: warning: ")
CHECKS = ("observe", "verify", "lab", "xdp")  # commands that compare with a real kernel


def verdict(argv: list[str], result: Any) -> str | None:
    """What is wrong with one in-process run (a click ``Result``), or None."""
    shown = " ".join(a[:30] for a in argv)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"traceback: vnetrx {shown}: {result.exception!r}"
    if result.exit_code not in (0, 1, 2, 3):
        return f"exit {result.exit_code}: vnetrx {shown}"
    if result.exit_code not in (1, 2):
        return None
    # notes may come before the one error line; a check that found a difference exits 1 with
    # its report on stdout and no error (README: "Exit status and errors")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if not line.startswith(NOTES)]
    if (result.exit_code == 1 and not errors and result.stdout.strip()
            and (argv[0] in CHECKS or "--check" in argv)):
        return None
    if len(errors) != 1 or not errors[0].startswith("vnetrx: error: "):
        return f"not one error line: vnetrx {shown}: {result.stderr[-200:]!r}"
    own = argv[:argv.index("--")] if "--" in argv else argv
    if "--json" in own and "--help" not in own:
        last = (result.stdout.strip().splitlines() or [""])[-1]
        try:
            doc = json.loads(last)
        except ValueError:
            return f"--json error without a JSON error object: vnetrx {shown}: {last[:100]!r}"
        if doc.get("schema") != "vnetrx.error/1" or doc.get("exit_code") != result.exit_code:
            return f"--json error object wrong: vnetrx {shown}: {last[:100]!r}"
    return None


def in_process(lines: list[list[str]]) -> list[str]:
    from vnetrx.cli import cli

    runner = CliRunner()
    found = (verdict(argv, runner.invoke(cli, argv)) for argv in lines)
    return [failure for failure in found if failure is not None]


STREAMS = ("normal", "stdout-closed", "stderr-closed", "stdin-closed", "stdout-full",
           "stdout-broken")


def as_process(argv: list[str], streams: str) -> str | None:
    """None when the run is fine, else what went wrong."""
    close: tuple[int, ...] = {"stdout-closed": (1,), "stderr-closed": (2,),
                              "stdin-closed": (0,)}.get(streams, ())
    stdout: int | None = None
    keep: list[int] = []
    if streams == "stdout-full":
        stdout = os.open("/dev/full", os.O_WRONLY)
        keep.append(stdout)
    elif streams == "stdout-broken":
        read, stdout = os.pipe()
        os.close(read)
        keep.append(stdout)

    def closer() -> None:
        for fd in close:
            os.close(fd)

    try:
        proc = subprocess.run(
            [sys.executable, "-m", "vnetrx", *argv], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout is None else stdout, stderr=subprocess.PIPE,
            preexec_fn=closer if close else None, timeout=60,
        )
    except subprocess.TimeoutExpired:
        return f"hang ({streams}): vnetrx {' '.join(a[:30] for a in argv)}"
    finally:
        for fd in keep:
            os.close(fd)
    err = (proc.stderr or b"").decode(errors="replace")
    shown = " ".join(a[:30] for a in argv)
    if "Traceback" in err:
        return f"traceback ({streams}): vnetrx {shown}: {err.strip().splitlines()[-1][:200]}"
    if proc.returncode not in (0, 1, 2, 3):
        return f"exit {proc.returncode} ({streams}): vnetrx {shown}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=600)
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args()
    start = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="vnetrx-battery-")
    lines = command_lines(args.lines, args.seed, tmp)
    failures = in_process(lines)
    print(f"in-process: {len(lines)} command lines, {len(failures)} failed "
          f"({time.monotonic() - start:.0f} s)", flush=True)
    rng = random.Random(args.seed + 1)
    passable = [argv for argv in lines if not any("\x00" in a for a in argv)]  # execve's limit
    sample = [(rng.choice(passable), STREAMS[i % len(STREAMS)]) for i in range(args.processes)]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda job: as_process(*job), sample))
    bad = [r for r in results if r is not None]
    print(f"processes: {len(sample)} runs over {len(STREAMS)} stream states, {len(bad)} failed "
          f"({time.monotonic() - start:.0f} s in all)")
    for failure in failures + bad:
        print("  " + failure)
    return 1 if failures or bad else 0


if __name__ == "__main__":
    sys.exit(main())
