"""Files in other tools' shapes (pwru's JSON and text, retis's events), built from vnetrx's own
recording of eth0 (tests/data/observe): the capture parsers' tests (test_captures.py) and
``vnetrx observe --from-trace``'s (tests/live/test_observe_formats.py) read them."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tests import DATA as TESTS_DATA

RECORDING = TESTS_DATA / "observe" / "eth0-6.18.44-gro-download.json"


def records(kind: str) -> list[dict[str, Any]]:
    doc = json.loads(RECORDING.read_text())
    return [r for r in doc["records"] if r["kind"] == kind]


def skb_dump(r: dict[str, Any]) -> str:
    """A sk_buff as bpf_snprintf_btf prints it with flags 0: members in struct order, zero
    ones left out, pointers hashed, bitfields in hex, protocol as the raw __be16."""
    members = [
        " (union){", "  .dev = (struct net_device *)0x00000000d3c1a2b4,", " },",
        f" .len = (unsigned int){r['len']},",
        f" .data_len = (unsigned int){r['data_len']}," if r["data_len"] else "",
        " .queue_mapping = (__u16)1,",
        f" .ip_summed = (__u8){r['ip_summed']:#x}," if r["ip_summed"] else "",
        f" .hash = (__u32){r['hash']}," if r["hash"] else "",
        " .protocol = (__be16)8,",  # htons(ETH_P_IP) read on a little-endian machine
        " .headers = (struct){", "  .protocol = (__be16)8,",
        f"  .mac_header = (__u16){r['mac_header']},", " },",
        f" .mac_header = (__u16){r['mac_header']},",
        f" .tail = (sk_buff_data_t){r['tail']},", f" .end = (sk_buff_data_t){r['end']},",
        " .head = (unsigned char *)0x000000007524fd8b,",
        " .data = (unsigned char *)0x000000007524fd8b,",
        f" .truesize = (unsigned int){r['truesize']},",
        " .users = (refcount_t){", "  .refs = (atomic_t){", "   .counter = (int)1,", "  },",
        " },",
    ]
    return "\n(struct sk_buff){\n" + "\n".join(m for m in members if m) + "\n}"


def shinfo_dump(r: dict[str, Any]) -> str:
    members = [
        f" .nr_frags = (__u8){r['nr_frags']}," if r["nr_frags"] else "",
        f" .gso_size = (short unsigned int){r['gso_size']}," if r["gso_size"] else "",
        f" .gso_segs = (short unsigned int){r['gso_segs']}," if r["gso_segs"] else "",
        " .frags = (skb_frag_t[])[",
        *(f"  (struct skb_frag){{\n   .len = (unsigned int){f['len']},\n"
          f"   .offset = (unsigned int){f['offset']},\n  }},"
          for f in r["frags"]),
        " ],",
        f" .gso_type = (unsigned int){r['gso_type']}," if r["gso_type"] else "",
        " .dataref = (atomic_t){", "  .counter = (int)1,", " },",
    ]
    return "\n(struct skb_shared_info){\n" + "\n".join(m for m in members if m) + "\n}"


def pwru_json(path: Path, *, skb: bool = True, shinfo: bool = True, kind: str = "entry",
              funcs: tuple[str, ...] = ("gro_receive_skb", "ip_rcv_core")) -> Path:
    """pwru --output-json --output-skb --output-skb-shared-info, one event per skb at
    napi_gro_receive plus a later function for each (as pwru traces every function)."""
    lines = []
    for n, r in enumerate(records(kind)):
        for func in funcs:
            event: dict[str, Any] = {"skb": f"0xffff8880{n:08x}", "cpu": r["cpu"],
                                     "process": "<empty>:0", "func": func,
                                     "netns": 4026531840, "iface": "eth0:2", "proto": 2048,
                                     "mtu": 1400, "len": r["len"],
                                     "tuple": {"saddr": "10.0.2.2", "daddr": "10.0.2.15",
                                               "sport": 443, "dport": 40000, "proto": 6}}
            if shinfo:
                event["skb_shared_info"] = shinfo_dump(r)
            if skb:
                event["skb_metadata"] = skb_dump(r)
            lines.append(json.dumps(event))
    path.write_text("\n".join(lines) + "\n")
    return path


def pwru_text(path: Path, *, dumps: bool) -> Path:
    head = ("SKB                CPU PROCESS          NETNS      MARK/x        IFACE       PROTO  "
            "MTU   LEN   TUPLE FUNC\n")
    out = [head]
    for n, r in enumerate(records("entry")):
        out.append(f"0xffff8880{n:08x} {r['cpu']:<3} <empty>:0        4026531840 0     "
                   f"       eth0:2       0x0800 1400  {r['len']:<5} "
                   "10.0.2.2:443->10.0.2.15:40000(tcp) gro_receive_skb"
                   + (skb_dump(r) + shinfo_dump(r) if dumps else "") + "\n")
    path.write_text("".join(out))
    return path


def retis_events(path: Path, kind: str, symbol: str) -> Path:
    """``retis collect -o``: a startup event, then one event per skb with the meta section,
    the gso section only when gso_size != 0 (retis-events skb.rs), no truesize."""
    lines = [json.dumps({"common": {"timestamp": 1}, "startup": {"retis_version": "v1.6.0"}})]
    for r in records(kind):
        frame = bytes.fromhex(r["mac"] + r["packet"])
        skb: dict[str, Any] = {"meta": {"len": r["len"], "data_len": r["data_len"],
                                        "hash": r["hash"], "ip_summed": r["ip_summed"],
                                        "csum": 0, "csum_level": 0, "priority": 0}}
        if r["gso_size"]:
            skb["gso"] = {"flags": 0, "frags": r["nr_frags"], "size": r["gso_size"],
                          "segs": r["gso_segs"], "type": r["gso_type"]}
        lines.append(json.dumps({
            "common": {"timestamp": 2, "smp_id": r["cpu"]},
            "kernel": {"symbol": symbol, "probe_type": "raw_tracepoint"},
            "dev": {"name": "eth0", "ifindex": 2}, "skb": skb,
            "packet": {"len": r["len"] + 14, "capture_len": len(frame),
                       "data": base64.b64encode(frame).decode()}}))
    path.write_text("\n".join(lines) + "\n")
    return path
