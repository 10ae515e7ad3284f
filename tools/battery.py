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
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from click.testing import CliRunner

HUGE = "9" * 5000
VALUES = ["", "0", "-1", "1", "13", "14", "60", "1514", "3000", "9014", "65535", "65536",
          "1e3", "0x10", "abc", HUGE, "1-" + HUGE, "60,1000", "60-1514:7", "9-3", "6.1", "5.12",
          "7.3", "99.99", "6.1.0-57-amd64", "5.15.0-91-generic", "\x00", "--", "☃", "a\nb",
          "sk_buff\udcff", "tcpv4:1448", "tcpv4:" + HUGE, "udp_l4:1472", "partial", "valid",
          "none", "tcp4", "tcp6", "udp4", "/dev/zero", "/dev/null", "/nonexistent", "-"]
# values that an option takes: half the options get one, so that lines also do real work
GOOD = {"--len": ["60", "1000", "1514", "9014", "60-70", "100x3"], "--kernel": ["5.12", "6.1",
        "6.12", "6.18", "7.3"], "--mtu": ["1500", "9000"], "--l4": ["tcp4", "tcp6", "udp4"],
        "--csum": ["partial", "valid", "none"], "--gso": ["tcpv4:1448", "udp_l4:1472"],
        "--segments": ["3", "50"], "--napi": ["write", "timeout"], "--path": ["virtio", "tap"],
        "--xdp": ["pass", "drop", "tx"], "--hdr-len": ["10", "12"], "--ring-size": ["256", "4"],
        "--batch": ["1", "64"], "--between": ["5.12..6.1"], "--payload": ["1000"]}
COMMANDS: dict[str, tuple[list[str], list[str]]] = {
    "trace": (["--len", "--mtu", "--hdr-len", "--buf-len", "--ewma", "--buffer-index",
               "--kernel", "--hdr", "--l4", "--tcp-options", "--csum", "--gso", "--sndbuf",
               "--vnet-hdr-sz", "--max-skb-frags", "--page-size", "--arch", "--frag-source",
               "--path", "--xdp", "--segments", "--napi", "--gro-max-size", "--frame",
               "--load"],
              ["--mergeable", "--big", "--json", "--blocking", "--tun", "--no-vnet-hdr",
               "--gro", "--check", "--xdp-frags"]),
    "sweep": (["--len", "--kernel", "--mtu", "--hdr-len", "--l4", "--gso", "--path", "--csum",
               "--xdp"],
              ["--mergeable", "--big", "--json", "--jsonl", "--csv"]),
    "replay": (["--len", "--mtu", "--hdr-len", "--ring-size", "--batch", "--polls", "--kernel",
                "--show", "--offload", "--mss", "--from", "--xdp"],
               ["--mergeable", "--guest-gso", "--json", "--jsonl", "--summary", "--detail",
                "--big"]),
    "decode": (["--hdr-len", "--len", "--kernel", "--file"], ["--json", "--check"]),
    "headroom": (["--kernel", "--payload", "--mtu"], ["--tcp", "--ipv6", "--no-mergeable",
                                                      "--json"]),
    "kernels": (["--between"], ["--json", "--changes"]),
    "diff": (["--kernel"], ["--json"]),
    "layout": (["--kernel", "--btf", "--btf-base"], ["--json", "--check", "--list"]),
    "schema": ([], ["--list"]),
    "xdp check": (["--mtu", "--queues", "--cpus", "--kernel", "--path"],
                  ["--json", "--mergeable", "--big", "--xdp-frags"]),
    # the privileged commands: a bad value makes each fail before any live or guest work
    "verify tap": (["--len", "--kernel"], ["--json", "--help"]),
    "lab virtio": (["--len", "--mtu"], ["--json", "--help"]),
    "observe": (["--count", "--seconds", "--mtu"], ["--json", "--help"]),
}
PRIVILEGED = ("verify tap", "lab virtio", "observe")
BAD_FOR_PRIVILEGED = ["--len", "0x"]  # a usage error, found before any privileged work


def command_lines(count: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    names = list(COMMANDS)
    out: list[list[str]] = []
    while len(out) < count:
        command = rng.choice(names)
        options, flags = COMMANDS[command]
        argv = command.split()
        for _ in range(rng.randint(0, 5)):
            if options and rng.random() < 0.7:
                option = rng.choice(options)
                good = GOOD.get(option)
                argv += [option, rng.choice(good if good and rng.random() < 0.6 else VALUES)]
            elif flags:
                argv.append(rng.choice(flags))
        if command in PRIVILEGED and "--help" not in argv:
            argv += BAD_FOR_PRIVILEGED
        if command in ("decode", "schema", "layout") and rng.random() < 0.5:
            argv.append(rng.choice(["0100", "zz", "skb_shared_info", "trace", "nope", HUGE]))
        if command == "diff" and rng.random() < 0.7:
            argv += ["--", "--len", rng.choice(VALUES)]
        out.append(argv)
    return out


def in_process(lines: list[list[str]]) -> list[str]:
    from vnetrx.cli import cli

    runner = CliRunner()
    failures = []
    for argv in lines:
        result = runner.invoke(cli, argv)
        shown = " ".join(a[:30] for a in argv)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            failures.append(f"traceback: vnetrx {shown}: {result.exception!r}")
        elif result.exit_code not in (0, 1, 2, 3):
            failures.append(f"exit {result.exit_code}: vnetrx {shown}")
        elif result.exit_code in (1, 2):
            errors = [line for line in result.stderr.splitlines() if line.strip()]
            if len(errors) != 1 or not errors[0].startswith("vnetrx: error: "):
                failures.append(f"not one error line: vnetrx {shown}: {result.stderr[-200:]!r}")
    return failures


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
    lines = command_lines(args.lines, args.seed)
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
