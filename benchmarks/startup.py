"""Start-up cost of `vnetrx trace --len 1000 --mergeable --json`, side by side with pahole.

Run: python benchmarks/startup.py [--runs N] [--vnetrx PATH] [--busy]
Runs, interleaved N times (so that a busy moment hits all of them alike; 101 by default, as
the 2-core reference machine's noise moves a median of fewer runs by ~10 %):

  pahole -C skb_shared_info /sys/kernel/btf/vmlinux     (the reference; skipped if absent)
  vnetrx trace --len 1000 --mergeable --json            (the installed script, or --vnetrx)
  python -c pass                                         (the interpreter's own start)

and prints each one's median and minimum whole-process CPU time (user + system, from wait4),
the ratio of the medians (issue 15's goal: vnetrx's CPU time no more than pahole's), and the
modules `-X importtime` attributes the most time to, so a regression (e.g. rich or construct
imported on the JSON path) is easy to see. ``--busy`` runs them while another process keeps
every core busy, as on a user's machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from common import busy

ARGS = ["trace", "--len", "1000", "--mergeable", "--json"]
BTF = "/sys/kernel/btf/vmlinux"


def cpu_ms(cmd: list[str]) -> float:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return (usage.ru_utime + usage.ru_stime) * 1000


def top_imports(cmd: list[str], limit: int) -> list[tuple[int, str]]:
    script = str(Path(sys.executable).with_name("vnetrx"))
    proc = subprocess.run([sys.executable, "-X", "importtime", script, *cmd],
                          capture_output=True, text=True, check=True)
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].strip()))
    return sorted(rows, reverse=True)[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=101)
    parser.add_argument("--vnetrx", help="the vnetrx script to time (default: next to python)")
    parser.add_argument("--busy", action="store_true",
                        help="keep every core busy with another process meanwhile")
    args = parser.parse_args()
    script = args.vnetrx or str(Path(sys.executable).with_name("vnetrx"))
    commands = {"vnetrx trace --len 1000 --mergeable --json": [script, *ARGS],
                "python -c pass": [sys.executable, "-c", "pass"]}
    if shutil.which("pahole") and Path(BTF).exists():
        commands = {"pahole -C skb_shared_info": ["pahole", "-C", "skb_shared_info", BTF],
                    **commands}
    samples: dict[str, list[float]] = {name: [] for name in commands}
    with busy(args.busy):
        for _ in range(args.runs):
            for name, cmd in commands.items():
                samples[name].append(cpu_ms(cmd))
    version = subprocess.run([script, "--version"], capture_output=True, text=True, check=True)
    print(version.stdout.splitlines()[0])
    print(f"whole-process CPU time (user + system), {args.runs} interleaved runs"
          + (" (every core kept busy by another process):" if args.busy else ":"))
    for name, values in samples.items():
        print(f"  {name:46s} median {statistics.median(values):6.1f} ms   "
              f"min {min(values):6.1f} ms")
    if "pahole -C skb_shared_info" in samples:
        ours = samples["vnetrx trace --len 1000 --mergeable --json"]
        theirs = samples["pahole -C skb_shared_info"]
        ratio = statistics.median(ours) / statistics.median(theirs)
        # each run's two commands ran back to back: the median of their ratios is the figure
        # a busy moment of this machine (which moves both alike) disturbs least
        paired = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
        print(f"vnetrx / pahole: {ratio:.2f} (medians), {paired:.2f} (median of the runs' "
              "ratios) (goal: at most 1.00)")
    imports = top_imports(ARGS, 10_000)
    print("slowest imports (cumulative µs, one run, -X importtime):")
    for micros, name in imports[:8]:
        print(f"  {micros:8d}  {name}")
    loaded = {name.split(".")[0] for _, name in imports}
    for heavy in ("rich", "construct"):
        print(f"{heavy} imported on the JSON path:", "YES (regression)" if heavy in loaded else "no")


if __name__ == "__main__":
    main()
