"""The GRO oracle's case matrix: bursts of TCP segments (vnetrx.live.gro_frames descriptions)
and the tap options they are written with, around every rule the GRO model has (MAX_SKB_FRAGS
and 64 KiB, payload sizes, each flush trigger, IP ID rules, IPv6, gro_max_size and BIG TCP,
checksums, interleaved flows, vnet headers and DODGY GSO, IFF_NAPI_FRAGS, the flush timeout, GRO
off, threaded NAPI). ``vnetrx verify gro`` writes them on the running kernel and
tools/gro_oracle.py records them (tests/data/gro). Pure: descriptions only."""

from __future__ import annotations

from typing import Any

DEFAULT_TIMEOUT_NS = 20_000_000  # gro_flush_timeout: 5 jiffies at HZ=250 (live/gro.py)


def tap_options(case: dict[str, Any]) -> dict[str, Any]:
    """A case's tap options with their defaults."""
    return {"napi_frags": bool(case.get("napi_frags", False)),
            "vnet_hdr": bool(case.get("vnet_hdr", False)),
            "blocking": bool(case.get("blocking", False)),
            "gro_flush_timeout": int(case.get("gro_flush_timeout", DEFAULT_TIMEOUT_NS)),
            "threaded": case.get("threaded", False),  # False, True or "pinned"
            "mtu": case.get("mtu"),
            # sleep this long after write "after" (tests: a burst split on purpose)
            "pause": case.get("pause"),
            # the burst may span jiffies and the flush timer: each input's ktime and jiffies
            # are recorded, and the model is given them (no retry for a split burst)
            "timed": bool(case.get("timed", False)),
            # a UDP socket with UDP_GRO bound to the wildcard address on this port in the
            # tap's namespace (None: none)
            "udp_gro_socket": case.get("udp_gro_socket"),
            # ethtool -K TAP rx-udp-gro-forwarding on / rx-gro-list on
            "udp_gro_forwarding": bool(case.get("udp_gro_forwarding", False)),
            "gro_list": bool(case.get("gro_list", False)),
            "gro": bool(case.get("gro", True)),
            "gro_max_size": case.get("gro_max_size"),
            "gro_ipv4_max_size": case.get("gro_ipv4_max_size")}


