"""Mirrors drivers/net/tun.c's XDP: the native run inside tun_build_skb (xdp_init_buff,
xdp_prepare_buff, bpf_prog_run_xdp, tun_xdp_act, tun_xdp_tx → tun_xdp_xmit, and the read()
of the queued xdp_frame in tun_put_user_xdp), and the generic run that tun_get_user starts
with do_xdp_generic on an skb it built otherwise (net/core/dev.c: netif_receive_generic_xdp,
generic_xdp_tx; read back by tun_put_user).

Read @6.1.192 and @6.12.117 (Debian linux-source); tun_build_skb and tun_xdp_act are the same
in 5.15, 6.1, 6.6 except for tun_xdp_act's counters (TUN_XDP_ACT_STATS). Measured on 6.18.44
with ``vnetrx verify tap --xdp ACTION``.

``redirect`` is modelled as a program that calls ``bpf_redirect(<this tap's ifindex>, 0)``: the
frame comes back to the same tap (xdp_ok_fwd_dev: at most mtu + hard_header_len + VLAN_HLEN =
1518 bytes with the default MTU 1500), which is what the live check can observe; another
target's transmit path is not modelled.
"""

from __future__ import annotations

import struct
from typing import Final

from vnetrx.kernel.changes import (
    GENERIC_XDP_MULTI_BUF,
    TUN_XDP,
    TUN_XDP_ACT_STATS,
    TUN_XDP_METADATA,
)
from vnetrx.kernel.constants import (
    ETH_HLEN,
    TUN_BUILD_XDP_HEADROOM,
    XDP_FRAME_SIZE,
    XDP_METALEN_MAX,
    XDP_PACKET_HEADROOM,
)
from vnetrx.kernel.profile import KernelProfile, align
from vnetrx.model import Skb, XdpRun
from vnetrx.paths import xdp as helpers
from vnetrx.paths.reason import Reason
from vnetrx.paths.skbuff import pskb_expand_head, pskb_may_pull, shinfo_size
from vnetrx.paths.steps import StepLog
from vnetrx.paths.tun.setup import SRC, TapConfig, TapSetup
from vnetrx.paths.xdp import FILTER_SRC, VERDICT
from vnetrx.records import NamedTuple

DEV_SRC: Final = "net/core/dev.c"
TAP_MTU: Final = 1500  # a tap's MTU unless changed (ether_setup)
VIRTIO_NET_HDR_F_NEEDS_CSUM: Final = 1
VIRTIO_NET_HDR_F_DATA_VALID: Final = 2
CHECKSUM_UNNECESSARY: Final = 1
CHECKSUM_PARTIAL: Final = 3


def xdp_frame_size(k: KernelProfile) -> int:
    """sizeof(struct xdp_frame): the bytes xdp_convert_buff_to_frame() keeps at the top of the
    headroom, so bpf_xdp_adjust_head() never lets data go below them."""
    return k.value(XDP_FRAME_SIZE)


def helpers_of(c: TapConfig, data: int, data_end: int, hard_end: int, *,
               generic: bool = False) -> helpers.Adjusted:
    """The program's helper calls (paths/xdp.py) on tun's linear buffer, offsets from
    data_hard_start. Metadata: generic XDP always supports it; native XDP in tun_build_skb
    from 6.15 (TUN_XDP_METADATA)."""
    k, s = c.profile, c.setup
    meta = helpers.Meta(s.xdp_meta, k.value(XDP_METALEN_MAX),
                        generic or k.has(TUN_XDP_METADATA))
    return helpers.adjust(xdp_frame_size(k), s.xdp_adjust_head, s.xdp_adjust_tail, data,
                          data_end, hard_end, meta=meta)


def outcome_of(run: XdpRun) -> str:
    """The trace outcome of a frame the program kept: a drop (also a failed redirect), a TX or
    a redirect."""
    return "xdp_drop" if run.result in ("drop", "redirect_failed") else f"xdp_{run.result}"


def redirect_limit() -> int:
    """xdp_ok_fwd_dev for this tap (its MTU 1500): 1518."""
    return helpers.fwd_limit(TAP_MTU)


class Native(NamedTuple):
    """tun_build_skb's native run: the buffer the program saw, its helper calls, its verdict
    carried out by tun_xdp_act (``run``)."""

    run: XdpRun
    pad: int  # data - data_hard_start before the program
    length: int  # data_end - data before the program
    buflen: int  # frame_sz
    tailroom: int  # before the program
    helpers: helpers.Adjusted
    stats: bool  # tun_xdp_act counts rx packets and drops (TUN_XDP_ACT_STATS)


