"""Mirrors what decides whether virtio-net can put its header inline on transmit:
drivers/net/virtio_net.c (virtnet_probe: hdr_len, any_header_sg, needed_headroom; xmit_skb: the
can_push test and the sg list), include/linux/netdevice.h (LL_RESERVED_SPACE),
include/net/neighbour.h (neigh_hh_output: the 14-byte push) and drivers/virtio/virtio_ring.c
(virtqueue_add: indirect descriptors). The skbs themselves come from vnetrx.paths.tx.ip_output.

Facts: docs/kernel/tx-headroom.md §2, §3, §6, §7 and docs/kernel/skbuff.md §4, and xmit_skb /
virtqueue_add read in the 3.16.0 tree (jyizheng/linux-3.16) and xmit_skb @4.13.4.
"""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.changes import (
    MAX_TCP_HEADER_L1_ALIGNED,
    PADDED_VNET_HDR_V1_HASH,
    TX_NEEDED_HEADROOM,
    TX_NEEDED_HEADROOM_HDR_LEN,
    UDP_UFO,
    VNET_HDR_UDP_TUNNEL,
)
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import require_path
from vnetrx.layouts.virtio_net import (
    HDR_LENS,
    rx_header_for,
    virtio_net_hdr,
    virtio_net_hdr_mrg_rxbuf,
    virtio_net_hdr_v1_hash_tunnel,
)
from vnetrx.model import Region, Step
from vnetrx.paths.skbuff import kmalloc_reserve, shinfo_size
from vnetrx.paths.steps import StepLog
from vnetrx.paths.tx import ip_output as ip
from vnetrx.paths.tx.virtqueue import narrate_virtqueue_add, virtqueue_add

SCHEMA = "vnetrx.headroom/1"
SRC = "drivers/net/virtio_net.c"
DEFAULT_PAYLOADS: tuple[int, ...] = (64, 256, 512, 1024, 1460, 4096)  # the seed's table rows
HH_DATA_MOD = 16  # include/linux/netdevice.h
# __alignof__(*hdr) in xmit_skb: every header type it uses (skb_vnet_hdr, virtio_net_hdr_mrg_rxbuf,
# virtio_net_hdr_v1_hash_tunnel with its split hash_value) has only __u8/__le16 members: 2.
VNET_HDR_ALIGN = 2
MAX_MTU = 16000  # above this, fraglen + hh_len + 15 may reach SKB_MAX_ALLOC: paged (not modelled)


@dataclass(frozen=True)
class TxSetup:
    """What was negotiated and what is sent. ``hdr_len`` None: from ``mergeable``."""

    tcp: bool = False  # --tcp (else UDP)
    ipv6: bool = False
    payloads: tuple[int, ...] = DEFAULT_PAYLOADS  # bytes per send()
    mtu: int = 1500
    mergeable: bool = True  # VIRTIO_NET_F_MRG_RXBUF (QEMU's default)
    hdr_len: int | None = None  # vi->hdr_len when given explicitly (10, 12, 20, 24)
    indirect: bool = True  # VIRTIO_RING_F_INDIRECT_DESC
    ufo: bool = False  # VIRTIO_NET_F_HOST_UFO offered: NETIF_F_UFO on kernels that have UFO
    any_layout: bool = True  # VIRTIO_F_ANY_LAYOUT (QEMU sets it by default)


@dataclass(frozen=True)
class TxDevice:
    """What virtnet_probe() and ether_setup() decided for the device."""

    hdr_len: int  # vi->hdr_len: bytes of virtio-net header per packet
    header: str  # the struct xmit_skb() points hdr at
    any_header_sg: bool
    needed_headroom: int  # dev->needed_headroom
    hard_header_len: int  # ETH_HLEN
    hh_len: int  # LL_RESERVED_SPACE(dev)
    ufo: bool  # NETIF_F_UFO in dev->features


@dataclass(frozen=True)
class Probe:
    """virtnet_probe's decision: the device, and what decided its header and headroom."""

    device: TxDevice
    mergeable: bool  # the header is virtio_net_hdr_mrg_rxbuf (MRG_RXBUF or VERSION_1)
    # how virtnet_probe sets needed_headroom: "hdr_len" (vi->hdr_len), "sizeof" (the header
    # struct's size), "never" (before TX_NEEDED_HEADROOM: 0)
    needed_rule: str


