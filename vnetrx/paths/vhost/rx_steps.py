"""The narration of a vhost-net receive (rx.py's records): one step per decision, each citing
``file:function @ version`` and the change that chose the branch. It reads the records only;
nothing here decides."""

from __future__ import annotations

from typing import Final

from vnetrx.kernel.changes import TUN_USO, VHOST_NUM_BUFFERS_VERSION_1, VNET_HDR_GSO_UDP_L4
from vnetrx.paths.steps import StepLog
from vnetrx.paths.vhost.rx import (
    DEV_C,
    NUM_BUFFERS_OFFSET,
    SRC,
    UIO_MAXIOV,
    VHOST_C,
    VHOST_NET_BATCH,
    VHOST_NET_PKT_WEIGHT,
    VHOST_NET_WEIGHT,
    VIRTIO_NET_H,
    GuestRx,
    Packet,
    Segment,
    Signal,
    VhostRx,
    VhostRxConfig,
    Xmit,
)
from vnetrx.paths.virtio_net_hdr import DATA_VALID, NEEDS_CSUM, VnetHdr, gso_type_names

VIRTIO_NET_C: Final = "drivers/net/virtio_net.c"
_GSO_NAMES: Final = {0: "GSO_NONE", 1: "GSO_TCPV4", 4: "GSO_TCPV6", 5: "GSO_UDP_L4"}


def hdr_text(h: VnetHdr) -> str:
    """A header's fields as the kernel names them."""
    flags = ("NEEDS_CSUM" if h.flags & NEEDS_CSUM else "DATA_VALID" if h.flags & DATA_VALID
             else "0")
    kind = _GSO_NAMES.get(h.gso_type & 0x7F, f"{h.gso_type & 0x7F:#x}")
    if h.gso_type & 0x80:
        kind += "|ECN"
    text = f"flags {flags}, gso_type {kind}"
    if h.gso_type:
        text += f", gso_size {h.gso_size}, hdr_len {h.hdr_len}"
    if h.flags & NEEDS_CSUM:
        text += f", csum_start {h.csum_start}, csum_offset {h.csum_offset}"
    return text


def narrate(r: VhostRx, log: StepLog) -> None:
    """The steps of a burst, in the order the kernel takes them."""
    c = r.config
    _narrate_features(c, log)
    for x in r.xmits:
        _narrate_xmit(c, x, log)
    for p, g in zip(r.packets, r.guest, strict=True):
        _narrate_packet(c, p, log)
        if g is not None:
            _narrate_guest(c, p, g, log)


def _narrate_features(c: VhostRxConfig, log: StepLog) -> None:
    s = c.setup
    log.add(SRC, "vhost_net_set_features",
            f"sock_hlen = {c.sock_hlen}: the tap writes the header "
            + ("(MRG_RXBUF or VERSION_1: struct virtio_net_hdr_mrg_rxbuf)" if c.sock_hlen == 12
               else "(legacy: struct virtio_net_hdr)")
            + f"; guest {s.mode} buffers, get_rx_bufs quota "
            + (f"UIO_MAXIOV = {UIO_MAXIOV}" if c.mergeable else "1 (one chain per packet)"),
            sock_hlen=c.sock_hlen, mergeable_rx_bufs=c.mergeable, quota=c.quota,
            chain_len=c.chain_len if not c.mergeable else None,
            buf_len=c.buf_len if c.mergeable else None)
    if c.guest.mode == "mergeable" and s.buf_len is None:
        log.add(VIRTIO_NET_C, "get_mergeable_buf_len",
                f"the guest posts {c.buf_len}-byte buffers (EWMA {s.ewma}, min_buf_len "
                f"{c.guest.min_buf_len})", ewma=s.ewma, min_buf_len=c.guest.min_buf_len,
                len=c.buf_len)


def _narrate_xmit(c: VhostRxConfig, x: Xmit, log: StepLog) -> None:
    if x.segmented is None and not x.csum_help:
        return
    if x.segmented is not None:
        feature = ("NETIF_F_TSO/TSO6 (no TUN_F_TSO4/TSO6: the guest did not negotiate guest TSO)"
                   if x.segmented is Segment.NO_TSO else
                   "NETIF_F_GSO_UDP_L4 (no TUN_F_USO4/USO6"
                   + (": the guest did not negotiate guest USO)" if c.has(TUN_USO.key)
                      else f": tun has no USO before 6.2, not on {c.kernel})"))
        log.add(DEV_C, "validate_xmit_skb",
                f"frame {x.frame}: the tap lacks {feature}: skb_gso_segment cuts the "
                f"{x.len}-byte GSO skb into {x.segments} skbs of {x.header_len} header bytes + "
                f"at most gso_size {x.gso_size}",
                (TUN_USO,) if x.segmented is Segment.NO_USO and c.has(TUN_USO.key) else (),
                frame=x.frame, len=x.len, segments=x.segments, gso_size=x.gso_size,
                reason=str(x.segmented))
    if x.csum_help:
        log.add(DEV_C, "skb_csum_hwoffload_help",
                f"frame {x.frame}: the tap has no NETIF_F_HW_CSUM (no TUN_F_CSUM): "
                "skb_checksum_help finishes the checksum, the skb leaves CHECKSUM_NONE",
                frame=x.frame)