def native(c: TapConfig, buflen: int, pad: int, length: int) -> Native:
    """tun_build_skb with a program attached and a non-GSO header: the program runs on the
    page-fragment buffer before any skb exists; tun_xdp_act carries out its verdict."""
    s, shinfo = c.setup, c.shinfo
    assert s.xdp is not None
    tailroom = buflen - shinfo - pad - length
    stats = c.profile.has(TUN_XDP_ACT_STATS)
    done = helpers_of(c, pad, pad + length, buflen - shinfo)
    data, after = done.data, done.data_end - done.data  # what the verdict, and an skb, start from
    base = XdpRun(VERDICT[s.xdp], "native", "tun_build_skb", data, after, buflen,
                  buflen - shinfo - done.data_end, result="pass", errno=None, read_len=None,
                  read_hdr=None, rx_packets=0, rx_bytes=0, rx_dropped=0, tx_packets=0,
                  tx_bytes=0, meta_len=done.meta_len)
    if s.xdp == "pass":
        run = base._replace(rx_packets=1, rx_bytes=length, rx_dropped=None)
    elif s.xdp in ("drop", "aborted"):
        run = base._replace(result="drop", rx_dropped=1)
    elif s.xdp == "redirect" and after > redirect_limit():
        run = base._replace(result="redirect_failed", errno="EMSGSIZE",
                            rx_dropped=1 if stats else 0)
    else:
        read_len, read_hdr = _read_of_xdp_frame(s, after)
        run = base._replace(result=s.xdp, read_len=read_len, read_hdr=read_hdr,
                            rx_packets=1 if stats else 0, rx_bytes=after if stats else 0,
                            tx_packets=1, tx_bytes=read_len)
    return Native(run, pad, length, buflen, tailroom, done, stats)


def _vnet_hdr_bytes(s: TapSetup) -> int:
    """What a read() puts before the frame: vnet_hdr_sz with IFF_VNET_HDR, else nothing."""
    return (s.vnet_hdr_sz or 0) if s.vnet_hdr else 0


def _read_of_xdp_frame(s: TapSetup, length: int) -> tuple[int, str | None]:
    """tun_put_user_xdp: vnet_hdr_sz zero bytes (IFF_VNET_HDR), then the frame."""
    size = _vnet_hdr_bytes(s)
    return size + length, (bytes(size).hex() if s.vnet_hdr else None)


class GenericWhy(Reason):
    """Why tun_get_user runs the program on an skb (do_xdp_generic) instead of natively."""

    GSO_BUILD = "a GSO frame on the build path"
    ALLOC = "tun_alloc_skb built this skb"


class Generic(NamedTuple):
    """do_xdp_generic on the skb tun built: the skb made fit for the program, its helper
    calls, and the verdict."""

    run: XdpRun
    passed: Skb | None  # XDP_PASS: the skb the stack gets; None: the program kept the frame
    why: GenericWhy
    at_mac: bool  # 6.9+: headroom measured at the MAC header (GENERIC_XDP_MULTI_BUF)
    headroom: int  # what the skb had
    needed: int  # XDP_PACKET_HEADROOM
    data_len: int  # the skb's paged bytes before
    expand: bool  # pskb_expand_head + skb_linearize made a new head
    nhead: int
    ntail: int
    linear: Skb  # the skb the program runs on (after the expansion, if any)
    mac_len: int
    helpers: helpers.Adjusted
    moved: Skb | None  # the skb after the program moved its head or tail (None: it did not)


