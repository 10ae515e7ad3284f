"""drivers/vhost/net.c's transmit side, the host half of a frame a guest sends: handle_tx →
handle_tx_copy → vhost_net_build_xdp (a padded buffer carved from a page frag) → vhost_tx_batch
→ tun_sendmsg(TUN_MSG_PTR) → tun_xdp_one → build_skb; or, for a frame the buffer cannot hold
(-ENOSPC), a tap with a finite sk_sndbuf and zerocopy, sendmsg → tun_get_user (paths/tun, whose
stages this module calls).

``vhost_tx_plan`` decides (a ``VhostTxPlan``: the road, the reason, the buffer, the skb);
``narrate`` explains the plan; ``result_of`` makes the trace's result. Facts:
docs/kernel/vhost-net.md §1-§3 and ../shared/reference/gro-vhost-captures.md §2.1, §2.3
(drivers/vhost/net.c read @5.15.215, @6.1.192, @6.12.117, @6.18.9; drivers/net/tun.c:tun_xdp_one
@6.12.117, @6.18.9); vhost_net_build_xdp and handle_tx_copy also read here in a pre-5.12 tree
and in the 6.9 page_frag patch (the hdr_len test sits inside the NEEDS_CSUM fix-up).
"""

from __future__ import annotations

from typing import Final

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.changes import (
    TUN_XDP_ONE_SHORT_FRAME,
    VHOST_NET_PF_CACHE,
    VHOST_NET_TX_BATCH,
    VHOST_UDP_TUNNEL_GSO,
    VHOST_XDP_HDR_AT_HARD_START,
)
from vnetrx.kernel.constants import (
    ETH_HLEN,
    INT_MAX,
    U16_MAX,
    VHOST_GOODCOPY_LEN,
    VHOST_NET_BATCH,
    VHOST_NET_PKT_WEIGHT,
    VHOST_NET_WEIGHT,
    XDP_PACKET_HEADROOM,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer, Cost, Received, Refusal, Skb, VhostBuffer, VhostTx, XdpRun
from vnetrx.paths.maps import regions
from vnetrx.paths.reason import Reason
from vnetrx.paths.skbuff import eth_type_trans, skb_built
from vnetrx.paths.steps import StepLog
from vnetrx.paths.tun import xdp as tun_xdp
from vnetrx.paths.tun.build import data_align
from vnetrx.paths.tun.get_user import TapPlan, for_write, tap_config, tap_plan
from vnetrx.paths.tun.get_user import narrate as narrate_get_user
from vnetrx.paths.tun.get_user import result_of as tap_result_of
from vnetrx.paths.tun.setup import TapConfig, TapFrame, TapSetup
from vnetrx.paths.virtio_net_hdr import NEEDS_CSUM, HdrResult, narrate_checks, virtio_net_hdr_to_skb
from vnetrx.paths.xdp import ACTIONS as XDP_ACTIONS
from vnetrx.paths.xdp import VERDICT
from vnetrx.records import NamedTuple
from vnetrx.values import Value

SRC: Final = "drivers/vhost/net.c"
TUN_SRC: Final = "drivers/net/tun.c"
# vhost_net_set_features: hdr_len = (MRG_RXBUF || VERSION_1) ? 12 : 10; the tap socket carries
# it (sock_hlen) when VHOST_NET_F_VIRTIO_NET_HDR is not negotiated, as with QEMU
# (docs/kernel/vhost-net.md §1). 6.17+ (bbca931fce26): 24, sizeof(struct
# virtio_net_hdr_v1_hash_tunnel), with HOST_ or GUEST_UDP_TUNNEL_GSO; tun_xdp_one then reads the
# 24-byte header (tun_vnet_hdr_guest_features: vnet_hdr_sz >= 24).
SOCK_HLENS: Final = (10, 12)
TUNNEL_SOCK_HLEN: Final = 24
DEFAULT_SOCK_HLEN: Final = 12
MAX_FRAME_LEN: Final = 65535


class VhostTxSetup(NamedTuple):
    """The guest's vhost-net TX queue and the tap behind it (QEMU's setup: the tap socket
    carries the vnet header), apart from each frame the guest sends (a ``TapFrame``: its length
    and the vnet header in front of it). ``None`` fields get the defaults."""

    sndbuf: int | None = None  # the tap's TUNSETSNDBUF; None → INT_MAX (tun_chr_open)
    xdp: str | None = None  # an XDP program on the tap: its verdict (pass, drop, ...)
    zcopy: bool = False  # vhost_net's experimental_zcopytx=1 (default 0)
    vnet_hdr_sz: int | None = None  # sock_hlen (= the tap's vnet_hdr_sz); None → 12
    napi: bool = False  # the tap has IFF_NAPI (QEMU does not set it)
    # zerocopy: where the guest's descriptor (vnet header, then the frame: one buffer) starts
    # in its page
    zcopy_offset: int = 0


class Road(Reason):
    """How the frame reaches the tap: a trace's ``vhost.path``."""

    BATCH = "batch"  # vhost_net_build_xdp + vhost_tx_batch → tun_xdp_one
    TUN_GET_USER = "tun_get_user"  # sendmsg without TUN_MSG_PTR → tun_get_user


class Why(Reason):
    """Why that road: a trace's ``vhost.reason``."""

    BATCHED = "batched"  # vhost_net_build_xdp returned 0
    ENOSPC = "enospc"  # the buffer would pass PAGE_SIZE: the batch is flushed, sendmsg
    SNDBUF = "sndbuf"  # sk_sndbuf != INT_MAX: handle_tx_copy never batches
    ZEROCOPY = "zerocopy"  # experimental_zcopytx: handle_tx_zerocopy, always sendmsg
    EINVAL = "einval"  # vhost_net_build_xdp refused the header: the queue stops here


class Drop(Reason):
    """Why no skb reaches the stack on the batch road (a trace's ``reason``)."""

    # vhost_net_build_xdp: NEEDS_CSUM raised hdr_len past len: -EINVAL, the descriptor is
    # discarded and handle_tx_copy stops (the same descriptor is fetched again on the next kick)
    HDR_LEN = "hdr_len_exceeds_len"
    SHORT_FRAME = "short_frame"  # tun_xdp_one: frame < ETH_HLEN, -EINVAL, no counter
    BAD_GSO = "bad_gso"  # tun_xdp_one: virtio_net_hdr_to_skb refused it, rx_frame_errors++


def vhost_net_rx_pad(k: KernelProfile) -> int:
    """VHOST_NET_RX_PAD = NET_IP_ALIGN + NET_SKB_PAD (drivers/vhost/net.c @5.15 … @6.18)."""
    return k.build.net_ip_align + k.net_skb_pad


class VhostTxConfig(NamedTuple):
    """The TX queue on one kernel, resolved once: the checked request, the tap it sends into
    (paths/tun's ``TapConfig``) and every value vhost_net_build_xdp reads."""

    profile: KernelProfile
    setup: VhostTxSetup  # checked, defaults filled in
    # the tap: the frame's vnet header (``for_tx_frame``; zeros from ``vhost_tx_config``), rules
    # and sizes (tun_get_user's and tun_xdp_one's)
    tap: TapConfig
    sock_hlen: int
    rx_pad: int  # VHOST_NET_RX_PAD
    headroom: int  # XDP_PACKET_HEADROOM with a program on the tap (SOCK_XDP), else 0
    pad: int  # SKB_DATA_ALIGN(VHOST_NET_RX_PAD + headroom + sock_hlen)
    max_frame: int  # the longest frame vhost_net_build_xdp takes (after the vnet header)
    pf_cache: bool  # page_frag_alloc_align(&net->pf_cache) (6.9+), else vhost's own refill
    hdr_at_start: bool  # 6.17+: the header memcpy()d to buf + 0, no struct tun_xdp_hdr
    short_check: bool  # tun_xdp_one refuses a frame < ETH_HLEN (CVE-2024-41091 fix)
    goodcopy: int  # VHOST_GOODCOPY_LEN
    batch: int  # VHOST_NET_BATCH
    weight: int  # VHOST_NET_WEIGHT
    pkt_weight: int  # VHOST_NET_PKT_WEIGHT

    @property
    def hdr_offset(self) -> int:
        """Where the vnet header sits in the buffer: offsetof(struct tun_xdp_hdr, gso) = 4
        (an int buflen before it), or buf + 0 from 6.17."""
        return 0 if self.hdr_at_start else 4


def check_frame_len(frame_len: int) -> None:
    if not 0 <= frame_len <= MAX_FRAME_LEN:
        raise InputError(f"frame length {frame_len} out of range (valid: 0..{MAX_FRAME_LEN})")


def vhost_tx_config(k: KernelProfile, setup: VhostTxSetup) -> VhostTxConfig:
    """Check the request against kernel ``k`` and resolve it."""
    if not k.has(VHOST_NET_TX_BATCH):
        raise UnsupportedError(
            f"vhost-net's TX batching into tun (tun_xdp_one) is not in {k.name} (added in "
            f"4.20, {VHOST_NET_TX_BATCH.commit})", hint="vhost-tx is modelled for 5.12 … 7.3")
    size = DEFAULT_SOCK_HLEN if setup.vnet_hdr_sz is None else setup.vnet_hdr_sz
    tunnel = k.has(VHOST_UDP_TUNNEL_GSO)
    if size not in SOCK_HLENS and not (size == TUNNEL_SOCK_HLEN and tunnel):
        raise InputError(f"vnet header size {size} out of range for vhost-net on {k.name} "
                         "(valid: 10 without MRG_RXBUF/VERSION_1, 12 with"
                         + ("; 24 with HOST/GUEST_UDP_TUNNEL_GSO)" if tunnel else
                            "; 24 with UDP-tunnel GSO from 6.17)"))
    if setup.xdp is not None and setup.xdp not in XDP_ACTIONS:
        raise InputError(f"XDP action {setup.xdp!r} unknown (valid: {', '.join(XDP_ACTIONS)})")
    sndbuf = INT_MAX if setup.sndbuf is None else setup.sndbuf
    tap = tap_config(k, TapSetup(blocking=False, sndbuf=sndbuf, vnet_hdr=True, vnet_hdr_sz=size,
                                 xdp=setup.xdp))
    if not 0 <= setup.zcopy_offset < k.build.page_size:
        raise InputError(f"zerocopy chain offset {setup.zcopy_offset} out of range (valid: "
                         f"0..{k.build.page_size - 1}, a byte in the guest's page)")
    if setup.zcopy_offset and not setup.zcopy:
        raise InputError("a chain offset is what zerocopy pins from: give --zcopy too")
    s = VhostTxSetup(sndbuf, setup.xdp, setup.zcopy, size, setup.napi, setup.zcopy_offset)
    rx_pad = vhost_net_rx_pad(k)
    headroom = k.value(XDP_PACKET_HEADROOM) if setup.xdp is not None else 0
    pad = data_align(tap, rx_pad + headroom + size)
    room = k.build.page_size - tap.shinfo
    return VhostTxConfig(
        profile=k, setup=s, tap=tap, sock_hlen=size, rx_pad=rx_pad, headroom=headroom, pad=pad,
        max_frame=room - room % tap.cache_bytes - pad - size,
        pf_cache=k.has(VHOST_NET_PF_CACHE), hdr_at_start=k.has(VHOST_XDP_HDR_AT_HARD_START),
        short_check=k.has(TUN_XDP_ONE_SHORT_FRAME), goodcopy=k.value(VHOST_GOODCOPY_LEN),
        batch=k.value(VHOST_NET_BATCH), weight=k.value(VHOST_NET_WEIGHT),
        pkt_weight=k.value(VHOST_NET_PKT_WEIGHT))


def for_tx_frame(c: VhostTxConfig, f: TapFrame) -> VhostTxConfig:
    """The TX queue ``c`` with the frame ``f``'s vnet header on the tap it sends into."""
    tap = for_write(c.tap, f)
    return c if tap is c.tap else c._replace(tap=tap)


# --- vhost_net_build_xdp ---------------------------------------------------------------------


class BuildXdp(Value):
    """vhost_net_build_xdp's record: the buffer it would carve and whether it could."""

    __slots__ = ("buflen", "einval", "fits", "hdr_len", "len")
    _names = ("len", "buflen", "fits", "hdr_len", "einval")

    def __init__(self, len: int, buflen: int, fits: bool, hdr_len: int, einval: bool) -> None:
        self.len: Final = len  # iov_iter_count(from): sock_hlen + the frame
        # SKB_DATA_ALIGN(len + pad) + SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
        self.buflen: Final = buflen
        self.fits: Final = fits  # buflen <= PAGE_SIZE (else -ENOSPC, before any copy)
        self.hdr_len: Final = hdr_len  # after the NEEDS_CSUM fix-up (16 bits)
        self.einval: Final = einval  # the fixed-up hdr_len > len: -EINVAL

    def _values(self) -> tuple[object, ...]:
        return (self.len, self.buflen, self.fits, self.hdr_len, self.einval)


def vhost_net_build_xdp(c: VhostTxConfig, frame_len: int) -> BuildXdp:
    """vhost_net_build_xdp (drivers/vhost/net.c @6.1.192, @6.12.117, @6.18.9): -ENOSPC when the
    buffer would pass PAGE_SIZE; then, only when NEEDS_CSUM makes csum_start + csum_offset + 2
    exceed hdr_len, hdr_len is raised to it (stored in 16 bits) and compared with len (the
    header included): larger is -EINVAL. A plain hdr_len larger than the frame is not refused
    here (nor in tun_xdp_one)."""
    length = c.sock_hlen + frame_len
    buflen = data_align(c.tap, length + c.pad) + c.tap.shinfo
    h = c.tap.hdr
    if buflen > c.tap.page_size:
        return BuildXdp(length, buflen, False, h.hdr_len, False)
    end = h.csum_start + h.csum_offset + 2
    if h.flags & NEEDS_CSUM and end > h.hdr_len:
        fixed = end & U16_MAX  # gso->hdr_len = cpu_to_vhost16(vq, ...)
        return BuildXdp(length, buflen, True, fixed, fixed > length)
    return BuildXdp(length, buflen, True, h.hdr_len, False)


# --- the plan --------------------------------------------------------------------------------


class VhostTxPlan(Value):
    """One guest frame through handle_tx, decided: the road, its reason, vhost_net_build_xdp's
    buffer, and then either tun_xdp_one's stages or tun_get_user's plan (``tap``)."""

    __slots__ = ("build", "built", "errno", "frame_len", "generic_xdp", "offload", "outcome",
                 "reason", "road", "run", "skb", "tap", "why")
    _names = ("frame_len", "road", "why", "build", "outcome", "reason", "errno", "run", "built",
              "offload", "skb", "tap", "generic_xdp")

    def __init__(self, frame_len: int, road: Road, why: Why, build: BuildXdp | None,
                 outcome: str, reason: Drop | None = None, errno: str | None = None,
                 run: XdpRun | None = None, built: Skb | None = None,
                 offload: HdrResult | None = None, skb: Skb | None = None,
                 tap: TapPlan | None = None, generic_xdp: bool = False) -> None:
        self.frame_len: Final = frame_len
        self.road: Final = road
        self.why: Final = why
        self.build: Final = build  # None: vhost_net_build_xdp was not called
        # batch: "build_skb" | "drop" | "error" | "xdp_*"; tun_get_user: its plan's outcome
        self.outcome: Final = outcome
        self.reason: Final = reason  # the batch road's drop
        self.errno: Final = errno
        self.run: Final = run  # tun_xdp_one's native XDP run
        self.built: Final = built  # build_skb on the buffer, before virtio_net_hdr_to_skb
        self.offload: Final = offload  # virtio_net_hdr_to_skb's
        self.skb: Final = skb  # after eth_type_trans: what the stack (or GRO) gets
        self.tap: Final = tap  # the tun_get_user road's plan
        # a GSO frame: the program ran as generic XDP on the skb (do_xdp_generic), and passed
        self.generic_xdp: Final = generic_xdp

    def _values(self) -> tuple[object, ...]:
        return (self.frame_len, self.road, self.why, self.build, self.outcome, self.reason,
                self.errno, self.run, self.built, self.offload, self.skb, self.tap,
                self.generic_xdp)

    @property
    def cost(self) -> Cost | None:
        """What the skb cost: tun_get_user's, or on the batch road one sk_buff (build_skb on
        vhost's buffer) and the frame's one copy from the guest; None without an skb."""
        if self.tap is not None:
            return self.tap.cost if self.skb is not None else None
        return None if self.skb is None else Cost(allocations=1, bytes_copied=self.frame_len,
                                                  frags=0)

    @property
    def buffers(self) -> int:
        """The buffers the trace maps: tun_get_user's, or vhost's one."""
        return self.tap.buffers if self.tap is not None else 1


def vhost_tx_plan(c: VhostTxConfig, frame_len: int, words: bool = True) -> VhostTxPlan:
    """handle_tx on one descriptor chain of ``sock_hlen + frame_len`` bytes. ``words`` False:
    the header checks without their words (sweeps)."""
    s = c.setup
    if s.zcopy:
        # handle_tx_zerocopy: zcopy_used = len >= VHOST_GOODCOPY_LEN && !vhost_exceeds_maxpend
        # && vhost_net_tx_select_zcopy (no completion pending, no earlier failure: assumed);
        # a shorter chain is sent with msg_control NULL
        ubuf = s.zcopy_offset if zcopy_used(c, frame_len) else None
        p = tap_plan(c.tap, frame_len, words, ubuf)
        return VhostTxPlan(frame_len, Road.TUN_GET_USER, Why.ZEROCOPY, None, p.outcome,
                           errno=p.errno, run=p.run, skb=p.skb, tap=p)
    if s.sndbuf != INT_MAX:  # sock_can_batch = sk_sndbuf == INT_MAX
        return _fallback(c, frame_len, Why.SNDBUF, None, words)
    b = vhost_net_build_xdp(c, frame_len)
    if not b.fits:  # -ENOSPC: vhost_tx_batch flushes, this frame goes through sendmsg
        return _fallback(c, frame_len, Why.ENOSPC, b, words)
    if b.einval:
        return VhostTxPlan(frame_len, Road.BATCH, Why.EINVAL, b, "error", Drop.HDR_LEN, "EINVAL")
    return _tun_xdp_one(c, frame_len, b, words)


def zcopy_used(c: VhostTxConfig, frame_len: int) -> bool:
    """handle_tx_zerocopy's ``len >= VHOST_GOODCOPY_LEN``: len is the whole chain (the vnet
    header included, iov_length of the descriptors)."""
    return c.setup.zcopy and c.sock_hlen + frame_len >= c.goodcopy


def _fallback(c: VhostTxConfig, frame_len: int, why: Why, b: BuildXdp | None,
              words: bool) -> VhostTxPlan:
    """sendmsg(msg_control NULL, MSG_DONTWAIT) → tun_sendmsg → tun_get_user: the tap path's
    stages on the same bytes (paths/tun/get_user.tap_plan)."""
    p = tap_plan(c.tap, frame_len, words)
    return VhostTxPlan(frame_len, Road.TUN_GET_USER, why, b, p.outcome, errno=p.errno,
                       run=p.run, skb=p.skb, tap=p)


def _tun_xdp_one(c: VhostTxConfig, frame_len: int, b: BuildXdp, words: bool) -> VhostTxPlan:
    """tun_sendmsg(TUN_MSG_PTR) → tun_xdp_one on this frame's xdp_buff (drivers/net/tun.c
    @6.12.117, @6.18.9; docs/kernel/vhost-net.md §3)."""
    k, s, tap = c.profile, c.setup, c.tap
    if frame_len < ETH_HLEN:
        if not c.short_check:
            raise UnsupportedError(
                f"a {frame_len}-byte frame (< ETH_HLEN) on the batch path of {k.name}: "
                "tun_xdp_one lacks the short-frame check (CVE-2024-41091) and eth_type_trans "
                "reads past the frame; vnetrx does not model that",
                hint=f"fixed in 6.11 and {', '.join(str(v) for v in TUN_XDP_ONE_SHORT_FRAME.backports)}")
        return VhostTxPlan(frame_len, Road.BATCH, Why.BATCHED, b, "drop", Drop.SHORT_FRAME)
    gso = tap.hdr.gso_type != 0
    run = None
    generic = False
    if s.xdp is not None and gso:
        # tun_xdp_one: a GSO frame skips native XDP ("skb_xdp = true; goto build"); the
        # program runs as generic XDP on the built skb (do_xdp_generic). The skb is linear and
        # its headroom (pad) is at least XDP_PACKET_HEADROOM, so netif_receive_generic_xdp
        # neither copies nor expands it: XDP_PASS leaves it as built (checked on 6.1.192 and
        # 6.12.117: tests/data/vhost). Other verdicts free or send the skb: not modelled.
        if s.xdp != "pass":
            raise UnsupportedError(
                f"XDP_{s.xdp.upper()} on a GSO frame on the batch path: tun_xdp_one runs the "
                "program as generic XDP on the skb (do_xdp_generic); vnetrx models its "
                "XDP_PASS only", hint="--xdp pass, or drop the GSO header")
        generic = True
    elif s.xdp is not None:
        native = tun_xdp.native(tap, b.buflen, c.pad, frame_len)
        run = native.run._replace(function="tun_xdp_one")
        if run.result != "pass":
            return VhostTxPlan(frame_len, Road.BATCH, Why.BATCHED, b, tun_xdp.outcome_of(run),
                               run=run)
    built = skb_built("vhost_net_build_xdp's page fragment", b.buflen, tap.shinfo,
                      tap.sk_buff_aligned, c.pad, frame_len)
    # skb->sk is not set: a head regrown by a pull would be re-charged (owned False)
    offload = virtio_net_hdr_to_skb(k, tap.rules, built, tap.hdr, owned=False,
                                    tunnel=tap.tunnel, narrate=words)
    if offload.skb is None:
        return VhostTxPlan(frame_len, Road.BATCH, Why.BATCHED, b, "drop", Drop.BAD_GSO, run=run,
                           built=built, offload=offload)
    skb = eth_type_trans(offload.skb)
    return VhostTxPlan(frame_len, Road.BATCH, Why.BATCHED, b, "build_skb", run=run, built=built,
                       offload=offload, skb=skb, generic_xdp=generic)


# --- the result ------------------------------------------------------------------------------


def vhost_record(c: VhostTxConfig, p: VhostTxPlan) -> VhostTx:
    """The trace's ``vhost`` object."""
    s = c.setup
    b = p.build
    buffer = None if b is None else VhostBuffer(c.pad, c.headroom, b.buflen, c.tap.page_size,
                                                c.max_frame, c.hdr_offset)
    delivered = p.skb is not None
    return VhostTx(
        path=str(p.road), reason=str(p.why), sock_hlen=c.sock_hlen,
        len=c.sock_hlen + p.frame_len, sk_sndbuf=s.sndbuf or INT_MAX, zerocopy=s.zcopy,
        zcopy_used=p.tap is not None and p.tap.zerocopy is not None and p.tap.zerocopy.used,
        iff_napi=s.napi,
        page_frag="page_frag_alloc_align" if c.pf_cache else "vhost_net_page_frag_refill",
        stalled=p.why is Why.EINVAL,
        delivery=("napi_gro_receive" if s.napi else "netif_receive_skb") if delivered else None,
        batch=c.batch, weight=c.weight, pkt_weight=c.pkt_weight, buffer=buffer)


def result_of(c: VhostTxConfig, p: VhostTxPlan) -> Received:
    """The trace's result: the plan's outcome, the buffer as a map, the ``vhost`` record."""
    record = vhost_record(c, p)
    if p.tap is not None:
        r = tap_result_of(c.tap, p.tap)
        return r._replace(path="vhost-tx", vhost=record)
    assert p.build is not None
    if p.outcome == "error":
        return Received("vhost-tx", "error", str(p.reason), None, (), None, None, "EINVAL",
                        None, None, vhost=record)
    buffer = buffer_map(c, p.build, p.frame_len)
    if p.outcome == "drop":
        refused: Refusal | None = None
        counter = None
        if p.reason is Drop.BAD_GSO:
            assert p.offload is not None
            assert p.offload.failed is not None
            refused, counter = p.offload.failed.refused(), "rx_frame_errors"
        return Received("vhost-tx", "drop", str(p.reason), buffer, (buffer,), None, None, None,
                        counter, refused, xdp=p.run, vhost=record)
    return Received("vhost-tx", p.outcome, None, buffer, (buffer,), p.skb, p.cost, xdp=p.run,
                    vhost=record)


def buffer_map(c: VhostTxConfig, b: BuildXdp, frame_len: int) -> Buffer:
    """The buffer vhost_net_build_xdp fills: up to 6.16 struct tun_xdp_hdr (int buflen, the
    header) at its start; from 6.17 the header memcpy()d to buf + 0 and its first copy, made
    with the frame, still at pad - sock_hlen."""
    h, pad, shinfo = c.sock_hlen, c.pad, c.tap.shinfo
    room = ("VHOST_NET_RX_PAD" + (" + XDP_PACKET_HEADROOM" if c.headroom else "")
            + " + sock_hlen, SKB_DATA_ALIGNed")
    if c.hdr_at_start:
        front: tuple[tuple[str, int, str], ...] = (
            ("vnet_hdr", h, "memcpy()d from buf + pad - sock_hlen"),
            ("headroom", pad - 2 * h, room),
            ("vnet_hdr", h, "copied with the frame (one copy_from_iter)"),
        )
    else:
        front = (
            ("tun_xdp_hdr", 4, "struct tun_xdp_hdr: int buflen"),
            ("vnet_hdr", h, "struct tun_xdp_hdr: gso (the guest's header)"),
            ("headroom", pad - 4 - h, room),
        )
    return Buffer(
        size=b.buflen,
        page="net->pf_cache" if c.pf_cache else "net->page_frag",
        page_offset=0,
        used=b.len,
        regions=regions(
            *front,
            ("frame", frame_len, "copied from the guest's descriptor chain"),
            ("tailroom", b.buflen - shinfo - pad - frame_len, "SKB_DATA_ALIGN slack"),
            ("skb_shared_info", shinfo, ""),
        ),
    )


# --- narration -------------------------------------------------------------------------------


def narrate(c: VhostTxConfig, p: VhostTxPlan, log: StepLog) -> None:
    """handle_tx's steps, each read from the plan."""
    _k, s = c.profile, c.setup
    log.add(SRC, "handle_tx",
            "vhost_sock_zcopy(): experimental_zcopytx "
            + ("= 1 and the tap sets SOCK_ZEROCOPY: handle_tx_zerocopy" if s.zcopy
               else "= 0 (the default): handle_tx_copy"),
            experimental_zcopytx=int(s.zcopy), SOCK_ZEROCOPY=True)
    if s.zcopy and zcopy_used(c, p.frame_len):
        log.add(SRC, "handle_tx_zerocopy",
                f"zcopy_used = len {c.sock_hlen + p.frame_len} >= VHOST_GOODCOPY_LEN "
                f"{c.goodcopy} && !vhost_exceeds_maxpend && vhost_net_tx_select_zcopy (no "
                "earlier zerocopy failure: assumed): true. vq->heads[upend_idx] = {head, "
                "VHOST_DMA_IN_PROGRESS_LEN}, its ubuf_info (desc = upend_idx, ctx = the "
                "queue's ubufs) goes in msg_control, upend_idx advances; sendmsg(MSG_DONTWAIT) "
                "→ tun_get_user (zerocopy never batches)",
                len=c.sock_hlen + p.frame_len, VHOST_GOODCOPY_LEN=c.goodcopy, zcopy_used=True)
        # the model pins one descriptor's pages (what lab vhost --zcopy's probe sends); a Linux
        # guest's virtio-net (xmit_skb) gives the linear part (the header pushed in front when
        # it can, else a descriptor of its own) and each page frag as separate sg entries,
        # pinned iovec by iovec (one PAGE_ALIGN each): not modelled
        log.note("zerocopy: the chain is taken as ONE descriptor holding the vnet header and "
                 f"the frame (starting at offset {s.zcopy_offset} of its page, --zcopy-offset); "
                 "a Linux guest's virtio-net gives the linear part (the header in front of it "
                 "or in a descriptor of its own) and each page frag as separate descriptors, "
                 "whose pages are pinned iovec by iovec: frags and truesize then differ (not "
                 "modelled)")
    elif s.zcopy:
        log.add(SRC, "handle_tx_zerocopy",
                f"zcopy_used = len {c.sock_hlen + p.frame_len} >= VHOST_GOODCOPY_LEN "
                f"{c.goodcopy}: false, so msg_control = NULL and the frame is copied: "
                "sendmsg(MSG_DONTWAIT) → tun_get_user (zerocopy never batches)",
                len=c.sock_hlen + p.frame_len, VHOST_GOODCOPY_LEN=c.goodcopy, zcopy_used=False)
    else:
        log.add(SRC, "handle_tx_copy",
                "sock_can_batch = (sk_sndbuf == INT_MAX): "
                + ("true: each frame is built into an XDP buffer, up to VHOST_NET_BATCH per "
                   "sendmsg" if s.sndbuf == INT_MAX else
                   f"false (TUNSETSNDBUF {s.sndbuf}): every frame goes through sendmsg → "
                   "tun_get_user, MSG_MORE while more descriptors wait"),
                because=(VHOST_NET_TX_BATCH,), sk_sndbuf=s.sndbuf, INT_MAX=INT_MAX,
                sock_can_batch=s.sndbuf == INT_MAX, VHOST_NET_BATCH=c.batch)
    if p.build is not None:
        _narrate_build_xdp(c, p.build, p.frame_len, log)
    if p.tap is not None:
        if p.why is Why.ENOSPC:
            log.add(SRC, "handle_tx_copy",
                    "-ENOSPC: vhost_tx_batch() sends the frames batched so far, then this one "
                    "goes alone: msg_control = NULL, sendmsg(sock, &msg, len) with MSG_DONTWAIT",
                    err="ENOSPC", len=c.sock_hlen + p.frame_len)
        narrate_get_user(c.tap, p.tap, log, sendmsg=True, napi=s.napi)
        if s.zcopy:
            _narrate_zcopy_used(p, log)
        if p.tap.outcome == "error":
            # dc9c9e72ff3b "vhost_net: avoid tx queue stuck when sendmsg fails" (net-next,
            # January 2021: 5.12): only -EAGAIN/-ENOMEM/-ENOBUFS put the descriptor back
            log.add(SRC, "handle_tx_zerocopy" if s.zcopy else "handle_tx_copy",
                    f"sendmsg() fails with -{p.tap.errno}: not -EAGAIN/-ENOMEM/-ENOBUFS, so the "
                    "descriptor is not discarded (dc9c9e72ff3b): pr_debug('Fail to send "
                    "packet'), the frame is dropped and the queue goes on", err=p.tap.errno)
        _narrate_weights(c, log)
        return
    assert p.build is not None
    if p.why is Why.EINVAL:
        log.add(SRC, "handle_tx_copy",
                "vhost_net_build_xdp failed with -EINVAL (not -ENOSPC): vhost_tx_batch() "
                "sends what is batched, vhost_discard_vq_desc(vq, 1) puts this descriptor back, "
                "and handling stops until the next kick, which fetches the same descriptor "
                "again: the guest's TX queue stalls on it", err="EINVAL", stalled=True)
        return
    log.add(SRC, "vhost_tx_batch",
            f"the xdp_buff joins nvq->xdp[]; when {c.batch} are queued, at the end of the run "
            "or before a frame that cannot be batched, one sendmsg() hands them over with "
            "msg_control = struct tun_msg_ctl { .type = TUN_MSG_PTR, .num, .ptr = xdp }; "
            "the used ring is updated (and the guest signalled) once per batch",
            VHOST_NET_BATCH=c.batch)
    log.add(TUN_SRC, "tun_sendmsg",
            "TUN_MSG_PTR: tun_xdp_one() for each xdp_buff under one local_bh_disable()/RCU "
            "section; a frame's error is not returned to vhost")
    if c.short_check or p.frame_len < ETH_HLEN:
        ok = p.frame_len >= ETH_HLEN
        log.add(TUN_SRC, "tun_xdp_one",
                f"data_end - data = {p.frame_len} {'≥' if ok else '<'} ETH_HLEN {ETH_HLEN}"
                + ("" if ok else ": -EINVAL, the buffer is freed; no counter moves"),
                because=(TUN_XDP_ONE_SHORT_FRAME,), datasize=p.frame_len, ETH_HLEN=ETH_HLEN)
        if not ok:
            _narrate_weights(c, log)
            return
    if p.run is not None:
        _narrate_native(c, p.run, log)
        if p.run.result != "pass":
            _narrate_weights(c, log)
            return
    assert p.built is not None
    assert p.offload is not None
    log.add("net/core/skbuff.c", "build_skb",
            f"tun_xdp_one: build_skb(data_hard_start, buflen {p.build.buflen}), "
            f"skb_reserve(data - data_hard_start = {c.pad}), skb_put({p.frame_len}): fully "
            "linear; truesize = buflen + SKB_DATA_ALIGN(sizeof(struct sk_buff)); skb->sk is not "
            "set", because=(VHOST_XDP_HDR_AT_HARD_START,) if c.hdr_at_start else (),
            buflen=p.build.buflen, truesize=p.built.truesize, headroom=p.built.data,
            tailroom=p.built.end - p.built.tail)
    narrate_checks(p.offload.checks, log)
    if p.skb is None:
        log.add(TUN_SRC, "tun_xdp_one",
                "virtio_net_hdr_to_skb failed: rx_frame_errors++, the skb is freed; the guest "
                "gets no error (its descriptor is used as sent)", rx_frame_errors=1)
        _narrate_weights(c, log)
        return
    log.add("net/ethernet/eth.c", "eth_type_trans", "mac_header = data; pull ETH_HLEN (14); "
            "then skb_reset_network_header, skb_probe_transport_header, skb_record_rx_queue",
            len=p.skb.len, data_len=p.skb.data_len, headroom=p.skb.data)
    if p.generic_xdp:
        log.add(TUN_SRC, "tun_xdp_one",
                "a GSO frame skipped native XDP (skb_xdp): do_xdp_generic() runs the program "
                "on the skb; it is linear with headroom pad ≥ XDP_PACKET_HEADROOM, so "
                "netif_receive_generic_xdp neither copies nor expands it, and XDP_PASS lets it "
                "go on as built", headroom=c.pad,
                XDP_PACKET_HEADROOM=c.profile.value(XDP_PACKET_HEADROOM))
    skb = p.skb
    if s.napi:
        log.add(TUN_SRC, "tun_xdp_one",
                "IFF_NAPI: the skb joins tfile->sk.sk_write_queue; after the batch "
                "napi_schedule() and tun_napi_poll hand it to napi_gro_receive (GRO may merge "
                "it with the batch's other frames); the net:napi_gro_receive_entry tracepoint "
                "prints these fields", len=skb.len, data_len=skb.data_len,
                truesize=skb.truesize, nr_frags=skb.nr_frags)
    else:
        log.add("net/core/dev.c", "netif_receive_skb",
                "tun_xdp_one hands the skb to the stack at once, in the vhost worker's context "
                "(no GRO without IFF_NAPI, which QEMU does not set); the "
                "net:netif_receive_skb_entry tracepoint prints these fields",
                len=skb.len, data_len=skb.data_len, truesize=skb.truesize,
                nr_frags=skb.nr_frags, gso_size=skb.gso_size, gso_type=skb.gso_type)
    _narrate_weights(c, log)


def _narrate_zcopy_used(p: VhostTxPlan, log: StepLog) -> None:
    """When the guest's descriptor goes on the used ring under handle_tx_zerocopy."""
    z = p.tap.zerocopy if p.tap is not None else None
    if z is None:
        log.add(SRC, "handle_tx_zerocopy",
                "a copied frame: vhost_add_used_and_signal(vq, head, 0) at once (used length "
                "0, one signal per frame), possibly ahead of zerocopy frames still in flight")
    elif not z.used:
        log.add(SRC, "vhost_zerocopy_signal_used",
                "the ubuf's callback already ran with success false (VHOST_DMA_FAILED_LEN): "
                "the head is added to the used ring in upend order, and vhost_net_tx_err "
                "counts the failure (tx_zcopy_err: zerocopy pauses until tx_packets / 64 "
                "catches up)")
    else:
        log.add(SRC, "vhost_zerocopy_signal_used",
                "the descriptor stays out of the used ring until the skb is freed: the ubuf's "
                "callback marks heads[desc].len VHOST_DMA_DONE_LEN (or FAILED_LEN when a "
                "receiver copied the frags, skb_orphan_frags_rx), and vhost_zerocopy_signal_used "
                "(after this sendmsg and at the top of the next loop) adds the heads from "
                "done_idx up to the first still in flight, in order, used length 0, and "
                "signals; an skb freed inside sendmsg (netif_receive_skb consumed or dropped "
                "it) is used and signalled at once, one signal per frame")


def _narrate_build_xdp(c: VhostTxConfig, b: BuildXdp, frame_len: int, log: StepLog) -> None:
    because = (VHOST_NET_TX_BATCH,)
    log.add(SRC, "vhost_net_build_xdp",
            "pad = SKB_DATA_ALIGN(VHOST_NET_RX_PAD + headroom + sock_hlen)"
            + (" (XDP_PACKET_HEADROOM: the tap has a program, SOCK_XDP)" if c.headroom else "")
            + "; SKB_DATA_ALIGN(len + pad) + SKB_DATA_ALIGN(sizeof(skb_shared_info)) = "
            + (f"{b.buflen} ≤ PAGE_SIZE {c.tap.page_size}: it fits" if b.fits else
               f"{b.buflen} > PAGE_SIZE {c.tap.page_size}: -ENOSPC")
            + f" (frames of up to {c.max_frame} bytes fit)",
            because=because, len=b.len, sock_hlen=c.sock_hlen, VHOST_NET_RX_PAD=c.rx_pad,
            headroom=c.headroom, pad=c.pad, buflen=b.buflen, PAGE_SIZE=c.tap.page_size,
            max_frame=c.max_frame)
    if not b.fits:
        return
    if c.pf_cache:
        where = ("page_frag_alloc_align(&net->pf_cache, buflen, GFP_KERNEL, SMP_CACHE_BYTES) "
                 "carves it")
    else:
        where = ("vhost_net_page_frag_refill() carves it from vhost's own page_frag (a 32 KiB "
                 "page whose refcount was raised by USHRT_MAX once; --net->refcnt_bias per "
                 "buffer), the offset first aligned to SMP_CACHE_BYTES")
    if c.hdr_at_start:
        copy = ("one copy_from_iter() puts header and frame at buf + pad - sock_hlen, then the "
                "header is memcpy()d to buf + 0 (no struct tun_xdp_hdr; frame_sz carries buflen)")
    else:
        copy = ("the header is copied to buf + offsetof(struct tun_xdp_hdr, gso) = buf + 4, the "
                "frame to buf + pad; hdr->buflen = buflen")
    log.add(SRC, "vhost_net_build_xdp", f"{where}; {copy}",
            because=tuple(x for x, on in ((VHOST_NET_PF_CACHE, c.pf_cache),
                                          (VHOST_XDP_HDR_AT_HARD_START, c.hdr_at_start)) if on),
            buflen=b.buflen, hdr_offset=c.hdr_offset, data=c.pad, len=frame_len)
    h = c.tap.hdr
    if h.flags & NEEDS_CSUM:
        end = h.csum_start + h.csum_offset + 2
        log.add(SRC, "vhost_net_build_xdp",
                f"NEEDS_CSUM: csum_start + csum_offset + 2 = {end} "
                + (f"> hdr_len {h.hdr_len}: hdr_len = {b.hdr_len}; "
                   + (f"{b.hdr_len} > len {b.len}: -EINVAL" if b.einval else
                      f"≤ len {b.len}: accepted") if end > h.hdr_len
                   else f"≤ hdr_len {h.hdr_len}: unchanged"),
                hdr_len=b.hdr_len, len=b.len, ok=not b.einval)


def _narrate_native(c: VhostTxConfig, run: XdpRun, log: StepLog) -> None:
    """tun_xdp_one's native run: the program on vhost's buffer, tun_xdp_act on its verdict."""
    s = c.setup
    assert s.xdp is not None
    what = {
        "pass": "XDP_PASS: the skb is built around the same buffer",
        "drop": f"{VERDICT[s.xdp]}: tun_xdp_act counts rx_dropped; the page reference is "
                "batched in tun_page and put after the batch",
        "tx": "XDP_TX: tun_xdp_tx queues an xdp_frame on a tap queue's ring (read by the fd's "
              "owner, or by vhost-net's RX side)",
        "redirect": "XDP_REDIRECT: xdp_do_redirect, flushed after the batch",
        "redirect_failed": f"XDP_REDIRECT failed ({run.errno}): the page is put",
    }.get(run.result, run.result)
    log.add(TUN_SRC, "tun_xdp_one",
            f"native XDP (no GSO type): xdp_init_buff(frame_sz = buflen {run.frame_sz}, "
            f"&tfile->xdp_rxq) on vhost's buffer, data at pad {run.headroom}; "
            f"bpf_prog_run_xdp() returns {run.action}; {what}",
            verdict=run.action, headroom=run.headroom, len=run.len, frame_sz=run.frame_sz,
            rx_dropped=run.rx_dropped, tx_packets=run.tx_packets)


def _narrate_weights(c: VhostTxConfig, log: StepLog) -> None:
    log.add(SRC, "vhost_exceeds_weight",
            f"one handle_tx run moves at most VHOST_NET_PKT_WEIGHT ({c.pkt_weight}) packets or "
            f"VHOST_NET_WEIGHT ({c.weight}) bytes, then requeues itself so other queues run",
            VHOST_NET_PKT_WEIGHT=c.pkt_weight, VHOST_NET_WEIGHT=c.weight)


def receive(c: VhostTxConfig, frame_len: int, log: StepLog) -> Received:
    """One frame, decided then narrated."""
    plan = vhost_tx_plan(c, frame_len)
    narrate(c, plan, log)
    return result_of(c, plan)
