"""``replay --gro`` against the same replay without GRO, side by side (issue 26's goal: within
1.5x).

Run: python benchmarks/replay_gro.py [--frames 200000] [--kernel 6.12] [--rounds 5] [--busy]
     [--in-turn]

Writes a pcap of TCP/IPv4 traffic to a temporary directory: four bulk flows of 1514-byte frames
(1448 bytes of payload after 12 bytes of TCP options, IP and TCP checksums right), taking turns
in runs of 1 to 40 segments, PSH on every 32nd segment of a flow, and a 66-byte pure ACK of
another flow now and then (seeded). Then times whole commands, interleaved round by round:

  vnetrx replay --from FILE --mergeable --batch 64 --kernel K --jsonl > /dev/null   (reference)
  vnetrx replay --from FILE --mergeable --batch 64 --kernel K --gro --jsonl > /dev/null
  vnetrx replay --from FILE --mergeable --batch 64 --kernel K --gro --summary

and prints each command's CPU time (user + system; median over the rounds) and its median ratio
to the reference of the same round. ``--in-turn`` adds a harder capture, timed in the same
rounds: IN_TURN flows of 1514-byte frames one segment each in turn (nine or more flows never
merge: a device without a hash holds at most 8 skbs, and each new flow's segment completes the
oldest), so every frame becomes an skb of its own and a row; GRO is then all cost. ``--busy`` keeps every core busy with another process
meanwhile, as on a user's machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import struct
import sys
import tempfile
from pathlib import Path

from common import heading, interleaved, paired_ratio, round_options

from vnetrx.compiled import build_line
from vnetrx.packet import build_frame, headers_of, tcp_flow_frames

FLOWS = 4
IN_TURN = 16  # --in-turn's flows
SEGMENTS = 1024  # each flow's segments, reused in turn (their sequence numbers restart)


def flows() -> list[list[bytes]]:
    """Four flows of 1514-byte segments, each from its own source port; every 32nd has PSH."""
    headers = headers_of("tcp4", 12)
    out = []
    for n in range(FLOWS):
        template = bytearray(build_frame(1514, "tcp4", 12))
        struct.pack_into("!H", template, headers.transport, 40000 + n)
        frames = tcp_flow_frames(bytes(template), headers, SEGMENTS)
        for i in range(31, SEGMENTS, 32):  # PSH (and the checksum fixed by the same difference)
            frame = bytearray(frames[i])
            flags = headers.transport + 13
            frame[flags] |= 0x08
            check = struct.unpack_from("!H", frame, headers.transport + 16)[0]
            check -= 0x08
            check = (check & 0xFFFF) + (check >> 16) if check >= 0 else check + 0xFFFF
            struct.pack_into("!H", frame, headers.transport + 16, check & 0xFFFF)
            frames[i] = bytes(frame)
        out.append(frames)
    return out


def write_capture(path: Path, count: int, seed: int = 26) -> None:
    rng = random.Random(seed)
    every = flows()
    ack = build_frame(66, "tcp4", 12)
    at = [0] * FLOWS
    written = 0
    with path.open("wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        while written < count:
            flow = rng.randrange(FLOWS)
            for _ in range(min(rng.randint(1, 40), count - written)):
                frame = ack if rng.random() < 0.02 else every[flow][at[flow] % SEGMENTS]
                if frame is not ack:
                    at[flow] += 1
                out.write(struct.pack("<IIII", written // 1000, written % 1000, len(frame),
                                      len(frame)) + frame)
                written += 1


def write_in_turn(path: Path, count: int) -> None:
    """IN_TURN flows of 1514-byte segments, one segment of each in turn."""
    headers = headers_of("tcp4", 12)
    every = []
    for n in range(IN_TURN):
        template = bytearray(build_frame(1514, "tcp4", 12))
        struct.pack_into("!H", template, headers.transport, 40000 + n)
        every.append(tcp_flow_frames(bytes(template), headers, SEGMENTS))
    with path.open("wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for written in range(count):
            frame = every[written % IN_TURN][written // IN_TURN % SEGMENTS]
            out.write(struct.pack("<IIII", written // 1000, written % 1000, len(frame),
                                  len(frame)) + frame)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=200_000)
    parser.add_argument("--kernel", default="6.12")
    parser.add_argument("--in-turn", action="store_true",
                        help=f"also time a capture of {IN_TURN} flows in turn (no merges)")
    round_options(parser, 5)
    args = parser.parse_args()
    script = str(Path(sys.executable).with_name("vnetrx"))
    print(f"vnetrx {build_line()}; kernel {args.kernel}; {args.frames:,} frames")
    with tempfile.TemporaryDirectory() as tmp:
        captures = {"": Path(tmp) / "tcp.pcap"}
        write_capture(captures[""], args.frames)
        if args.in_turn:
            captures[f"{IN_TURN} flows in turn: "] = Path(tmp) / "in_turn.pcap"
            write_in_turn(captures[f"{IN_TURN} flows in turn: "], args.frames)
        commands = {}
        references = {}
        for label, capture in captures.items():
            base = [script, "replay", "--from", str(capture), "--mergeable", "--batch", "64",
                    "--kernel", args.kernel]
            references[label] = f"{label}--jsonl (reference)"
            commands[references[label]] = [*base, "--jsonl"]
            commands[f"{label}--gro --jsonl"] = [*base, "--gro", "--jsonl"]
            commands[f"{label}--gro --summary"] = [*base, "--gro", "--summary"]
        times = interleaved(commands, args.rounds, args.busy)
    print(heading(args.rounds, args.busy))
    for label, reference in references.items():
        for name, runs in times.items():
            if not name.startswith(label) or (not label and name[0].isdigit()):
                continue
            ratio = paired_ratio(runs, times[reference])
            print(f"  replay ... {name:<40} {statistics.median(runs):6.2f} s  {ratio:5.2f}x")


if __name__ == "__main__":
    main()
