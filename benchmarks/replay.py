"""Replay throughput on captures, side by side with tcpdump reading the same file.

Run: python benchmarks/replay.py [--frames 1000000] [--kernel 6.12] [--rounds 3] [--busy]
Writes three pcaps to a temporary directory (seeded):
  ISSUE: issue 28's capture, Ethernet/IPv4/TCP frames whose lengths are drawn from 60, 66,
         74, 200, 590, 1000, 1514, 3014 and 9014 bytes;
  MIXED: harder: 60, 66, 1514, 9014 or uniform 60..9014 bytes, zero-filled (with the uniform
         fifth about a quarter of the frames are a geometry never seen, a new decision);
  TCP/UDP: ISSUE's lengths with Ethernet + IPv4 + TCP (3 in 4) or UDP headers (issue 28's
           "TCP/UDP frames with --offload auto");
  MIXED TCP/UDP: MIXED's lengths with those headers (harder again: a new decision for about a
           quarter of the frames, every one a new header-and-geometry pair).
Then times whole commands, interleaved round by round (so that a busy moment hits every
command alike), their CPU time (user + system) and each one's median ratio to tcpdump on the
same file in the same round:

  tcpdump -nr FILE > /dev/null                        (the reference; skipped if not installed)
  TZ=UTC tcpdump -nr ISSUE > /dev/null                (ISSUE only: see below)
  vnetrx replay --from FILE --mergeable --mtu 9000 --kernel K --jsonl > /dev/null
  vnetrx replay --from FILE --mergeable --mtu 9000 --kernel K --summary
  ... --offload auto --jsonl: every frame then has a NEEDS_CSUM virtio_net_hdr (GSO beyond
  the MTU), as traffic from a host does
  cat FILE | vnetrx replay --from - ... --summary     (a pipe: the capture is streamed)

(the TCP/UDP captures with --offload auto --jsonl alone)

and the peak memory of one run of each vnetrx command (/usr/bin/time). Each command's "sys"
is the kernel's share of its CPU time: most of tcpdump's, as glibc's localtime() with TZ unset
stats /etc/localtime for every packet it prints and the capture is read 4 KiB a read(2), so
its time depends on what a system call costs on the machine; the ISSUE capture's commands
are also compared with tcpdump under TZ=UTC (no stat per packet). Goals: issue 15, at
least 100,000 frames/s for --jsonl and at most 2x tcpdump, peak memory under 100 MB; issue 28,
on its capture (ISSUE), --jsonl (also with --offload auto, and on TCP/UDP) within 1.5x tcpdump
and --summary faster than tcpdump. ``--busy`` keeps every core busy with another process meanwhile;
``--offload-only`` times the --offload auto commands alone (and their references).
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

from common import heading, interleaved_split, paired_ratio, round_options

from vnetrx.compiled import build_line

ISSUE_LENGTHS = (60, 66, 74, 200, 590, 1000, 1514, 3014, 9014)  # issue 28's capture
_TCP = (b"\0" * 12 + b"\x08\x00" + b"\x45" + b"\0" * 8 + b"\x06" + b"\0" * 10
        + b"\0" * 12 + b"\x50" + b"\0" * 7)
_UDP = b"\0" * 12 + b"\x08\x00" + b"\x45" + b"\0" * 8 + b"\x11" + b"\0" * 10 + b"\0" * 8


def write_capture(path: Path, frames: int, seed: int = 15, headers: bool = False,
                  issue: bool = False, udp: bool = True) -> int:
    """Every frame zero-filled; ``headers``: each starts with Ethernet, IPv4 and a TCP
    (20-byte) or UDP header (UDP every fourth frame, with ``udp``), what ``--offload auto``
    gives a NEEDS_CSUM header. Lengths: ``issue``, drawn from ISSUE_LENGTHS; otherwise 60, 66,
    1514, 9014 or uniform 60..9014."""
    rng = random.Random(seed)
    total = 0
    with path.open("wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        zeros = bytes(9014)
        for i in range(frames):
            length = (rng.choice(ISSUE_LENGTHS) if issue
                      else rng.choice([60, 66, 1514, 9014, rng.randint(60, 9014)]))
            out.write(struct.pack("<IIII", i // 1000, i % 1000, length, length))
            head = (_TCP if i % 4 or not udp else _UDP) if headers else b""
            out.write(head + zeros[: length - len(head)])
            total += length
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--kernel", default="6.12")
    parser.add_argument("--offload-only", action="store_true",
                        help="time only the captures with headers: tcpdump and --offload auto --jsonl")
    round_options(parser, 3)
    args = parser.parse_args()
    # the installed script next to this python (`python -m vnetrx` in the project root would
    # run the source tree, not the installed build)
    vnetrx = f"{Path(sys.executable).with_name('vnetrx')} replay"
    print(f"vnetrx {build_line()}")
    opts = f"--mergeable --mtu 9000 --kernel {args.kernel}"
    tcpdump = shutil.which("tcpdump")
    with tempfile.TemporaryDirectory(prefix="vnetrx-bench-") as tmp:
        # (label, file, write_capture's arguments): ISSUE is issue 28's (TCP alone)
        captures = [("ISSUE", 28, True, True, False), ("TCP/UDP", 28, True, True, True),
                    ("MIXED", 15, False, False, False), ("MIXED TCP/UDP", 15, True, False, True)]
        if args.offload_only:
            captures = [c for c in captures if c[2]]
        paths = {}
        for label, seed, headers, issue, udp in captures:
            paths[label] = Path(tmp) / (label.replace("/", "-").replace(" ", "-") + ".pcap")
            size = write_capture(paths[label], args.frames, seed, headers, issue, udp)
            print(f"  {label}: {size / 1e9:.2f} GB", end="")
        print(f" ({args.frames:,} frames each)")
        # (name, the reference it is compared with, shell line)
        commands: list[tuple[str, str | None, str]] = []
        for label, path in paths.items():
            reference = f"tcpdump -nr {label}"
            rows: list[tuple[str, str | None, str]] = [(reference, None,
                                                        f"{tcpdump} -nr {path}")]
            if label == "ISSUE":  # tcpdump without its stat of /etc/localtime per packet
                rows.append((f"{reference}, TZ=UTC", None, f"TZ=UTC {tcpdump} -nr {path}"))
            if label in ("ISSUE", "MIXED"):
                rows += [(f"{label}: --jsonl", reference, f"{vnetrx} --from {path} {opts} --jsonl"),
                         (f"{label}: --summary", reference,
                          f"{vnetrx} --from {path} {opts} --summary")]
            if label != "MIXED":
                rows.append((f"{label}: --offload auto --jsonl", reference,
                             f"{vnetrx} --from {path} {opts} --offload auto --jsonl"))
            if label == "ISSUE":
                rows.append((f"{label}: cat FILE | --from - --summary", reference,
                             f"cat {path} | {vnetrx} --from - {opts} --summary"))
            if args.offload_only:
                rows = [r for r in rows if r[1] is None or "offload" in r[0]]
            commands += rows
        if not tcpdump:
            commands = [(n, None, c) for n, _, c in commands if not n.startswith("tcpdump")]
        split = interleaved_split({name: cmd for name, _, cmd in commands}, args.rounds,
                                  args.busy)
        times = {name: [user + system for user, system in runs] for name, runs in split.items()}
        peaks = {name: peak_kib(cmd) for name, ref, cmd in commands if ref is not None}
    print(heading(args.rounds, args.busy))
    for name, ref, _ in commands:
        runs = times[name]
        median = statistics.median(runs)
        ratio = (f"  {paired_ratio(runs, times[ref]):.2f}x tcpdump" if ref
                 and ref in times else "")
        if ref and f"{ref}, TZ=UTC" in times:
            ratio += f" ({paired_ratio(runs, times[f'{ref}, TZ=UTC']):.2f}x with TZ=UTC)"
        peak = f"  peak {peaks[name] / 1024:6.1f} MB" if name in peaks else ""
        # the kernel's share of the CPU time (tcpdump's is most of it: a stat of /etc/localtime
        # per packet, glibc's localtime() with TZ unset, and 4 KiB reads; dear where system
        # calls are)
        system = statistics.median(s / (u + s) for u, s in split[name] if u + s)
        print(f"  {name:<46} {median:6.2f} s  {args.frames / median:>10,.0f} frames/s"
              f"  sys {system:4.0%}{peak}{ratio}")


def peak_kib(cmd: str) -> int:
    """The peak RSS (KiB) of one run of a shell line (/usr/bin/time), its output discarded."""
    timer = shutil.which("time") or "/usr/bin/time"
    proc = subprocess.run([timer, "-f", "%M", "sh", "-c", cmd + " > /dev/null"],
                          capture_output=True, text=True, check=True)
    return int(proc.stderr.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
