"""The virtio-net header of a tap write: how tun_get_user reads it (drivers/net/tun_vnet.h's
__tun_vnet_hdr_get where VNET_HDR_UDP_TUNNEL is present), the checks tun_get_user makes on it
before an skb exists, and virtio_net_hdr_to_skb once the skb holds the frame (the offload stage,
paths/virtio_net_hdr.py). ``validate`` is the whole verdict on a header, which ``vnetrx decode``
prints. Facts: docs/kernel/tun-tap.md §4, §10 and docs/kernel/offloads.md §12.

DATA_VALID means nothing on this path: no version of tun.c or tun_vnet.h reads it, so ip_summed
stays CHECKSUM_NONE unless NEEDS_CSUM makes it CHECKSUM_PARTIAL (docs/kernel/offloads.md §12.2).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from vnetrx.errors import UnsupportedError
from vnetrx.kernel.changes import TUN_VNET_HDR_GET, VNET_HDR_UDP_TUNNEL
from vnetrx.kernel.constants import ETH_HLEN, U16_MAX
from vnetrx.kernel.profile import KernelProfile
from vnetrx.layouts.virtio_net import virtio_net_hdr
from vnetrx.model import Skb
from vnetrx.paths.steps import StepLog
from vnetrx.paths.tun.setup import SRC, TapConfig
from vnetrx.paths.virtio_net_hdr import (
    DATA_VALID,
    NEEDS_CSUM,
    Check,
    HdrResult,
    VnetHdr,
    hdr_rules,
    virtio_net_hdr_to_skb,
)
from vnetrx.records import NamedTuple
from vnetrx.values import Value

TUN_C: Final = "drivers/net/tun.c"


def vnet_hdr_size() -> int:
    """sizeof(struct virtio_net_hdr): tun_set_iff's default vnet_hdr_sz."""
    return virtio_net_hdr().size


@lru_cache(maxsize=1024)  # a sweep decodes one header for every length
def decode_hdr(raw: bytes) -> VnetHdr:
    """The first sizeof(struct virtio_net_hdr) bytes of a write."""
    return VnetHdr(**virtio_net_hdr().parse(raw[: vnet_hdr_size()]))


def csum_hdr_len(h: VnetHdr) -> int:
    """tun_get_user: with NEEDS_CSUM, hdr_len grows to csum_start + csum_offset + 2 when that is
    larger; the result is stored back into the 16-bit field, so it wraps above 65535."""
    if h.flags & NEEDS_CSUM:
        end = h.csum_start + h.csum_offset + 2
        if end > h.hdr_len:
            return end & U16_MAX
    return h.hdr_len


def parsed_size(k: KernelProfile, vnet_hdr_sz: int) -> int:
    """How much of the vnet header tun reads: sizeof(struct virtio_net_hdr), or the 24-byte
    virtio_net_hdr_v1_hash_tunnel when vnet_hdr_sz makes UDP-tunnel GSO possible (6.17+)."""
    return 24 if k.has(VNET_HDR_UDP_TUNNEL) and vnet_hdr_sz >= 24 else vnet_hdr_size()


class FrontRules(NamedTuple):
    """What tun_get_user compares a write's length with before any skb exists, for one header
    on one device (resolved once: ``front_rules``)."""

    kernel: str
    hdr: VnetHdr
    hdr_len: int  # after the NEEDS_CSUM fix-up (16-bit)
    size: int  # vnet_hdr_sz (sizeof(struct virtio_net_hdr) when none was set)
    # 6.15+ (2506251e81d1, TUN_VNET_HDR_GET): hdr_len is compared with what follows the parsed
    # header, so the unread rest of vnet_hdr_sz counts as room (measured on 6.18.44)
    loose: bool
    extra: int  # that unread rest (0 before 6.15)
    tap: bool  # a TAP frame starts with an Ethernet header


def front_rules(k: KernelProfile, h: VnetHdr, *, tap: bool,
                vnet_hdr_sz: int | None = None) -> FrontRules:
    size = vnet_hdr_size() if vnet_hdr_sz is None else vnet_hdr_sz
    loose = k.has(TUN_VNET_HDR_GET)
    return FrontRules(k.name, h, csum_hdr_len(h), size, loose,
                      size - parsed_size(k, size) if loose else 0, tap)