def napi_mode(tap: dict[str, Any]) -> str:
    """How the model polls a tap with these options (flow.TAP_NAPI)."""
    if tap.get("napi_frags"):
        return "frags"
    if tap.get("threaded"):
        return "threaded"
    return "timeout" if tap.get("gro_flush_timeout") else "write"


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
    # 802.1Q tags (a tap strips none: the tag reaches GRO in the frame): vlan_gro_receive, or
    # no handler at all where CONFIG_VLAN_8021Q is not set
    out.append(_case("vlan-seg8", {"segments": 8, "vlan": 100}))
    out.append(_case("vlan-tci-change4", {"segments": 8, "vlan": 100, "vlan_change": [4]}))
    out.append(_case("vlan-untagged4", {"segments": 8, "vlan": 100, "untagged": [4]}))
    out.append(_case("vlan-untagged-all-but4", {"segments": 8, "vlan": 100,
                                                "untagged": [0, 1, 2, 3, 5, 6, 7]}))
    out.append(_case("ipv6-vlan-seg8", {"family": 6, "segments": 8, "vlan": 100}))
    out.append(_case("vlan-udp4", {"segments": 8, "vlan": 100, "udp": [4]}))
    # IPv6 extension headers: the walk (ipv6_gro_pull_exthdrs), their bytes compared, a
    # fragment header stops it; the 64 KiB boundary moved by 8 header bytes; BIG TCP
    for name, chain in (("hbh", [["hbh", 8]]), ("dest", [["dest", 8]]),
                        ("routing", [["routing", 24]]), ("hbh-dest", [["hbh", 8], ["dest", 16]])):
        out.append(_case(f"ipv6-{name}-seg8", {"family": 6, "segments": 8, "exthdrs": chain}))
    out.append(_case("ipv6-dest-change4", {"family": 6, "segments": 8, "exthdrs": [["dest", 8]],
                                           "exthdr_change": [4]}))
    out.append(_case("ipv6-hbh-change4", {"family": 6, "segments": 8, "exthdrs": [["hbh", 8]],
                                          "exthdr_change": [4]}))
    out.append(_case("ipv6-fragment4", {"family": 6, "segments": 8, "fragment": [4]}))
    out.append(_case("ipv6-dest-fragment4", {"family": 6, "segments": 8,
                                             "exthdrs": [["dest", 8]], "fragment": [4]}))
    out.append(_case("ipv6-hbh-psh3", {"family": 6, "segments": 8, "exthdrs": [["hbh", 8]],
                                       "psh": [3]}))
    # 7 x 9351: 72 + 7 x 9351 = 65529 fits 64 KiB, 80 + 7 x 9351 = 65537 does not
    out.append(_case("ipv6-payload9351", {"family": 6, "segments": 8, "payload": 9351},
                     mtu=9500))
    out.append(_case("ipv6-dest-payload9351", {"family": 6, "segments": 8, "payload": 9351,
                                               "exthdrs": [["dest", 8]]}, mtu=9500))
    out.append(_case("ipv6-dest-big-tcp", {"family": 6, "segments": 100,
                                           "exthdrs": [["dest", 8]]}, gro_max_size=185000))
    out.append(_case("ipv6-hbh-seg8-blocking", {"family": 6, "segments": 8,
                                                "exthdrs": [["hbh", 8]]}, blocking=True))
    out.append(_case("ipv6-hbh-napi-frags", {"family": 6, "segments": 8,
                                             "exthdrs": [["hbh", 8]], "split": [66]},
                     napi_frags=True))
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
    # UDP: merged only for a UDP_GRO socket on the destination port (udp_gro_receive)
    out.append(_case("udp-seg8-no-socket", {"segments": 8, "l4": "udp"}))
    out.append(_case("udp-seg8-gro-socket", {"segments": 8, "l4": "udp"}, udp_gro_socket=5001))
    out.append(_case("udp-seg8-other-port-socket", {"segments": 8, "l4": "udp"},
                     udp_gro_socket=5002))
    out.append(_case("udp-short-last-gro-socket", {"segments": 8, "l4": "udp",
                                                   "payload": [1472] * 7 + [1000]},
                     udp_gro_socket=5001))
    out.append(_case("udp-longer-second-gro-socket", {"segments": 8, "l4": "udp",
                                                      "payload": [1000] + [1472] * 7},
                     udp_gro_socket=5001))
    out.append(_case("udp-seg70-gro-socket", {"segments": 70, "l4": "udp", "payload": 500},
                     udp_gro_socket=5001))
    out.append(_case("udp-seg50-gro-socket", {"segments": 50, "l4": "udp"},
                     udp_gro_socket=5001))
    out.append(_case("udp-ttl4-gro-socket", {"segments": 8, "l4": "udp", "ttl_change": [4]},
                     udp_gro_socket=5001))
    out.append(_case("udp-flows2-gro-socket", {"segments": 12, "l4": "udp", "flows": 2},
                     udp_gro_socket=5001))
    out.append(_case("udp-seg8-gro-socket-blocking", {"segments": 8, "l4": "udp"},
                     udp_gro_socket=5001, blocking=True))
    out.append(_case("ipv6-udp-seg8-gro-socket", {"family": 6, "segments": 8, "l4": "udp"},
                     udp_gro_socket=5001))
    out.append(_case("udp-seg8-forwarding", {"segments": 8, "l4": "udp"},
                     udp_gro_forwarding=True))
    out.append(_case("udp-seg8-gro-list", {"segments": 8, "l4": "udp"}, gro_list=True))
    out.append(_case("udp-seg50-gro-list", {"segments": 50, "l4": "udp"}, gro_list=True))
    out.append(_case("udp-seg8-gro-list-blocking", {"segments": 8, "l4": "udp"},
                     gro_list=True, blocking=True))
    out.append(_case("udp-seg8-gro-list-and-socket", {"segments": 8, "l4": "udp"},
                     gro_list=True, udp_gro_socket=5001))
    # gro_flush_timeout across time: a write in a later jiffy (5 ms > 4 ms at HZ 250) makes
    # napi_complete_done complete the skbs held before it (flush_old); a pause past the
    # timeout lets the timer's poll flush everything first
    out.append(_case("timed-pause5-after3", {"segments": 8}, timed=True,
                     pause={"after": 3, "ms": 5}))
    out.append(_case("timed-pause30-after3", {"segments": 8}, timed=True,
                     pause={"after": 3, "ms": 30}))
    out.append(_case("timed-pause30-after3-timeout50ms", {"segments": 8}, timed=True,
                     pause={"after": 3, "ms": 30}, gro_flush_timeout=50_000_000))
    out.append(_case("timed-pause5-after5-flows2", {"segments": 12, "flows": 2}, timed=True,
                     pause={"after": 5, "ms": 5}))
    out.append(_case("timed-pause5-after3-ipv6", {"family": 6, "segments": 8}, timed=True,
                     pause={"after": 3, "ms": 5}))
    return out


