"""include/linux/virtio_net.h:virtio_net_hdr_to_skb: what the kernel does with a virtio_net_hdr
once an skb holds the frame — on virtio-net receive (receive_buf / virtnet_receive_done) and on
a tap write (tun_get_user). One model for both paths and for ``vnetrx decode``.

It runs before eth_type_trans, so skb->data is the Ethernet header: csum_start counts from the
frame's first byte (a TAP frame, or a virtio-net frame) and skb->len includes the 14 Ethernet
bytes; skb->network_header is still 0 on both paths, so a GSO header without NEEDS_CSUM never
reaches the flow-dissector branch (only af_packet takes it: not modelled).

Each kernel's variant of the function is an ``HdrRules`` (resolved once per kernel from the
change table and the constants, ``hdr_rules``); ``virtio_net_hdr_to_skb`` then walks the checks
in the kernel's order, pulling headers into the linear area (skbuff.pskb_may_pull) and recording
every check with the values that decided it. Facts: docs/kernel/offloads.md §5-§8 (the function
read @5.12.9, @5.15.x/@6.1.x/@6.6.x stable by stable, @6.1.192, @6.12.117, @6.18.9, @7.1.5).
"""

from __future__ import annotations

import struct
from functools import cache
from typing import Final

from vnetrx.errors import UnsupportedError
from vnetrx.kernel.changes import (
    PARTIAL_CSUM_SET_MAGIC,
    UDP_MAX_SEGMENTS_128,
    VNET_HDR_GSO_BY_FRAGS,
    VNET_HDR_GSO_UDP_L4,
    VNET_HDR_MISSING_CHECK,
    VNET_HDR_NH_MIN_LEN,
    VNET_HDR_TCP_CSUM_OFFSET,
    VNET_HDR_TCP_CSUM_OFFSET_PARTIAL,
    VNET_HDR_TCP_MIN_GSO_SIZE,
    VNET_HDR_TRANSPORT_FLOOR,
    VNET_HDR_UDP_L4_STRICT,
    VNET_HDR_UDP_TUNNEL,
    VNET_HDR_UFO_THLEN,
    Change,
)
from vnetrx.kernel.constants import ETH_HLEN, TCP_MIN_GSO_SIZE, U16_MAX, UDP_MAX_SEGMENTS
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Refusal, Skb
from vnetrx.paths.skbuff import (
    pskb_may_pull,
    skb_headlen,
    skb_partial_csum,
    skb_reset_mac_header,
    skb_set_gso,
)
from vnetrx.paths.steps import StepLog
from vnetrx.records import NamedTuple

VIRTIO_NET_H: Final = "include/linux/virtio_net.h"
SKBUFF_C: Final = "net/core/skbuff.c"

# (Final, one per line: compiled, a Final int is a constant; any other module-level name is
# looked up in the module's dict by name at every use, per frame on a replay's paths)
# include/uapi/linux/virtio_net.h
NEEDS_CSUM: Final = 1
DATA_VALID: Final = 2
RSC_INFO: Final = 4
UDP_TUNNEL_CSUM: Final = 8
GSO_NONE: Final = 0
GSO_TCPV4: Final = 1
GSO_UDP: Final = 3
GSO_TCPV6: Final = 4
GSO_UDP_L4: Final = 5
GSO_UDP_TUNNEL_IPV4: Final = 0x20
GSO_UDP_TUNNEL_IPV6: Final = 0x40
GSO_ECN: Final = 0x80
GSO_UDP_TUNNEL_BITS: Final = GSO_UDP_TUNNEL_IPV4 | GSO_UDP_TUNNEL_IPV6
# include/linux/skbuff.h
CHECKSUM_NONE: Final = 0
CHECKSUM_UNNECESSARY: Final = 1
CHECKSUM_COMPLETE: Final = 2
CHECKSUM_PARTIAL: Final = 3
GSO_BY_FRAGS: Final = 0xFFFF
# header sizes virtio_net_hdr_to_skb uses (sizeof the structs)
IPHDR_LEN: Final = 20
IPV6HDR_LEN: Final = 40
TCPHDR_LEN: Final = 20
UDPHDR_LEN: Final = 8
TCP_CSUM_OFFSET: Final = 16  # offsetof(struct tcphdr, check)
UDP_CSUM_OFFSET: Final = 6  # offsetof(struct udphdr, check)

# The SKB_GSO_* bits (include/linux/skbuff.h); the ones virtio_net_hdr_to_skb sets have the same
# values in every modelled kernel (5.12 .. 7.x). Only SKB_GSO_TCP_FIXEDID moved (bit 3 → 30 in
# 6.18) and SKB_GSO_TCP_ACCECN appeared (bit 19, 6.17): docs/kernel/offloads.md §7.
SKB_GSO_TCPV4: Final = 1 << 0
SKB_GSO_DODGY: Final = 1 << 1
SKB_GSO_TCP_ECN: Final = 1 << 2
SKB_GSO_TCPV6: Final = 1 << 4
SKB_GSO_UDP_TUNNEL: Final = 1 << 10
SKB_GSO_UDP_TUNNEL_CSUM: Final = 1 << 11
SKB_GSO_UDP: Final = 1 << 16
SKB_GSO_UDP_L4: Final = 1 << 17
_SKB_GSO_NAMES: Final = (
    (0, "SKB_GSO_TCPV4"), (1, "SKB_GSO_DODGY"), (2, "SKB_GSO_TCP_ECN"), (4, "SKB_GSO_TCPV6"),
    (5, "SKB_GSO_FCOE"), (6, "SKB_GSO_GRE"), (7, "SKB_GSO_GRE_CSUM"), (8, "SKB_GSO_IPXIP4"),
    (9, "SKB_GSO_IPXIP6"), (10, "SKB_GSO_UDP_TUNNEL"), (11, "SKB_GSO_UDP_TUNNEL_CSUM"),
    (12, "SKB_GSO_PARTIAL"), (13, "SKB_GSO_TUNNEL_REMCSUM"), (14, "SKB_GSO_SCTP"),
    (15, "SKB_GSO_ESP"), (16, "SKB_GSO_UDP"), (17, "SKB_GSO_UDP_L4"), (18, "SKB_GSO_FRAGLIST"),
)