def generic(c: TapConfig, skb: Skb, why: GenericWhy, frame_len: int) -> Generic:
    """tun_get_user → do_xdp_generic on the skb tun_alloc_skb (or, for a GSO header,
    tun_build_skb) built; ``skb`` is after eth_type_trans. XDP_PASS leaves the skb the stack
    then gets (linearised with 256 bytes of headroom when it was not)."""
    k, s = c.profile, c.setup
    assert s.xdp is not None
    mac_len = ETH_HLEN if not s.tun else 0
    needed = k.value(XDP_PACKET_HEADROOM)
    at_mac = k.has(GENERIC_XDP_MULTI_BUF)  # 6.9+: headroom measured at the MAC header
    headroom = skb.data - mac_len if at_mac else skb.data
    expand = skb.data_len > 0 or headroom < needed
    out = skb
    nhead = ntail = 0
    if expand:
        # netif_skb_check_for_xdp (6.9+) / netif_receive_generic_xdp (before): a program
        # without BPF_F_XDP_HAS_FRAGS gets pskb_expand_head(ALIGN(hroom, NET_SKB_PAD),
        # troom + 128) and skb_linearize()
        hroom = needed - headroom
        troom = skb.tail + skb.data_len - skb.end
        nhead = align(hroom, k.net_skb_pad) if hroom > 0 else 0
        ntail = troom + 128 if troom > 0 else 0
        grown = pskb_expand_head(k, skb, nhead, ntail, owned=True)
        linear = pskb_may_pull(k, grown, grown.len, owned=True)
        assert linear is not None
        out = linear
    frame_sz = out.end + shinfo_size(k)  # bpf_prog_run_generic_xdp: end - hard_start + shinfo
    copied = out.len + mac_len if expand else 0
    done = helpers_of(c, out.data - mac_len, out.tail, out.end, generic=True)
    xdata, xend, meta = done.data, done.data_end, done.meta_len
    shift = xdata - (out.data - mac_len)
    stretched = xend - out.tail
    moved = None
    passing = out
    if shift or stretched:
        # bpf_prog_run_generic_xdp: __skb_pull/__skb_push by the head change (mac_header
        # follows), skb_set_tail_pointer + skb->len += the tail change; a changed Ethernet
        # header is pushed back and eth_type_trans() runs again (the length is the same)
        passing = moved = out.but(
            data=out.data + shift, tail=xend, len=out.len - shift + stretched,
            mac_header=None if out.mac_header is None else out.mac_header + shift)
    length = xend - xdata
    base = XdpRun(VERDICT[s.xdp], "generic", "do_xdp_generic", xdata, length,
                  frame_sz, passing.end - passing.tail, result="pass", errno=None,
                  read_len=None, read_hdr=None, rx_packets=0, rx_bytes=0, rx_dropped=0,
                  tx_packets=0, tx_bytes=0, copied=copied, meta_len=meta)
    passed: Skb | None = None
    if s.xdp == "pass":
        if meta:  # netif_receive_generic_xdp: skb_metadata_set(skb, metalen)
            passing = passing.but(meta_len=meta)
        run, passed = base._replace(rx_packets=1, rx_bytes=frame_len, rx_dropped=None), passing
    elif s.xdp in ("drop", "aborted") or (s.xdp == "redirect" and length > redirect_limit()):
        failed = s.xdp == "redirect"
        run = base._replace(result="redirect_failed" if failed else "drop",
                            errno="EMSGSIZE" if failed else None)
    else:
        size = _vnet_hdr_bytes(s)
        read_hdr = _hdr_from_skb(passing, size, mac_len) if s.vnet_hdr else None
        run = base._replace(result=s.xdp, read_len=size + length, read_hdr=read_hdr,
                            tx_packets=1, tx_bytes=length)
    return Generic(run, passed, why, at_mac, headroom, needed, skb.data_len, expand, nhead,
                   ntail, out, mac_len, done, moved)


def _hdr_from_skb(skb: Skb, size: int, mac_len: int) -> str | None:
    """virtio_net_hdr_from_skb(has_data_valid = true) (include/linux/virtio_net.h); the rest of vnet_hdr_sz is skipped (≤ 6.14) or zeroed (6.17+): zeros either
    way for a zeroing reader. skb->data is back at the MAC header when tun_put_user runs."""
    gso_type = hdr_len = 0
    if skb.gso_size:
        names = set(skb.gso_type_names)
        for name, value in (("SKB_GSO_TCPV4", 1), ("SKB_GSO_TCPV6", 4), ("SKB_GSO_UDP_L4", 5)):
            if name in names:
                gso_type = value
                break
        else:
            return None  # UFO and others: -EINVAL ("unexpected GSO type"), not modelled
        if "SKB_GSO_TCP_ECN" in names:
            gso_type |= 0x80  # VIRTIO_NET_HDR_GSO_ECN
        hdr_len = skb.headlen + mac_len  # skb_headlen() with the MAC header pushed back
    start = offset = 0
    if skb.ip_summed == CHECKSUM_PARTIAL and skb.csum_start is not None:
        flags = VIRTIO_NET_HDR_F_NEEDS_CSUM
        start = skb.csum_start - (skb.data - mac_len)  # skb_checksum_start_offset()
        offset = skb.csum_offset or 0
    elif skb.ip_summed == CHECKSUM_UNNECESSARY:
        flags = VIRTIO_NET_HDR_F_DATA_VALID
    else:
        flags = 0
    hdr = struct.pack("<BBHHHH", flags, gso_type, hdr_len, skb.gso_size, start, offset)
    return (hdr + bytes(size - len(hdr))).hex()


