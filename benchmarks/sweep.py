"""Sweep throughput: traces per second for a single-kernel sweep of 1..65535.

Run: python benchmarks/sweep.py [--kernel 6.1] [--repeat 3]
Measures vnetrx.sweep.virtio_rows (the plan layer: what `vnetrx sweep` computes) for each
virtio mode, best of --repeat, and the whole command with --jsonl into /dev/null once.
The target (issue 7) is at least 100,000 traces per second.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from vnetrx.compiled import build_line
from vnetrx.kernel.registry import lookup
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.sweep import virtio_rows

MODES = {
    "mergeable": VirtioRxSetup(frame_len=1, mergeable=True),
    "small": VirtioRxSetup(frame_len=1),
    "big (guest GSO)": VirtioRxSetup(frame_len=1, guest_gso=True),
    "big (MTU 9000)": VirtioRxSetup(frame_len=1, mtu=9000),
}
LENGTHS = range(1, 65536)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kernel", default="6.1")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    k = lookup(args.kernel)
    print(f"vnetrx {build_line()}")
    for name, setup in MODES.items():
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            count = sum(1 for _ in virtio_rows(k, setup, LENGTHS))
            best = min(best, time.perf_counter() - start)
        print(f"{name:<16} {count / best:>10,.0f} traces/s  ({count} lengths in {best:.3f} s)")
    cmd = [str(Path(sys.executable).with_name("vnetrx")), "sweep", "--len", "1-65535", "--mergeable",
           "--kernel", args.kernel, "--jsonl"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    print(f"vnetrx sweep --len 1-65535 --mergeable --jsonl > /dev/null: {wall:.2f} s wall "
          f"({65535 / wall:,.0f} lines/s including start-up and JSON)")


if __name__ == "__main__":
    main()
