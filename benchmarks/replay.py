"""Replay throughput on a capture, side by side with tcpdump reading the same file.

Run: python benchmarks/replay.py [--frames 1000000] [--kernel 6.12]
Writes a pcap of mixed-length full frames (60, 66, 1514, 9014 and uniform 60..9014, seeded) to a
temporary directory, then times whole commands, each with its peak memory (/usr/bin/time):

  tcpdump -nr FILE > /dev/null                        (the reference; skipped if not installed)
  vnetrx replay --from FILE --mergeable --mtu 9000 --kernel K --jsonl > /dev/null
  vnetrx replay --from FILE --mergeable --mtu 9000 --kernel K --summary
  cat FILE | vnetrx replay --from - ... --summary     (a pipe: the capture is streamed)
  the same lengths as TCP/UDP frames (Ethernet + IPv4 + TCP or UDP headers), --offload auto
  --jsonl: every frame then has a NEEDS_CSUM virtio_net_hdr, as traffic from a host does

The goal (issue 15) is at least 100,000 frames/s for the --jsonl command and at most 2x
tcpdump's time, with peak memory under 100 MB.
"""

from __future__ import annotations

import argparse
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vnetrx.compiled import build_line


def write_capture(path: Path, frames: int, seed: int = 15, headers: bool = False) -> int:
    """Mixed lengths, every frame zero-filled; ``headers``: each starts with Ethernet, IPv4 and
    a TCP (20-byte) or UDP header, what ``--offload auto`` gives a NEEDS_CSUM header."""
    rng = random.Random(seed)
    total = 0
    tcp = (b"\0" * 12 + b"\x08\x00" + b"\x45" + b"\0" * 8 + b"\x06" + b"\0" * 10
           + b"\0" * 12 + b"\x50" + b"\0" * 7)
    udp = b"\0" * 12 + b"\x08\x00" + b"\x45" + b"\0" * 8 + b"\x11" + b"\0" * 10 + b"\0" * 8
    with path.open("wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        zeros = bytes(9014)
        for i in range(frames):
            length = rng.choice([60, 66, 1514, 9014, rng.randint(60, 9014)])
            out.write(struct.pack("<IIII", i // 1000, i % 1000, length, length))
            head = (tcp if i % 4 else udp) if headers else b""
            out.write(head + zeros[: length - len(head)])
            total += length
    return total


def run(cmd: str) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of a shell command, its output discarded."""
    timer = shutil.which("time") or "/usr/bin/time"
    start = time.perf_counter()
    proc = subprocess.run([timer, "-f", "%M", "sh", "-c", cmd + " > /dev/null"],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    return wall, int(proc.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--kernel", default="6.12")
    args = parser.parse_args()
    # the installed script next to this python (`python -m vnetrx` in the project root would
    # run the source tree, not the installed build)
    vnetrx = f"{Path(sys.executable).with_name('vnetrx')} replay"
    print(f"vnetrx {build_line()}")
    opts = f"--mergeable --mtu 9000 --kernel {args.kernel}"
    with tempfile.TemporaryDirectory(prefix="vnetrx-bench-") as tmp:
        cap = Path(tmp) / "mixed.pcap"
        size = write_capture(cap, args.frames)
        print(f"{args.frames:,} frames, {size / 1e9:.2f} GB of frame bytes in {cap.name}")
        rows = []
        if shutil.which("tcpdump"):
            rows.append(("tcpdump -nr FILE", run(f"tcpdump -nr {cap} 2>/dev/null")))
        rows.append(("vnetrx replay --jsonl", run(f"{vnetrx} --from {cap} {opts} --jsonl")))
        rows.append(("vnetrx replay --summary", run(f"{vnetrx} --from {cap} {opts} --summary")))
        rows.append(("cat FILE | vnetrx replay --from - --summary",
                     run(f"cat {cap} | {vnetrx} --from - {opts} --summary")))
        cap.unlink()
        real = Path(tmp) / "tcp-udp.pcap"
        write_capture(real, args.frames, headers=True)
        rows.append(("TCP/UDP frames: --offload auto --jsonl",
                     run(f"{vnetrx} --from {real} {opts} --offload auto --jsonl")))
        reference = rows[0][1][0] if rows[0][0].startswith("tcpdump") else None
        for name, (wall, peak) in rows:
            ratio = f"  {wall / reference:.2f}x tcpdump" if reference else ""
            print(f"{name:<46} {wall:6.2f} s  {args.frames / wall:>10,.0f} frames/s  "
                  f"peak {peak / 1024:6.1f} MB{ratio}")


if __name__ == "__main__":
    main()