def tun_xdp_set(k: KernelProfile) -> tuple[str, tuple[tuple[str, str], ...]]:
    """drivers/net/tun.c:tun_xdp_set never refuses a program (no MTU, offload or queue check;
    identical 5.15-7.1): its check's wording and what attaching means for writes."""
    from vnetrx.paths.tun.build import build_limit

    limit = build_limit(k)
    check = ("swaps tun->xdp_prog and sets SOCK_XDP on the queues: no MTU, offload or queue "
             "check (a generic program already attached is refused by the core: 'Native and "
             "generic XDP can't be active at the same time', EEXIST)")
    effects = (
        ("native XDP", "in tun_build_skb for TAP writes tun_can_build_skb accepts: "
         f"non-blocking, default sndbuf, no IFF_NAPI_FRAGS, non-GSO, frames up to {limit} "
         "bytes; headroom TUN_RX_PAD + XDP_PACKET_HEADROOM = "
         f"{k.build.net_ip_align + k.net_skb_pad + k.value(XDP_PACKET_HEADROOM)}"),
        ("generic XDP", "every other write: do_xdp_generic on the built skb, which "
         "pskb_expand_head() + skb_linearize() copy to 256 bytes of headroom"),
        ("XDP_TX", "native: an xdp_frame on the tx_ring, read() returns a zeroed vnet header "
         "and the frame; generic: the skb goes to tun_net_xmit"),
        ("build_skb limit", f"{limit} bytes whether or not a program is attached"
         + (" (59eeb2329405 counts XDP_PACKET_HEADROOM always)" if k.value(TUN_BUILD_XDP_HEADROOM)
            else " (before 59eeb2329405 the 256 bytes a program adds to pad are not counted: "
            "with a program, buflen can exceed PAGE_SIZE)")),
    )
    return check, effects


# --- narration -----------------------------------------------------------------------------


def narrate_native(s: TapSetup, n: Native, log: StepLog) -> None:
    """The program's run inside tun_build_skb and tun_xdp_act's handling of its verdict."""
    assert s.xdp is not None
    run = n.run
    log.add(
        SRC,
        "tun_build_skb",
        f"native XDP: xdp_init_buff(frame_sz = buflen {n.buflen}), xdp_prepare_buff(data = buf + "
        f"pad {n.pad}, len {n.length}); bpf_prog_run_xdp() returns {VERDICT[s.xdp]}",
        because=(TUN_XDP,),
        data_hard_start=0,
        data=n.pad,
        data_end=n.pad + n.length,
        frame_sz=n.buflen,
        tailroom=n.tailroom,
        verdict=VERDICT[s.xdp],
    )
    helpers.narrate_helpers(n.helpers, log)
    if run.result == "pass":
        log.add(SRC, "tun_xdp_act", "XDP_PASS: nothing to do; tun_build_skb() builds the skb "
                "around the same buffer with pad = data - data_hard_start", verdict="XDP_PASS")
        return
    if run.result == "drop":
        log.add(SRC, "tun_xdp_act",
                f"{VERDICT[s.xdp]}: rx_dropped++ (dev_core_stats_rx_dropped_inc"
                + ("; XDP_ABORTED also fires the xdp:xdp_exception tracepoint" if
                   s.xdp == "aborted" else "")
                + "); the page fragment is not advanced, so the next write reuses its bytes; "
                "tun_build_skb returns NULL and write() returns the whole length",
                rx_dropped=1)
        return
    because = (TUN_XDP_ACT_STATS,) if n.stats else ()
    if run.result == "redirect_failed":
        log.add(FILTER_SRC, "xdp_do_redirect",
                f"bpf_redirect() to this tap: xdp_ok_fwd_dev() refuses {run.len} > mtu "
                f"{TAP_MTU} + ETH_HLEN + VLAN_HLEN = {redirect_limit()}: -EMSGSIZE",
                len=run.len, limit=redirect_limit())
        log.add(SRC, "tun_xdp_act",
                "the redirect failed: " + ("rx_dropped++ (5744ba05e7c4); " if n.stats else
                                           "no counter moves (before 5744ba05e7c4); ")
                + "the page reference taken for it is put back; write() returns the whole "
                "length", because=because, rx_dropped=1 if n.stats else 0)
        return
    if s.xdp == "tx":
        how = ("XDP_TX: tun_xdp_tx() converts the buffer to an xdp_frame (it lives in the "
               "buffer's headroom) and tun_xdp_xmit() puts it on tfiles[smp_processor_id() % "
               "numqueues]'s tx_ring")
    else:
        how = ("XDP_REDIRECT: xdp_do_redirect() queues an xdp_frame for this tap "
               "(dev_xdp_enqueue), xdp_do_flush() hands it to tun_xdp_xmit(), which puts it on "
               "a tx_ring")
    log.add(SRC, "tun_xdp_act",
            f"{how}; get_page() keeps the fragment until it is read; "
            + ("rx_packets++, rx_bytes += data_end - data (f1084c427f55)" if n.stats else
               "no rx counter moves (before f1084c427f55)"),
            because=because, rx_packets=run.rx_packets, rx_bytes=run.rx_bytes)
    log.add(SRC, "tun_put_user_xdp",
            "a read() on the tap fd returns the frame as the program left it: "
            + (f"a zeroed struct virtio_net_hdr, then the rest of vnet_hdr_sz "
               f"({s.vnet_hdr_sz}) skipped, then " if s.vnet_hdr else "")
            + f"{run.len} frame bytes (no struct tun_pi, whatever IFF_NO_PI says); tx_packets++, "
            "tx_bytes += what read() returns",
            read_len=run.read_len, tx_bytes=run.read_len)
    log.note("XDP_TX/REDIRECT read-back: up to 6.14 tun_put_user_xdp skips the vnet header "
             "bytes past the first 10 (the reader's memory keeps what it held); 6.17+ zeroes "
             "them. vnetrx's reader zero-fills, so both read as zeros")