class Front(Value):
    """tun_get_user's checks before any skb exists (no counter moves on a failure)."""

    __slots__ = ("checks", "failed", "hdr_len", "refused")
    _names = ("hdr_len", "checks", "failed", "refused")

    def __init__(self, hdr_len: int, checks: tuple[Check, ...], failed: Check | None,
                 refused: bool) -> None:
        self.hdr_len: Final = hdr_len  # after the NEEDS_CSUM fix-up
        self.checks: Final = checks  # empty when decided without words
        self.failed: Final = failed  # the check that refused the write (None without words)
        self.refused: Final = refused

    def _values(self) -> tuple[object, ...]:
        return (self.hdr_len, self.checks, self.failed, self.refused)


def front_checks(r: FrontRules, frame_len: int, words: bool = True) -> Front:
    """tun_get_user's checks before any skb exists: the NEEDS_CSUM fix-up of hdr_len,
    hdr_len > len, and on a TAP the Ethernet header's length. Decided first; ``words`` False:
    only whether they pass (a sweep), else each check with its words."""
    hdr_len, extra = r.hdr_len, r.extra
    room = frame_len + extra
    fits = hdr_len <= room
    short = r.tap and (frame_len < ETH_HLEN or 0 < hdr_len < ETH_HLEN)
    refused = not fits or short
    if not words:
        return Front(hdr_len, (), None, refused)
    h, size = r.hdr, r.size
    checks: list[Check] = []

    def add(where: tuple[str, str], test: str, ok: bool, detail: str, because: tuple[str, ...],
            refusal: str) -> None:
        checks.append(Check(f"{where[0]}:{where[1]} @ {r.kernel}", where[1], test, ok, detail,
                            because, "" if ok else refusal))

    get_user = (TUN_C, "tun_get_user")
    if h.flags & NEEDS_CSUM:
        end = h.csum_start + h.csum_offset + 2
        add(get_user, "NEEDS_CSUM: hdr_len = max(hdr_len, csum_start + csum_offset + 2)", True,
            f"{h.csum_start} + {h.csum_offset} + 2 = {end}"
            + (f" > {h.hdr_len}: hdr_len becomes {hdr_len}"
               + (" (wrapped to 16 bits)" if end > U16_MAX else "")
               if end > h.hdr_len else f" ≤ hdr_len {h.hdr_len}: unchanged"), (), "")
    add(("drivers/net/tun_vnet.h", "__tun_vnet_hdr_get") if r.loose else get_user,
        "hdr_len ≤ len" + (" + the unread rest of vnet_hdr_sz" if r.loose else ""), fits,
        f"hdr_len {hdr_len} {'>' if hdr_len > room else '≤'} "
        + (f"{frame_len} frame bytes + {extra} (vnet_hdr_sz {size} - the "
           f"{size - extra} bytes read) = {room}" if r.loose else
           f"the {frame_len} frame bytes after the vnet header"),
        (TUN_VNET_HDR_GET.key,) if r.loose else (),
        f"hdr_len {hdr_len} exceeds the {frame_len}-byte frame" + (f" + {extra}" if extra else ""))
    if fits and r.tap:
        add(get_user, "TAP: len ≥ ETH_HLEN, and hdr_len 0 or ≥ ETH_HLEN", not short,
            f"len {frame_len}, hdr_len {hdr_len}, ETH_HLEN {ETH_HLEN}", (),
            f"frame of {frame_len} bytes below ETH_HLEN ({ETH_HLEN})" if frame_len < ETH_HLEN
            else f"hdr_len {hdr_len} below ETH_HLEN ({ETH_HLEN})")
    return Front(hdr_len, tuple(checks), checks[-1] if refused else None, refused)


class Verdict(NamedTuple):
    """What write(2) of this header and frame returns, and every check on the way."""

    modelled: bool  # False: the kernel's checks for this case were not read (see ``reason``)
    accepted: bool | None
    errno: str | None  # "EINVAL" when the write fails
    function: str | None  # where it fails
    reason: str | None
    checks: tuple[Check, ...]
    gso: bool | None  # the skb leaves as a GSO skb (SKB_GSO_DODGY set)
    hdr_len: int | None  # hdr_len after tun_get_user's NEEDS_CSUM fix-up


