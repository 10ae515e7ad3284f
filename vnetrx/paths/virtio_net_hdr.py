"""The checks a tap write's virtio_net_hdr goes through: tun_get_user's front checks, then
virtio_net_hdr_to_skb (include/linux/virtio_net.h). Pure functions over the header's six fields
and the frame length; ``vnetrx decode`` and the tap engine (paths/tun.py) both use them.

Read: include/linux/virtio_net.h:virtio_net_hdr_to_skb @6.1.192 and @6.12.117,
drivers/net/tun.c:tun_get_user @6.1.192 and @6.12.117, net/core/skbuff.c:skb_partial_csum_set
@6.1.192 and @6.12.117, include/linux/udp.h (UDP_MAX_SEGMENTS = 1 << 7 at both). Kernels older
than the VNET_HDR_GSO_SANITY change were not read: ``validate`` reports them as not modelled.

On a tap write the skb at virtio_net_hdr_to_skb still starts at the Ethernet header (it runs
before eth_type_trans), so csum_start counts from the frame's first byte, and
skb->network_header is still 0, so GSO without NEEDS_CSUM never reaches the flow dissector.

Checked against the running 6.18.44 kernel: tests/test_decode_live.py writes 27 headers that sit
on every boundary modelled here into a private tap device; errno and gso_size all match.
"""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.kernel.changes import (
    VNET_HDR_GSO_SANITY,
    VNET_HDR_GSO_UDP_L4,
    VNET_HDR_NH_MIN_LEN,
    VNET_HDR_UDP_L4_STRICT,
    VNET_HDR_UDP_TUNNEL,
)
from vnetrx.kernel.constants import ETH_HLEN, U16_MAX
from vnetrx.kernel.profile import KernelProfile

VIRTIO_NET_H = "include/linux/virtio_net.h"
TUN_C = "drivers/net/tun.c"
SKBUFF_C = "net/core/skbuff.c"

NEEDS_CSUM = 1  # include/uapi/linux/virtio_net.h
DATA_VALID = 2
GSO_NONE, GSO_TCPV4, GSO_UDP, GSO_TCPV6, GSO_UDP_L4 = 0, 1, 3, 4, 5
GSO_ECN = 0x80
GSO_UDP_TUNNEL_BITS = 0x60  # VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4 | _IPV6 (6.18 uapi)
GSO_BY_FRAGS = 0xFFFF  # include/linux/skbuff.h
TCP_MIN_GSO_SIZE = 8  # include/net/tcp.h
UDP_MAX_SEGMENTS = 128  # include/linux/udp.h @6.1.192, @6.12.117
TCP_CSUM_OFFSET = 16  # offsetof(struct tcphdr, check)
UDP_CSUM_OFFSET = 6  # offsetof(struct udphdr, check)
IPHDR_LEN, IPV6HDR_LEN, TCPHDR_LEN, UDPHDR_LEN = 20, 40, 20, 8


@dataclass(frozen=True)
class VnetHdr:
    """struct virtio_net_hdr's six members, as numbers (legacy: native order, LE on x86)."""

    flags: int
    gso_type: int
    hdr_len: int
    gso_size: int
    csum_start: int
    csum_offset: int


@dataclass(frozen=True)
class Check:
    """One test the kernel makes, where it makes it, and how it came out."""

    source: str
    function: str
    test: str  # the condition as the kernel writes it, in words
    ok: bool
    detail: str
    because: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """What write(2) of this header and frame returns, and every check on the way."""

    modelled: bool  # False: the kernel's checks for this case were not read (see ``reason``)
    accepted: bool | None
    errno: str | None  # "EINVAL" when the write fails
    function: str | None  # where it fails
    reason: str | None
    checks: tuple[Check, ...]
    gso: bool | None  # the skb leaves as a GSO skb (SKB_GSO_DODGY set)
    hdr_len: int | None  # hdr_len after tun_get_user's NEEDS_CSUM fix-up


def csum_hdr_len(h: VnetHdr) -> int:
    """tun_get_user: with NEEDS_CSUM, hdr_len grows to csum_start + csum_offset + 2 when that is
    larger; the result is stored back into the 16-bit field, so it wraps above 65535."""
    if h.flags & NEEDS_CSUM:
        end = h.csum_start + h.csum_offset + 2
        if end > h.hdr_len:
            return end & U16_MAX
    return h.hdr_len


