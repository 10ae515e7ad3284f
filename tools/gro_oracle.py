"""Run the GRO oracle's case matrix on the running kernel and write the observations:

    nice -n 10 python tools/gro_oracle.py [OUT.json] [--only NAME,...] [--repeats N]

(root; default OUT tests/data/gro/linux-<release>.json). Each case is a burst description
(vnetrx.live.gro_frames) and tap options (vnetrx.live.gro.tap_options); the file stores both,
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
from vnetrx.live.gro import run_cases, tap_options

ROOT = Path(__file__).resolve().parents[1]
MSS = 1448


def _case(name: str, burst: dict[str, Any], **tap: Any) -> dict[str, Any]:
    return {"name": name, "burst": burst, **tap}


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    # contiguous full-size segments: MAX_SKB_FRAGS (17) and the 64 KiB limit (45 vs 46)
    out.extend(_case(f"seg{n}", {"segments": n})
               for n in (2, 3, 8, 16, 17, 18, 19, 20, 33, 34, 35, 36, 44, 45, 46, 47, 50))
    out.extend(_case(f"seg{n}-blocking", {"segments": n}, blocking=True)  # tun_alloc_skb
               for n in (2, 8, 17, 18, 19, 35, 45, 46))
    # payload sizes; 3390 is the largest frame tun_build_skb takes (3456), 3391 is not
    for size in (1, 100, 536, 1000, 1448, 3000, 3390, 3391, 8000):
        mtu = 9000 if size + 66 > 1514 else None
        out.append(_case(f"payload{size}", {"segments": 8, "payload": size}, mtu=mtu))
        out.append(_case(f"payload{size}-blocking", {"segments": 8, "payload": size},
                         mtu=mtu, blocking=True))
    out.append(_case("payload8000-seg12", {"segments": 12, "payload": 8000}, mtu=9000))
    out.append(_case("payload1000-seg70", {"segments": 70, "payload": 1000}))
    out.append(_case("no-timestamps", {"segments": 8, "timestamps": False}))
    # flags and header differences
    out.extend(_case(f"psh{k}", {"segments": 8, "psh": [k]}) for k in (0, 3, 7))
    out.extend(_case(f"{flag}3", {"segments": 8, flag: [3]})
               for flag in ("fin", "urg", "cwr", "rst", "syn"))
    out.append(_case("cwr0", {"segments": 8, "cwr": [0]}))
    out.append(_case("seq-gap4", {"segments": 8, "seq_gap": {"at": 4, "bytes": MSS}}))
    out.append(_case("tsval4", {"segments": 8, "tsval_change": [4]}))
    out.append(_case("window4", {"segments": 8, "window_change": [4]}))
    out.append(_case("ack4", {"segments": 8, "ack_change": [4]}))
    out.append(_case("ttl4", {"segments": 8, "ttl_change": [4]}))
    out.append(_case("short-last", {"segments": 8, "payload": [MSS] * 7 + [1000]}))
    out.append(_case("short-middle", {"segments": 8, "payload": [MSS] * 3 + [1000] + [MSS] * 4}))
    out.append(_case("longer-second", {"segments": 8, "payload": [1000] + [MSS] * 7}))
    # IP ID rules (6.18: fixed allowed with or without DF; DF must match)
    out.extend(_case(f"ipid-{ipid}-{'df' if df else 'nodf'}",
                     {"segments": 8, "ipid": ipid, "df": df})
               for ipid in ("inc", "fixed") for df in (True, False))
    out.append(_case("tos4", {"segments": 8, "tos_change": [4]}))
    out.append(_case("df-change4", {"segments": 8, "df_change": [4]}))
    out.append(_case("ip-options4", {"segments": 8, "ip_options": [4]}))
    out.append(_case("more-fragments4", {"segments": 8, "more_fragments": [4]}))
    out.append(_case("udp4-between", {"segments": 8, "udp": [4]}))
    out.append(_case("non-ip-between", {"segments": 8, "other": [4]}))
    out.append(_case("ipv6-tclass4", {"family": 6, "segments": 8, "tos_change": [4]}))
    out.append(_case("ipv6-flowlabel4", {"family": 6, "segments": 8,
                                         "flowlabel_change": [4]}))
    out.append(_case("ipv6-hoplimit4", {"family": 6, "segments": 8, "ttl_change": [4]}))
    # gro_max_size (IFLA_GRO_MAX_SIZE) and BIG TCP (IPv4 also needs gro_ipv4_max_size)
    out.append(_case("gro-max-size32768", {"segments": 30}, gro_max_size=32768))
    out.append(_case("ipv6-big-tcp", {"family": 6, "segments": 100}, gro_max_size=185000))
    out.append(_case("ipv4-gro-max-size-only", {"segments": 100}, gro_max_size=185000))
    out.append(_case("ipv4-big-tcp", {"segments": 100}, gro_max_size=185000,
                     gro_ipv4_max_size=185000))
    out.append(_case("bad-tcp-csum3", {"segments": 8, "bad_tcp_csum": [3]}))
    out.append(_case("bad-ip-csum3", {"segments": 8, "bad_ip_csum": [3]}))
    # interleaved flows: 8 fit the bucket (MAX_GRO_SKBS), the 9th evicts the oldest
    out.extend(_case(f"flows{flows}", {"segments": 3 * flows, "flows": flows})
               for flows in (2, 8, 9))
    out.extend(_case(f"ipv6-seg{n}", {"family": 6, "segments": n}) for n in (8, 44, 45, 46))
    out.append(_case("ipv6-psh3", {"family": 6, "segments": 8, "psh": [3]}))
    # virtio_net_hdr: DATA_VALID, NEEDS_CSUM, none; a GSO frame (DODGY) in the middle
    for vnet in ("none", "data_valid", "needs_csum"):
        out.append(_case(f"vnet-{vnet}", {"segments": 8, "vnet": vnet}, vnet_hdr=True))
        out.append(_case(f"vnet-{vnet}-blocking", {"segments": 8, "vnet": vnet}, vnet_hdr=True,
                         blocking=True))
    out.append(_case("vnet-gso2", {"segments": 5, "vnet": "none",
                                   "gso": {"at": 2, "segments": 4}}, vnet_hdr=True))
    out.append(_case("vnet-gso0", {"segments": 3, "vnet": "none",
                                   "gso": {"at": 0, "segments": 4}}, vnet_hdr=True))
    out.append(_case("ipv6-vnet-gso2", {"family": 6, "segments": 5, "vnet": "none",
                                        "gso": {"at": 2, "segments": 4}}, vnet_hdr=True))
    # IFF_NAPI_FRAGS: napi_gro_frags, napi_complete after every write
    out.extend(_case("napi-frags" + ("-split" + "-".join(map(str, split)) if split else ""),
                     {"segments": 8, "split": list(split)}, napi_frags=True)
               for split in ((), (14,), (66,), (66, 566, 1066)))
    # knobs: no flush timeout (each write's poll flushes), GRO off, threaded NAPI
    out.append(_case("timeout0", {"segments": 8}, gro_flush_timeout=0))
    out.append(_case("gro-off", {"segments": 8}, gro=False))
    # design 1: threaded NAPI, writer (SCHED_FIFO) and NAPI kthread pinned to one CPU: the
    # burst is one poll (at most the NAPI weight, 64: then the budget flush)
    pinned: tuple[tuple[str, dict[str, Any]], ...] = (
        ("seg8", {"segments": 8}), ("seg18", {"segments": 18}), ("seg19", {"segments": 19}),
        ("seg45", {"segments": 45}), ("seg46", {"segments": 46}), ("seg70", {"segments": 70}),
        ("psh3", {"segments": 8, "psh": [3]}), ("flows8", {"segments": 24, "flows": 8}),
        ("flows9", {"segments": 27, "flows": 9}),
        ("bad-tcp-csum3", {"segments": 8, "bad_tcp_csum": [3]}))
    out.extend(_case(f"{name}-threaded-pinned", burst, gro_flush_timeout=0, threaded="pinned")
               for name, burst in pinned)
    out.append(_case("seg8-blocking-threaded-pinned", {"segments": 8}, gro_flush_timeout=0,
                     threaded="pinned", blocking=True))
    return out


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
