"""Record what vnetrx prints for a broad matrix of command lines, to prove a refactor changed no
output (or exactly the outputs a fix meant to change).

Run: python tools/output_snapshot.py record DIR     (once before the change)
     python tools/output_snapshot.py compare DIR    (after it: lists every command whose
                                                     output differs, exit 1 if any)

Each command runs in-process through click's CliRunner (COLUMNS=100, NO_COLOR) and its
stdout, stderr and exit code are stored: small outputs in full, large ones (whole sweeps,
long replays) as a SHA-256 plus their first lines, so a difference can be located.
Only public command lines are used, so the same script works on both sides of a refactor.

--normalize KEYS: before storing, drop these JSON keys everywhere (and the CSV columns and text
lines that carry them), and read FUNC=OLD pairs as step-function renames: to prove that a change
which adds fields changed nothing else. Record and compare with the same --normalize.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from click.testing import CliRunner

from vnetrx.cli import cli

VIRTIO_KERNELS = ["5.12", "5.13", "5.15", "6.1", "6.1.0", "6.6", "6.12", "6.12.0", "6.18", "7.2",
                  "7.3"]
TAP_KERNELS = ["4.13", "4.14", "5.12", "5.15", "6.1", "6.6", "6.12", "6.18", "7.3"]
MODES = {
    "small": [],
    "mergeable": ["--mergeable"],
    "big": ["--big"],
    "mtu9000": ["--mtu", "9000"],
    "mrg-idx20": ["--mergeable", "--buffer-index", "20"],
    "mrg-idx1": ["--mergeable", "--buffer-index", "1"],
    "mrg-ewma1000": ["--mergeable", "--ewma", "1000"],
    "mrg-mtu9000": ["--mergeable", "--mtu", "9000"],
    "mrg-buf32768": ["--mergeable", "--buf-len", "32768"],
    "mrg-buf32760": ["--mergeable", "--buf-len", "32760"],
    "small-idx5": ["--buffer-index", "5"],
}
LENGTHS = [1, 13, 14, 15, 60, 100, 128, 129, 1000, 1204, 1205, 1400, 1514, 1518, 1519, 3000,
           3744, 3745, 4096, 8000, 9000, 16352, 16353, 32768, 65535]
TAP_VARIANTS = {
    "default": [],
    "blocking": ["--blocking"],
    "sndbuf": ["--sndbuf", "65536"],
    "nohdr": ["--no-vnet-hdr"],
    "hdr12": ["--vnet-hdr-sz", "12"],
    "xdp": ["--xdp"],
    "csum": ["--hdr", "01000000000022001000"],
    "valid": ["--hdr", "02"],
}
TAP_LENGTHS = [13, 14, 60, 1000, 1514, 3456, 3457, 3712, 3713, 4000, 9000, 16384, 65535]
BIG = 4096  # outputs longer than this are stored as a hash and a head


def commands() -> Iterator[tuple[str, list[str]]]:
    for kernel in VIRTIO_KERNELS:
        for mode, args in MODES.items():
            for length in LENGTHS:
                base = ["trace", "--len", str(length), "--kernel", kernel, *args]
                yield f"trace/{kernel}/{mode}/{length}.json", [*base, "--json"]
                if length in (60, 1000, 1514, 9000, 65535):
                    yield f"trace/{kernel}/{mode}/{length}.txt", base
        for hdr in ("10", "20", "24"):
            yield (f"trace/{kernel}/hdr{hdr}.json",
                   ["trace", "--len", "1000", "--kernel", kernel, "--hdr-len", hdr, "--json"])
    for kernel in TAP_KERNELS:
        for variant, args in TAP_VARIANTS.items():
            for length in TAP_LENGTHS:
                base = ["trace", "--path", "tap", "--len", str(length), "--kernel", kernel, *args]
                yield f"tap/{kernel}/{variant}/{length}.json", [*base, "--json"]
                if length in (1000, 9000):
                    yield f"tap/{kernel}/{variant}/{length}.txt", base
        for source in ("task-frag", "per-queue", "full-page"):
            yield (f"tap/{kernel}/frag-{source}.json",
                   ["trace", "--path", "tap", "--len", "1514", "--kernel", kernel,
                    "--frag-source", source, "--json"])
    for kernel in VIRTIO_KERNELS:
        for mode in ("small", "mergeable", "big", "mtu9000", "mrg-idx20", "mrg-ewma1000"):
            args = MODES[mode]
            yield (f"sweep/{kernel}/{mode}.jsonl",
                   ["sweep", "--len", "1-65535", "--kernel", kernel, *args, "--jsonl"])
            yield (f"sweep/{kernel}/{mode}.txt",
                   ["sweep", "--len", "1-20000:3", "--kernel", kernel, *args])
        yield (f"sweep/{kernel}/mergeable.csv",
               ["sweep", "--len", "1-9000:7", "--kernel", kernel, "--mergeable", "--csv"])
        yield (f"sweep/{kernel}/mergeable-ranges.json",
               ["sweep", "--len", "1-65535", "--kernel", kernel, "--mergeable", "--json"])
    for kernel in TAP_KERNELS:
        yield (f"sweep/{kernel}/tap.jsonl",
               ["sweep", "--path", "tap", "--len", "1-65535:13", "--kernel", kernel, "--jsonl"])
    rng = random.Random(20261201)
    mixed = ",".join(str(rng.choice([60, 66, 1514, rng.randint(60, 9014)])) for _ in range(400))
    replays = {
        "jumbo": ["--len", "60x11,9014,9018", "--mergeable", "--mtu", "9000"],
        "ramp": ["--len", "60,1000,3400-3500:8", "--mergeable"],
        "mixed": ["--len", mixed, "--mergeable", "--mtu", "9000", "--batch", "8"],
        "mixed-gso": ["--len", mixed, "--mergeable", "--guest-gso", "--ring-size", "64"],
        "small": ["--len", "60,1000,1514,1518,1519,14,13x3", "--ring-size", "16"],
        "big-frames": ["--len", "65535x4,60x40", "--mergeable", "--ring-size", "1024"],
        "polls": ["--len", "9000x40", "--mergeable", "--mtu", "9000", "--polls", "33,7"],
        "hash": ["--len", "1000x70", "--mergeable", "--hdr-len", "20"],
    }
    for kernel in VIRTIO_KERNELS:
        for name, args in replays.items():
            if name == "hash" and kernel in ("5.12", "5.13", "5.15"):
                continue
            base = ["replay", "--kernel", kernel, *args]
            yield f"replay/{kernel}/{name}.jsonl", [*base, "--jsonl"]
            yield f"replay/{kernel}/{name}.txt", base
            if name in ("jumbo", "ramp"):
                yield f"replay/{kernel}/{name}.json", [*base, "--json"]
                yield f"replay/{kernel}/{name}-show.txt", [*base, "--show", "2"]
    for a, b in (("5.12", "5.13"), ("6.1", "6.12"), ("6.18", "7.3"), ("6.1.0", "6.1")):
        for args in (["--len", "1000", "--mergeable"], ["--len", "9000", "--big"],
                     ["--len", "1514", "--mergeable", "--buffer-index", "20"]):
            base = ["diff", "--kernel", a, "--kernel", b, "--", *args]
            yield f"diff/{a}-{b}/{'_'.join(args)}.json", [*base, "--json"]
            yield f"diff/{a}-{b}/{'_'.join(args)}.txt", base
    for hexes in ("01033600a8052200100001", "0105 0000 e803 2200 0600", "00", "02",
                  "0103360022000600"):
        for kernel in ("6.1", "6.12", "6.18"):
            yield (f"decode/{kernel}/{hexes.replace(' ', '')}.txt",
                   ["decode", *hexes.split(), "--len", "3000", "--kernel", kernel])
            yield (f"decode/{kernel}/{hexes.replace(' ', '')}.json",
                   ["decode", *hexes.split(), "--len", "3000", "--kernel", kernel, "--json"])
    for kernel in ("3.15", "3.16", "4.13", "4.14", "5.15", "6.1", "6.18"):
        for args in ([], ["--tcp"], ["--ipv6"], ["--no-mergeable"], ["--payload", "64,4096"]):
            name = "_".join(args) or "default"
            yield f"headroom/{kernel}/{name}.json", ["headroom", "--kernel", kernel, *args,
                                                     "--json"]
            yield f"headroom/{kernel}/{name}.txt", ["headroom", "--kernel", kernel, *args]
    yield "kernels.txt", ["kernels", "--changes"]
    yield "kernels.json", ["kernels", "--json", "--changes"]


def _strip(value: object, drop: set[str], renames: dict[str, str]) -> object:
    if isinstance(value, dict):
        return {k: _strip(v, drop, renames) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_strip(v, drop, renames) for v in value]
    if isinstance(value, str):
        for new, old in renames.items():
            value = value.replace(new, old)
    return value


def normalize(text: str, drop: set[str], renames: dict[str, str]) -> str:
    """``text`` without the dropped keys: JSON and JSONL re-dumped, CSV columns removed, text
    lines naming a dropped key removed and runs of spaces and rules collapsed."""
    if not drop and not renames:
        return text
    try:
        return json.dumps(_strip(json.loads(text), drop, renames), indent=1)
    except ValueError:
        pass
    lines = text.splitlines()
    try:
        docs = [json.loads(line) for line in lines if line.strip()]
        if docs and all(isinstance(d, dict) for d in docs):
            return "\n".join(json.dumps(_strip(d, drop, renames)) for d in docs)
    except ValueError:
        pass
    if lines and "," in lines[0] and lines[0].startswith("frame_len,"):
        header = lines[0].split(",")
        keep = [i for i, name in enumerate(header) if name not in drop]
        return "\n".join(",".join(line.split(",")[i] for i in keep) for line in lines)
    out = []
    for line in lines:
        if any(line.lstrip().startswith(key) for key in ("offload:",)):
            continue
        for new, old in renames.items():
            line = line.replace(new, old)
        out.append(re.sub(r"[ ─-]+", " ", line).rstrip())
    return "\n".join(out)


def run(args: list[str], drop: set[str] = frozenset(),  # type: ignore[assignment]
        renames: dict[str, str] | None = None) -> dict[str, object]:
    runner = CliRunner(env={"COLUMNS": "100", "NO_COLOR": "1"})
    result = runner.invoke(cli, args)
    out: dict[str, object] = {"args": args, "exit": result.exit_code}
    for name, raw in (("stdout", result.stdout), ("stderr", result.stderr)):
        text = normalize(raw, drop, renames or {})
        if len(text) > BIG:
            out[name + "_sha256"] = hashlib.sha256(text.encode()).hexdigest()
            out[name + "_head"] = text[:BIG]
            out[name + "_len"] = len(text)
        else:
            out[name] = text
    if result.exception and not isinstance(result.exception, SystemExit):
        out["exception"] = repr(result.exception)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["record", "compare"])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--only", default="", help="run only names starting with this")
    parser.add_argument("--normalize", default="", help="KEY,KEY,NEW=OLD,...: see above")
    args = parser.parse_args()
    items = [x for x in args.normalize.split(",") if x]
    drop = {x for x in items if "=" not in x}
    renames = dict(x.split("=", 1) for x in items if "=" in x)
    changed = 0
    total = 0
    for name, argv in commands():
        if not name.startswith(args.only):
            continue
        total += 1
        path = args.dir / (name + ".snap.json")
        result = run(argv, drop, renames)
        if args.action == "record":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(result, indent=1))
            continue
        if not path.exists():
            print(f"NEW     {name}")
            continue
        before = json.loads(path.read_text())
        if before != result:
            changed += 1
            keys = sorted(k for k in set(before) | set(result) if before.get(k) != result.get(k))
            print(f"CHANGED {name}: {', '.join(keys)}   vnetrx {' '.join(argv)[:160]}")
    print(f"{total} command lines, {changed} changed", file=sys.stderr)
    sys.exit(1 if changed else 0)


if __name__ == "__main__":
    main()