class VnetHdr(NamedTuple):
    """struct virtio_net_hdr's six members, as numbers (__virtio16: little-endian with
    VIRTIO_F_VERSION_1, native for legacy devices: little-endian on every profiled arch); and,
    on the receive side, what follows: num_buffers (12-byte header) and the hash report."""

    flags: int
    gso_type: int
    hdr_len: int
    gso_size: int
    csum_start: int
    csum_offset: int
    num_buffers: int | None = None  # virtio_net_hdr_mrg_rxbuf: the device's to set
    hash_value: int | None = None  # virtio_net_hdr_v1_hash (HASH_REPORT, 20 bytes)
    hash_report: int | None = None
    # virtio_net_hdr_v1_hash_tunnel (24 bytes, 6.17+): le16 outer_th_offset, inner_nh_offset
    outer_th_offset: int | None = None
    inner_nh_offset: int | None = None

    @property
    def gso(self) -> bool:
        return self.gso_type != GSO_NONE

    @classmethod
    def from_bytes(cls, raw: bytes) -> VnetHdr:
        """A header from its bytes, zero-padded to 10: the six members, then num_buffers (12
        bytes or more), the hash report (20 or more) and the UDP-tunnel offsets (24), as
        ``to_bytes`` lays them out."""
        raw = raw + bytes(max(10 - len(raw), 0))
        flags, gso_type, hdr_len, gso_size, start, offset = struct.unpack_from("<BBHHHH", raw)
        num_buffers = struct.unpack_from("<H", raw, 10)[0] if len(raw) >= 12 else None
        hash_value, hash_report = (
            struct.unpack_from("<IH", raw, 12) if len(raw) >= 20 else (None, None)
        )
        outer_th, inner_nh = (
            struct.unpack_from("<HH", raw, 20) if len(raw) >= 24 else (None, None)
        )
        return cls(flags, gso_type, hdr_len, gso_size, start, offset, num_buffers, hash_value,
                   hash_report, outer_th, inner_nh)

    def to_bytes(self, size: int) -> bytes:
        """The header as the device (or a tap writer) lays it out in ``size`` bytes (10, 12, 20
        or 24: layouts/virtio_net.py's structs; a 24-byte header ends with the tunnel offsets,
        0 when not given)."""
        raw = struct.pack("<BBHHHH", self.flags, self.gso_type, self.hdr_len, self.gso_size,
                          self.csum_start, self.csum_offset)
        if size >= 12:
            raw += struct.pack("<H", self.num_buffers or 0)
        if size >= 20:
            raw += struct.pack("<IHH", self.hash_value or 0, self.hash_report or 0, 0)
        if size >= 24:
            raw += struct.pack("<HH", self.outer_th_offset or 0, self.inner_nh_offset or 0)
        return raw + bytes(size - len(raw))


NO_HDR: Final = VnetHdr(0, GSO_NONE, 0, 0, 0, 0)


class Check(NamedTuple):
    """One test the kernel makes, where it makes it, and how it came out. ``test`` says what
    the kernel requires (or, for a decision that refuses nothing, what it decides); a check that
    is not ``ok`` refused the header."""

    source: str
    function: str
    test: str  # the condition as the kernel writes it, in words
    ok: bool
    detail: str
    because: tuple[str, ...] = ()
    refusal: str = ""  # when not ok: why the kernel refuses, in one line

    @property
    def reason(self) -> str:
        return self.refusal or f"{self.test} fails ({self.detail})"

    def refused(self) -> Refusal:
        return Refusal(self.function, self.source, self.test, self.reason, self.because)


class HdrRules(NamedTuple):
    """What one kernel's virtio_net_hdr_to_skb accepts, and how (docs/kernel/offloads.md §8).
    ``because`` holds the change keys a check cites."""

    kernel: str
    udp_l4: bool  # GSO_UDP_L4 (5) is a known type (860b7f27b8f7, 6.2)
    ufo_excludes_thlen: bool  # UFO's "too small" test leaves out the UDP header (cf9acc90c80e)
    gso_by_frags: bool  # gso_size == GSO_BY_FRAGS is refused
    udp_l4_checks: bool  # USO needs NEEDS_CSUM, csum_offset 6, <= UDP_MAX_SEGMENTS, no ECN
    udp_max_segments: int  # UDP_MAX_SEGMENTS (include/linux/udp.h)
    tcp_csum_offset: str  # "never" | "always" | "partial": TCP GSO's csum_offset == 16 test
    transport_floor: bool  # NEEDS_CSUM: skb_transport_offset < nh_min_len is refused
    nocsum_nh_min_len: bool  # GSO without NEEDS_CSUM pulls nh_min_len + thlen (else thlen)
    csum_p_off_max: bool  # the NEEDS_CSUM p_off uses max(nh_min_len, transport offset)
    missing_check: bool  # "net: missing check virtio": the skb->len / gso_size test
    tcp_min_gso_size: int  # TCP gso_size raised to this (TCP_MIN_GSO_SIZE 8), 0: no clamp
    partial_csum_strict: bool  # skb_partial_csum_set refuses headroom + start == U16_MAX too
    tunnel: bool  # 6.17+: UDP-tunnel gso_type bits go through virtio_net_hdr_tnl_to_skb
    because: dict[str, tuple[str, ...]]  # a rule's name → the change keys that set it

    def cite(self, rule: str) -> tuple[str, ...]:
        return self.because.get(rule, ())


