"""Mirrors how the local IPv4/IPv6 output path sizes the skbs a UDP or TCP send builds:
net/ipv4/ip_output.c (__ip_append_data, ip_ufo_append_data), net/ipv6/ip6_output.c
(__ip6_append_data, ip6_ufo_append_data, ip6_fragment's fast path) and net/ipv4/tcp.c
(tcp_sendmsg: select_size / linear_payload_sz, sk_stream_alloc_skb, tcp_stream_alloc_skb).

Facts: docs/kernel/tx-headroom.md §4, §5, and the 3.16.0 tree
(jyizheng/linux-3.16) for the IPv6 sizing, IPv6 UFO and ip6_fragment, which the fact sheet does not
cover; tcp.c @4.13.4, @4.14.5 and @5.15.100 for where TCP puts the payload.
"""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.kernel.changes import MAX_TCP_HEADER_L1_ALIGNED, TCP_SENDMSG_FRAGS_ONLY, UDP_UFO
from vnetrx.kernel.constants import SKB_FRAG_PAGE_BYTES
from vnetrx.kernel.profile import KernelProfile, align
from vnetrx.paths.skbuff import shinfo_size
from vnetrx.paths.steps import StepLog

IP4_SRC = "net/ipv4/ip_output.c"
IP6_SRC = "net/ipv6/ip6_output.c"
TCP_SRC = "net/ipv4/tcp.c"
IPV4_HDR = 20  # sizeof(struct iphdr), no IP options
IPV6_HDR = 40  # sizeof(struct ipv6hdr), no extension headers
FRAG_HDR = 8  # sizeof(struct frag_hdr)
UDP_HDR = 8  # sizeof(struct udphdr)
TCP_HDR = 32  # 20 + TCPOLEN_TSTAMP_ALIGNED (12): a connection with timestamps
# The page frag that sendmsg copies payload into (sk_page_frag: current->task_frag):
# SKB_FRAG_PAGE_ORDER = get_order(32768) (include/net/sock.h @3.16.0). A fresh frag is assumed.
TASK_FRAG_BYTES = SKB_FRAG_PAGE_BYTES.default  # current->task_frag: a page_frag page
IPV6_MIN_MTU = 1280


def max_payload(tcp: bool, ipv6: bool) -> int:
    """Largest payload one send may carry.

    UDP: __ip_append_data refuses cork.length + length > 0xFFFF - fragheaderlen (ip_sk_ignore_df:
    the default IP_PMTUDISC_WANT), i.e. 65535 - 20 - 8 = 65507; __ip6_append_data refuses more than
    IPV6_MAXPLEN (65535) after the IPv6 header, i.e. 65527 (@3.16.0). TCP: one skb of at most
    65535 bytes of IP datagram with a 32-byte TCP header (vnetrx models one skb per send).
    """
    if tcp:
        return 65535 - TCP_HDR - (0 if ipv6 else IPV4_HDR)
    return 65535 - UDP_HDR - (0 if ipv6 else IPV4_HDR)


@dataclass(frozen=True)
class BuiltSkb:
    """One skb as the IP layer hands it to neighbour output (before the Ethernet header)."""

    alloc: int  # linear bytes asked of the allocator (sock_alloc_send_skb / alloc_skb_fclone)
    reserve: int  # skb_reserve() right after the allocation
    headroom: int  # skb_headroom() when neigh_hh_output() gets it
    linear: tuple[tuple[str, int], ...]  # what the linear area holds from skb->data, in order
    frags: tuple[int, ...] = ()  # page-frag sizes (payload outside the linear area)
    gso: str | None = None  # "UFO" / "TSO" when the skb is a GSO skb

    @property
    def headlen(self) -> int:
        return sum(size for _, size in self.linear)


def chunks(length: int, fit: int, step: int) -> tuple[int, ...]:
    """How the append_data loop splits ``length`` bytes: one skb when it fits, else full
    fragments of ``step`` bytes (a multiple of 8) and a last one with the rest."""
    out: list[int] = []
    while length > fit:
        out.append(step)
        length -= step
    out.append(length)
    return tuple(out)


def frag_sizes(payload: int) -> tuple[int, ...]:
    """Payload copied into a fresh 32 KiB task frag: one frag per TASK_FRAG_BYTES."""
    return chunks(payload, TASK_FRAG_BYTES, TASK_FRAG_BYTES) if payload else ()


@dataclass(frozen=True)
class Appended:
    """What an append_data call decided: the skbs, and the lengths that sized them."""

    skbs: tuple[BuiltSkb, ...]
    hh_len: int
    length: int  # the datagram: payload + the UDP header
    maxfraglen: int
    datalens: tuple[int, ...]  # each skb's data after the IP header

    @property
    def fragmented(self) -> bool:
        return len(self.skbs) > 1