@dataclass(frozen=True)
class TxSkb:
    """One skb at ndo_start_xmit (start_xmit → xmit_skb), offsets from skb->head."""

    len: int  # skb->len, Ethernet header included
    headroom: int  # skb_headroom(skb) when xmit_skb() runs
    headlen: int
    nr_frags: int
    can_push: bool
    aligned: bool  # skb->data is aligned for the header (its parity: the head is kmalloc'd)
    sg_entries: int  # num_sg handed to virtqueue_add_outbuf()
    ring_slots: int  # descriptors taken from the ring
    indirect_bytes: int  # kmalloc'd indirect table (0: direct descriptors)
    alloc: int  # linear bytes the socket layer asked for
    head: str  # where skb->head came from
    head_size: int  # bytes of the head allocation, skb_shared_info included
    truesize: int
    gso: str | None  # "UFO" / "TSO" for a GSO skb
    regions: tuple[Region, ...] = ()  # the head, byte by byte


@dataclass(frozen=True)
class PayloadResult:
    payload: int
    skbs: tuple[TxSkb, ...]
    steps: tuple[Step, ...]

    @property
    def sg_entries_total(self) -> int:
        return sum(s.sg_entries for s in self.skbs)

    @property
    def ring_slots_total(self) -> int:
        return sum(s.ring_slots for s in self.skbs)


@dataclass(frozen=True)
class HeadroomReport:
    """Everything ``vnetrx headroom`` computed for one kernel. Renderers consume only this."""

    kernel: KernelProfile
    setup: TxSetup
    device: TxDevice
    max_tcp_header: int | None  # TCP only
    steps: tuple[Step, ...]  # device-level steps (probe, LL_RESERVED_SPACE)
    results: tuple[PayloadResult, ...]
    notes: tuple[str, ...] = ()
    schema: str = SCHEMA


def proto_name(s: TxSetup) -> str:
    return f"IPv{6 if s.ipv6 else 4} {'TCP' if s.tcp else 'UDP'}"


def check(k: KernelProfile, s: TxSetup) -> None:
    """Reject what Linux would not do or vnetrx does not model, with the valid range."""
    if not s.payloads:
        raise InputError("no payload sizes given (e.g. --payload 64,1460)")
    high = ip.max_payload(s.tcp, s.ipv6)
    for payload in s.payloads:
        if not 1 <= payload <= high:
            raise InputError(
                f"payload {payload} out of range for {proto_name(s)} (valid: 1..{high} bytes)"
            )
    low = ip.IPV6_MIN_MTU if s.ipv6 else 68
    if not low <= s.mtu <= MAX_MTU:
        raise InputError(
            f"MTU {s.mtu} out of range for IPv{6 if s.ipv6 else 4} (valid: {low}..{MAX_MTU})"
        )
    if s.tcp and s.ufo:
        raise InputError("--ufo is UDP fragmentation offload: it does not apply to --tcp")
    check_hdr_len(k, s)


def check_hdr_len(k: KernelProfile, s: TxSetup) -> None:
    if s.hdr_len is None:
        return
    if s.hdr_len not in HDR_LENS:
        valid = ", ".join(map(str, HDR_LENS))
        raise InputError(f"hdr_len {s.hdr_len} is not a virtio-net header size (valid: {valid})")
    if s.hdr_len == 20 and not k.has(PADDED_VNET_HDR_V1_HASH):
        raise UnsupportedError(
            f"hdr_len 20 (VIRTIO_NET_F_HASH_REPORT) needs 5.18 or later, not {k.name}"
        )
    if s.hdr_len == 24 and not k.has(VNET_HDR_UDP_TUNNEL):
        raise UnsupportedError(f"hdr_len 24 (UDP tunnel GSO) needs 6.17 or later, not {k.name}")