class Encap(NamedTuple):
    """What virtio_net_hdr_tnl_to_skb (6.17+) sets besides gso_type for a UDP-tunnel header:
    skb->encapsulation = 1 and these, offsets from skb->head like csum_start (not skb output
    fields: the trace's steps carry them)."""

    transport_header: int  # the outer UDP header (outer_th_offset + headroom)
    inner_network_header: int  # also inner_mac_header (inner_nh_offset + headroom)
    inner_transport_header: int  # csum_start + headroom
    inner_protocol: int  # ETH_P_IP / ETH_P_IPV6 (skb_set_inner_protocol)


class HdrResult(NamedTuple):
    """virtio_net_hdr_to_skb's outcome: the skb it leaves, or the check that refused it (the
    caller drops the skb: -EINVAL on a tap write, rx_frame_errors++ on virtio-net)."""

    skb: Skb | None
    checks: tuple[Check, ...]
    failed: Check | None
    pulled: int  # bytes pskb_may_pull moved from the frags into the linear area
    expanded: bool  # pskb_expand_head gave the skb a new, larger head
    encap: Encap | None = None  # a UDP-tunnel header's inner headers (6.17+)


_GSO_NAMES_MADE: Final[dict[int, tuple[str, ...]]] = {}  # gso_type_names's answers


def gso_type_names(mask: int) -> tuple[str, ...]:
    """The SKB_GSO_* names of a gso_type mask's bits (made once per mask: a replay asks it for
    every GSO decision)."""
    names = _GSO_NAMES_MADE.get(mask)
    if names is None:
        if len(_GSO_NAMES_MADE) >= 256:  # a bound on memory (a capture's masks are a few)
            _GSO_NAMES_MADE.clear()
        names = _GSO_NAMES_MADE[mask] = tuple(
            name for bit, name in _SKB_GSO_NAMES if mask & (1 << bit))
    return names


class _Walk:
    """The checks, in order, as the kernel makes them. ``narrate`` False (a sweep, a replay's
    decision): only whether each passed decides, and no check is recorded. Each check's
    decision is made once, by the code that makes it; its words are made only under ``if
    w.narrate`` beside it, as plain strings (no closures: compiled, a method that holds a
    lambda keeps its locals in a heap object and makes the lambdas at every call)."""

    def __init__(self, k: KernelProfile, narrate: bool) -> None:
        self.k, self.narrate = k, narrate
        self.checks: list[Check] = []

    def add(self, source: str, function: str, test: str, ok: bool, detail: str,
            because: tuple[str, ...] = (), refusal: str = "") -> None:
        """Record one check (narrated walks only); ``refusal`` is kept when it failed."""
        self.checks.append(Check(f"{source}:{function} @ {self.k.name}", function, test, ok,
                                 detail, because, "" if ok else refusal))


def _hdr_result(skb: Skb | None, checks: tuple[Check, ...], failed: Check | None, pulled: int,
                expanded: bool, encap: Encap | None = None) -> HdrResult:
    """``HdrResult(...)`` made by ``tuple.__new__``, as ``skbuff.new_skb`` makes an Skb (the
    record's ``__new__`` is a Python function; a replay makes one per new decision)."""
    return tuple.__new__(HdrResult, (skb, checks, failed, pulled, expanded, encap))


def virtio_net_hdr_to_skb(
    k: KernelProfile, r: HdrRules, skb: Skb, h: VnetHdr, *, owned: bool,
    tunnel: bool | None = False, tunnel_csum: bool | None = None, frame: bytes | None = None,
    narrate: bool = True,
) -> HdrResult:
    """virtio_net_hdr_to_skb(skb, hdr, little_endian) on ``skb`` (data at the Ethernet header),
    section by section as the kernel's function reads (``_ToSkb``). ``owned``: the skb is
    charged to a socket (tun), so growing its head leaves truesize. 6.17+: the callers go
    through virtio_net_hdr_tnl_to_skb, which hands a header without a UDP-tunnel gso_type bit
    to it and checks one with a bit itself (``_ToSkb.tunnel``); ``tunnel``: UDP-tunnel GSO was
    negotiated (tun: vnet_hdr_sz >= 24; None: not known, refused as not modelled),
    ``tunnel_csum``: its csum variant too (None: as ``tunnel``), ``frame``: the frame's bytes
    when known (a USO inner header's IP version is read from them; None: a frame of zeros, as
    vnetrx writes one). ``narrate`` False: the same decisions without the checks' words
    (``checks`` empty, ``failed`` None), for deciders that show none of them (sweeps, a
    replay's decisions)."""
    if not h.flags & NEEDS_CSUM and h.gso_type == GSO_NONE:
        # the common header (a sweep's, most writes'): only skb_reset_mac_header runs
        plain = skb_reset_mac_header(skb)
        return _hdr_result(plain, (Check(
            f"{VIRTIO_NET_H}:{FN} @ {k.name}", FN, "no NEEDS_CSUM, GSO_NONE", True,
            f"nothing to set; ip_summed stays {plain.ip_summed} ({plain.ip_summed_name})"),)
            if narrate else (), None, 0, False)
    t = _ToSkb(k, r, skb, h, owned, narrate)
    if r.tunnel and h.gso_type & GSO_UDP_TUNNEL_BITS:
        return t.tunnel(tunnel, tunnel if tunnel_csum is None else tunnel_csum, frame)
    return t.base()


FN: Final = "virtio_net_hdr_to_skb"
TNL_FN: Final = "virtio_net_hdr_tnl_to_skb"
ETH_P_IP: Final = 0x0800
ETH_P_IPV6: Final = 0x86DD