def validate(
    k: KernelProfile, h: VnetHdr, frame_len: int, *, headroom: int, tap: bool = True,
    vnet_hdr_sz: int = 10, frame: bytes | None = None,
) -> Verdict:
    """The checks of one write of ``h`` plus ``frame_len`` frame bytes, in kernel order, on a
    device with TUNSETVNETHDRSZ ``vnet_hdr_sz`` (24 or more turns UDP-tunnel GSO on, 6.17+).
    ``headroom`` is skb_headroom() when virtio_net_hdr_to_skb runs (tun's pad). Whether a
    header is accepted does not depend on how much of the frame is linear (a pull fails only
    past skb->len), so the skb here is a linear one. ``frame``: its bytes when known (a USO
    tunnel header's inner IP version is read from them)."""
    tunnel = k.has(VNET_HDR_UDP_TUNNEL) and vnet_hdr_sz >= 24
    front = front_checks(front_rules(k, h, tap=tap, vnet_hdr_sz=vnet_hdr_sz), frame_len)
    hdr_len, checks, failed = front.hdr_len, front.checks, front.failed
    if failed is not None:
        return Verdict(True, False, "EINVAL", failed.function, failed.reason, checks, None,
                       hdr_len)
    end = headroom + frame_len
    skb = Skb("(any head)", end, headroom, end, end, frame_len, 0, 0)
    try:
        result = virtio_net_hdr_to_skb(k, hdr_rules(k), skb, h, owned=True, tunnel=tunnel,
                                       frame=frame)
    except UnsupportedError as exc:
        return Verdict(False, None, None, None, exc.message, checks, None, hdr_len)
    checks += result.checks
    if result.skb is None:
        assert result.failed is not None
        return Verdict(True, False, "EINVAL", result.failed.function, result.failed.reason,
                       checks, None, hdr_len)
    return Verdict(True, True, None, None, None, checks, result.skb.gso_size != 0, hdr_len)


def vnet_hdr_to_skb(c: TapConfig, skb: Skb, owned: bool, words: bool = True) -> HdrResult:
    """virtio_net_hdr_to_skb on the skb tun_build_skb / tun_alloc_skb built (data at the
    Ethernet header on a TAP, the IP header on a TUN). 6.17+ tun_vnet_hdr_tnl_to_skb: UDP-tunnel
    GSO counts as negotiated when vnet_hdr_sz is at least TUN_VNET_TNL_SIZE (24): ``c.tunnel``.
    ``words`` False: the checks without their words (a sweep)."""
    return virtio_net_hdr_to_skb(c.profile, c.rules, skb, c.hdr, owned=owned, tunnel=c.tunnel,
                                 frame=c.setup.frame, narrate=words)


# --- narration (the tap path's steps) -----------------------------------------------------


def narrate_vnet_hdr_get(c: TapConfig, hdr_len: int, frame_len: int, log: StepLog) -> None:
    """Reading the vnet header; NEEDS_CSUM raised hdr_len to cover the checksum field."""
    k, s, hdr = c.profile, c.setup, c.hdr
    assert s.vnet_hdr_sz is not None
    where, function = SRC, "tun_get_user"
    if k.has(TUN_VNET_HDR_GET):
        where, function = "drivers/net/tun_vnet.h", "__tun_vnet_hdr_get"
    parsed = parsed_size(k, s.vnet_hdr_sz)
    log.add(
        where,
        function,
        f"read {parsed} header bytes, skip the rest of vnet_hdr_sz ({s.vnet_hdr_sz}); "
        + (
            "NEEDS_CSUM: hdr_len = max(hdr_len, csum_start + csum_offset + 2)"
            if hdr.flags & NEEDS_CSUM
            else "no NEEDS_CSUM: hdr_len as written"
        )
        + ("; DATA_VALID is not read on a tap write" if hdr.flags & DATA_VALID else ""),
        because=(VNET_HDR_UDP_TUNNEL,) if parsed == 24 else (),
        flags=hdr.flags,
        gso_type=hdr.gso_type,
        hdr_len=hdr_len,
        gso_size=hdr.gso_size,
        csum_start=hdr.csum_start,
        csum_offset=hdr.csum_offset,
        len=frame_len,
    )
