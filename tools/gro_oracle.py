"""Run the GRO oracle's case matrix on the running kernel and write the observations:

    nice -n 10 python tools/gro_oracle.py [OUT.json] [--only NAME,...] [--repeats N]

(root; default OUT tests/data/gro/linux-<release>.json). Each case is a burst description
(vnetrx.live.gro_cases) and tap options (gro_cases.tap_options); the file stores both,
the SHA-256 of the bytes written (a test rebuilds them from the description and checks it), the
first frame in hex, and what the kernel did: every input's pre-GRO skb and verdict, and every
skb that left GRO (vnetrx.live.gro.analyse).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from vnetrx.live import gro_frames
from vnetrx.live.gro import run_cases
from vnetrx.live.gro_cases import cases, tap_options

ROOT = Path(__file__).resolve().parents[1]
def writes_digest(burst: dict[str, Any]) -> str:
    """SHA-256 over every write's bytes (vnet header + frame), in order."""
    digest = hashlib.sha256()
    for write in gro_frames.build(burst):
        digest.update(write.hdr + write.frame)
    return digest.hexdigest()


def main(argv: list[str]) -> int:
    out = ROOT / "tests" / "data" / "gro" / f"linux-{os.uname().release.split('-')[0]}.json"
    only: set[str] = set()
    repeats = 3
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--only":
            only = set(args.pop(0).split(","))
        elif arg == "--repeats":
            repeats = int(args.pop(0))
        else:
            out = Path(arg)
    todo = [c for c in cases() if not only or c["name"] in only]
    results = []
    start = time.monotonic()

    def keep(case: dict[str, Any], result: dict[str, Any]) -> None:
        writes = gro_frames.build(case["burst"])
        results.append({
            "name": case["name"], "burst": case["burst"], "tap": tap_options(case),
            "writes_sha256": writes_digest(case["burst"]),
            "frame0": (writes[0].hdr + writes[0].frame).hex(), **result})
        skbs = result["observed"]["skbs"]
        print(f"{case['name']:28} verdicts "
              f"{''.join(str(v['verdict'])[0] for v in result['observed']['inputs'])} "
              f"skbs {[s['len'] for s in skbs]} retries {len(result['retries'])} "
              f"{'' if result['deterministic'] else 'NOT DETERMINISTIC'}", flush=True)

    try:
        run_cases(todo, repeats, keep)
    except KeyboardInterrupt:
        print("interrupted: nothing written", file=sys.stderr)
        return 130
    doc = {
        "kernel": os.uname().release,
        "made_by": "tools/gro_oracle.py (vnetrx.live.gro)",
        "seconds": round(time.monotonic() - start, 1),
        "notes": [
            "len is from the network header (as net:netif_receive_skb); data, network_header"
            " and csum_start are offsets from skb->head; headlen = len - data_len",
            "verdicts: napi_gro_receive_exit / napi_gro_frags_exit (enum gro_result)",
            "frames/writes: indices of the inputs / writes an skb carries",
        ],
        "bursts": sum(r["repeats"] + len(r["retries"]) for r in results),
        "retried": sum(len(r["retries"]) for r in results),
        "cases": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    # one case per line: small diffs when the kernel changes one answer
    body = ",\n".join(json.dumps(case, separators=(",", ":")) for case in results)
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, indent=1)
    out.write_text(head[:-2] + ',\n "cases": [\n' + body + "\n]}\n")
    json.loads(out.read_text())
    print(f"{len(results)} cases -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
