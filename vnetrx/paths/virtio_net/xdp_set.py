"""Mirrors drivers/net/virtio_net.c:virtnet_xdp_set — would attaching an XDP program to this
virtio-net device succeed, with the kernel's own extack text and errno, and what attaching
changes (guest offloads, rx buffers, XDP_TX queues, the modes where the program never runs).

Read @5.15.215, @6.1.192, @6.2.12, @6.6.150, @6.12.117, @6.18.9 (stable mirrors and Debian
linux-source); 5.12.9 for the pre-97c2c69e1926 queue refusal. The checks run in source order and
the first failing one is the answer, as in the kernel. ``NL_SET_ERR_MSG_MOD`` prefixes the
module name, so a message reads "virtio_net: ...".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from vnetrx.errors import InputError
from vnetrx.kernel.changes import (
    PADDED_VNET_HDR_V1_HASH,
    VIRTIO_XDP_MTU_FRAGS,
    VIRTIO_XDP_SHARED_TX_QUEUES,
)
from vnetrx.kernel.constants import ETH_HLEN, GOOD_PACKET_LEN, XDP_PACKET_HEADROOM
from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths.skbuff import shinfo_size
from vnetrx.paths.virtio_net.setup import VirtioRxSetup, check_hdr_len, vnet_hdr_len

SRC: Final = "drivers/net/virtio_net.c"
MODULE: Final = "virtio_net: "  # NL_SET_ERR_MSG_MOD's KBUILD_MODNAME prefix
MAX_QUEUE_PAIRS: Final = 0x8000  # VIRTIO_NET_CTRL_MQ_VQ_PAIRS_MAX
ETH_DATA_LEN: Final = 1500


@dataclass(frozen=True)
class XdpAttachSetup:
    """The negotiated device and the program being attached: the device's features, MTU and
    header length, and whether the program was loaded with BPF_F_XDP_HAS_FRAGS (its
    ``xdp_frags``), are the receive path's ``device``; the rest is what only virtnet_xdp_set
    reads."""

    device: VirtioRxSetup = field(default_factory=VirtioRxSetup)
    guest_csum: bool = True  # VIRTIO_NET_F_GUEST_CSUM (QEMU offers it by default)
    ctrl_guest_offloads: bool = True  # VIRTIO_NET_F_CTRL_GUEST_OFFLOADS (QEMU: with a CVQ)
    any_header_sg: bool = True  # VIRTIO_F_VERSION_1 or VIRTIO_F_ANY_LAYOUT
    queues: int = 1  # max_queue_pairs (VIRTIO_NET_F_MQ)
    cpus: int = 2  # nr_cpu_ids (= online CPUs assumed)


@dataclass(frozen=True)
class Check:
    name: str
    source: str  # "drivers/net/virtio_net.c:virtnet_xdp_set @ 6.12.117"
    passed: bool
    detail: str
    because: tuple[str, ...] = ()


@dataclass(frozen=True)
class XdpAttach:
    """virtnet_xdp_set's answer and what follows from it."""

    attach: bool
    errno: str | None
    message: str | None  # the extack text, as `ip link` prints it
    warnings: tuple[str, ...]  # dmesg lines (netdev_warn)
    checks: tuple[Check, ...]
    mode: str  # "small" | "mergeable" | "big"
    runs: bool  # the program sees received frames (not in big mode)
    effects: tuple[tuple[str, str], ...]  # (what, how) once attached
    mtu_limit: int | None  # the largest MTU the MTU check accepts (None: no limit)
    xdp_queue_pairs: int  # vi->xdp_queue_pairs after attach (0: shared, locked XDP_TX)
    notes: tuple[str, ...]


def check_setup(k: KernelProfile, s: XdpAttachSetup) -> None:
    check_hdr_len(k, vnet_hdr_len(s.device))
    if not 68 <= s.device.mtu <= 65535:
        raise InputError(f"MTU {s.device.mtu} out of range (valid: 68..65535)")
    if not 1 <= s.queues <= MAX_QUEUE_PAIRS:
        raise InputError(f"queue pairs {s.queues} out of range (valid: 1..{MAX_QUEUE_PAIRS})")
    if not 1 <= s.cpus <= 8192:
        raise InputError(f"CPUs {s.cpus} out of range (valid: 1..8192)")


def guest_offloads(s: XdpAttachSetup) -> list[str]:
    """The negotiated features virtnet_xdp_set's first check lists (USO4/USO6 join it in 6.2,
    418044e1de30, but vnetrx's device never negotiates USO) and virtnet_clear_guest_offloads
    turns off."""
    gso = ["GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO"] if s.device.guest_gso else []
    return gso + (["GUEST_CSUM"] if s.guest_csum else [])


