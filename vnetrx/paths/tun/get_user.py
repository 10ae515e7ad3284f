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

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.changes import TUN_XDP
from vnetrx.kernel.constants import ETH_HLEN, INT_MAX
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Cost, Skb
from vnetrx.paths.skbuff import eth_type_trans, shinfo_size
from vnetrx.paths.steps import StepLog
from vnetrx.paths.tun import xdp
from vnetrx.paths.tun.alloc import tun_alloc_skb
from vnetrx.paths.tun.build import FRAG_SOURCES, tun_build_skb, tun_can_build_skb
from vnetrx.paths.tun.setup import SRC, TapResult, TapSetup, error
from vnetrx.paths.tun.vnet_hdr import (
    decode_hdr,
    front_checks,
    vnet_hdr_get,
    vnet_hdr_size,
    vnet_hdr_to_skb,
)
from vnetrx.paths.virtio_net_hdr import NO_HDR, narrate_checks
from vnetrx.paths.xdp import ACTIONS as XDP_ACTIONS

MAX_FRAME_LEN = 65535  # what vnetrx models; the kernel itself has no smaller cap on a write


def check_tap_setup(k: KernelProfile, s: TapSetup) -> TapSetup:
    """Check the request against the kernel and fill in the defaults tun_set_iff would give."""
    if not 0 <= s.frame_len <= MAX_FRAME_LEN:
        raise InputError(f"frame length {s.frame_len} out of range (valid: 0..{MAX_FRAME_LEN})")
    if s.tun and s.frame_len < 1:
        raise UnsupportedError("a TUN write needs at least the IP version byte (--len >= 1)")
    sndbuf = INT_MAX if s.sndbuf is None else s.sndbuf
    if not 1 <= sndbuf <= INT_MAX:  # tun_set_sndbuf path: TUNSETSNDBUF <= 0 is -EINVAL
        raise InputError(f"sndbuf {sndbuf} out of range (TUNSETSNDBUF accepts 1..{INT_MAX})")
    if not s.vnet_hdr and (s.vnet_hdr_sz is not None or s.hdr is not None):
        raise InputError("--vnet-hdr-sz and --hdr need IFF_VNET_HDR (drop --no-vnet-hdr)")
    base = vnet_hdr_size()
    size = (base if s.vnet_hdr_sz is None else s.vnet_hdr_sz) if s.vnet_hdr else 0
    if s.vnet_hdr and not base <= size <= MAX_FRAME_LEN:
        # TUNSETVNETHDRSZ: -EINVAL below sizeof(struct virtio_net_hdr) (tun.c @4.14.5;
        # tun_vnet.h:tun_vnet_ioctl @6.18.3; measured: 8 and 9 rejected).
        raise InputError(
            f"vnet header size {size} out of range (TUNSETVNETHDRSZ accepts {base}.."
            f"{MAX_FRAME_LEN} here)"
        )
    hdr = s.hdr
    if s.vnet_hdr:
        hdr = hdr or b""
        if len(hdr) > size:
            raise InputError(f"--hdr has {len(hdr)} bytes, more than the {size}-byte vnet header")
        hdr = hdr + bytes(size - len(hdr))
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
        s.frame_len, s.tun, s.blocking, sndbuf, s.vnet_hdr, size, s.xdp, s.xdp_adjust_head,
        s.xdp_adjust_tail, hdr, s.frag_source, s.xdp_meta
    )


def good_linear(k: KernelProfile, align: int) -> int:
    """SKB_MAX_HEAD(align) = SKB_WITH_OVERHEAD(PAGE_SIZE - align): the most a one-page head holds."""
    return k.build.page_size - align - shinfo_size(k)