def virtnet_probe(k: KernelProfile, s: TxSetup) -> Probe:
    """virtnet_probe: vi->hdr_len, any_header_sg, dev->needed_headroom (fact sheet B.1)."""
    mergeable = s.mergeable if s.hdr_len is None else s.hdr_len != virtio_net_hdr().size
    hdr_len = s.hdr_len or (virtio_net_hdr_mrg_rxbuf().size if mergeable else virtio_net_hdr().size)
    needed = hdr_len if s.any_layout and k.has(TX_NEEDED_HEADROOM) else 0
    rule = ("hdr_len" if k.has(TX_NEEDED_HEADROOM_HDR_LEN) else
            "sizeof" if k.has(TX_NEEDED_HEADROOM) else "never")
    device = TxDevice(
        hdr_len=hdr_len,
        header=_header_struct(k),
        any_header_sg=s.any_layout,
        needed_headroom=needed,
        hard_header_len=ETH_HLEN,
        hh_len=ll_reserved_space(ETH_HLEN, needed),
        ufo=s.ufo and k.has(UDP_UFO),
    )
    return Probe(device, mergeable, rule)


def narrate_probe(k: KernelProfile, s: TxSetup, p: Probe, log: StepLog) -> None:
    """virtnet_probe's step, and LL_RESERVED_SPACE's."""
    dev = p.device
    form = {
        "hdr_len": "dev->needed_headroom = vi->hdr_len",
        "sizeof": "dev->needed_headroom = sizeof(struct "
                  f"{'virtio_net_hdr_mrg_rxbuf' if p.mergeable else 'virtio_net_hdr'})",
        "never": "dev->needed_headroom is never set (0)",
    }[p.needed_rule]
    log.add(
        SRC,
        "virtnet_probe",
        f"hdr_len {dev.hdr_len} ({'MRG_RXBUF or VERSION_1' if p.mergeable else 'legacy header'}); "
        f"any_header_sg = {'VIRTIO_F_ANY_LAYOUT' if s.any_layout else 'false (no ANY_LAYOUT)'}; "
        f"{form}{'' if s.any_layout else ' only with any_header_sg'}",
        because=k.present(TX_NEEDED_HEADROOM, TX_NEEDED_HEADROOM_HDR_LEN),
        hdr_len=dev.hdr_len,
        mergeable_rx_bufs=p.mergeable,
        any_header_sg=s.any_layout,
        needed_headroom=dev.needed_headroom,
    )
    log.add(
        "include/linux/netdevice.h",
        "LL_RESERVED_SPACE",
        f"hh_len = ((hard_header_len {dev.hard_header_len} + needed_headroom "
        f"{dev.needed_headroom}) & ~15) + 16 = {dev.hh_len}",
        because=k.present(TX_NEEDED_HEADROOM),
        hard_header_len=dev.hard_header_len,
        needed_headroom=dev.needed_headroom,
        HH_DATA_MOD=HH_DATA_MOD,
        hh_len=dev.hh_len,
    )


def _header_struct(k: KernelProfile) -> str:
    # xmit_skb's hdr: skb_vnet_hdr @3.15.5/@3.16.0, virtio_net_hdr_mrg_rxbuf @4.13.4…6.12,
    # virtio_net_hdr_v1_hash_tunnel @6.18.3 (3.19 assumed like 4.13: not read)
    if k.has(VNET_HDR_UDP_TUNNEL):
        return virtio_net_hdr_v1_hash_tunnel().name
    if k.has(TX_NEEDED_HEADROOM_HDR_LEN):
        return virtio_net_hdr_mrg_rxbuf().name
    return "skb_vnet_hdr"


def ll_reserved_space(hard_header_len: int, needed_headroom: int) -> int:
    """LL_RESERVED_SPACE(dev) = ((hard_header_len + needed_headroom) & ~(HH_DATA_MOD - 1))
    + HH_DATA_MOD (include/linux/netdevice.h @3.16.0, @6.18.3)."""
    return ((hard_header_len + needed_headroom) & ~(HH_DATA_MOD - 1)) + HH_DATA_MOD