class _Gso(NamedTuple):
    """Section 1's answer: the SKB_GSO_* bits, the transport header's length, nh_min_len."""

    skb_gso: int
    thlen: int
    nh_min_len: int
    ecn: bool


# NEEDS_CSUM's second pull, in words (made once, not per header)
_P_OFF_MAX_PULL: Final = "pskb_may_pull(p_off = max(nh_min_len, transport offset) + thlen)"
_P_OFF_PULL: Final = "pskb_may_pull(p_off = transport offset + thlen)"
# GSO without NEEDS_CSUM's pull, in words: (test, what) with and without nh_min_len
_NOCSUM_PULL: Final = (
    ("GSO without NEEDS_CSUM (network_header unset): pskb_may_pull(thlen)",
     "GSO without NEEDS_CSUM: thlen"),
    ("GSO without NEEDS_CSUM (network_header unset): pskb_may_pull(nh_min_len + thlen)",
     "GSO without NEEDS_CSUM: nh_min_len + thlen"),
)
# section 1's answer for GSO_NONE (without, with the ECN bit): made once
_NO_GSO: Final = (_Gso(0, 0, IPHDR_LEN, False), _Gso(0, 0, IPHDR_LEN, True))
# section 1's accepted types: virtio gso_type → (SKB_GSO_*, thlen); GSO_UDP_L4 from 6.2
_KNOWN: Final = {GSO_TCPV4: (SKB_GSO_TCPV4, TCPHDR_LEN), GSO_TCPV6: (SKB_GSO_TCPV6, TCPHDR_LEN),
                 GSO_UDP: (SKB_GSO_UDP, UDPHDR_LEN)}
_KNOWN_UDP_L4: Final = {**_KNOWN, GSO_UDP_L4: (SKB_GSO_UDP_L4, UDPHDR_LEN)}


def _gso_type_words(h: VnetHdr, base: int, known: dict[int, tuple[int, int]], ok: bool) -> str:
    """Section 1's check, in words (its detail and its refusal)."""
    if ok:
        return (f"gso_type {h.gso_type:#04x} & ~ECN = {base} → "
                f"{gso_type_names(known[base][0])[0]}")
    return (f"gso_type {h.gso_type:#04x} & ~ECN = {base}"
            + (" (the ECN bit alone, without a GSO type)" if base == 0 else "")
            + f" is none of the accepted types ({', '.join(map(str, sorted(known)))})"
            + (" — GSO_UDP_L4 (5) is accepted from 6.2" if base == GSO_UDP_L4 else ""))


# USO's four checks (gso_fields), in the kernel's order: what each requires
_USO_TESTS: Final = (
    "UDP_L4 needs NEEDS_CSUM",
    "UDP_L4: csum_offset == offsetof(struct udphdr, check) (6)",
    "UDP_L4: skb->len - p_off ≤ gso_size * UDP_MAX_SEGMENTS",
    "UDP_L4 without the ECN bit",
)


def _uso_words(i: int, h: VnetHdr, r: HdrRules, skb: Skb, p_off: int, limit: int
               ) -> tuple[str, str]:
    """USO's check ``i`` (``_USO_TESTS``), in words: its detail and its refusal."""
    if i == 0:
        return f"flags {h.flags:#x}", "GSO_UDP_L4 without NEEDS_CSUM"
    if i == 1:
        return (f"csum_offset {skb.csum_offset}",
                f"GSO_UDP_L4 with csum_offset {skb.csum_offset}, not 6 (udphdr.check)")
    if i == 2:
        return (f"{skb.len} - {p_off} = {skb.len - p_off} vs {h.gso_size} * "
                f"{r.udp_max_segments} = {limit}",
                f"GSO_UDP_L4 payload {skb.len - p_off} > gso_size {h.gso_size} × "
                f"UDP_MAX_SEGMENTS {r.udp_max_segments} = {limit}")
    return f"gso_type {h.gso_type:#04x}", "GSO_UDP_L4 with the ECN bit"