def mode_of(s: XdpAttachSetup) -> str:
    """virtnet_probe: mergeable with MRG_RXBUF, else big with guest GSO or MTU > 1500."""
    d = s.device
    if d.mergeable:
        return "mergeable"
    return "big" if d.guest_gso or d.mtu > ETH_DATA_LEN else "small"


def mtu_limit(k: KernelProfile, frags: bool) -> int | None:
    """The MTU check's max_sz. Up to 6.2: PAGE_SIZE - sizeof(struct padded_vnet_hdr), for
    every program; from 6.3 (e814b958ad88): PAGE_SIZE - SKB_DATA_ALIGN(XDP_PACKET_HEADROOM +
    sizeof(struct skb_shared_info)) - ETH_HLEN, and only for a program without frags."""
    page = k.build.page_size
    if k.has(VIRTIO_XDP_MTU_FRAGS):
        if frags:
            return None
        return page - k.skb_data_align(k.value(XDP_PACKET_HEADROOM) + shinfo_size(k)) - ETH_HLEN
    padded = 32 if k.has(PADDED_VNET_HDR_V1_HASH) else 16
    return page - padded


def virtnet_xdp_set(k: KernelProfile, s: XdpAttachSetup) -> XdpAttach:
    check_setup(k, s)
    d = s.device
    at = f"{SRC}:virtnet_xdp_set @ {k.name}"
    mode = mode_of(s)
    checks: list[Check] = []
    warnings: list[str] = []
    notes: list[str] = []

    def refused(errno: str, message: str, warning: str | None = None) -> XdpAttach:
        if warning:
            warnings.append(warning)
        return XdpAttach(False, errno, MODULE + message, tuple(warnings), tuple(checks), mode,
                         False, (), mtu_limit(k, d.xdp_frags), 0, tuple(notes))

    # 1. guest offloads the driver cannot switch off
    host_offloads = guest_offloads(s)
    ok = s.ctrl_guest_offloads or not host_offloads
    checks.append(Check(
        "guest offloads", at, ok,
        "CTRL_GUEST_OFFLOADS negotiated: the driver can turn the guest offloads off"
        if s.ctrl_guest_offloads else
        ("no CTRL_GUEST_OFFLOADS, and the device negotiated " + ", ".join(host_offloads)
         if host_offloads else "no CTRL_GUEST_OFFLOADS, but no guest offload negotiated")))
    if not ok:
        return refused("EOPNOTSUPP", "Can't set XDP while host is implementing GRO_HW/CSUM, "
                       "disable GRO_HW/CSUM first")
    # 2. mergeable needs the header and data in one buffer
    ok = not (d.mergeable and not s.any_header_sg)
    checks.append(Check("any_header_sg", at, ok,
                        "mergeable rx buffers need VIRTIO_F_ANY_LAYOUT or VERSION_1"
                        if d.mergeable else "not mergeable: not checked"))
    if not ok:
        return refused("EINVAL", "XDP expects header/data in single page, any_header_sg "
                       "required")
    # 3. the MTU
    limit = mtu_limit(k, d.xdp_frags)
    frags_rule = k.has(VIRTIO_XDP_MTU_FRAGS)
    because = (VIRTIO_XDP_MTU_FRAGS.key,) if frags_rule else ()
    if k.has(PADDED_VNET_HDR_V1_HASH) and not frags_rule:
        because = (PADDED_VNET_HDR_V1_HASH.key,)
    ok = limit is None or d.mtu <= limit
    checks.append(Check(
        "MTU", at, ok,
        ("a program with frags: no MTU limit (e814b958ad88)" if limit is None else
         f"MTU {d.mtu} {'<=' if ok else '>'} max_sz {limit} = "
         + ("PAGE_SIZE - SKB_DATA_ALIGN(XDP_PACKET_HEADROOM + sizeof(skb_shared_info)) - "
            "ETH_HLEN" if frags_rule else "PAGE_SIZE - sizeof(struct padded_vnet_hdr)")
         + (" (the test is '>', so max_sz itself is accepted)" if d.mtu == limit else "")),
        because))
    if not frags_rule and d.xdp_frags:
        notes.append(f"{k.name} has no multi-buffer XDP on virtio-net: a program loaded with "
                     "BPF_F_XDP_HAS_FRAGS is treated like any other (the MTU check applies and "
                     "frames over several buffers are linearised, xdp_linearize_page)")
    if not ok:
        assert limit is not None
        if frags_rule:
            return refused("EINVAL", "MTU too large to enable XDP without frags",
                           f"single-buffer XDP requires MTU less than {limit}")
        return refused("EINVAL", "MTU too large to enable XDP",
                       f"XDP requires MTU less than {limit}")
    # 4. one XDP_TX queue per CPU
    curr = min(s.queues, s.cpus)  # virtnet_probe: curr_queue_pairs
    wanted = curr + s.cpus
    enough = wanted <= s.queues
    shared = k.has(VIRTIO_XDP_SHARED_TX_QUEUES)
    checks.append(Check(
        "XDP_TX queues", at, enough or shared,
        f"curr_queue_pairs {curr} + nr_cpu_ids {s.cpus} = {wanted} "
        f"{'<=' if enough else '>'} max_queue_pairs {s.queues}"
        + ("" if enough else ": XDP_TX shares the stack's queues, under their lock" if shared
           else ": refused before 97c2c69e1926 (5.13)"),
        (VIRTIO_XDP_SHARED_TX_QUEUES.key,) if shared and not enough else ()))
    if not enough and not shared:
        return refused("ENOMEM", "Too few free TX rings available",
                       f"request {wanted} queues but max is {s.queues}")
    if not enough:
        warnings.append(f"XDP request {wanted} queues but max is {s.queues}. XDP_TX and "
                        "XDP_REDIRECT will operate in a slower locked tx mode.")
    effects = _effects(k, s, mode, enough, curr)
    if mode == "big":
        notes.append("big mode: virtnet_xdp_set accepts the program, but receive_big() has no "
                     "XDP hook in any version read (5.15-7.1): received frames bypass it and "
                     "its counters stay 0 ('In big_packets mode, xdp cannot work', 6.12.117)")
    return XdpAttach(True, None, None, tuple(warnings), tuple(checks), mode, mode != "big",
                     effects, limit, s.cpus if enough else 0, tuple(notes))