def run_headroom(k: KernelProfile, s: TxSetup) -> HeadroomReport:
    """Size every payload's skbs on kernel ``k`` and decide, per skb, whether the header goes inline."""
    require_path(k, "headroom")
    check(k, s)
    log = StepLog(k)
    probe = virtnet_probe(k, s)
    narrate_probe(k, s, probe, log)
    dev = probe.device
    mth = ip.max_tcp_header(k) if s.tcp else None
    if mth is not None:
        log.add(
            "include/net/tcp.h",
            "MAX_TCP_HEADER",
            f"MAX_TCP_HEADER = {mth} with the {k.build.config} config (MAX_HEADER "
            f"{k.build.max_header}); TCP reserves it, so hh_len does not size TCP skbs",
            because=k.present(MAX_TCP_HEADER_L1_ALIGNED),
            MAX_HEADER=k.build.max_header,
            MAX_TCP_HEADER=mth,
        )
    _notes(k, s, log)
    results = tuple(_payload(k, s, dev, mth, payload) for payload in s.payloads)
    return HeadroomReport(k, s, dev, mth, tuple(log.steps), results, tuple(log.notes))


def _notes(k: KernelProfile, s: TxSetup, log: StepLog) -> None:
    if s.hdr_len in (None, 10) and not s.mergeable and k.has(TX_NEEDED_HEADROOM_HDR_LEN):
        log.note(
            "hdr_len 10 models a legacy device: with VIRTIO_F_VERSION_1 the header is 12 bytes "
            "even without MRG_RXBUF (virtnet_probe @3.19.8 onward)"
        )
    if s.ufo and not k.has(UDP_UFO):
        log.note(f"--ufo: UFO was removed in 4.14, so {k.name} fragments at the MTU instead")
    if s.tcp:
        log.note(
            "TCP: one skb per send on an idle connection with timestamps (32-byte TCP header); "
            "a payload above the MSS is one TSO skb (VIRTIO_NET_F_HOST_TSO4/6 assumed, as QEMU "
            "offers); how tcp_sendmsg splits larger writes (size_goal) is not modelled"
        )
    if s.tcp or s.ufo:
        log.note(
            "page frags: the payload is copied into a fresh 32 KiB task frag (1 frag per 32 KiB)"
        )


def _payload(
    k: KernelProfile, s: TxSetup, dev: TxDevice, mth: int | None, payload: int
) -> PayloadResult:
    """One send's skbs at xmit, decided, then narrated."""
    log = StepLog(k)
    built = _build(k, s, dev, mth, payload, log)
    skbs = tuple(_xmit(k, s, dev, skb) for skb in built)
    for skb in skbs:
        _narrate_xmit(s, dev, skb, log)
    return PayloadResult(payload, skbs, tuple(log.steps))


def _build(
    k: KernelProfile, s: TxSetup, dev: TxDevice, mth: int | None, payload: int, log: StepLog
) -> tuple[ip.BuiltSkb, ...]:
    """The IP layer's skbs (ip_output's decisions), and their steps."""
    if mth is not None:
        mss = s.mtu - (ip.IPV6_HDR if s.ipv6 else ip.IPV4_HDR) - ip.TCP_HDR
        sent = ip.tcp_sendmsg(k, mth, s.ipv6, payload, mss)
        ip.narrate_tcp_sendmsg(k, sent, log)
        log.add(
            "net/ipv4/tcp_output.c",
            "tcp_transmit_skb",
            "TCP sends a clone; __skb_header_release() marked the queued original (nohdr), so "
            "skb_header_cloned() is false for the clone and the headers may be written",
            skb_header_cloned=False,
        )
        return (sent.skb,)
    if ip.ufo_applies(k, dev.ufo, s.mtu, payload):
        skb = ip.ufo_append_data(dev.hh_len, s.ipv6, payload)
        ip.narrate_ufo_append_data(skb, s.ipv6, log)
        return (skb,)
    if s.ipv6:
        a = ip.ip6_append_data(dev.hh_len, s.mtu, payload)
        ip.narrate_ip6_append_data(a, log)
    else:
        a = ip.ip_append_data(dev.hh_len, s.mtu, payload)
        ip.narrate_ip_append_data(a, log)
    return a.skbs


