"""`vnetrx layout skb_shared_info --btf /sys/kernel/btf/vmlinux` against
`pahole -C skb_shared_info /sys/kernel/btf/vmlinux` (Debian dwarves), on the same machine in one run.

cold: vnetrx's cache (record table and rows) removed before every run; index only: the record
table cached but not the struct's rows (a struct not looked up before); warm: both cached.
Run: python benchmarks/layout_vs_pahole.py [--runs N] [--struct NAME]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BTF = "/sys/kernel/btf/vmlinux"


def timed(cmd: list[str], env: dict[str, str], before: object = None) -> float:
    if callable(before):
        before()
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--struct", default="skb_shared_info")
    args = parser.parse_args()
    if shutil.which("pahole") is None:
        sys.exit("pahole not found: apt-get install dwarves")
    cache = tempfile.mkdtemp(prefix="vnetrx-bench-")
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    vnetrx = [str(Path(sys.executable).with_name("vnetrx")), "layout", args.struct, "--btf", BTF]
    pahole = ["pahole", "-C", args.struct, BTF]

    def drop() -> None:
        shutil.rmtree(os.path.join(cache, "vnetrx"), ignore_errors=True)

    def drop_rows() -> None:
        for name in os.listdir(os.path.join(cache, "vnetrx")):
            if name.endswith(".rows"):
                os.remove(os.path.join(cache, "vnetrx", name))

    results = {
        "pahole": [timed(pahole, env) for _ in range(args.runs)],
        "vnetrx cold": [timed(vnetrx, env, drop) for _ in range(args.runs)],
    }
    timed(vnetrx, env)  # fill the cache
    results["vnetrx index only"] = [timed(vnetrx, env, drop_rows) for _ in range(args.runs)]
    results["vnetrx warm"] = [timed(vnetrx, env) for _ in range(args.runs)]
    results["python -c pass"] = [timed([sys.executable, "-c", "pass"], env) for _ in range(args.runs)]
    shutil.rmtree(cache, ignore_errors=True)
    base = statistics.median(results["pahole"])
    for name, samples in results.items():
        median = statistics.median(samples)
        print(f"{name:<18} {median:7.1f} ms median of {args.runs}  ({median / base:4.2f}x pahole)")


if __name__ == "__main__":
    main()