def _effects(k: KernelProfile, s: XdpAttachSetup, mode: str, enough: bool,
             curr: int) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    offloads = guest_offloads(s)
    if offloads and s.ctrl_guest_offloads:
        out.append(("guest offloads", "virtnet_clear_guest_offloads(): "
                    "VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET 0 turns off " + ", ".join(offloads)
                    + " (restored on detach): the host sends no GSO frames and no DATA_VALID"))
    headroom = k.value(XDP_PACKET_HEADROOM)
    sh = shinfo_size(k)
    if mode == "small":
        pad = k.build.net_ip_align + k.net_skb_pad  # VIRTNET_RX_PAD
        good, hdr_len = k.value(GOOD_PACKET_LEN), vnet_hdr_len(s.device)
        size = k.skb_data_align(hdr_len + pad + good + headroom) + sh
        out.append(("rx buffers", f"add_recvbuf_small posts {size}-byte slots (was "
                    f"{k.skb_data_align(hdr_len + pad + good) + sh}): {headroom} bytes of "
                    f"XDP headroom after VIRTNET_RX_PAD, the device writes up to "
                    f"{hdr_len + good} bytes at +{pad + headroom}"))
    elif mode == "mergeable":
        room = k.skb_data_align(headroom + sh)
        out.append(("rx buffers", f"get_mergeable_buf_len returns PAGE_SIZE - room = "
                    f"{k.build.page_size - room} (room = SKB_DATA_ALIGN(256 + {sh}) = {room}; "
                    "the EWMA is ignored): each buffer takes a whole page of the fragment, "
                    f"the device writes {k.build.page_size - room} bytes (vnet header included) "
                    f"at +{headroom}; mergeable_rx_buffer_size shows {k.build.page_size - room}"))
    else:
        out.append(("rx buffers", "big mode: unchanged (add_recvbuf_big), and XDP never runs"))
    out.append(("XDP_TX queues", f"{s.cpus} dedicated queue pairs (one per CPU, after the "
                f"{curr} in use): lock-free XDP_TX" if enough else
                "none free: XDP_TX/REDIRECT pick queue smp_processor_id() % curr_queue_pairs "
                "and take its tx lock, shared with the stack"))
    out.append(("posted buffers", "rings are not reset: buffers posted before the attach keep "
                "their old geometry (no headroom) and take the copy paths until consumed"))
    out.append(("GRO_HW", "toggling NETIF_F_GRO_HW fails with EBUSY while a program is attached"))
    return tuple(out)