def narrate_generic(s: TapSetup, g: Generic, log: StepLog) -> None:
    """do_xdp_generic's steps: the skb made fit, the program's run, and its verdict."""
    assert s.xdp is not None
    out, run = g.linear, g.run
    if g.expand:
        log.add(
            DEV_SRC,
            "netif_receive_generic_xdp",
            f"{g.why}; generic XDP needs XDP_PACKET_HEADROOM ({g.needed}) of headroom (measured "
            "at " + ("the MAC header" if g.at_mac else "the network header")
            + ") and a linear skb: pskb_expand_head(nhead, ntail) then skb_linearize() copy "
            "it into one new head; truesize is not updated (skb->sk is set)",
            because=(GENERIC_XDP_MULTI_BUF,) if g.at_mac else (),
            headroom=g.headroom,
            data_len=g.data_len,
            nhead=g.nhead,
            ntail=g.ntail,
            head=out.head,
            end=out.end,
            truesize=out.truesize,
        )
    else:
        log.add(DEV_SRC, "netif_receive_generic_xdp",
                f"{g.why}; the skb already has {g.headroom} >= {g.needed} bytes of headroom and "
                "is linear: the program runs on it in place", headroom=g.headroom)
    log.add(
        DEV_SRC,
        "bpf_prog_run_generic_xdp",
        f"xdp_buff over the skb head: data at the MAC header, frame_sz = end + "
        f"SKB_DATA_ALIGN(sizeof(skb_shared_info)) = {run.frame_sz}; the program returns "
        f"{VERDICT[s.xdp]}",
        data_hard_start=0,
        data=out.data - g.mac_len,
        data_end=out.tail,
        frame_sz=run.frame_sz,
        verdict=VERDICT[s.xdp],
    )
    helpers.narrate_helpers(g.helpers, log)
    if g.moved is not None:
        log.add(DEV_SRC, "bpf_prog_run_generic_xdp",
                "the program moved the frame: the skb follows (__skb_pull/__skb_push by the "
                "head change, skb->len += the tail change)", len=g.moved.len, data=g.moved.data,
                tail=g.moved.tail)
    if run.result == "pass":
        return
    if run.result in ("drop", "redirect_failed"):
        failed = run.result == "redirect_failed"
        log.add(DEV_SRC, "do_xdp_generic",
                (f"xdp_do_generic_redirect(): xdp_ok_fwd_dev() refuses {run.len} > "
                 f"{redirect_limit()} (-EMSGSIZE); " if failed else f"{VERDICT[s.xdp]}: ")
                + "kfree_skb(); no tun counter moves and tun_get_user returns the whole "
                "length before its rx stats", rx_dropped=0)
        return
    log.add(DEV_SRC, "generic_xdp_tx",
            ("XDP_TX" if s.xdp == "tx" else "XDP_REDIRECT to this tap (xdp_do_generic_redirect)")
            + ": the skb, its MAC header pushed back, goes to netdev_start_xmit() on the tap "
            "(no qdisc): tun_net_xmit() queues it; tun_get_user returns before its rx stats")
    log.add(SRC, "tun_put_user",
            "a read() returns it like any transmitted skb: the virtio_net_hdr from "
            "virtio_net_hdr_from_skb(), then the frame; tx_packets++, tx_bytes += skb->len "
            "(the vnet header not counted, unlike an xdp_frame)",
            read_len=run.read_len, tx_bytes=run.tx_bytes)
