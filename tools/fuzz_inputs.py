"""Fuzz the input readers: damaged captures (pcap and pcapng, both byte orders) through the
capture reader, and damaged JSON documents through replay's frame reader. Counts tracebacks
(any exception other than vnetrx's one-line errors) and hangs (an input taking more than --slow
seconds). Whether a damaged capture that is read is one tcpdump would read too is checked by
tests/replay/test_capture_battery.py against tcpdump itself.

Run: python tools/fuzz_inputs.py [--inputs N] [--seed S] [--slow SECONDS]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import struct
import sys
import tempfile
import time
from collections.abc import Callable

from vnetrx.errors import VnetrxError
from vnetrx.replay.capture import read_capture
from vnetrx.replay.frames import open_frames


def _block(order: str, kind: int, body: bytes) -> bytes:
    body += bytes(-len(body) % 4)
    total = 12 + len(body)
    return struct.pack(order + "II", kind, total) + body + struct.pack(order + "I", total)


def seeds() -> list[bytes]:
    """Small valid captures: pcap (microsecond and nanosecond magic) and pcapng, both orders."""
    out = []
    for order in "<>":
        for magic in (0xA1B2C3D4, 0xA1B23C4D):
            body = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1)
            for n in (60, 42, 70, 14, 1514):
                body += (struct.pack(order + "IIII", 1, 2, n, n + 10) + bytes(range(256))[:n]
                         + bytes(max(0, n - 256)))
            out.append(body)
        ng = _block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))
        ng += _block(order, 1, struct.pack(order + "HHI", 1, 0, 128)
                     + struct.pack(order + "HHB3x", 9, 1, 6) + struct.pack(order + "HH", 0, 0))
        ng += _block(order, 6, struct.pack(order + "IIIII", 0, 0, 0, 60, 60) + bytes(60))
        ng += _block(order, 5, bytes(8))
        ng += _block(order, 3, struct.pack(order + "I", 100) + bytes(100))
        ng += _block(order, 6, struct.pack(order + "IIIII", 0, 0, 0, 30, 64) + bytes(30))
        out.append(ng)
    return out


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        at = rng.randrange(len(buf)) if buf else 0
        if kind < 0.4 and buf:  # a byte
            buf[at] = rng.randrange(256)
        elif kind < 0.7 and len(buf) >= 4:  # a 32-bit word: a length, a type, a magic
            at -= at % 4
            value = rng.choice([0, 1, 0xFFFFFFFF, 0x7FFFFFFF, rng.randrange(1 << 32),
                                int.from_bytes(buf[at:at + 4], "little") + rng.choice((-4, 4))])
            buf[at:at + 4] = (value & 0xFFFFFFFF).to_bytes(4, rng.choice(("little", "big")))
        elif kind < 0.85:  # cut
            del buf[at:]
        else:  # repeat a slice
            buf[at:at] = buf[at:at + rng.randint(1, 64)]
    return bytes(buf)


def read_all(data: bytes) -> int:
    return sum(1 for _ in read_capture(io.BufferedReader(io.BytesIO(data)), "fuzz"))  # type: ignore[arg-type]


def json_mutant(rng: random.Random) -> bytes:
    shapes: list[Callable[[], object]] = [
        lambda: [rng.randint(-5, 70000) for _ in range(rng.randint(0, 50))],
        lambda: [{"len": rng.choice([0, 60, 1514, 65535, 65536, -1, "x", None, 1.5]),
                  "hdr": rng.choice(["01000000000000000000", "zz", "", "00" * 30, None])}
                 for _ in range(rng.randint(0, 20))],
        lambda: {"len": 60},
        lambda: "[" * rng.randint(1, 3000),
        lambda: [[[[60]]]],
        lambda: ["60"] * rng.randint(0, 100),
    ]
    doc = rng.choice(shapes)()
    text = doc if isinstance(doc, str) else json.dumps(doc)
    if rng.random() < 0.3 and text:
        at = rng.randrange(len(text))
        text = text[:at] + rng.choice(["", "]", "}", ",", "\x00", "9" * 5000, "{"]) + text[at:]
    return text.encode()


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
# the other tools' traces and the lab's logs and recordings, and the command that reads each
TEXT_READERS = (
    ("traces", ("observe", "--from-trace")),
    ("lab", ("lab", "virtio", "--from-log")),
    ("vhost", ("lab", "vhost", "--from-log")),
    ("observe", ("observe", "--from-recording")),
    ("gro", ("replay", "--gro", "--from")),
)
NUMBERS = ["0", "-1", "4294967296", "18446744073709551616", "9" * 40, "0x", "nan", "", "1e309"]


def text_mutant(data: bytes, rng: random.Random) -> bytes:
    """A trace, log or JSON document damaged as real ones are: cut, lines lost or repeated,
    a number replaced by an odd one, bytes flipped."""
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 4)):
        how = rng.random()
        if how < 0.25 and len(lines) > 1:
            del lines[rng.randrange(len(lines))]
        elif how < 0.4:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
        elif how < 0.75:
            i = rng.randrange(len(lines))
            words = lines[i].split(b" ")
            digits = [j for j, w in enumerate(words) if any(c in b"0123456789" for c in w)]
            if digits:
                j = rng.choice(digits)
                head = words[j].split(b"=", 1)[0] + b"=" if b"=" in words[j] else b""
                words[j] = head + rng.choice(NUMBERS).encode()
                lines[i] = b" ".join(words)
        else:
            out = bytearray(b"\n".join(lines))
            if out:
                out[rng.randrange(len(out))] = rng.randrange(256)
            lines = bytes(out).split(b"\n")
    out = b"\n".join(lines)
    return out[:rng.randrange(len(out) + 1)] if rng.random() < 0.2 else out


def text_inputs(count: int, seed: int, tmp: str, folders: tuple[str, ...] = ()
                ) -> tuple[int, list[str]]:
    """``count`` damaged traces, logs and recordings through the commands that read them
    (in-process): (runs, failures) where a failure is a traceback or not one error line."""
    from click.testing import CliRunner

    from vnetrx.cli import cli

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from battery import verdict

    rng = random.Random(seed)
    sources = []
    for folder, command in TEXT_READERS:
        if folders and folder not in folders:
            continue
        for name in sorted(os.listdir(os.path.join(DATA, folder))):
            if not name.endswith(".md"):
                with open(os.path.join(DATA, folder, name), "rb") as f:
                    sources.append((name, command, f.read()))
    runner = CliRunner()
    failures = []
    path = os.path.join(tmp, "damaged")
    for i in range(count):
        name, command, data = rng.choice(sources)
        with open(path, "wb") as f:
            f.write(text_mutant(data, rng))
        argv = [*command, path]
        problem = verdict(argv, runner.invoke(cli, argv))
        if problem is not None:
            kept = os.path.join(tmp, f"failed-{i}-{name}")
            os.replace(path, kept)
            failures.append(f"{problem} (from {name}, kept as {kept})")
    return count, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--slow", type=float, default=2.0)
    parser.add_argument("--texts", type=int, default=0,
                        help="also this many damaged traces, logs and recordings (tests/data) "
                        "through the commands that read them")
    parser.add_argument("--readers", default="",
                        help="with --texts: only these tests/data folders, comma-separated "
                        f"({', '.join(f for f, _ in TEXT_READERS)}); lab vhost --from-log "
                        "is slow (a prediction process per case)")
    args = parser.parse_args()
    if args.texts:
        kept = tempfile.mkdtemp(prefix="vnetrx-fuzz-")
        folders = tuple(f for f in args.readers.split(",") if f)
        runs, failed = text_inputs(args.texts, args.seed, kept, folders)
        print(f"{runs} damaged traces, logs and recordings: {len(failed)} failed (kept in {kept})")
        for line in failed[:20]:
            print("  " + line)
        if failed:
            return 1
    rng = random.Random(args.seed)
    originals = seeds()
    whole = [read_all(s) for s in originals]
    tracebacks: list[str] = []
    slow: list[str] = []
    counts = {"capture": 0, "json": 0, "refused": 0, "read": 0}
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input")
        for i in range(args.inputs):
            t0 = time.monotonic()
            if i % 5:  # four in five: a capture
                counts["capture"] += 1
                data = mutate(rng.choice(originals), rng)
                try:
                    read_all(data)
                    counts["read"] += 1
                except VnetrxError:
                    counts["refused"] += 1
                except Exception as exc:
                    tracebacks.append(f"capture {data[:32].hex()}...: {exc!r}")
            else:
                counts["json"] += 1
                data = json_mutant(rng)
                with open(path, "wb") as f:
                    f.write(data)
                try:
                    frames = open_frames(path)
                    for _ in frames.items:
                        pass
                    counts["read"] += 1
                except VnetrxError:
                    counts["refused"] += 1
                except Exception as exc:
                    tracebacks.append(f"json {data[:60]!r}: {exc!r}")
            if time.monotonic() - t0 > args.slow:
                slow.append(f"input {i}: {time.monotonic() - t0:.1f} s")
    print(f"{args.inputs} inputs ({counts['capture']} captures, {counts['json']} JSON): "
          f"{counts['read']} read, {counts['refused']} refused with one line, "
          f"{len(tracebacks)} tracebacks, {len(slow)} slower than {args.slow} s "
          f"({time.monotonic() - start:.0f} s; {len(whole)} seed captures of "
          f"{', '.join(map(str, whole))} records)")
    for line in tracebacks[:20] + slow[:20]:
        print("  " + line)
    return 1 if tracebacks or slow else 0


if __name__ == "__main__":
    sys.exit(main())
