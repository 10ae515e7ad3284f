"""Start-up cost of `vnetrx trace --len 1000 --mergeable --json` against `python -c pass`.

Run: python benchmarks/startup.py [--runs N]
Prints the median wall time of each over N runs, and the modules `-X importtime` attributes
the most time to, so a regression (e.g. rich imported on the JSON path) is easy to see.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

TRACE = [sys.executable, "-m", "vnetrx", "trace", "--len", "1000", "--mergeable", "--json"]
BASELINE = [sys.executable, "-c", "pass"]


def median_ms(cmd: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def top_imports(limit: int) -> list[tuple[int, str]]:
    proc = subprocess.run([TRACE[0], "-X", "importtime", *TRACE[1:]], capture_output=True,
                          text=True, check=True)
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    base = median_ms(BASELINE, args.runs)
    trace = median_ms(TRACE, args.runs)
    print(f"python -c pass                          {base:7.1f} ms (median of {args.runs})")
    print(f"vnetrx trace --len 1000 --mergeable --json {trace:7.1f} ms  (+{trace - base:.1f} ms)")
    print("slowest imports (cumulative µs):")
    for micros, name in top_imports(8):
        print(f"  {micros:8d}  {name.strip()}")
    loaded_rich = any("rich" in name.split(".")[0] for _, name in top_imports(10_000))
    print("rich imported on the JSON path:", "YES (regression)" if loaded_rich else "no")


if __name__ == "__main__":
    main()
