"""Replay throughput on a capture, side by side with tcpdump reading the same file.

Run: python benchmarks/replay.py [--frames 1000000] [--kernel 6.12] [--rounds 3] [--busy]
Writes two pcaps to a temporary directory: mixed-length full frames (60, 66, 1514, 9014 and
uniform 60..9014, seeded), and the same lengths as TCP/UDP frames (Ethernet + IPv4 + TCP or UDP
headers). Then times whole commands, interleaved round by round (so that a busy moment hits
every command alike), their CPU time (user + system) and each one's median ratio to its
reference in the same round:

  tcpdump -nr FILE > /dev/null                        (the reference; skipped if not installed)
  vnetrx replay --from FILE --mergeable --mtu 9000 --kernel K --jsonl > /dev/null
  vnetrx replay --from FILE --mergeable --mtu 9000 --kernel K --summary
  cat FILE | vnetrx replay --from - ... --summary     (a pipe: the capture is streamed)
  tcpdump -nr TCP/UDP-FILE                            (the reference of the next one)
  vnetrx replay --from TCP/UDP-FILE ... --offload auto --jsonl: every frame then has a
  NEEDS_CSUM virtio_net_hdr, as traffic from a host does

and the peak memory of one run of each vnetrx command (/usr/bin/time). Goals: issue 15, at
least 100,000 frames/s for --jsonl and at most 2x tcpdump, peak memory under 100 MB; issue 28,
--jsonl (also with --offload auto) within 1.5x tcpdump and --summary faster than tcpdump.
``--busy`` keeps every core busy with another process meanwhile; ``--offload-only`` times the
TCP/UDP capture's two commands alone.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from common import heading, interleaved, paired_ratio, round_options

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--kernel", default="6.12")
    parser.add_argument("--offload-only", action="store_true",
                        help="time only the TCP/UDP capture: tcpdump and --offload auto --jsonl")
    round_options(parser, 3)
    args = parser.parse_args()
    # the installed script next to this python (`python -m vnetrx` in the project root would
    # run the source tree, not the installed build)
    vnetrx = f"{Path(sys.executable).with_name('vnetrx')} replay"
    print(f"vnetrx {build_line()}")
    opts = f"--mergeable --mtu 9000 --kernel {args.kernel}"
    tcpdump = shutil.which("tcpdump")
    with tempfile.TemporaryDirectory(prefix="vnetrx-bench-") as tmp:
        mixed, real = Path(tmp) / "mixed.pcap", Path(tmp) / "tcp-udp.pcap"
        size = write_capture(real, args.frames, headers=True)
        if not args.offload_only:
            size = write_capture(mixed, args.frames)
        print(f"{args.frames:,} frames, {size / 1e9:.2f} GB of frame bytes in each capture")
        # (name, the reference it is compared with, shell line)
        commands = [
            ("tcpdump -nr FILE", None, f"{tcpdump} -nr {mixed}"),
            ("vnetrx replay --jsonl", "tcpdump -nr FILE", f"{vnetrx} --from {mixed} {opts} --jsonl"),
            ("vnetrx replay --summary", "tcpdump -nr FILE",
             f"{vnetrx} --from {mixed} {opts} --summary"),
            ("cat FILE | vnetrx replay --from - --summary", "tcpdump -nr FILE",
             f"cat {mixed} | {vnetrx} --from - {opts} --summary"),
            ("tcpdump -nr TCP/UDP-FILE", None, f"{tcpdump} -nr {real}"),
            ("TCP/UDP frames: --offload auto --jsonl", "tcpdump -nr TCP/UDP-FILE",
             f"{vnetrx} --from {real} {opts} --offload auto --jsonl"),
        ]
        if args.offload_only:
            commands = [c for c in commands if c[0].startswith(("TCP/UDP", "tcpdump -nr TCP"))]
        if not tcpdump:
            commands = [(n, None, c) for n, _, c in commands if not n.startswith("tcpdump")]
        times = interleaved({name: cmd for name, _, cmd in commands}, args.rounds, args.busy)
        peaks = {name: peak_kib(cmd) for name, _, cmd in commands if name.startswith("vnetrx")}
    print(heading(args.rounds, args.busy))
    for name, reference, _ in commands:
        runs = times[name]
        median = statistics.median(runs)
        ratio = (f"  {paired_ratio(runs, times[reference]):.2f}x"
                 f" {reference.split(' -nr ')[0]}" if reference else "")
        peak = f"  peak {peaks[name] / 1024:6.1f} MB" if name in peaks else ""
        print(f"  {name:<46} {median:6.2f} s  {args.frames / median:>10,.0f} frames/s{peak}{ratio}")


def peak_kib(cmd: str) -> int:
    """The peak RSS (KiB) of one run of a shell line (/usr/bin/time), its output discarded."""
    timer = shutil.which("time") or "/usr/bin/time"
    proc = subprocess.run([timer, "-f", "%M", "sh", "-c", cmd + " > /dev/null"],
                          capture_output=True, text=True, check=True)
    return int(proc.stderr.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