def receive(k: KernelProfile, s: TapSetup, log: StepLog) -> TapResult:
    """One write: front checks, path choice, skb construction, header, delivery."""
    assert s.vnet_hdr_sz is not None
    assert s.sndbuf is not None
    total = s.vnet_hdr_sz + s.frame_len
    _tun_chr_write_iter(s, total, log)
    hdr = decode_hdr(s.hdr) if s.hdr is not None else NO_HDR
    if s.vnet_hdr:
        vnet_hdr_get(k, s, hdr, log)
    hdr_len, _, failed = front_checks(k, hdr, s.frame_len, tap=not s.tun,
                                      vnet_hdr_sz=s.vnet_hdr_sz if s.vnet_hdr else None)
    if failed is not None:  # before any skb exists: no counter moves
        narrate_checks((failed,), log)
        return error(failed.reason, refused_by=failed.refused())
    align = _get_user_align(k, s, hdr_len, log)
    linear_max = _get_user_good_linear(k, align, log)
    gso = hdr.gso_type != 0
    if tun_can_build_skb(k, s, s.frame_len, log):
        result = tun_build_skb(k, s, s.frame_len, gso, log)
        generic_why = "a GSO frame on the build path"
    else:
        noblock = not s.blocking
        result = tun_alloc_skb(k, s, s.frame_len, hdr_len, align, linear_max, noblock, log)
        generic_why = "tun_alloc_skb built this skb"
    if result.xdp is not None and result.skb is None:  # native XDP consumed the frame
        return result._replace(write_return=total)
    if result.skb is None:
        return result
    # virtio_net_hdr_to_skb runs on every write (a zeroed header without IFF_VNET_HDR)
    offload = vnet_hdr_to_skb(k, s, hdr, result.skb, result.owned,
                              log if s.vnet_hdr else StepLog(k))
    if offload.skb is None:
        assert offload.failed is not None
        log.add(SRC, "tun_get_user", "virtio_net_hdr_to_skb failed: rx_frame_errors++, the skb is "
                "freed and write() returns -EINVAL (rx_dropped does not move)",
                rx_frame_errors=1)
        return error(offload.failed.reason, counter="rx_frame_errors",
                     refused_by=offload.failed.refused())
    skb = _get_user_protocol(s, offload.skb, log)
    run = result.xdp
    if s.xdp is not None and run is None:  # skb_xdp: tun_build_skb did not run it natively
        run, passed = xdp.generic(k, s, skb, generic_why, log)
        if passed is None:
            return TapResult(result.path, xdp.outcome_of(run), None, None, result.buffer,
                             result.buffers, None, result.cost, total, xdp=run)
        skb = passed
    cost = result.cost
    if run is not None and run.copied and cost is not None:  # generic XDP's new linear head
        cost = Cost(cost.allocations + 1, cost.bytes_copied + run.copied, skb.nr_frags)
    _netif_receive_skb(skb, log)
    _get_user_stats(s.frame_len, total, log)
    return TapResult(
        result.path,
        result.outcome,
        None,
        None,
        result.buffer,
        result.buffers,
        skb,
        cost,
        total,
        xdp=run,
    )


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


def _get_user_align(k: KernelProfile, s: TapSetup, hdr_len: int, log: StepLog) -> int:
    """tun_get_user: align = tun->align (+ NET_IP_ALIGN on TAP), the header checks passed."""
    # tun->align = NET_SKB_PAD (tun_set_iff); raised only by ndo_set_rx_headroom
    align = k.net_skb_pad
    if not s.tun:
        align += k.build.net_ip_align
        log.add(
            SRC,
            "tun_get_user",
            "TAP: align = tun->align + NET_IP_ALIGN; the frame holds an Ethernet header",
            len=s.frame_len,
            hdr_len=hdr_len,
            ETH_HLEN=ETH_HLEN,
            align=align,
        )
    return align


def _get_user_good_linear(k: KernelProfile, align: int, log: StepLog) -> int:
    """tun_get_user: good_linear = SKB_MAX_HEAD(align); write() never uses zerocopy."""
    linear_max = good_linear(k, align)
    log.add(
        SRC,
        "tun_get_user",
        "good_linear = SKB_MAX_HEAD(align): the largest linear part a one-page head can hold; "
        "write() never uses zerocopy (only vhost-net passes a ubuf)",
        good_linear=linear_max,
        PAGE_SIZE=k.build.page_size,
        shinfo_size=shinfo_size(k),
        zerocopy=False,
    )
    return linear_max


def _get_user_protocol(s: TapSetup, skb: Skb, log: StepLog) -> Skb:
    """tun_get_user's switch on the device type: TUN reads the IP version, TAP eth_type_trans."""
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
        return skb.but(mac_header=skb.data)
    skb = eth_type_trans(skb)
    log.add(
        "net/ethernet/eth.c",
        "eth_type_trans",
        "mac_header = data; pull ETH_HLEN (14)",
        len=skb.len,
        data_len=skb.data_len,
        headroom=skb.data,
    )
    return skb


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
        gso_size=0,
        gso_type=0,
    )


def _get_user_stats(length: int, total: int, log: StepLog) -> None:
    log.add(
        SRC,
        "tun_get_user",
        "rx_packets += 1, rx_bytes += len (vnet header excluded); write() returns the whole "
        "length written",
        rx_bytes=length,
        ret=total,
    )
