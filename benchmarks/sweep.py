"""Sweep throughput: a single-kernel sweep of 1..65535 on every path, side by side.

Run: python benchmarks/sweep.py [--kernel 6.12] [--rounds 5] [--busy]

1. In-process: rows per second of ``vnetrx.sweep.virtio_rows`` (each virtio mode, and with an
   XDP program) and ``tap_rows``, best of --repeat.
2. Whole commands, interleaved round by round (so a noisy minute hits every command alike):
   ``vnetrx sweep --len 1-65535 ... --jsonl > /dev/null`` for virtio mergeable (the reference),
   the tap path and two XDP setups; the CPU time (user + system) of each, the median over the
   rounds, and each command's median ratio to the reference in the same round. Issue 25's goal:
   the tap and XDP sweeps within 2x the virtio sweep. ``--busy`` runs the rounds while another
   process keeps every core busy, as on a user's machine.
3. Ctrl-C: each command (over four kernels, so that it runs for seconds) gets SIGINT once its
   first rows are out; the time from the signal to its exit (130), the slowest of the rounds.
   Issue 25's goal: within 0.5 s on the compiled build (a compiled sweep once ran to the end).
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import heading, interleaved, paired_ratio, round_options

from vnetrx.compiled import build_line
from vnetrx.kernel.registry import lookup
from vnetrx.paths.tun import TapSetup
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.sweep import tap_rows, virtio_rows

MODES = {
    "mergeable": VirtioRxSetup(mergeable=True),
    "small": VirtioRxSetup(),
    "big (guest GSO)": VirtioRxSetup(guest_gso=True),
    "big (MTU 9000)": VirtioRxSetup(mtu=9000),
    "mergeable + XDP_PASS": VirtioRxSetup(mergeable=True, xdp="pass"),
    "small + XDP_TX": VirtioRxSetup(xdp="tx"),
}
LENGTHS = range(1, 65536)
# the reference first
COMMANDS = {
    "virtio mergeable": ["--mergeable"],
    "tap": ["--path", "tap"],
    "virtio mergeable + XDP_PASS": ["--mergeable", "--xdp", "pass"],
    "virtio small + XDP_TX": ["--xdp", "tx"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", default="6.12")
    parser.add_argument("--repeat", type=int, default=3, help="in-process: best of N")
    round_options(parser, 5)
    args = parser.parse_args()
    k = lookup(args.kernel)
    print(f"vnetrx {build_line()}; kernel {k.name}")
    rows = {name: (lambda s=setup: virtio_rows(k, s, LENGTHS)) for name, setup in MODES.items()}
    rows["tap"] = lambda: tap_rows(k, TapSetup(), LENGTHS)
    for name, make in rows.items():
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            count = sum(1 for _ in make())
            best = min(best, time.perf_counter() - start)
        print(f"{name:<22} {count / best:>10,.0f} rows/s  ({count} lengths in {best:.3f} s)")
    script = str(Path(sys.executable).with_name("vnetrx"))
    times = interleaved({name: [script, "sweep", "--len", "1-65535", *extra, "--kernel",
                                args.kernel, "--jsonl"] for name, extra in COMMANDS.items()},
                        args.rounds, args.busy)
    reference = times[next(iter(COMMANDS))]
    print(heading(args.rounds, args.busy))
    for name, runs in times.items():
        ratio = paired_ratio(runs, reference)
        print(f"  sweep --len 1-65535 {' '.join(COMMANDS[name]):<28} "
              f"{statistics.median(runs):6.2f} s  {ratio:5.2f}x the virtio sweep")
    print("Ctrl-C: from SIGINT to exit, the slowest of the rounds:")
    for extra in COMMANDS.values():
        waits = [_interrupted(script, extra) for _ in range(args.rounds)]
        print(f"  sweep --len 1-65535 {' '.join(extra):<28} {max(waits) * 1000:6.0f} ms")


def _interrupted(script: str, extra: list[str]) -> float:
    """Seconds from a SIGINT (sent once the sweep's first rows are out) to its exit."""
    kernels = [arg for k in ("6.1", "6.6", "6.12", "6.18") for arg in ("--kernel", k)]
    proc = subprocess.Popen([script, "sweep", "--len", "1-65535", *extra, *kernels, "--jsonl"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.readline()
    start = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    proc.stdout.read()  # the rows written before the signal
    code = proc.wait()
    waited = time.perf_counter() - start
    if code != 130:
        raise SystemExit(f"sweep {' '.join(extra)} exited {code} after SIGINT, not 130")
    return waited


if __name__ == "__main__":
    main()