def ip_append_data(hh_len: int, mtu: int, payload: int) -> Appended:
    """__ip_append_data @3.16.0 / @6.18.3: fraglen = datalen + 20, alloc fraglen + hh_len + 15."""
    length = payload + UDP_HDR  # udp_sendmsg passes ulen = len + sizeof(struct udphdr)
    maxfraglen = ((mtu - IPV4_HDR) & ~7) + IPV4_HDR
    datalens = chunks(length, mtu - IPV4_HDR, maxfraglen - IPV4_HDR)
    skbs = tuple(
        BuiltSkb(
            alloc=datalen + IPV4_HDR + hh_len + 15,  # "alloclen + hh_len + 15"
            reserve=hh_len,
            headroom=hh_len,  # ip_fragment's fast path writes each header in place
            linear=_udp_linear("IPv4 header", IPV4_HDR, datalen, first=index == 0),
        )
        for index, datalen in enumerate(datalens)
    )
    return Appended(skbs, hh_len, length, maxfraglen, datalens)


def narrate_ip_append_data(a: Appended, log: StepLog) -> None:
    log.add(
        IP4_SRC,
        "__ip_append_data",
        (
            "one skb: sock_alloc_send_skb(fraglen + hh_len + 15), skb_reserve(hh_len)"
            if not a.fragmented
            else f"{len(a.skbs)} IP fragments (the datagram exceeds mtu - 20), each "
            "sock_alloc_send_skb(fraglen + hh_len + 15) and skb_reserve(hh_len)"
        ),
        hh_len=a.hh_len,
        fragheaderlen=IPV4_HDR,
        maxfraglen=a.maxfraglen,
        length=a.length,
        fraglen=", ".join(str(d + IPV4_HDR) for d in a.datalens),
        alloc=", ".join(str(s.alloc) for s in a.skbs),
    )


def ip6_append_data(hh_len: int, mtu: int, payload: int) -> Appended:
    """__ip6_append_data @3.16.0: reserve hh_len + sizeof(frag_hdr); alloc datalen + 40 + 8 + hh_len.

    Fragments go out through ip6_fragment()'s fast path, which pushes the 8-byte fragment header
    into the room reserved for it: a fragment reaches the neighbour layer with hh_len of headroom,
    an unfragmented datagram with hh_len + 8.
    """
    length = payload + UDP_HDR
    maxfraglen = ((mtu - IPV6_HDR) & ~7) + IPV6_HDR - FRAG_HDR
    # "cork->length <= mtu ? mtu : maxfraglen" decides how much the first skb may take
    fit = (mtu if length <= mtu else maxfraglen) - IPV6_HDR
    datalens = chunks(length, fit, maxfraglen - IPV6_HDR)
    fragmented = len(datalens) > 1
    skbs = tuple(
        BuiltSkb(
            alloc=datalen + IPV6_HDR + FRAG_HDR + hh_len,
            reserve=hh_len + FRAG_HDR,
            headroom=hh_len if fragmented else hh_len + FRAG_HDR,
            linear=_udp_linear("IPv6 header", IPV6_HDR, datalen, first=index == 0, frag=fragmented),
        )
        for index, datalen in enumerate(datalens)
    )
    return Appended(skbs, hh_len, length, maxfraglen, datalens)


def narrate_ip6_append_data(a: Appended, log: StepLog) -> None:
    log.add(
        IP6_SRC,
        "__ip6_append_data",
        (
            "one skb: sock_alloc_send_skb(datalen + 40 + 8 + hh_len)"
            if not a.fragmented
            else f"{len(a.skbs)} IP fragments, each sock_alloc_send_skb(datalen + 40 + 8 + hh_len)"
        )
        + ", skb_reserve(hh_len + sizeof(struct frag_hdr))"
        + (
            "; ip6_fragment() then pushes the fragment header into those 8 bytes"
            if a.fragmented
            else ""
        ),
        hh_len=a.hh_len,
        fragheaderlen=IPV6_HDR,
        maxfraglen=a.maxfraglen,
        length=a.length,
        alloc=", ".join(str(s.alloc) for s in a.skbs),
        headroom=a.skbs[0].headroom,
    )


def _udp_linear(
    ip_name: str, ip_len: int, datalen: int, *, first: bool, frag: bool = False
) -> tuple[tuple[str, int], ...]:
    parts: list[tuple[str, int]] = [(ip_name, ip_len)]
    if frag:
        parts.append(("fragment header", FRAG_HDR))
    if first:  # only the first fragment carries the UDP header
        parts.append(("UDP header", UDP_HDR))
        datalen -= UDP_HDR
    parts.append(("payload", datalen))
    return tuple(parts)