def _xmit(k: KernelProfile, s: TxSetup, dev: TxDevice, skb: ip.BuiltSkb) -> TxSkb:
    """neigh_hh_output pushes ETH_HLEN; xmit_skb's can_push; virtqueue_add's descriptors."""
    headroom = skb.headroom - ETH_HLEN  # neigh_hh_output
    # the head is kmalloc'd (at least 8-aligned), so skb->data has the parity of the headroom
    aligned = headroom % VNET_HDR_ALIGN == 0
    can_push = dev.any_header_sg and aligned and headroom >= dev.hdr_len  # header not cloned
    sg = (1 if can_push else 2) + len(skb.frags)  # header (unless pushed) + linear + frags
    slots, table = virtqueue_add(s.indirect, sg)
    head = kmalloc_reserve(k, skb.alloc)
    return TxSkb(
        len=ETH_HLEN + skb.headlen + sum(skb.frags),
        headroom=headroom,
        headlen=ETH_HLEN + skb.headlen,
        nr_frags=len(skb.frags),
        can_push=can_push,
        aligned=aligned,
        sg_entries=sg,
        ring_slots=slots,
        indirect_bytes=table,
        alloc=skb.alloc,
        head=head.label,
        head_size=head.size,
        truesize=head.truesize + sum(skb.frags),
        gso=skb.gso,
        regions=_regions(k, dev, skb, headroom, can_push, head.size),
    )


def _narrate_xmit(s: TxSetup, dev: TxDevice, t: TxSkb, log: StepLog) -> None:
    """neigh_hh_output's, xmit_skb's and virtqueue_add's steps for one skb."""
    narrate_neigh_hh_output(t.headroom + ETH_HLEN, log)
    log.add(
        SRC,
        "xmit_skb",
        (
            f"headroom {t.headroom} >= hdr_len {dev.hdr_len}: header pushed inline, "
            if t.can_push
            else f"can_push fails ({_why_not(dev, t.aligned, t.headroom)}): header goes in "
            "skb->cb as its own sg entry, "
        )
        + _plural(t.sg_entries, "sg entry", "sg entries"),
        any_header_sg=dev.any_header_sg,
        aligned=t.aligned,
        skb_header_cloned=False,
        headroom=t.headroom,
        hdr_len=dev.hdr_len,
        can_push=t.can_push,
        num_sg=t.sg_entries,
    )
    narrate_virtqueue_add(s.indirect, t.sg_entries, t.ring_slots, t.indirect_bytes, log)


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def narrate_neigh_hh_output(headroom: int, log: StepLog) -> None:
    """neigh_hh_output (include/net/neighbour.h @3.16.0, @6.18.3): copy the cached, 16-byte
    aligned hardware header in front of skb->data and push ETH_HLEN (``headroom``: before)."""
    log.add(
        "include/net/neighbour.h",
        "neigh_hh_output",
        f"push the {ETH_HLEN}-byte Ethernet header: headroom {headroom} → {headroom - ETH_HLEN} "
        "at ndo_start_xmit",
        headroom=headroom,
        ETH_HLEN=ETH_HLEN,
    )


def _why_not(dev: TxDevice, aligned: bool, headroom: int) -> str:
    if not dev.any_header_sg:
        return "any_header_sg is false"
    if not aligned:
        return "skb->data is not aligned for the header"
    return f"headroom {headroom} < hdr_len {dev.hdr_len}"


def _regions(
    k: KernelProfile, dev: TxDevice, skb: ip.BuiltSkb, headroom: int, can_push: bool, size: int
) -> tuple[Region, ...]:
    """The head at xmit: headroom (and the header's place in it), headers, tailroom, shinfo."""
    if can_push:
        regions = [
            Region("headroom", 0, headroom - dev.hdr_len, "unused"),
            Region(
                "vnet_hdr",
                headroom - dev.hdr_len,
                dev.hdr_len,
                f"{rx_header_for(dev.hdr_len).name}, pushed inline",
            ),
        ]
    else:
        regions = [
            Region(
                "headroom", 0, headroom, f"{headroom} < hdr_len {dev.hdr_len}: header in skb->cb"
            )
        ]
    offset = headroom
    for name, length in (("Ethernet header", ETH_HLEN), *skb.linear):
        regions.append(Region(name, offset, length))
        offset += length
    end = size - shinfo_size(k)
    regions.append(Region("tailroom", offset, end - offset))
    regions.append(Region("skb_shared_info", end, size - end))
    return tuple(r for r in regions if r.size > 0 or r.name == "headroom")
