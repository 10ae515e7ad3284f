"""``vnetrx verify tap``: the tap model's prediction for each write, against the running kernel.

Building the cases, predicting and comparing are pure; only ``run`` calls into vnetrx.live.tap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from vnetrx.engine import trace_tap
from vnetrx.errors import Interrupted
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import TRACEPOINT_FIELDS, Value
from vnetrx.observed.rx_event import as_traced
from vnetrx.observed.tap_write import WriteCase, WriteResult
from vnetrx.packet import (
    GSO_TYPES,
    L4_CHOICES,
    Tunnel,
    build_frame,
    build_tunnel_frame,
    headers_of,
    offload_header,
    parse_tunnel,
    tunnel_header,
    tunnel_headers,
)
from vnetrx.paths.tun import TapFrame, TapSetup
from vnetrx.paths.tun.offload import (
    TUN_F_CSUM,
    TUN_F_TSO4,
    TUN_F_TSO6,
    TUN_F_UDP_TUNNEL_GSO,
    TUN_F_UDP_TUNNEL_GSO_CSUM,
    TUN_F_USO4,
    TUN_F_USO6,
    set_offload,
)
from vnetrx.paths.virtio_net_hdr import VnetHdr

# 48 lengths from the EINVAL edge to the largest frame: every boundary of §A.10 (build limit 3456,
# 64 + L = 4096, the order-1/2/3 frag steps) and both ends.
DEFAULT_LENGTHS = (
    "13,14,15,59,60,64,100,128,200,500,1000,1500,1514,2000,3000,3136,3137,3455,3456,3457,3500,"
    "3711,3712,3713,3800,4000,4031,4032,4033,4096,5000,7808,7809,8000,9000,11904,11905,12000,"
    "16000,20000,20096,20097,32768,36480,36481,40000,65000,65535"
)
# with --xdp: the edges of tun_can_build_skb (3456), of a redirect back to the tap (mtu 1500 +
# 14 + 4 = 1518), and lengths that take tun_alloc_skb and generic XDP
XDP_LENGTHS = "14,15,60,100,1000,1514,1518,1519,2000,3456,3457,4000,9000,65535"
# write(2)'s result, then what net:netif_receive_skb_entry prints (model.SKB_FIELDS)
SKB = TRACEPOINT_FIELDS
FIELDS = ("errno", "ret", *SKB)
# with an XDP program attached, also: each read() on the fd after the write, the vnet header
# and frame of the first, and the device's counter deltas (/proc/net/dev)
XDP_FIELDS = ("reads", "read_hdr", "read_same", "rx_packets", "rx_bytes", "rx_dropped",
              "tx_packets", "tx_bytes")


@dataclass(frozen=True)
class FrameCheck:
    frame_len: int
    options: dict[str, Value]
    predicted: dict[str, Value]
    observed: dict[str, Value] | None  # None until the write ran
    fields: dict[str, bool]  # per compared field: predicted == observed

    @property
    def match(self) -> bool:
        return bool(self.fields) and all(self.fields.values())


def variants(base: WriteCase) -> list[WriteCase]:
    """The base case, then blocking, sndbuf 65536, vnet_hdr_sz 12 and no IFF_VNET_HDR."""
    out = [base]
    for change in (
        {"blocking": True},
        {"sndbuf": 65536},
        {"vnet_hdr_sz": 12},
        {"vnet_hdr": False, "vnet_hdr_sz": None, "hdr": None},
    ):
        other = replace(base, **change)
        if other not in out:
            out.append(other)
    return out


def build_cases(lengths: tuple[int, ...], base: WriteCase, all_variants: bool) -> list[WriteCase]:
    shapes = variants(base) if all_variants else [base]
    return [replace(shape, frame_len=n) for shape in shapes for n in lengths]


# --- the offload matrix (--offloads) ----------------------------------------------------------
OFFLOAD_LENGTHS = (60, 100, 1514, 3000, 9014, 20000, 65000)


def offload_cases(base: WriteCase) -> list[WriteCase]:
    """Real TCP/UDP frames over IPv4 and IPv6 with the headers senders write (NEEDS_CSUM,
    DATA_VALID, none; GSO with gso_size below and above the payload; TCP options; hdr_len 0,
    exact and larger), blocking and not, then one header of every class the kernel refuses."""
    cases: list[WriteCase] = []

    def add(length: int, l4: str, h: VnetHdr, tcp_options: int = 0, **over: Any) -> None:
        case = replace(base, frame_len=length, l4=l4, tcp_options=tcp_options,
                       hdr=h.to_bytes(10), **over)
        if case not in cases:
            cases.append(case)

    for l4 in L4_CHOICES:
        gso_type = GSO_TYPES["tcpv4" if l4 == "tcp4" else "tcpv6" if l4 == "tcp6" else "udp_l4"]
        for options in ((0, 12) if l4.startswith("tcp") else (0,)):
            headers = headers_of(l4, options)
            for length in OFFLOAD_LENGTHS:
                for csum in ("partial", "valid", "none"):
                    add(length, l4, offload_header(headers, csum, None), options)
                for size in (1448, 64000):  # below and above most payloads
                    h = offload_header(headers, "partial", (gso_type, size))
                    add(length, l4, h, options)
                    add(length, l4, h._replace(hdr_len=0), options)
                    add(length, l4, h._replace(hdr_len=min(h.hdr_len + 200, 0xFFFF)), options)
                    add(length, l4, h, options, blocking=not base.blocking)
    tcp4 = headers_of("tcp4")
    good = offload_header(tcp4, "partial", (GSO_TYPES["tcpv4"], 1448))
    refused = (
        good._replace(gso_type=7),  # unknown gso_type
        good._replace(gso_type=0x80),  # the ECN bit alone
        good._replace(gso_size=0),
        good._replace(gso_size=0xFFFF),  # GSO_BY_FRAGS
        good._replace(csum_offset=6),  # TCP GSO with UDP's check offset
        good._replace(csum_start=10, csum_offset=6, gso_type=0, gso_size=0),  # inside the IP
        good._replace(csum_start=2990),  # past the frame
        good._replace(flags=0),  # TCP GSO without NEEDS_CSUM (refused in some stable windows)
        good._replace(hdr_len=3001),  # hdr_len beyond the frame
        good._replace(gso_type=GSO_TYPES["udp_l4"], csum_offset=6, flags=0),  # USO, no csum
        good._replace(gso_type=GSO_TYPES["udp_l4"], csum_offset=6, gso_size=10),  # > segments
        good._replace(gso_type=GSO_TYPES["udp_l4"] | 0x80, csum_offset=6),  # USO with ECN
    )
    for h in refused:
        add(3000, "tcp4", h)
    # accepted, but decided by rules that differ between releases: a TCP gso_size below
    # TCP_MIN_GSO_SIZE (raised to 8 by c27c449d455a), remainders "net: missing check virtio"
    # refused, UFO's "too small" test without the UDP header (cf9acc90c80e)
    tiny = good._replace(gso_size=1)
    for length in (59, 62, 63, 100):
        add(length, "tcp4", tiny)
    for length in (2 * 1448, 2 * 1448 + 54, 2 * 1448 + 55, 1447):
        add(length, "tcp4", good)
    ufo = offload_header(headers_of("udp4"), "partial", (GSO_TYPES["udp"], 1000))
    for length in (1040, 1042, 1043, 3000):
        add(length, "udp4", ufo)
    # hdr_len past the frame: 6.15+ (2506251e81d1) counts the unread rest of vnet_hdr_sz
    for hdr_len in (101, 102, 103):
        add(100, "tcp4", VnetHdr(0, 0, hdr_len, 0, 0, 0), vnet_hdr_sz=12)
    return cases


# --- UDP-tunnel GSO (--tunnel): the 24-byte header, 6.17+ ------------------------------------
TUNNEL_LENGTHS = (200, 1514, 3000, 20000)
# TUNSETOFFLOAD sets around the UDP-tunnel flags (tun.c:set_offload @6.17.0, @6.18.9)
TUNNEL_OFFLOADS = (
    TUN_F_UDP_TUNNEL_GSO,  # without TUN_F_CSUM: left over
    TUN_F_CSUM | TUN_F_UDP_TUNNEL_GSO,  # no plain GSO offload: left over
    TUN_F_CSUM | TUN_F_TSO4 | TUN_F_UDP_TUNNEL_GSO,
    TUN_F_CSUM | TUN_F_TSO6 | TUN_F_UDP_TUNNEL_GSO | TUN_F_UDP_TUNNEL_GSO_CSUM,
    TUN_F_CSUM | TUN_F_TSO4 | TUN_F_UDP_TUNNEL_GSO_CSUM,  # csum without the tunnel flag
    TUN_F_CSUM | TUN_F_USO4 | TUN_F_USO6 | TUN_F_UDP_TUNNEL_GSO,
    TUN_F_CSUM | TUN_F_USO4 | TUN_F_UDP_TUNNEL_GSO,  # USO4 alone is not taken
    TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_UDP_TUNNEL_GSO | TUN_F_UDP_TUNNEL_GSO_CSUM,
    0x200,  # no such flag
)


def _tunnel_hdr(t: Tunnel, l4: str, gso_type: int, size: int) -> VnetHdr:
    """The header a sender writes for a VXLAN-wrapped ``l4`` frame with GSO."""
    return tunnel_header(offload_header(tunnel_headers(t, headers_of(l4)), "partial",
                                        (gso_type, size)), t)


def tunnel_cases(base: WriteCase) -> list[WriteCase]:
    """TUNSETOFFLOAD with the UDP-tunnel flags, then VXLAN-wrapped TCP/UDP frames behind a
    24-byte header (outer IPv4 and IPv6, inner TCPv4/TCPv6/USO, with and without the tunnel
    csum bit; below and above one segment), the same header with vnet_hdr_sz 12 and 32, and one
    header of every class virtio_net_hdr_tnl_to_skb refuses."""
    cases: list[WriteCase] = []

    def add(length: int, l4: str | None, h: VnetHdr | None, tunnel: str | None,
            **over: Any) -> None:
        size = over.pop("vnet_hdr_sz", 24)
        case = replace(base, frame_len=length, l4=l4, tcp_options=0, tunnel=tunnel,
                       vnet_hdr_sz=size, hdr=None if h is None else h.to_bytes(24)[:size],
                       **over)
        if case not in cases:
            cases.append(case)

    for flags in TUNNEL_OFFLOADS:
        add(100, None, None, None, offload=flags)
    inner = (("tcp4", GSO_TYPES["tcpv4"], 1448), ("tcp6", GSO_TYPES["tcpv6"], 1428),
             ("udp4", GSO_TYPES["udp_l4"], 1472), ("udp6", GSO_TYPES["udp_l4"], 1452))
    for name in ("ipv4", "ipv6", "ipv4+csum", "ipv6+csum"):
        t = parse_tunnel(name)
        for l4, gso_type, size in inner:
            h = _tunnel_hdr(t, l4, gso_type, size)
            for length in TUNNEL_LENGTHS:
                add(length, l4, h, name)
            add(3000, l4, h, name, vnet_hdr_sz=32)  # 8 bytes past the tunnel header skipped
        h = _tunnel_hdr(t, "tcp4", GSO_TYPES["tcpv4"], 1448)
        add(3000, "tcp4", h, name, vnet_hdr_sz=12)  # 10 bytes read: tunnel GSO not on
    t = parse_tunnel("ipv4")
    good = _tunnel_hdr(t, "tcp4", GSO_TYPES["tcpv4"], 1448)
    refused = (
        good._replace(gso_type=0x61),  # both tunnel bits
        good._replace(gso_type=0x23),  # inner UFO
        good._replace(gso_type=0x20, gso_size=0),  # no inner GSO type
        good._replace(flags=0),  # no NEEDS_CSUM
        good._replace(outer_th_offset=33),  # below ETH_HLEN + 20
        good._replace(inner_nh_offset=(good.outer_th_offset or 0) + 7),  # below outer_th + 8
        good._replace(csum_start=(good.inner_nh_offset or 0) + 19),  # below inner_nh + 20
        good._replace(gso_type=0x24),  # inner TCPv6 over an IPv4 inner header: 40 needed
        good._replace(gso_type=0xA1),  # inner TCPv4 with ECN: accepted
        good._replace(gso_size=0),  # the base parse refuses it
        good._replace(flags=3),  # DATA_VALID too: a tap write does not read it
    )
    for h in refused:
        add(3000, "tcp4", h, "ipv4")
    # USO: the inner IP version is read from the frame; an IPv6 inner header needs 40 bytes
    uso6 = _tunnel_hdr(t, "udp6", GSO_TYPES["udp_l4"], 1452)
    add(3000, "udp6", uso6._replace(csum_start=(uso6.inner_nh_offset or 0) + 20), "ipv4")
    add(3000, "udp4", _tunnel_hdr(t, "udp4", GSO_TYPES["udp_l4"], 1472)._replace(
        csum_start=(uso6.inner_nh_offset or 0) + 20), "ipv4")
    return cases


def options_of(case: WriteCase) -> dict[str, Value]:
    return {
        "blocking": case.blocking,
        "sndbuf": case.sndbuf,
        "vnet_hdr": case.vnet_hdr,
        "vnet_hdr_sz": case.vnet_hdr_sz if case.vnet_hdr else None,
        "hdr": None if case.hdr is None else case.hdr.hex(),
        "l4": case.l4,
        "tcp_options": case.tcp_options,
        "xdp": case.xdp,
        "xdp_adjust_head": case.xdp_adjust_head,
        "xdp_adjust_tail": case.xdp_adjust_tail,
        **({"tunnel": case.tunnel} if case.tunnel is not None else {}),
        **({"offload": case.offload} if case.offload is not None else {}),
    }


def predict(k: KernelProfile, case: WriteCase) -> dict[str, Value]:
    """What the model says write(2) returns and the tracepoint shows (raises on bad setups)."""
    frame = None
    if case.tunnel is not None and case.l4 is not None:
        frame = build_tunnel_frame(case.frame_len, parse_tunnel(case.tunnel), case.l4,
                                   case.tcp_options)
    elif case.l4 is not None:
        frame = build_frame(case.frame_len, case.l4, case.tcp_options)
    trace = trace_tap(
        k,
        TapSetup(
            blocking=case.blocking,
            sndbuf=case.sndbuf,
            vnet_hdr=case.vnet_hdr,
            vnet_hdr_sz=case.vnet_hdr_sz if case.vnet_hdr else None,
            xdp=case.xdp,
            xdp_adjust_head=case.xdp_adjust_head,
            xdp_adjust_tail=case.xdp_adjust_tail,
            frame=frame,
        ),
        TapFrame(case.frame_len, case.hdr if case.vnet_hdr else None),
    )
    out: dict[str, Value] = {"outcome": trace.outcome, "errno": trace.errno, "ret": None}
    if case.offload is not None:
        out["offload_errno"] = set_offload(k, case.offload).errno
    out.update(dict.fromkeys(FIELDS[2:]))
    if trace.errno is None:
        size = dict(trace.input)["vnet_hdr_sz"]
        out["ret"] = case.frame_len + (size if isinstance(size, int) else 0)
    if trace.skb is not None:
        out.update((name, as_traced(name, getattr(trace.skb, name))) for name in SKB)
    if case.xdp is not None:
        x = trace.xdp
        reads = "" if x is None or x.read_len is None else str(x.read_len)
        out.update({
            "reads": reads,  # comma-separated read() results ("" when nothing was queued)
            "read_hdr": None if x is None else x.read_hdr,
            # the bytes a moved frame starts or ends with are not the ones written
            "read_same": None if x is None or x.read_len is None
            or case.xdp_adjust_head or case.xdp_adjust_tail else True,
            "rx_packets": 0 if x is None else x.rx_packets,
            "rx_bytes": 0 if x is None else x.rx_bytes,
            "rx_dropped": 0 if x is None else x.rx_dropped,  # None: the stack decides
            "tx_packets": 0 if x is None else x.tx_packets,
            "tx_bytes": 0 if x is None else x.tx_bytes,
        })
    return out


def observed_of(result: WriteResult) -> dict[str, Value]:
    out: dict[str, Value] = {"errno": result.errno, "ret": result.ret, "events": len(result.events)}
    out.update(dict.fromkeys(FIELDS[2:]))
    if len(result.events) == 1:
        event = result.events[0]
        out.update((name, getattr(event, name)) for name in SKB)
    if result.offload_errno is not None:
        out["offload_errno"] = result.offload_errno
    if result.counters is not None:
        out.update({"reads": ",".join(map(str, result.reads)), "read_hdr": result.read_hdr,
                    "read_same": result.read_same})
        out.update((name, result.counters[name]) for name in XDP_FIELDS[3:])
    return out


def compare(predicted: dict[str, Value], observed: dict[str, Value]) -> dict[str, bool]:
    fields = {name: predicted.get(name) == observed.get(name) for name in FIELDS}
    if "reads" in predicted:  # an XDP case: rx_dropped None is left to the stack
        fields.update((name, predicted[name] == observed.get(name)) for name in XDP_FIELDS
                      if not (name in ("rx_dropped", "read_same") and predicted[name] is None))
    if "offload_errno" in predicted:  # TUNSETOFFLOAD was called: None is its success
        fields["offload_errno"] = predicted["offload_errno"] == observed.get("offload_errno")
    no_skb = predicted.get("errno") or str(predicted.get("outcome")).startswith("xdp_")
    fields["events"] = observed.get("events") == (0 if no_skb else 1)
    return fields


def plan(
    k: KernelProfile, cases: list[WriteCase],
    on_progress: Callable[[int, int], None] | None = None,
) -> list[FrameCheck]:
    """Predict every case first, so that a bad request fails before anything is created.
    ``on_progress`` hears (predicted so far, total) every 256 cases and at the end."""
    out = []
    for index, c in enumerate(cases, 1):
        out.append(FrameCheck(c.frame_len, options_of(c), predict(k, c), None, {}))
        if on_progress is not None and (index % 256 == 0 or index == len(cases)):
            on_progress(index, len(cases))
    return out


def run(
    k: KernelProfile,
    cases: list[WriteCase],
    on_progress: Callable[[int, int], None] | None = None,
    checks: list[FrameCheck] | None = None,
) -> list[FrameCheck]:
    """Write every case and compare; ``checks`` is ``plan(k, cases)`` when already made.
    Interrupted (Ctrl-C, SIGTERM), it raises :class:`Interrupted` with the checks done so far."""
    from vnetrx.live.tap import run_writes

    checks = plan(k, cases) if checks is None else checks
    done: list[FrameCheck] = []

    def record(index: int, result: WriteResult) -> None:
        observed = observed_of(result)
        check = checks[index]
        done.append(replace(check, observed=observed, fields=compare(check.predicted, observed)))
        if on_progress is not None:
            on_progress(index + 1, len(cases))

    try:
        run_writes(cases, record)
    except KeyboardInterrupt:
        raise Interrupted(done) from None
    return done


SCHEMA = "vnetrx.verify/1"


def report(
    k: KernelProfile, checks: list[FrameCheck], planned: int | None = None
) -> dict[str, Any]:
    """The ``--json`` document: {schema, kernel, frames: [{frame_len, options, match,
    predicted, observed}], matched, total}; ``planned`` (the number of writes asked for) when
    the run was interrupted after ``len(checks)`` of them."""
    from vnetrx.codec import kernel_to_dict

    interrupted = {} if planned is None else {"interrupted": True, "planned": planned}
    return {
        "schema": SCHEMA,
        "kernel": kernel_to_dict(k),
        "frames": [
            {
                "frame_len": c.frame_len,
                "options": c.options,
                "match": c.match,
                "predicted": c.predicted,
                "observed": c.observed,
                "fields": c.fields,
            }
            for c in checks
        ],
        "matched": sum(c.match for c in checks),
        "total": len(checks),
        **interrupted,
    }