def ufo_applies(k: KernelProfile, ufo: bool, mtu: int, payload: int) -> bool:
    """``(length > mtu) && IPPROTO_UDP && (dev->features & NETIF_F_UFO)`` (__ip_append_data,
    __ip6_append_data @3.16.0), on kernels that still have UFO."""
    return ufo and k.has(UDP_UFO) and payload + UDP_HDR > mtu


def ufo_append_data(hh_len: int, ipv6: bool, payload: int) -> BuiltSkb:
    """ip_ufo_append_data / ip6_ufo_append_data @3.16.0: one GSO skb, payload in task-frag pages."""
    ip_len = IPV6_HDR if ipv6 else IPV4_HDR
    return BuiltSkb(
        alloc=hh_len + ip_len + UDP_HDR + 20,
        reserve=hh_len,
        headroom=hh_len,
        linear=(("IPv6 header" if ipv6 else "IPv4 header", ip_len), ("UDP header", UDP_HDR)),
        frags=frag_sizes(payload),
        gso="UFO",
    )


def narrate_ufo_append_data(skb: BuiltSkb, ipv6: bool, log: StepLog) -> None:
    log.add(
        IP6_SRC if ipv6 else IP4_SRC,
        "ip6_ufo_append_data" if ipv6 else "ip_ufo_append_data",
        "UFO: one GSO skb; sock_alloc_send_skb(hh_len + IP + 8 + 20), skb_reserve(hh_len); "
        "skb_append_datato_frags() copies the payload into current->task_frag",
        because=(UDP_UFO,),
        alloc=skb.alloc,
        nr_frags=len(skb.frags),
    )


def max_tcp_header(k: KernelProfile) -> int:
    """MAX_TCP_HEADER: 128 + MAX_HEADER (include/net/tcp.h @3.16.0, @4.14.5), cache-line aligned
    from 5.15 (@5.15.100: L1_CACHE_ALIGN(128 + MAX_HEADER))."""
    raw = 128 + k.build.max_header
    return align(raw, k.build.l1_cache_bytes) if k.has(MAX_TCP_HEADER_L1_ALIGNED) else raw


@dataclass(frozen=True)
class TcpSend:
    """The skb tcp_sendmsg builds, and how it sized the linear part."""

    skb: BuiltSkb
    size: int  # the linear payload room asked for (0: frags only)
    frags_only: bool  # TCP_SENDMSG_FRAGS_ONLY: tcp_stream_alloc_skb puts nothing linear
    max_tcp_header: int
    mss: int


def tcp_sendmsg(k: KernelProfile, max_tcp_header: int, ipv6: bool, payload: int,
                mss: int) -> TcpSend:
    """The skb tcp_sendmsg builds for one send on an idle connection (empty write queue)."""
    frags_only = k.has(TCP_SENDMSG_FRAGS_ONLY)
    if frags_only:  # tcp_stream_alloc_skb: MAX_TCP_HEADER, all reserved
        size, linear_payload = 0, 0
    else:  # select_size(sg, sk_can_gso): SKB_WITH_OVERHEAD(2048 - MAX_TCP_HEADER), ALIGN(, 4)
        size = align(2048 - max_tcp_header - shinfo_size(k), 4)
        linear_payload = min(payload, size)
    ip_name, ip_len = ("IPv6 header", IPV6_HDR) if ipv6 else ("IPv4 header", IPV4_HDR)
    linear = [(ip_name, ip_len), ("TCP header", TCP_HDR)]
    if linear_payload:
        linear.append(("payload", linear_payload))
    skb = BuiltSkb(
        alloc=size + max_tcp_header,
        reserve=max_tcp_header,
        headroom=max_tcp_header - TCP_HDR - ip_len,  # tcp_transmit_skb, ip_queue_xmit push
        linear=tuple(linear),
        frags=frag_sizes(payload - linear_payload),
        gso="TSO" if payload > mss else None,
    )
    return TcpSend(skb, size, frags_only, max_tcp_header, mss)


def narrate_tcp_sendmsg(k: KernelProfile, t: TcpSend, log: StepLog) -> None:
    why = ("no payload in the linear area: it all goes to page frags" if t.frags_only else
           f"select_size(): up to {t.size} payload bytes follow the TCP header in the linear "
           "area")
    log.add(
        TCP_SRC,
        "tcp_sendmsg",
        f"alloc_skb_fclone(size + MAX_TCP_HEADER), skb_reserve(MAX_TCP_HEADER); {why}",
        because=k.present(TCP_SENDMSG_FRAGS_ONLY),
        size=t.size,
        MAX_TCP_HEADER=t.max_tcp_header,
        alloc=t.skb.alloc,
        nr_frags=len(t.skb.frags),
        mss=t.mss,
    )