class _ToSkb:
    """One run of virtio_net_hdr_to_skb: the skb as its sections leave it and their checks."""

    def __init__(self, k: KernelProfile, r: HdrRules, skb: Skb, h: VnetHdr, owned: bool,
                 narrate: bool) -> None:
        self.k, self.r, self.h, self.owned = k, r, h, owned
        self.skb = skb
        self.w = _Walk(k, narrate)
        self.narrate = narrate
        self.start_len = skb_headlen(skb)
        self.expanded = False  # pskb_expand_head gave the skb a new head
        self.encap: Encap | None = None  # virtio_net_hdr_tnl_to_skb's inner headers

    def refused(self) -> HdrResult:
        w = self.w
        return _hdr_result(None, tuple(w.checks), w.checks[-1] if w.checks else None, 0,
                           self.expanded)

    def result(self) -> HdrResult:
        skb = self.skb
        return _hdr_result(skb, tuple(self.w.checks), None, skb_headlen(skb) - self.start_len,
                           self.expanded, self.encap)

    def pull(self, length: int, test: str, what: str, rule: str = "") -> bool:
        """pskb_may_pull(skb, length): False when the frame is shorter. ``rule``: the HdrRules
        rule the check cites (its change keys)."""
        before = self.skb
        pulled = pskb_may_pull(self.k, before, length, self.owned)
        if pulled is None:
            if self.narrate:
                self.w.add(VIRTIO_NET_H, FN, test, False,
                           f"{length} bytes needed, skb->len is {before.len}: pskb_may_pull "
                           "fails", self.r.cite(rule) if rule else (),
                           f"{what} = {length} bytes needed, the frame has {before.len} "
                           "(pskb_may_pull fails)")
            return False
        if pulled is before:  # the bytes were linear: nothing moved, the head is the same
            if self.narrate:
                self.w.add(VIRTIO_NET_H, FN, test, True,
                           f"{length} ≤ skb->len {before.len}; the first {length} bytes are "
                           "already linear", self.r.cite(rule) if rule else ())
            return True
        grew = pulled.head_size != before.head_size or pulled.head != before.head
        if self.narrate:
            moved = skb_headlen(pulled) - skb_headlen(before)
            self.w.add(VIRTIO_NET_H, FN, test, True,
                       f"{length} ≤ skb->len {before.len}; "
                       + (f"{moved} byte(s) pulled from the frags into the linear area"
                          + (f", the head grown to {pulled.head} (pskb_expand_head)" if grew
                             else "")
                          if moved else f"the first {length} bytes are already linear"),
                       self.r.cite(rule) if rule else ())
        self.expanded = self.expanded or grew
        self.skb = pulled
        return True

    def base(self) -> HdrResult:
        """The base parse (__virtio_net_hdr_to_skb from 6.18, virtio_net_hdr_to_skb before):
        gso_type, the checksum's place, the GSO fields."""
        h = self.h
        g = self.gso_type()  # 1. gso_type → SKB_GSO_*, the transport header's length, nh_min_len
        if g is None:
            return self.refused()
        self.skb = skb_reset_mac_header(self.skb)  # skb_reset_mac_header(skb): mac_header = data
        p_off: int | None
        if h.flags & NEEDS_CSUM:  # 2. the checksum's place, and the headers it needs linear
            p_off = self.needs_csum(g)
        elif h.gso_type != GSO_NONE:  # GSO without NEEDS_CSUM: the headers the GSO fields need linear
            p_off = self.gso_pull(g)
        else:
            p_off = 0
        if p_off is None:
            return self.refused()
        if h.gso_type != GSO_NONE and not self.gso_fields(g, p_off):  # 3. the GSO fields
            return self.refused()
        return self.result()

    def tunnel(self, negotiated: bool | None, csum: bool | None,
               frame: bytes | None) -> HdrResult:
        """include/linux/virtio_net.h:virtio_net_hdr_tnl_to_skb @6.17.0, @6.18.9 (a2fb4bc4e2a6)
        on a header with a UDP-tunnel gso_type bit: the tunnel checks, the base parse with the
        tunnel bits masked off, the USO inner-version re-check, the tunnel csum bit, then
        SKB_GSO_UDP_TUNNEL[_CSUM], the inner headers and skb->encapsulation."""
        h, r, w = self.h, self.r, self.w
        bits = h.gso_type & GSO_UDP_TUNNEL_BITS
        because = r.cite("tunnel")
        if negotiated is None:
            raise UnsupportedError(
                f"UDP-tunnel gso_type bits ({bits:#x}) with a 24-byte header on {self.k.name}: "
                "whether VIRTIO_NET_F_GUEST_UDP_TUNNEL_GSO (not only HOST_) was negotiated was "
                "not said (valid: --udp-tunnel gso, gso-csum or host)")
        if self.narrate:
            w.add(VIRTIO_NET_H, TNL_FN, "a UDP-tunnel gso_type bit needs UDP-tunnel GSO "
                  "negotiated", negotiated, f"gso_type {h.gso_type:#04x}; "
                  + ("UDP-tunnel GSO negotiated" if negotiated else
                     "UDP-tunnel GSO is off (virtio: no GUEST_UDP_TUNNEL_GSO; tun: "
                     "vnet_hdr_sz below 24)"), because,
                  f"UDP-tunnel gso_type {h.gso_type:#04x} without UDP-tunnel GSO negotiated")
        if not negotiated:
            return self.refused()
        ok = bits != GSO_UDP_TUNNEL_BITS
        if self.narrate:
            w.add(VIRTIO_NET_H, TNL_FN, "UDP_TUNNEL_IPV4 (0x20) or UDP_TUNNEL_IPV6 (0x40), not "
                  "both", ok, f"tunnel bits {bits:#04x}", because,
                  "both UDP-tunnel bits (0x60) set")
        if not ok:
            return self.refused()
        inner = h.gso_type & ~(GSO_ECN | GSO_UDP_TUNNEL_BITS) & 0xFF
        ok = inner not in (GSO_NONE, GSO_UDP)
        if self.narrate:
            w.add(VIRTIO_NET_H, TNL_FN, "the tunnel carries a GSO packet, not UFO: inner type "
                  "!= 0 and != GSO_UDP (3)", ok, f"inner gso_type {inner}", because,
                  "a UDP-tunnel header with "
                  + ("no inner GSO type" if inner == GSO_NONE else "an inner UFO (3)"))
        if not ok:
            return self.refused()
        ok = bool(h.flags & NEEDS_CSUM)
        if self.narrate:
            w.add(VIRTIO_NET_H, TNL_FN, "a UDP-tunnel header needs NEEDS_CSUM", ok,
                  f"flags {h.flags:#x}", because, "a UDP-tunnel header without NEEDS_CSUM")
        if not ok:
            return self.refused()
        outer_v6, inner_v6 = bool(bits & GSO_UDP_TUNNEL_IPV6), inner == GSO_TCPV6
        inner_l3 = IPV6HDR_LEN if inner_v6 else IPHDR_LEN
        outer_l3 = ETH_HLEN + (IPV6HDR_LEN if outer_v6 else IPHDR_LEN)
        inner_th, inner_nh = h.csum_start, h.inner_nh_offset or 0
        outer_th = h.outer_th_offset or 0
        in_order = (outer_th >= outer_l3, inner_nh >= outer_th + UDPHDR_LEN,
                    inner_th >= inner_nh + inner_l3)
        ok = all(in_order)
        if self.narrate:
            order = (f"outer_th_offset {outer_th} ≥ ETH_HLEN + {outer_l3 - ETH_HLEN} = "
                     f"{outer_l3}",
                     f"inner_nh_offset {inner_nh} ≥ outer_th_offset + 8 = "
                     f"{outer_th + UDPHDR_LEN}",
                     f"csum_start (the inner transport header) {inner_th} ≥ inner_nh_offset + "
                     f"{inner_l3} = {inner_nh + inner_l3}")
            failed = [text for text, passed in zip(order, in_order, strict=True) if not passed]
            w.add(VIRTIO_NET_H, TNL_FN, "the offsets in order: outer_th ≥ ETH_HLEN + outer "
                  "l3min, inner_nh ≥ outer_th + sizeof(udphdr), inner_th ≥ inner_nh + inner "
                  "l3min", ok, "; ".join(order), because,
                  f"UDP-tunnel offsets out of order: {failed[0].replace('≥', 'is not ≥')}"
                  if failed else "")
        if not ok:
            return self.refused()
        if self.narrate:
            w.add(VIRTIO_NET_H, TNL_FN, "the base parse runs with the tunnel bits masked off",
                  True, f"gso_type {h.gso_type:#04x} & ~{bits:#04x} = "
                  f"{h.gso_type & ~bits:#04x}", because)
        self.h = h._replace(gso_type=h.gso_type & ~bits)
        base = self.base()
        self.h = h
        if base.skb is None:
            return base
        skb = base.skb
        headroom = skb.data  # skb_headroom(skb): the offsets count from skb->data
        if inner == GSO_UDP_L4:
            at = inner_nh
            version = (frame[at] >> 4) if frame is not None and at < len(frame) else 0
            inner_v6 = version == 6
            inner_l3 = IPV6HDR_LEN if inner_v6 else IPHDR_LEN
            ok = inner_th >= inner_nh + inner_l3
            if self.narrate:
                w.add(VIRTIO_NET_H, TNL_FN, "USO: the inner IP header's version decides inner "
                      "l3min again; inner_th ≥ inner_nh + l3min", ok,
                      f"the byte at inner_nh_offset {at} says version {version}"
                      + (" (a frame of zeros)" if frame is None else "")
                      + f": {inner_th} vs {inner_nh} + {inner_l3}", because,
                      f"USO inner IPv6 header at {inner_nh} leaves no 40 bytes before "
                      f"csum_start {inner_th}")
            if not ok:
                return self.refused()
        tnl_csum = bool(h.flags & UDP_TUNNEL_CSUM)
        if tnl_csum:
            if self.narrate:
                w.add(VIRTIO_NET_H, TNL_FN, "VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM (8) needs the "
                      "tunnel csum negotiated", bool(csum), f"flags {h.flags:#x}", because,
                      "UDP_TUNNEL_CSUM without UDP-tunnel GSO csum negotiated")
            if not csum:
                return self.refused()
        mask = skb.gso_type | (SKB_GSO_UDP_TUNNEL_CSUM if tnl_csum else SKB_GSO_UDP_TUNNEL)
        self.skb = skb._replace(gso_type=mask, gso_type_names=gso_type_names(mask))
        self.encap = Encap(outer_th + headroom, inner_nh + headroom, inner_th + headroom,
                           ETH_P_IPV6 if inner_v6 else ETH_P_IP)
        if self.narrate:
            w.add(VIRTIO_NET_H, TNL_FN, "the tunnel fields", True,
                  f"gso_type |= "
                  f"{'SKB_GSO_UDP_TUNNEL_CSUM' if tnl_csum else 'SKB_GSO_UDP_TUNNEL'}"
                  f" → {mask:#x} ({'|'.join(gso_type_names(mask))})"
                  + ("" if skb.gso_size else ", set although the base left the skb non-GSO")
                  + f"; inner_protocol {'ETH_P_IPV6' if inner_v6 else 'ETH_P_IP'}; from "
                  f"skb->head: transport_header {outer_th + headroom}, inner_network/mac_header "
                  f"{inner_nh + headroom}, inner_transport_header {inner_th + headroom}; "
                  "encapsulation 1", because)
        return self.result()

    def gso_type(self) -> _Gso | None:
        """1. gso_type → SKB_GSO_*, thlen and nh_min_len; None: refused."""
        h, r, w = self.h, self.r, self.w
        base = h.gso_type & ~GSO_ECN & 0xFF
        ecn = bool(h.gso_type & GSO_ECN)
        if h.gso_type == GSO_NONE:
            return _NO_GSO[ecn]
        known = _KNOWN_UDP_L4 if r.udp_l4 else _KNOWN
        ok = base in known
        if self.narrate:
            words = _gso_type_words(h, base, known, ok)
            w.add(VIRTIO_NET_H, FN, "gso_type & ~VIRTIO_NET_HDR_GSO_ECN is a known type", ok,
                  words, r.cite("udp_l4") if base == GSO_UDP_L4 else (), words)
        if not ok:
            return None
        skb_gso, thlen = known[base]
        nh_min_len = IPHDR_LEN
        if base == GSO_TCPV6 and (r.transport_floor or r.nocsum_nh_min_len):
            nh_min_len = IPV6HDR_LEN
        if ecn:
            skb_gso |= SKB_GSO_TCP_ECN
        ok = h.gso_size != 0
        if self.narrate:
            w.add(VIRTIO_NET_H, FN, "a GSO type needs gso_size != 0", ok,
                  f"gso_size {h.gso_size}", (), f"gso_type {h.gso_type:#04x} with gso_size 0")
        if not ok:
            return None
        return _Gso(skb_gso, thlen, nh_min_len, ecn)

    def needs_csum(self, g: _Gso) -> int | None:
        """2. NEEDS_CSUM: "net: missing check virtio", the pulls, skb_partial_csum_set, the
        transport floor; returns p_off (None: refused)."""
        h, r, w = self.h, self.r, self.w
        start, off = h.csum_start, h.csum_offset
        needed = start + max(g.thlen, off + 2)
        if r.missing_check and h.gso_size:
            length = self.skb.len
            segs, rem = divmod(length, h.gso_size)
            ok = bool(segs) and h.gso_size > needed and (rem > needed or rem == 0)
            if self.narrate:
                w.add(VIRTIO_NET_H, FN,
                      "NEEDS_CSUM with gso_size: skb->len / gso_size >= 1, gso_size > needed "
                      "and the remainder 0 or > needed (\"net: missing check virtio\")", ok,
                      f"skb->len {length} = {segs} × {h.gso_size} + {rem}; needed {needed}",
                      r.cite("missing_check"),
                      f"skb->len {length} = {segs} × gso_size {h.gso_size} + {rem}: "
                      + ("shorter than one segment" if not segs else
                         f"gso_size not above the {needed} header bytes"
                         if h.gso_size <= needed else
                         f"a last segment of {rem} bytes, not above the {needed} header bytes")
                      + " (\"net: missing check virtio\")")
            if not ok:
                return None
        if not self.pull(needed,
                         "NEEDS_CSUM: pskb_may_pull(csum_start + max(thlen, csum_offset + 2))",
                         "csum_start + max(thlen, csum_offset + 2)"):
            return None
        skb = self.skb
        headroom, headlen = skb.data, skb_headlen(skb)
        csum_start = headroom + start
        too_far = csum_start >= U16_MAX if r.partial_csum_strict else csum_start > U16_MAX
        ok = not too_far and start + off + 2 <= headlen
        if self.narrate:
            w.add(SKBUFF_C, "skb_partial_csum_set",
                  "headroom + csum_start < U16_MAX and csum_start + csum_offset + 2 ≤ headlen",
                  ok,
                  f"headroom {headroom} + {start} = {csum_start}; {start} + {off} + 2 = "
                  f"{start + off + 2} vs headlen {headlen}"
                  + ("" if ok else " (\"bad partial csum\" is logged)"),
                  r.cite("partial_csum_strict"),
                  f"csum_start {start} + headroom {headroom} = {csum_start} does not fit "
                  f"skb->csum_start ({'≥' if r.partial_csum_strict else '>'} {U16_MAX}; "
                  "\"bad partial csum\" is logged)")
        if not ok:
            return None
        self.skb = skb_partial_csum(skb, csum_start, off)  # ip_summed = CHECKSUM_PARTIAL
        transport = start  # skb_transport_offset: transport_header = csum_start
        nh_min_len = g.nh_min_len
        if r.transport_floor:
            ok = transport >= nh_min_len
            if self.narrate:
                w.add(VIRTIO_NET_H, FN, "skb_transport_offset(skb) (csum_start) ≥ nh_min_len",
                      ok, f"csum_start {start} vs nh_min_len {nh_min_len}",
                      r.cite("transport_floor"),
                      f"csum_start {start} is below nh_min_len {nh_min_len} (no room for a "
                      "network header before the transport header)")
            if not ok:
                return None
        p_off = (max(nh_min_len, transport) if r.csum_p_off_max else transport) + g.thlen
        if not self.pull(p_off, _P_OFF_MAX_PULL if r.csum_p_off_max else _P_OFF_PULL, "p_off",
                         "csum_p_off_max"):
            return None
        return p_off

    def gso_pull(self, g: _Gso) -> int | None:
        """GSO without NEEDS_CSUM (network_header unset): pull the headers; returns p_off."""
        r = self.r
        p_off = (g.nh_min_len if r.nocsum_nh_min_len else 0) + g.thlen
        test, what = _NOCSUM_PULL[r.nocsum_nh_min_len]
        if not self.pull(p_off, test, what, "nocsum_nh_min_len"):
            return None
        return p_off

    def gso_fields(self, g: _Gso, p_off: int) -> bool:
        """3. the per-type checks, then gso_size, gso_type and gso_segs (set only when the frame
        is more than one segment); False: refused."""
        h, r, w, skb = self.h, self.r, self.w, self.skb
        skb_gso = g.skb_gso
        gso_size, nh_off = h.gso_size, p_off
        if skb_gso & ~SKB_GSO_TCP_ECN == SKB_GSO_UDP and r.ufo_excludes_thlen:
            nh_off -= g.thlen  # "UFO may not include transport header in gso_size"
        elif skb_gso == SKB_GSO_UDP_L4 or (skb_gso & ~SKB_GSO_TCP_ECN == SKB_GSO_UDP_L4):
            if r.udp_l4_checks:
                limit = h.gso_size * r.udp_max_segments
                passed = (bool(h.flags & NEEDS_CSUM), skb.csum_offset == UDP_CSUM_OFFSET,
                          skb.len - p_off <= limit, not g.ecn)
                for i, ok in enumerate(passed):
                    if self.narrate:
                        detail, refusal = _uso_words(i, h, r, skb, p_off, limit)
                        w.add(VIRTIO_NET_H, FN, _USO_TESTS[i], ok, detail,
                              r.cite("udp_l4_checks"), refusal)
                    if not ok:
                        return False
        elif skb_gso & (SKB_GSO_TCPV4 | SKB_GSO_TCPV6):
            if r.tcp_csum_offset != "never":
                applies = r.tcp_csum_offset == "always" or skb.ip_summed == CHECKSUM_PARTIAL
                offset = skb.csum_offset or 0  # without NEEDS_CSUM the csum union holds 0
                if applies:
                    ok = offset == TCP_CSUM_OFFSET
                    if self.narrate:
                        w.add(VIRTIO_NET_H, FN,
                              "TCP GSO: csum_offset == offsetof(struct tcphdr, check) (16)"
                              + (" when CHECKSUM_PARTIAL" if r.tcp_csum_offset == "partial"
                                 else ""),
                              ok, f"csum_offset {offset}", r.cite("tcp_csum_offset"),
                              f"TCP GSO with csum_offset {offset}, not 16 (tcphdr.check)"
                              + ("" if skb.ip_summed == CHECKSUM_PARTIAL else
                                 ": this kernel tests it even without NEEDS_CSUM"))
                    if not ok:
                        return False
            if r.tcp_min_gso_size and gso_size < r.tcp_min_gso_size:
                if self.narrate:
                    w.add(VIRTIO_NET_H, FN, "TCP: gso_size = max(gso_size, TCP_MIN_GSO_SIZE)",
                          True, f"gso_size {gso_size} raised to {r.tcp_min_gso_size}",
                          r.cite("tcp_min_gso_size"))
                gso_size = r.tcp_min_gso_size
        size = gso_size
        if r.gso_by_frags:
            ok = size != GSO_BY_FRAGS
            if self.narrate:
                w.add(VIRTIO_NET_H, FN, "gso_size != GSO_BY_FRAGS (0xffff)", ok,
                      f"gso_size {size}", r.cite("gso_by_frags"),
                      "gso_size 0xffff is GSO_BY_FRAGS, reserved for the kernel")
            if not ok:
                return False
        big = skb.len - nh_off > size
        mask = skb_gso | SKB_GSO_DODGY
        if self.narrate:
            w.add(VIRTIO_NET_H, FN, "the GSO fields are set only if skb->len - nh_off > gso_size "
                  "(\"too small packets are not really GSO ones\")", True,
                  f"{skb.len} - {nh_off} = {skb.len - nh_off} "
                  + (f"> {size}: gso_size {size}, gso_type {mask:#x} "
                     f"({'|'.join(gso_type_names(mask))}), gso_segs 0"
                     if big else f"≤ {size}: too small to be GSO, left as one packet"),
                  r.cite("ufo_excludes_thlen") if skb_gso & SKB_GSO_UDP else ())
        if big:
            self.skb = skb_set_gso(skb, size, mask, gso_type_names(mask), 0)
        return True