def _narrate_packet(c: VhostRxConfig, p: Packet, log: StepLog) -> None:
    if p.seq % VHOST_NET_BATCH == 0:
        log.add(SRC, "vhost_net_buf_produce",
                f"batch {p.batch}: ptr_ring_consume_batched takes up to {VHOST_NET_BATCH} skb "
                "pointers off the tap's ring", batch=p.batch)
    where = f"packet {p.seq}" + (f" (frame {p.skb.frame}" + (
        f", segment {p.skb.segment})" if p.skb.segment is not None else ")"))
    log.add(SRC, "peek_head_len",
            f"{where}: skb->len {p.skb.len}" + (" + VLAN_HLEN 4 (tag present)" if p.skb.vlan
                                                 else "")
            + f", sock_len = {p.peek_len} + sock_hlen {c.sock_hlen} = {p.sock_len}",
            len=p.skb.len, vlan=p.skb.vlan, sock_len=p.sock_len)
    if p.discard is not None:
        held = sum(p.chains)
        log.add(SRC, "get_rx_bufs",
                f"{p.headcount} chain(s) of the quota {c.quota} hold {held} bytes < {p.sock_len}: "
                "overrun (UIO_MAXIOV + 1); the heads are given back (vhost_discard_vq_desc)",
                headcount=p.headcount, quota=c.quota, held=held, datalen=p.sock_len)
        log.add(SRC, "handle_rx",
                f"recvmsg into a 1-byte iov with MSG_TRUNC: \"Discarded rx packet: len "
                f"{p.sock_len}\" (pr_debug); the guest never sees it", len=p.sock_len,
                reason=str(p.discard))
    else:
        log.add(SRC, "get_rx_bufs",
                f"{p.headcount} chain(s): used " + ", ".join(map(str, p.used))
                + (" (every one full but the last)" if p.headcount > 1 else ""),
                headcount=p.headcount, used=", ".join(map(str, p.used)))
        h = VnetHdr.from_bytes(p.hdr[:10])
        log.add(VIRTIO_NET_H, "virtio_net_hdr_from_skb",
                f"tun_put_user writes {hdr_text(h)}"
                + (" (csum_start + VLAN_HLEN: the tag goes in band)" if p.skb.vlan and
                   h.flags & NEEDS_CSUM else ""),
                (VNET_HDR_GSO_UDP_L4,) if h.gso_type & 0x7F == 5 else (),
                hdr=p.hdr[:10].hex())
        if p.num_buffers is not None:
            log.add(SRC, "handle_rx",
                    f"num_buffers = headcount = {p.num_buffers} at offset {NUM_BUFFERS_OFFSET}"
                    + (" (MRG_RXBUF)" if c.mergeable else " (VERSION_1 without MRG_RXBUF)"),
                    () if c.mergeable else (VHOST_NUM_BUFFERS_VERSION_1,),
                    num_buffers=p.num_buffers)
        elif p.hdr_untouched:
            log.add(SRC, "handle_rx",
                    f"no MRG_RXBUF: num_buffers is not written on {c.kernel} (6.14+ writes it "
                    "with VERSION_1): header bytes 10-11 keep what the guest's buffer held",
                    untouched=p.hdr_untouched)
    if p.signal is not None:
        why = {
            Signal.DONE_IDX: f"done_idx {p.done_idx} > VHOST_NET_BATCH {VHOST_NET_BATCH}",
            Signal.WEIGHT: f"the run's weight ({VHOST_NET_PKT_WEIGHT} packets or "
            f"{VHOST_NET_WEIGHT} bytes, vhost_exceeds_weight in {VHOST_C}): requeued",
            Signal.EMPTY: "the tap's ring is empty: the end of handle_rx",
        }[p.signal]
        log.add(SRC, "vhost_net_signal_used",
                f"{why}: {p.done_idx} used element(s) in one vhost_add_used_and_signal_n, "
                "then one vhost_signal (an interrupt unless the guest suppressed it while "
                "polling)", done_idx=p.done_idx, reason=str(p.signal))


def _narrate_guest(c: VhostRxConfig, p: Packet, g: GuestRx, log: StepLog) -> None:
    d = g.delivery
    skb = d.skb
    if skb is None:
        log.add(VIRTIO_NET_C, "receive_buf",
                f"packet {p.seq}: the guest drops the {g.frame}-byte frame ({d.reason})",
                frame_len=g.frame, reason=str(d.reason))
        return
    text = (f"packet {p.seq}: the guest's receive_{c.guest.mode} takes the {g.frame}-byte "
            f"frame ({g.plan.outcome}): skb len {skb.len} after eth_type_trans, truesize "
            f"{skb.truesize}, nr_frags {skb.nr_frags}")
    if skb.gso_size:
        text += f", gso_size {skb.gso_size} ({'|'.join(gso_type_names(skb.gso_type))})"
    log.add(VIRTIO_NET_C, "receive_buf", text, frame_len=g.frame, outcome=g.plan.outcome,
            truesize=skb.truesize, nr_frags=skb.nr_frags)
