"""drivers/net/tun.c's write path: tun_chr_write_iter → tun_get_user → tun_can_build_skb →
tun_build_skb or tun_alloc_skb (sock_alloc_send_pskb) → virtio_net_hdr_to_skb → eth_type_trans →
netif_receive_skb. One write(2) of ``vnet_hdr_sz + frame_len`` bytes to a TAP (or TUN) fd opened
with IFF_NO_PI.

This module checks the request and walks tun_get_user's stages; the vnet header lives in
``vnet_hdr``, the build_skb path in ``build``, the copy path in ``alloc`` and what they share in
``setup``. Facts: docs/kernel/tun-tap.md §4-§13 and docs/kernel/skbuff.md (tun.c read @4.13.4,
@4.14.5, @5.15.100, @6.1.192, @6.6.87, @6.12.117, @6.18.3, @7.3.4; measured on 6.18.44, §11).
"""

from __future__ import annotations

from typing import Final

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.changes import (
    TUN_XDP,
    VNET_HDR_UDP_TUNNEL,
)
from vnetrx.kernel.constants import (
    ETH_HLEN,
    INT_MAX,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Cost, Received, Skb, XdpRun
from vnetrx.paths.skbuff import eth_type_trans, shinfo_size, skb_reset_mac_header
from vnetrx.paths.steps import StepLog
from vnetrx.paths.tun import xdp
from vnetrx.paths.tun.alloc import Alloc, alloc_maps, alloc_rules, narrate_alloc, tun_alloc_skb
from vnetrx.paths.tun.build import (
    FRAG_SOURCES,
    Built,
    CanBuild,
    build_map,
    build_rules,
    narrate_build,
    narrate_can_build,
    tun_build_skb,
    tun_can_build_skb,
)
from vnetrx.paths.tun.setup import SRC, TapConfig, TapFrame, TapSetup, error, tun_rx_pad
from vnetrx.paths.tun.vnet_hdr import (
    Front,
    FrontRules,
    decode_hdr,
    front_checks,
    front_rules,
    narrate_vnet_hdr_get,
    vnet_hdr_size,
    vnet_hdr_to_skb,
)
from vnetrx.paths.tun.xdp import Generic, GenericWhy
from vnetrx.paths.tun.zerocopy import ZeroCopy, tun_get_user_zerocopy, zerocopy_sg_from_iter
from vnetrx.paths.virtio_net_hdr import NO_HDR, HdrResult, VnetHdr, hdr_rules, narrate_checks
from vnetrx.paths.xdp import ACTIONS as XDP_ACTIONS
from vnetrx.values import Value

MAX_FRAME_LEN: Final = 65535  # what vnetrx models; the kernel itself has no smaller cap on a write
NO_IP_VERSION: Final = "a TUN frame of 0 bytes has no IP version (ip_version 0)"
NEEDS_VNET_HDR: Final = "--vnet-hdr-sz and --hdr need IFF_VNET_HDR (drop --no-vnet-hdr)"


def check_frame_len(frame_len: int) -> None:
    """A write's length vnetrx models (after the vnet header)."""
    if not 0 <= frame_len <= MAX_FRAME_LEN:
        raise InputError(f"frame length {frame_len} out of range (valid: 0..{MAX_FRAME_LEN})")


def check_tap_setup(k: KernelProfile, s: TapSetup, frame: TapFrame | None = None) -> TapSetup:
    """Check the device against the kernel and fill in the defaults tun_set_iff would give;
    with ``frame``, its vnet header too (``check_tap_frame``, in the order the checks have
    always been reported in)."""
    sndbuf = INT_MAX if s.sndbuf is None else s.sndbuf
    if not 1 <= sndbuf <= INT_MAX:  # tun_set_sndbuf path: TUNSETSNDBUF <= 0 is -EINVAL
        raise InputError(f"sndbuf {sndbuf} out of range (TUNSETSNDBUF accepts 1..{INT_MAX})")
    if not s.vnet_hdr and (s.vnet_hdr_sz is not None
                           or (frame is not None and frame.hdr is not None)):
        raise InputError(NEEDS_VNET_HDR)
    base = vnet_hdr_size()
    size = (base if s.vnet_hdr_sz is None else s.vnet_hdr_sz) if s.vnet_hdr else 0
    if s.vnet_hdr and not base <= size <= MAX_FRAME_LEN:
        # TUNSETVNETHDRSZ: -EINVAL below sizeof(struct virtio_net_hdr) (tun.c @4.14.5;
        # tun_vnet.h:tun_vnet_ioctl @6.18.3; measured: 8 and 9 rejected).
        raise InputError(
            f"vnet header size {size} out of range (TUNSETVNETHDRSZ accepts {base}.."
            f"{MAX_FRAME_LEN} here)"
        )
    if frame is not None and s.vnet_hdr:
        _check_hdr_fits(frame.hdr or b"", size)
    if s.xdp is not None and s.xdp not in XDP_ACTIONS:
        raise InputError(f"XDP action {s.xdp!r} unknown (valid: {', '.join(XDP_ACTIONS)})")
    if (s.xdp_adjust_head or s.xdp_adjust_tail or s.xdp_meta) and s.xdp is None:
        raise InputError("--xdp-adjust-head/--xdp-adjust-tail/--xdp-meta are what an XDP "
                         "program does: give --xdp ACTION too")
    if not 0 <= s.xdp_meta <= 255:
        raise InputError(f"--xdp-meta {s.xdp_meta} out of range (valid: 0..255)")
    for value in (s.xdp_adjust_head, s.xdp_adjust_tail):
        if not -MAX_FRAME_LEN <= value <= MAX_FRAME_LEN:
            raise InputError(f"XDP adjustment {value} out of range (valid: -{MAX_FRAME_LEN}.."
                             f"{MAX_FRAME_LEN})")
    if s.xdp is not None and not k.has(TUN_XDP):
        raise UnsupportedError(f"tun has no XDP support on {k.name} (added in 4.14)")
    if s.frag_source is not None and s.frag_source not in FRAG_SOURCES:
        raise InputError(
            f"frag source {s.frag_source!r} unknown (valid: {', '.join(FRAG_SOURCES)})"
        )
    return TapSetup(
        s.tun, s.blocking, sndbuf, s.vnet_hdr, size, s.xdp, s.xdp_adjust_head,
        s.xdp_adjust_tail, s.frag_source, s.xdp_meta, s.frame
    )


def check_tap_frame(s: TapSetup, f: TapFrame) -> bytes | None:
    """The vnet header bytes the write ``f`` carries on the checked device ``s``: zero-padded
    to vnet_hdr_sz (None without IFF_VNET_HDR). Its length is checked by ``check_frame_len``."""
    if not s.vnet_hdr:
        if f.hdr is not None:
            raise InputError(NEEDS_VNET_HDR)
        return None
    assert s.vnet_hdr_sz is not None
    hdr = f.hdr or b""
    _check_hdr_fits(hdr, s.vnet_hdr_sz)
    return hdr + bytes(s.vnet_hdr_sz - len(hdr))


def _check_hdr_fits(hdr: bytes, size: int) -> None:
    if len(hdr) > size:
        raise InputError(f"--hdr has {len(hdr)} bytes, more than the {size}-byte vnet header")


def good_linear(k: KernelProfile, align: int) -> int:
    """SKB_MAX_HEAD(align) = SKB_WITH_OVERHEAD(PAGE_SIZE - align): the most a one-page head holds."""
    return k.build.page_size - align - shinfo_size(k)


def tap_config(k: KernelProfile, setup: TapSetup, frame: TapFrame | None = None) -> TapConfig:
    """The device checked (check_tap_setup, with ``frame`` when given) and resolved on kernel
    ``k``, a write with a zeroed vnet header on it (``for_write`` puts another)."""
    s = check_tap_setup(k, setup, frame)
    assert s.vnet_hdr_sz is not None
    tunnel = k.has(VNET_HDR_UDP_TUNNEL) and s.vnet_hdr_sz >= 24
    written = check_tap_frame(s, TapFrame(0))
    hdr = _read_hdr(written, tunnel)
    align = k.net_skb_pad + (0 if s.tun else k.build.net_ip_align)
    return TapConfig(
        profile=k,
        setup=s,
        written=written,
        hdr=hdr,
        front=_front_rules(k, s, hdr),
        rules=hdr_rules(k),
        tunnel=tunnel,
        rx_pad=tun_rx_pad(k),
        align=align,
        good_linear=good_linear(k, align),
        shinfo=shinfo_size(k),
        page_size=k.build.page_size,
        cache_bytes=k.smp_cache_bytes,
        sk_buff_aligned=k.sk_buff_aligned,
        build=build_rules(k, s),
        alloc=alloc_rules(k),
    )


def for_write(c: TapConfig, f: TapFrame) -> TapConfig:
    """The device ``c`` with the write ``f``'s vnet header on it."""
    written = check_tap_frame(c.setup, f)
    if written == c.written:
        return c
    hdr = _read_hdr(written, c.tunnel)
    return c._replace(written=written, hdr=hdr, front=_front_rules(c.profile, c.setup, hdr))


def _read_hdr(written: bytes | None, tunnel: bool) -> VnetHdr:
    """The vnet header as tun reads the bytes written (zeros without IFF_VNET_HDR); with
    UDP-tunnel GSO negotiated __tun_vnet_hdr_get reads the 24-byte tunnel header (6.17+)."""
    if written is None:
        return NO_HDR
    hdr = decode_hdr(written)
    if tunnel:
        full = VnetHdr.from_bytes(written[:24])
        hdr = hdr._replace(outer_th_offset=full.outer_th_offset,
                           inner_nh_offset=full.inner_nh_offset)
    return hdr


def _front_rules(k: KernelProfile, s: TapSetup, hdr: VnetHdr) -> FrontRules:
    return front_rules(k, hdr, tap=not s.tun, vnet_hdr_sz=s.vnet_hdr_sz if s.vnet_hdr else None)


class TapPlan(Value):
    """One write(2), decided: every stage's record, the skb the stack gets and what it cost.
    ``tap_plan`` makes it without a log; ``narrate`` reads it; sweeps read it directly."""

    __slots__ = ("alloc", "built", "can_build", "cost", "errno", "frame_len", "front",
                 "generic", "offload", "outcome", "pulled", "run", "skb", "total", "zerocopy")
    _names = ("frame_len", "total", "front", "outcome", "errno", "skb", "cost", "run",
              "can_build", "built", "alloc", "offload", "pulled", "generic", "zerocopy")

    def __init__(self, frame_len: int, total: int, front: Front, outcome: str,
                 errno: str | None = None, skb: Skb | None = None, cost: Cost | None = None,
                 run: XdpRun | None = None, can_build: CanBuild | None = None,
                 built: Built | None = None, alloc: Alloc | None = None,
                 offload: HdrResult | None = None, pulled: Skb | None = None,
                 generic: Generic | None = None, zerocopy: ZeroCopy | None = None) -> None:
        self.frame_len: Final = frame_len  # the frame bytes after the vnet header
        self.total: Final = total  # bytes written: vnet_hdr_sz + the frame
        self.front: Final = front  # the checks before any skb exists
        # "build_skb" | "alloc_skb" | "error" | "xdp_drop" | "xdp_tx" | "xdp_redirect"
        self.outcome: Final = outcome
        self.errno: Final = errno  # what write(2) fails with
        self.skb: Final = skb  # as netif_receive_skb (and its tracepoint) sees it
        self.cost: Final = cost
        self.run: Final = run  # an attached program's run, native or generic
        self.can_build: Final = can_build
        self.built: Final = built  # tun_build_skb's record
        self.alloc: Final = alloc  # tun_alloc_skb's record
        self.offload: Final = offload  # virtio_net_hdr_to_skb's
        self.pulled: Final = pulled  # after the device type's switch (TAP: eth_type_trans)
        self.generic: Final = generic  # do_xdp_generic's run on the skb
        # a sendmsg with vhost-net's ubuf (msg_control): tun_get_user's zerocopy decision
        self.zerocopy: Final = zerocopy

    def _values(self) -> tuple[object, ...]:
        return (self.frame_len, self.total, self.front, self.outcome, self.errno, self.skb,
                self.cost, self.run, self.can_build, self.built, self.alloc, self.offload,
                self.pulled, self.generic, self.zerocopy)

    @property
    def buffers(self) -> int:
        """How many buffers the trace maps: the page fragment, or the head and each frag page;
        none for a write that failed."""
        if self.outcome == "error":
            return 0
        return 1 if self.alloc is None else 1 + len(self.alloc.chunks)


def tap_plan(c: TapConfig, frame_len: int, words: bool = True,
             ubuf_offset: int | None = None) -> TapPlan:
    """tun_get_user on one write of ``frame_len`` frame bytes: the front checks, the path
    choice, the skb, the vnet header's offloads, a generic program, the delivery. ``words``
    False: the header checks are decided without their words (sweeps). ``ubuf_offset``: a
    sendmsg whose msg_control carries vhost-net's ubuf_info (zerocopy TX), its one-iovec chain
    starting that many bytes into its page; None: no ubuf (a write, or msg_control NULL)."""
    s = c.setup
    assert s.vnet_hdr_sz is not None
    total = s.vnet_hdr_sz + frame_len
    front = front_checks(c.front, frame_len, words)
    if front.refused:  # before any skb exists: no counter moves
        return TapPlan(frame_len, total, front, "error", "EINVAL")
    zc = None
    if ubuf_offset is not None:
        zc = tun_get_user_zerocopy(c.profile, c.good_linear, s.vnet_hdr_sz, frame_len,
                                   front.hdr_len, ubuf_offset)
        if zc.used and s.xdp is not None:
            raise UnsupportedError(
                "a zerocopy skb (the guest's pages as frags) through the tap's XDP program "
                "(do_xdp_generic) is not modelled", hint="drop --xdp or --zcopy")
    can = tun_can_build_skb(c, frame_len, zc is not None and zc.used)
    built = alloc = None
    run: XdpRun | None = None
    if zc is not None and zc.used:
        # tun_alloc_skb(tfile, align, copylen, linear = copylen): a head, no paged part
        alloc = tun_alloc_skb(c, zc.copylen, zc.copylen)
        assert alloc.skb is not None
        made: Skb | None = zerocopy_sg_from_iter(alloc.skb, zc)
        owned, why = True, GenericWhy.ALLOC
        cost = Cost(allocations=2, bytes_copied=zc.copylen, frags=len(zc.frags))
        outcome = "alloc_skb"
    elif can.failed is None:
        built = tun_build_skb(c, frame_len, c.hdr.gso_type != 0)
        made, owned, why = built.skb, c.build.owner, GenericWhy.GSO_BUILD
        cost = Cost(allocations=1, bytes_copied=frame_len, frags=0)
        if built.native is not None:
            run = built.native.run
        if made is None:  # native XDP kept the frame
            assert run is not None
            return TapPlan(frame_len, total, front, xdp.outcome_of(run), cost=cost, run=run,
                           can_build=can, built=built)
        outcome = "build_skb"
    else:
        alloc = tun_alloc_skb(c, frame_len, front.hdr_len)
        made, owned, why = alloc.skb, True, GenericWhy.ALLOC
        if made is None:
            return TapPlan(frame_len, total, front, "error", "EMSGSIZE", can_build=can,
                           alloc=alloc)
        cost = Cost(allocations=2 + len(alloc.chunks), bytes_copied=frame_len,
                    frags=len(alloc.chunks))
        outcome = "alloc_skb"
    # virtio_net_hdr_to_skb runs on every write (a zeroed header without IFF_VNET_HDR)
    assert made is not None
    offload = vnet_hdr_to_skb(c, made, owned, words)
    if offload.skb is None:  # rx_frame_errors++, -EINVAL
        return TapPlan(frame_len, total, front, "error", "EINVAL", run=run, can_build=can,
                       built=built, alloc=alloc, offload=offload)
    if s.tun and frame_len == 0:
        # IFF_TUN with IFF_NO_PI: ip_version = skb->len ? (skb->data[0] >> 4) : 0, and 0 is
        # neither 4 nor 6: rx_dropped++, kfree_skb, -EINVAL (drivers/net/tun.c:tun_get_user
        # @ 5.15.100, 6.1.192, 6.12.117; measured on 6.18.44: EINVAL, rx_dropped +1)
        return TapPlan(frame_len, total, front, "error", "EINVAL", run=run, can_build=can,
                       built=built, alloc=alloc, offload=offload)
    # tun_get_user's switch on the device type: TUN reads the IP version, TAP eth_type_trans
    pulled = skb_reset_mac_header(offload.skb) if s.tun else eth_type_trans(offload.skb)
    skb, g = pulled, None
    if s.xdp is not None and run is None:  # skb_xdp: tun_build_skb did not run it natively
        g = xdp.generic(c, pulled, why, frame_len)
        run = g.run
        if g.passed is None:
            return TapPlan(frame_len, total, front, xdp.outcome_of(run), cost=cost, run=run,
                           can_build=can, built=built, alloc=alloc, offload=offload,
                           pulled=pulled, generic=g)
        skb = g.passed
        if run.copied:  # generic XDP's new linear head
            cost = Cost(cost.allocations + 1, cost.bytes_copied + run.copied, skb.nr_frags)
    return TapPlan(frame_len, total, front, outcome, None, skb, cost, run, can, built, alloc,
                   offload, pulled, g, zc)


def receive(c: TapConfig, f: TapFrame, log: StepLog) -> Received:
    """The write ``f`` to the configured device ``c``, decided then narrated."""
    c = for_write(c, f)
    plan = tap_plan(c, f.len)
    narrate(c, plan, log)
    return result_of(c, plan)


def result_of(c: TapConfig, p: TapPlan) -> Received:
    """The trace's result: the plan's outcome with the buffers as maps."""
    failed = p.front.failed
    if failed is not None:
        return error(failed.reason, refused_by=failed.refused())
    if p.alloc is not None and p.alloc.skb is None:
        return error(f"data_len {p.alloc.data_len} needs more than MAX_SKB_FRAGS pages",
                     "EMSGSIZE")
    if p.offload is not None and p.offload.skb is None:
        assert p.offload.failed is not None
        return error(p.offload.failed.reason, counter="rx_frame_errors",
                     refused_by=p.offload.failed.refused())
    if p.outcome == "error" and p.errno == "EINVAL":  # tap_plan: a TUN write of no byte
        return error(NO_IP_VERSION, counter="drops")
    maps = (build_map(c, p.built),) if p.built is not None else (
        alloc_maps(p.alloc) if p.alloc is not None else ())
    return Received("tap", p.outcome, None, maps[0] if maps else None, maps, p.skb, p.cost,
                    xdp=p.run)


def narrate(c: TapConfig, p: TapPlan, log: StepLog, sendmsg: bool = False,
            napi: bool = False) -> None:
    """tun_get_user's steps, each read from the plan. ``sendmsg``: vhost-net's sendmsg
    (tun_sendmsg, msg_control NULL, MSG_DONTWAIT) reached it, not a write(2); ``napi``: the
    tap has IFF_NAPI (its skbs go to GRO)."""
    k, s = c.profile, c.setup
    if sendmsg:
        _tun_sendmsg(s, p.total, log, p.zerocopy is not None)
    else:
        _tun_chr_write_iter(s, p.total, log)
    if s.vnet_hdr:
        narrate_vnet_hdr_get(c, p.front.hdr_len, p.frame_len, log)
    if p.front.failed is not None:
        narrate_checks((p.front.failed,), log)
        return
    if not s.tun:
        _get_user_align(p.frame_len, p.front.hdr_len, c.align, log)
    _get_user_good_linear(k, c.good_linear, log, sendmsg, p.zerocopy is not None)
    zc = p.zerocopy
    if zc is not None:
        _narrate_zerocopy_choice(k, zc, log)
    assert p.can_build is not None
    narrate_can_build(c, p.frame_len, p.can_build, log)
    if p.built is not None:
        narrate_build(c, p.built, log)
        if p.built.skb is None:
            return
    else:
        assert p.alloc is not None
        narrate_alloc(k, p.alloc, log, zc is not None and zc.used)
        if p.alloc.skb is None:
            return
        if zc is not None and zc.used:
            _narrate_zerocopy_sg(k, zc, log)
    assert p.offload is not None
    if s.vnet_hdr:
        narrate_checks(p.offload.checks, log)
    if p.offload.skb is None:
        log.add(SRC, "tun_get_user", "virtio_net_hdr_to_skb failed: rx_frame_errors++, the skb is "
                "freed and write() returns -EINVAL (rx_dropped does not move)",
                rx_frame_errors=1)
        return
    if p.outcome == "error":  # a TUN write of no byte: no IP version to read
        log.add(SRC, "tun_get_user", "TUN with IFF_NO_PI: ip_version = skb->len ? "
                "(skb->data[0] >> 4) : 0 = 0 (an empty frame), neither 4 nor 6: rx_dropped++, "
                "the skb is freed and write() returns -EINVAL", len=0, ip_version=0,
                rx_dropped=1)
        return
    assert p.pulled is not None
    _get_user_protocol(s, p.pulled, log)
    if p.generic is not None:
        xdp.narrate_generic(s, p.generic, log)
        if p.generic.passed is None:
            return
    assert p.skb is not None
    if napi:
        _napi_queue(p.skb, log)
    else:
        _netif_receive_skb(p.skb, log)
    _get_user_stats(p.frame_len, p.total, log, sendmsg)


def _tun_chr_write_iter(s: TapSetup, total: int, log: StepLog) -> None:
    """tun_chr_write_iter: noblock from O_NONBLOCK; IFF_NO_PI, so no struct tun_pi to read."""
    noblock = not s.blocking
    log.add(
        SRC,
        "tun_chr_write_iter",
        f"write() of {total} bytes: noblock = {'O_NONBLOCK set' if noblock else 'blocking fd'}; "
        "IFF_NO_PI, so no struct tun_pi is read",
        total=total,
        noblock=noblock,
        IFF_VNET_HDR=s.vnet_hdr,
        vnet_hdr_sz=s.vnet_hdr_sz,
    )


def _tun_sendmsg(s: TapSetup, total: int, log: StepLog, ubuf: bool = False) -> None:
    """tun_sendmsg without a TUN_MSG_PTR control: tun_get_user on the message's iovec, noblock
    from MSG_DONTWAIT (drivers/net/tun.c:tun_sendmsg @ 6.12.117, 6.18.9); ``ubuf``: the control
    is vhost's zerocopy ubuf_info."""
    log.add(
        SRC,
        "tun_sendmsg",
        f"sendmsg() of {total} bytes from vhost-net: no TUN_MSG_PTR control, so "
        + ("tun_get_user(msg_control = the ubuf_info, " if ubuf else
           "tun_get_user(msg_control NULL, ")
        + "noblock = MSG_DONTWAIT, more = MSG_MORE)",
        total=total,
        noblock=True,
        vnet_hdr_sz=s.vnet_hdr_sz,
    )


def _get_user_align(frame_len: int, hdr_len: int, align: int, log: StepLog) -> None:
    """tun_get_user: align = tun->align (+ NET_IP_ALIGN on TAP), the header checks passed."""
    # tun->align = NET_SKB_PAD (tun_set_iff); raised only by ndo_set_rx_headroom
    log.add(
        SRC,
        "tun_get_user",
        "TAP: align = tun->align + NET_IP_ALIGN; the frame holds an Ethernet header",
        len=frame_len,
        hdr_len=hdr_len,
        ETH_HLEN=ETH_HLEN,
        align=align,
    )


def _narrate_zerocopy_choice(k: KernelProfile, z: ZeroCopy, log: StepLog) -> None:
    log.add(SRC, "tun_get_user",
            "msg_control carries vhost-net's ubuf_info: copylen = hdr_len ? hdr_len : "
            f"GOODCOPY_LEN (128), at most good_linear: {z.copylen}; the rest, {z.pinned} "
            f"byte(s) from page offset {z.start}, spans iov_iter_npages = {z.npages} page(s) "
            + (f"≤ MAX_SKB_FRAGS {k.build.max_skb_frags}: zerocopy" if z.used else
               f"> MAX_SKB_FRAGS {k.build.max_skb_frags}: no zerocopy, the write is copied "
               "and the ubuf's callback runs at once with success false (vhost_net_tx_err: "
               "later frames are copied until tx_packets / 64 catches up)"),
            chain_offset=z.offset, copylen=z.copylen, pinned=z.pinned, start=z.start,
            npages=z.npages, MAX_SKB_FRAGS=k.build.max_skb_frags, zerocopy=z.used)


def _narrate_zerocopy_sg(k: KernelProfile, z: ZeroCopy, log: StepLog) -> None:
    page = k.build.page_size
    log.add("net/core/datagram.c", "zerocopy_sg_from_iter",
            f"copies min(headlen, count) = {z.copylen} byte(s) into the head, then "
            f"__zerocopy_sg_from_iter pins the guest's {z.npages} page(s) with one "
            f"iov_iter_get_pages call: {len(z.frags)} frag(s) ("
            + ", ".join(f"{f.size} at {f.offset}" for f in z.frags)
            + f"), skb->truesize += PAGE_ALIGN(copied + start) = {z.truesize} (order-0 pages: "
            "no two are one compound page, so none merge)",
            copied=z.pinned, start=z.start, truesize_added=z.truesize, nr_frags=len(z.frags),
            PAGE_SIZE=page)
    log.add(SRC, "tun_get_user",
            "skb_zcopy_init(skb, msg_control): the ubuf_info rides with the skb "
            "(SKBFL_ZEROCOPY_FRAG); vhost learns the guest's buffer is free only when the skb "
            "is freed (its callback: vhost_zerocopy_callback on 6.1, vhost_zerocopy_complete "
            "on 6.12, success false when a receiver had to copy the frags, "
            "skb_orphan_frags_rx)")


def _get_user_good_linear(k: KernelProfile, linear_max: int, log: StepLog,
                          sendmsg: bool = False, ubuf: bool = False) -> None:
    """tun_get_user: good_linear = SKB_MAX_HEAD(align); no zerocopy without a ubuf."""
    if ubuf:
        log.add(SRC, "tun_get_user", "good_linear = SKB_MAX_HEAD(align): the largest linear "
                "part a one-page head can hold", good_linear=linear_max,
                PAGE_SIZE=k.build.page_size, shinfo_size=shinfo_size(k))
        return
    log.add(
        SRC,
        "tun_get_user",
        "good_linear = SKB_MAX_HEAD(align): the largest linear part a one-page head can hold; "
        + ("msg_control is NULL: no ubuf, no zerocopy" if sendmsg else
           "write() never uses zerocopy (only vhost-net passes a ubuf)"),
        good_linear=linear_max,
        PAGE_SIZE=k.build.page_size,
        shinfo_size=shinfo_size(k),
        zerocopy=False,
    )


def _get_user_protocol(s: TapSetup, skb: Skb, log: StepLog) -> None:
    """tun_get_user's switch on the device type: TUN reads the IP version, TAP eth_type_trans
    (``skb``: after it)."""
    if s.tun:
        log.add(
            SRC,
            "tun_get_user",
            "TUN with IFF_NO_PI: skb->protocol from the IP version nibble (an IPv4 or IPv6 packet "
            "is assumed; any other version is rx_dropped, -EINVAL); no Ethernet header to pull",
            len=skb.len,
            data_len=skb.data_len,
        )
        log.note("TUN: the frame is assumed to start with an IPv4 or IPv6 header")
        return
    log.add(
        "net/ethernet/eth.c",
        "eth_type_trans",
        "mac_header = data; pull ETH_HLEN (14)",
        len=skb.len,
        data_len=skb.data_len,
        headroom=skb.data,
    )


def _netif_receive_skb(skb: Skb, log: StepLog) -> None:
    log.add(
        "net/core/dev.c",
        "netif_receive_skb",
        "tun_rx_batched() hands the skb to the stack in the writer's context; the "
        "net:netif_receive_skb_entry tracepoint prints these fields",
        len=skb.len,
        data_len=skb.data_len,
        truesize=skb.truesize,
        nr_frags=skb.nr_frags,
        gso_size=skb.gso_size,
        gso_type=skb.gso_type,
    )


def _napi_queue(skb: Skb, log: StepLog) -> None:
    log.add(
        SRC,
        "tun_get_user",
        "IFF_NAPI: the skb joins tfile->sk.sk_write_queue and napi_schedule() runs when more "
        "is false or the queue passes NAPI_POLL_WEIGHT; tun_napi_poll hands it to "
        "napi_gro_receive (the net:napi_gro_receive_entry tracepoint prints these fields)",
        len=skb.len,
        data_len=skb.data_len,
        truesize=skb.truesize,
        nr_frags=skb.nr_frags,
    )


def _get_user_stats(length: int, total: int, log: StepLog, sendmsg: bool = False) -> None:
    log.add(
        SRC,
        "tun_get_user",
        "rx_packets += 1, rx_bytes += len (vnet header excluded); "
        + ("sendmsg()" if sendmsg else "write()") + " returns the whole length written",
        rx_bytes=length,
        ret=total,
    )