def narrate_checks(checks: tuple[Check, ...], log: StepLog) -> None:
    """One step per check, with the values that decided it."""
    for check in checks:
        log.add_cited(check.source, check.function,
                      f"{'✓' if check.ok else '✗'} {check.test}: {check.detail}",
                      check.because, ok=check.ok)


def _because(k: KernelProfile, **rules: tuple[Change, ...]) -> dict[str, tuple[str, ...]]:
    """The change keys each rule cites on this kernel (only the changes it carries)."""
    return {rule: tuple(c.key for c in cs if k.has(c)) for rule, cs in rules.items()}


@cache
def hdr_rules(k: KernelProfile) -> HdrRules:
    """This kernel's virtio_net_hdr_to_skb: the one place its version is asked about."""
    nh_min_len = k.has(VNET_HDR_NH_MIN_LEN)
    floor = k.has(VNET_HDR_TRANSPORT_FLOOR)
    if k.has(VNET_HDR_TCP_CSUM_OFFSET_PARTIAL):
        tcp_csum_offset = "partial"
    elif k.has(VNET_HDR_TCP_CSUM_OFFSET):
        tcp_csum_offset = "always"  # 5.15.167, 6.1.107-110, 6.6.46-51
    else:
        tcp_csum_offset = "never"
    return HdrRules(
        kernel=k.name,
        udp_l4=k.has(VNET_HDR_GSO_UDP_L4),
        ufo_excludes_thlen=k.has(VNET_HDR_UFO_THLEN),
        gso_by_frags=k.has(VNET_HDR_GSO_BY_FRAGS),
        udp_l4_checks=k.has(VNET_HDR_UDP_L4_STRICT),
        udp_max_segments=k.value(UDP_MAX_SEGMENTS),
        tcp_csum_offset=tcp_csum_offset,
        transport_floor=floor,
        nocsum_nh_min_len=nh_min_len,
        # 9181d6f8a2bb's max(nh_min_len, transport offset); 49d14b54a527 replaced it with the
        # floor test and the transport offset itself (6.6.14-6.6.54, 6.8-6.11)
        csum_p_off_max=nh_min_len and not floor,
        missing_check=k.has(VNET_HDR_MISSING_CHECK),
        tcp_min_gso_size=k.value(TCP_MIN_GSO_SIZE) if k.has(VNET_HDR_TCP_MIN_GSO_SIZE) else 0,
        partial_csum_strict=k.has(PARTIAL_CSUM_SET_MAGIC),
        tunnel=k.has(VNET_HDR_UDP_TUNNEL),
        because=_because(
            k,
            udp_l4=(VNET_HDR_GSO_UDP_L4,),
            ufo_excludes_thlen=(VNET_HDR_UFO_THLEN,),
            gso_by_frags=(VNET_HDR_GSO_BY_FRAGS,),
            udp_l4_checks=(VNET_HDR_UDP_L4_STRICT, UDP_MAX_SEGMENTS_128),
            tcp_csum_offset=(VNET_HDR_TCP_CSUM_OFFSET, VNET_HDR_TCP_CSUM_OFFSET_PARTIAL),
            transport_floor=(VNET_HDR_TRANSPORT_FLOOR,),
            nocsum_nh_min_len=(VNET_HDR_NH_MIN_LEN,),
            csum_p_off_max=(VNET_HDR_NH_MIN_LEN,) if not floor else (),
            missing_check=(VNET_HDR_MISSING_CHECK,),
            tcp_min_gso_size=(VNET_HDR_TCP_MIN_GSO_SIZE,),
            partial_csum_strict=(PARTIAL_CSUM_SET_MAGIC,),
            tunnel=(VNET_HDR_UDP_TUNNEL,),
        ),
    )