def gso_names(k: KernelProfile) -> dict[int, tuple[str, int]]:
    """gso_type (ECN masked off) → (SKB_GSO name, thlen) that virtio_net_hdr_to_skb accepts."""
    accepted = {
        GSO_TCPV4: ("SKB_GSO_TCPV4", TCPHDR_LEN),
        GSO_TCPV6: ("SKB_GSO_TCPV6", TCPHDR_LEN),
        GSO_UDP: ("SKB_GSO_UDP", UDPHDR_LEN),
    }
    if k.has(VNET_HDR_GSO_UDP_L4):
        accepted[GSO_UDP_L4] = ("SKB_GSO_UDP_L4", UDPHDR_LEN)
    return accepted


class _Walk:
    def __init__(self, k: KernelProfile) -> None:
        self.k = k
        self.checks: list[Check] = []

    def add(
        self, source: str, function: str, test: str, ok: bool, detail: str, *because: str
    ) -> bool:
        self.checks.append(
            Check(f"{source}:{function} @ {self.k.name}", function, test, ok, detail, because)
        )
        return ok


def validate(
    k: KernelProfile, h: VnetHdr, frame_len: int, *, headroom: int, tap: bool = True
) -> Verdict:
    """The checks of one write of ``h`` plus ``frame_len`` frame bytes, in kernel order.

    ``headroom`` is skb_headroom() when virtio_net_hdr_to_skb runs (tun's pad: NET_SKB_PAD +
    NET_IP_ALIGN on both the build_skb and the alloc_skb path, no XDP program attached).
    """
    w = _Walk(k)

    def fail(function: str, reason: str, hdr_len: int | None) -> Verdict:
        return Verdict(True, False, "EINVAL", function, reason, tuple(w.checks), None, hdr_len)

    if not k.has(VNET_HDR_GSO_SANITY):
        return Verdict(
            False,
            None,
            None,
            None,
            f"virtio_net_hdr_to_skb as of {k.name} was not read (read: 6.1.192, 6.12.117); "
            "validation is modelled for kernels carrying vnet_hdr_gso_sanity",
            (),
            None,
            None,
        )
    if k.has(VNET_HDR_UDP_TUNNEL) and h.gso_type & GSO_UDP_TUNNEL_BITS:
        return Verdict(
            False,
            None,
            None,
            None,
            f"UDP tunnel GSO bits ({h.gso_type & GSO_UDP_TUNNEL_BITS:#x}) on {k.name}: "
            "tun_vnet_hdr_tnl_to_skb's checks are not modelled",
            (),
            None,
            None,
        )
    # --- tun_get_user: before any skb exists (no counter moves) ---------------------------
    hdr_len = csum_hdr_len(h)
    if h.flags & NEEDS_CSUM:
        end = h.csum_start + h.csum_offset + 2
        w.add(
            TUN_C,
            "tun_get_user",
            "NEEDS_CSUM: csum_start + csum_offset + 2 > hdr_len → hdr_len = that sum",
            True,
            f"{h.csum_start} + {h.csum_offset} + 2 = {end}"
            + (
                f" > {h.hdr_len}: hdr_len becomes {hdr_len}"
                + (" (wrapped to 16 bits)" if end > U16_MAX else "")
                if end > h.hdr_len
                else f" ≤ hdr_len {h.hdr_len}: unchanged"
            ),
        )
    if not w.add(
        TUN_C,
        "tun_get_user",
        "hdr_len > len → -EINVAL",
        hdr_len <= frame_len,
        f"hdr_len {hdr_len} {'>' if hdr_len > frame_len else '≤'} the {frame_len} "
        "frame bytes after the vnet header",
    ):
        return fail(
            "tun_get_user", f"hdr_len {hdr_len} exceeds the {frame_len}-byte frame", hdr_len
        )
    if tap:
        short = frame_len < ETH_HLEN or 0 < hdr_len < ETH_HLEN
        if not w.add(
            TUN_C,
            "tun_get_user",
            "TAP: len < ETH_HLEN or 0 < hdr_len < ETH_HLEN → -EINVAL",
            not short,
            f"len {frame_len}, hdr_len {hdr_len}, ETH_HLEN {ETH_HLEN}",
        ):
            return fail(
                "tun_get_user",
                f"frame of {frame_len} bytes or hdr_len {hdr_len} below ETH_HLEN (14)",
                hdr_len,
            )
    # --- virtio_net_hdr_to_skb: after the skb is built (rx_frame_errors++, skb freed) ------
    fn = "virtio_net_hdr_to_skb"
    nh_check = k.has(VNET_HDR_NH_MIN_LEN)
    nh_min_len = IPHDR_LEN
    base = h.gso_type & ~GSO_ECN & 0xFF
    ecn = bool(h.gso_type & GSO_ECN)
    gso = h.gso_type != GSO_NONE
    thlen = 0
    skb_gso = ""
    if gso:
        accepted = gso_names(k)
        known = ", ".join(f"{t}" for t in sorted(accepted))
        ok = base in accepted
        detail = (
            f"gso_type {h.gso_type:#04x} & ~ECN = {base} → {accepted[base][0]}"
            if ok
            else f"gso_type {h.gso_type:#04x} & ~ECN = {base}"
            + (" (the ECN bit alone, without a GSO type)" if base == 0 else "")
            + f" is none of the accepted types ({known})"
            + (" — GSO_UDP_L4 (5) is accepted from 6.2" if base == GSO_UDP_L4 else "")
        )
        if not w.add(
            VIRTIO_NET_H,
            fn,
            "gso_type & ~VIRTIO_NET_HDR_GSO_ECN is a known type",
            ok,
            detail,
            *((VNET_HDR_GSO_UDP_L4.key,) if base == GSO_UDP_L4 else ()),
        ):
            return fail(fn, detail, hdr_len)
        skb_gso, thlen = accepted[base]
        if base == GSO_TCPV6 and nh_check:
            nh_min_len = IPV6HDR_LEN
        if not w.add(
            VIRTIO_NET_H,
            fn,
            "gso_size == 0 with a GSO type → -EINVAL",
            h.gso_size != 0,
            f"gso_size {h.gso_size}",
        ):
            return fail(fn, f"gso_type {h.gso_type:#04x} with gso_size 0", hdr_len)
    p_off = 0
    if h.flags & NEEDS_CSUM:
        start, off = h.csum_start, h.csum_offset
        needed = start + max(thlen, off + 2)
        if not w.add(
            VIRTIO_NET_H,
            fn,
            "NEEDS_CSUM: pskb_may_pull(csum_start + max(thlen, csum_offset + 2))",
            needed <= frame_len,
            f"needed = {start} + max({thlen}, {off} + 2) = {needed} "
            f"{'≤' if needed <= frame_len else '>'} skb->len {frame_len}",
        ):
            return fail(
                fn,
                f"csum_start + max(thlen, csum_offset + 2) = {needed} bytes needed, "
                f"the frame has {frame_len} (pskb_may_pull fails)",
                hdr_len,
            )
        ok = headroom + start < U16_MAX
        if not w.add(
            SKBUFF_C,
            "skb_partial_csum_set",
            "headroom + csum_start < U16_MAX and csum_start + csum_offset + 2 ≤ headlen",
            ok,
            f"headroom {headroom} + {start} = {headroom + start}"
            f"{' ≥ 65535' if not ok else ''}; the checksum field lies in the pulled "
            "linear data",
        ):
            return fail(
                fn,
                f"skb_partial_csum_set: headroom {headroom} + csum_start {start} "
                "does not fit skb->csum_start (16 bits)",
                hdr_len,
            )
        if nh_check and not w.add(
            VIRTIO_NET_H,
            fn,
            "skb_transport_offset (csum_start) < nh_min_len → -EINVAL",
            start >= nh_min_len,
            f"csum_start {start} vs nh_min_len {nh_min_len}",
            VNET_HDR_NH_MIN_LEN.key,
        ):
            return fail(
                fn,
                f"csum_start {start} is below nh_min_len {nh_min_len} (no room "
                "for a network header before the transport header)",
                hdr_len,
            )
        p_off = start + thlen
        if gso and not w.add(
            VIRTIO_NET_H,
            fn,
            "pskb_may_pull(transport offset + thlen)",
            p_off <= frame_len,
            f"p_off {p_off} vs skb->len {frame_len}",
        ):
            return fail(fn, f"transport header ends at {p_off}, past the frame", hdr_len)
    elif gso:
        p_off = (nh_min_len if nh_check else 0) + thlen
        if not w.add(
            VIRTIO_NET_H,
            fn,
            "GSO without NEEDS_CSUM, network_header unset on a tap write: "
            + ("pskb_may_pull(nh_min_len + thlen)" if nh_check else "pskb_may_pull(thlen)"),
            p_off <= frame_len,
            f"p_off {p_off} vs skb->len {frame_len}",
            *((VNET_HDR_NH_MIN_LEN.key,) if nh_check else ()),
        ):
            return fail(fn, f"{p_off} header bytes needed, the frame has {frame_len}", hdr_len)
    if not gso:
        w.add(
            VIRTIO_NET_H,
            fn,
            "GSO_NONE: no GSO state",
            True,
            "CHECKSUM_PARTIAL"
            if h.flags & NEEDS_CSUM
            else "no NEEDS_CSUM: ip_summed stays CHECKSUM_NONE (flags other than NEEDS_CSUM are "
            "not read here)",
        )
        return Verdict(True, True, None, None, None, tuple(w.checks), False, hdr_len)
    gso_size = h.gso_size
    nh_off = p_off
    if base == GSO_UDP:
        nh_off -= thlen
    elif base == GSO_UDP_L4 and k.has(VNET_HDR_UDP_L4_STRICT):
        rules = (
            ("UDP_L4 needs NEEDS_CSUM", bool(h.flags & NEEDS_CSUM), "flags lack NEEDS_CSUM"),
            (
                "UDP_L4: csum_offset == offsetof(struct udphdr, check) (6)",
                h.csum_offset == UDP_CSUM_OFFSET,
                f"csum_offset {h.csum_offset}",
            ),
            (
                "UDP_L4: skb->len - p_off ≤ gso_size * UDP_MAX_SEGMENTS",
                frame_len - p_off <= gso_size * UDP_MAX_SEGMENTS,
                f"{frame_len} - {p_off} = {frame_len - p_off} vs {gso_size} * "
                f"{UDP_MAX_SEGMENTS} = {gso_size * UDP_MAX_SEGMENTS}",
            ),
            ("UDP_L4 without the ECN bit", not ecn, f"gso_type {h.gso_type:#04x}"),
        )
        for test, ok, detail in rules:
            if not w.add(VIRTIO_NET_H, fn, test, ok, detail, VNET_HDR_UDP_L4_STRICT.key):
                return fail(fn, f"{test.split(': ', 1)[-1]} fails ({detail})", hdr_len)
    elif base in (GSO_TCPV4, GSO_TCPV6):
        if h.flags & NEEDS_CSUM and not w.add(
            VIRTIO_NET_H,
            fn,
            "TCP GSO with CHECKSUM_PARTIAL: csum_offset == 16 (tcphdr.check)",
            h.csum_offset == TCP_CSUM_OFFSET,
            f"csum_offset {h.csum_offset}",
            VNET_HDR_GSO_SANITY.key,
        ):
            return fail(
                fn, f"TCP GSO with csum_offset {h.csum_offset}, not 16 (tcphdr.check)", hdr_len
            )
        gso_size = max(gso_size, TCP_MIN_GSO_SIZE)
    if not w.add(
        VIRTIO_NET_H,
        fn,
        "gso_size == GSO_BY_FRAGS (0xffff) → -EINVAL",
        gso_size != GSO_BY_FRAGS,
        f"gso_size {gso_size}",
        VNET_HDR_GSO_SANITY.key,
    ):
        return fail(fn, "gso_size 0xffff is GSO_BY_FRAGS, reserved for the kernel", hdr_len)
    big = frame_len - nh_off > gso_size
    w.add(
        VIRTIO_NET_H,
        fn,
        "skb->len - nh_off > gso_size: a GSO skb (else 'too small')",
        True,
        f"{frame_len} - {nh_off} = {frame_len - nh_off} "
        + (
            f"> {gso_size}: gso_size {gso_size}, gso_type {skb_gso}"
            + (" | SKB_GSO_TCP_ECN" if ecn else "")
            + " | SKB_GSO_DODGY"
            if big
            else f"≤ {gso_size}: too small to be GSO, sent as one packet"
        ),
    )
    return Verdict(True, True, None, None, None, tuple(w.checks), big, hdr_len)
