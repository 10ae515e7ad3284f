"""Mirrors drivers/net/tun.c's write path: tun_chr_write_iter → tun_get_user → tun_can_build_skb →
tun_build_skb or tun_alloc_skb (sock_alloc_send_pskb) → virtio_net_hdr_to_skb → eth_type_trans →
netif_receive_skb. One write(2) of ``vnet_hdr_sz + frame_len`` bytes to a TAP (or TUN) fd opened
with IFF_NO_PI.

Facts: ../shared/reference/tap-and-tx-headroom.md §A.2-§A.12 and §C (tun.c read @4.13.4, @4.14.5,
@5.15.100, @6.1.192, @6.6.87, @6.12.117, @6.18.3, @7.3.4; measured on 6.18.44, §A.10).
"""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.changes import (
    ALLOC_SKB_WITH_FRAGS_HIGH_ORDER,
    SKB_SMALL_HEAD_CACHE,
    TUN_ALLOC_SKB_BIG_PAGED,
    TUN_BUILD_SKB,
    TUN_BUILD_SKB_OWNER,
    TUN_BUILD_SKB_XDP_HEADROOM_LIMIT,
    TUN_XDP,
    VNET_HDR_UDP_TUNNEL,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.layouts.virtio_net import virtio_net_hdr
from vnetrx.model import Buffer, Cost, Frag, Region, Skb
from vnetrx.paths.skbuff import (
    ETH_HLEN,
    build_skb,
    eth_type_trans,
    frag_chunks,
    frags_limit,
    kmalloc_reserve,
    shinfo_size,
    skb_add_rx_frag,
    skb_from_head,
    skb_put,
    skb_reserve,
)
from vnetrx.paths.steps import StepLog
from vnetrx.paths.vnet_hdr import VnetHdr, csum_hdr_len

SRC = "drivers/net/tun.c"
SKBUFF_SRC = "net/core/skbuff.c"
SOCK_SRC = "net/core/sock.c"
INT_MAX = 2**31 - 1  # tun_chr_open: sk->sk_sndbuf = INT_MAX (@4.14.5, @6.18.3)
XDP_PACKET_HEADROOM = 256  # include/uapi/linux/bpf.h
PAGE_ALLOC_COSTLY_ORDER = 3  # include/linux/mmzone.h: tun's max frag order from 6.6
SKB_FRAG_PAGE_BYTES = 32768  # net/core/sock.c: SKB_FRAG_PAGE_ORDER = get_order(32768)
MAX_FRAME_LEN = 65535  # what vnetrx models; the kernel itself has no smaller cap on a write
VIRTIO_NET_HDR_F_NEEDS_CSUM = 1  # include/uapi/linux/virtio_net.h
VIRTIO_NET_HDR_F_DATA_VALID = 2
FRAG_SOURCES = ("task-frag", "per-queue", "full-page")


@dataclass(frozen=True)
class TapSetup:
    """One write(2) to a tun/tap fd opened with IFF_NO_PI. ``None`` fields get kernel defaults."""

    frame_len: int  # bytes after the virtio-net header (Ethernet header included on TAP)
    tun: bool = False  # IFF_TUN instead of IFF_TAP
    blocking: bool = False  # the fd lacks O_NONBLOCK
    sndbuf: int | None = None  # TUNSETSNDBUF; None → INT_MAX (tun_chr_open)
    vnet_hdr: bool = True  # IFF_VNET_HDR
    vnet_hdr_sz: int | None = None  # TUNSETVNETHDRSZ; None → sizeof(struct virtio_net_hdr)
    xdp: bool = False  # an XDP program is attached (XDP_PASS assumed)
    hdr: bytes | None = None  # the vnet header bytes written before the frame; None → zeros
    frag_source: str | None = None  # what-if: where tun_build_skb's buffer comes from


@dataclass(frozen=True)
class TapResult:
    path: str
    outcome: str  # "build_skb" | "alloc_skb" | "error"
    reason: str | None
    errno: str | None  # "EINVAL" when write() fails
    buffer: Buffer | None
    buffers: tuple[Buffer, ...]
    skb: Skb | None  # as netif_receive_skb (and its tracepoint) sees it
    cost: Cost | None
    write_return: int | None  # what write(2) returns on success


def vnet_hdr_size() -> int:
    """sizeof(struct virtio_net_hdr): tun_set_iff's default vnet_hdr_sz."""
    return virtio_net_hdr().size


def resolve(k: KernelProfile, s: TapSetup) -> TapSetup:
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
        _check_modelled(decode_hdr(hdr))
    if s.xdp and not k.has(TUN_XDP):
        raise UnsupportedError(f"tun has no XDP support on {k.name} (added in 4.14)")
    if s.frag_source is not None and s.frag_source not in FRAG_SOURCES:
        raise InputError(
            f"frag source {s.frag_source!r} unknown (valid: {', '.join(FRAG_SOURCES)})"
        )
    return TapSetup(
        s.frame_len, s.tun, s.blocking, sndbuf, s.vnet_hdr, size, s.xdp, hdr, s.frag_source
    )


def decode_hdr(raw: bytes) -> VnetHdr:
    return VnetHdr(**virtio_net_hdr().parse(raw))


def _check_modelled(h: VnetHdr) -> None:
    if h.gso_type != 0:
        raise UnsupportedError(
            f"vnet header gso_type {h.gso_type:#x}: GSO writes are not modelled yet (only "
            "VIRTIO_NET_HDR_GSO_NONE)"
        )
    if h.flags & ~(VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID):
        raise UnsupportedError(
            f"vnet header flags {h.flags:#x}: only NEEDS_CSUM (1) and DATA_VALID (2) are modelled"
        )


def _error(reason: str, errno: str = "EINVAL") -> TapResult:
    return TapResult("tap", "error", reason, errno, None, (), None, None, None)


def _regions(*parts: tuple[str, int, str]) -> tuple[Region, ...]:
    out, offset = [], 0
    for name, size, note in parts:
        if size > 0:
            out.append(Region(name, offset, size, note))
        offset += max(size, 0)
    return tuple(out)


def tun_rx_pad(k: KernelProfile) -> int:
    """TUN_RX_PAD = NET_IP_ALIGN + NET_SKB_PAD (tun.c @4.14.5 … @7.3.4)."""
    return k.build.net_ip_align + k.net_skb_pad


def good_linear(k: KernelProfile, align: int) -> int:
    """SKB_MAX_HEAD(align) = SKB_WITH_OVERHEAD(PAGE_SIZE - align): the most a one-page head holds."""
    return k.build.page_size - align - shinfo_size(k)


def build_limit(k: KernelProfile) -> int:
    """The longest frame tun_can_build_skb() accepts (its size condition, solved for len)."""
    extra = XDP_PACKET_HEADROOM if k.has(TUN_BUILD_SKB_XDP_HEADROOM_LIMIT) else 0
    room = k.build.page_size - shinfo_size(k) - tun_rx_pad(k) - extra
    return room - room % k.smp_cache_bytes


def receive(k: KernelProfile, s: TapSetup, log: StepLog) -> TapResult:
    """One write: front checks, path choice, skb construction, header, delivery."""
    assert s.vnet_hdr_sz is not None
    assert s.sndbuf is not None
    total = s.vnet_hdr_sz + s.frame_len
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
    hdr = decode_hdr(s.hdr) if s.hdr is not None else VnetHdr(0, 0, 0, 0, 0, 0)
    hdr_len = hdr.hdr_len
    if s.vnet_hdr:
        hdr_len = _vnet_hdr_get(k, s, hdr, log)
        if hdr_len > s.frame_len:
            log.add(
                SRC,
                "tun_get_user",
                f"hdr_len {hdr_len} > {s.frame_len} bytes left: -EINVAL before any skb exists "
                "(no counter moves)",
                hdr_len=hdr_len,
                len=s.frame_len,
            )
            return _error(f"hdr_len {hdr_len} exceeds the {s.frame_len}-byte frame")
    length = s.frame_len
    align = (
        k.net_skb_pad
    )  # tun->align = NET_SKB_PAD (tun_set_iff); raised only by ndo_set_rx_headroom
    if not s.tun:
        align += k.build.net_ip_align
        short = length < ETH_HLEN or 0 < hdr_len < ETH_HLEN
        log.add(
            SRC,
            "tun_get_user",
            (
                f"TAP frame of {length} bytes (hdr_len {hdr_len}) is shorter than ETH_HLEN: "
                "-EINVAL, no skb, no counter"
                if short
                else "TAP: align = tun->align + NET_IP_ALIGN; the frame holds an Ethernet header"
            ),
            len=length,
            hdr_len=hdr_len,
            ETH_HLEN=ETH_HLEN,
            align=align,
        )
        if short:
            return _error(f"TAP frame of {length} bytes (hdr_len {hdr_len}) is below ETH_HLEN")
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
    if _can_build_skb(k, s, length, log):
        result = _build(k, s, length, log)
    else:
        result = _alloc(k, s, length, hdr_len, align, linear_max, noblock, log)
    if result.skb is None:
        return result
    skb = result.skb
    if s.vnet_hdr:
        checked = _vnet_hdr_to_skb(hdr, skb, log)
        if checked is not None:
            return checked
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
        skb = skb.but(mac_header=skb.data)
    else:
        skb = eth_type_trans(skb)
        log.add(
            "net/ethernet/eth.c",
            "eth_type_trans",
            "mac_header = data; pull ETH_HLEN (14)",
            len=skb.len,
            data_len=skb.data_len,
            headroom=skb.data,
        )
    if s.xdp and result.outcome == "alloc_skb":
        _generic_xdp_note(skb, log)
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
    log.add(
        SRC,
        "tun_get_user",
        "rx_packets += 1, rx_bytes += len (vnet header excluded); write() returns the whole "
        "length written",
        rx_bytes=length,
        ret=total,
    )
    return TapResult(
        result.path,
        result.outcome,
        None,
        None,
        result.buffer,
        result.buffers,
        skb,
        result.cost,
        total,
    )


def _vnet_hdr_get(k: KernelProfile, s: TapSetup, hdr: VnetHdr, log: StepLog) -> int:
    """Read the vnet header; NEEDS_CSUM raises hdr_len to cover the checksum field."""
    assert s.vnet_hdr_sz is not None
    where, function = SRC, "tun_get_user"
    if k.has(VNET_HDR_UDP_TUNNEL):
        where, function = "drivers/net/tun_vnet.h", "__tun_vnet_hdr_get"
    parsed = 24 if k.has(VNET_HDR_UDP_TUNNEL) and s.vnet_hdr_sz >= 24 else vnet_hdr_size()
    hdr_len = csum_hdr_len(hdr)  # tun_get_user's NEEDS_CSUM fix-up (16-bit)
    log.add(
        where,
        function,
        f"read {parsed} header bytes, skip the rest of vnet_hdr_sz ({s.vnet_hdr_sz}); "
        + (
            "NEEDS_CSUM: hdr_len = max(hdr_len, csum_start + csum_offset + 2)"
            if hdr.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM
            else "no NEEDS_CSUM: hdr_len as written"
        ),
        because=(VNET_HDR_UDP_TUNNEL,) if parsed == 24 else (),
        flags=hdr.flags,
        gso_type=hdr.gso_type,
        hdr_len=hdr_len,
        gso_size=hdr.gso_size,
        csum_start=hdr.csum_start,
        csum_offset=hdr.csum_offset,
        len=s.frame_len,
    )
    return hdr_len


def _can_build_skb(k: KernelProfile, s: TapSetup, length: int, log: StepLog) -> bool:
    """tun_can_build_skb (tun.c @4.14.5 … @7.3.4): every condition must hold."""
    if not k.has(TUN_BUILD_SKB):
        log.add(
            SRC,
            "tun_get_user",
            f"no build_skb path in {k.name} (tun_build_skb arrives in 4.14): tun_alloc_skb",
        )
        return False
    assert s.sndbuf is not None
    extra = XDP_PACKET_HEADROOM if k.has(TUN_BUILD_SKB_XDP_HEADROOM_LIMIT) else 0
    need = k.skb_data_align(length + tun_rx_pad(k) + extra) + shinfo_size(k)
    checks: list[tuple[str, bool]] = [
        ("a TUN device (only TAP builds)", not s.tun),
        (f"sk_sndbuf {s.sndbuf} is not INT_MAX", s.sndbuf == INT_MAX),
        ("a blocking writer (noblock is false)", not s.blocking),
        ("zerocopy", True),
        (
            f"SKB_DATA_ALIGN(len + TUN_RX_PAD{' + XDP_PACKET_HEADROOM' if extra else ''}) + "
            f"shinfo = {need} > PAGE_SIZE {k.build.page_size} (frames up to "
            f"{build_limit(k)} fit)",
            need <= k.build.page_size,
        ),
        ("IFF_NAPI_FRAGS", True),
    ]
    failed = next((name for name, ok in checks if not ok), None)
    log.add(
        SRC,
        "tun_can_build_skb",
        "every condition holds: tun_build_skb"
        if failed is None
        else f"fails on: {failed}: tun_alloc_skb",
        because=(TUN_BUILD_SKB, TUN_BUILD_SKB_XDP_HEADROOM_LIMIT) if extra else (TUN_BUILD_SKB,),
        tap=not s.tun,
        sk_sndbuf=s.sndbuf,
        noblock=not s.blocking,
        zerocopy=False,
        len=length,
        TUN_RX_PAD=tun_rx_pad(k),
        XDP_PACKET_HEADROOM=extra,
        size=need,
        PAGE_SIZE=k.build.page_size,
        build_limit=build_limit(k),
        napi_frags=False,
    )
    return failed is None


def _build(k: KernelProfile, s: TapSetup, length: int, log: StepLog) -> TapResult:
    """tun_build_skb: copy into current->task_frag, build_skb() around it."""
    pad = tun_rx_pad(k) + (XDP_PACKET_HEADROOM if s.xdp else 0)
    sh = shinfo_size(k)
    buflen = k.skb_data_align(length + pad) + sh
    frag_page = max(SKB_FRAG_PAGE_BYTES, k.build.page_size)
    log.add(
        SRC,
        "tun_build_skb",
        f"pad = TUN_RX_PAD{' + XDP_PACKET_HEADROOM (a program is attached)' if s.xdp else ''}; "
        "buflen = SKB_DATA_ALIGN(len + pad) + SKB_DATA_ALIGN(sizeof(skb_shared_info)); "
        f"skb_page_frag_refill() takes buflen from current->task_frag (a {frag_page // 1024} KiB "
        "page, offset first aligned to SMP_CACHE_BYTES) and the frame is copied to offset + pad",
        pad=pad,
        buflen=buflen,
        len=length,
        frag_page=frag_page,
    )
    tail = buflen - sh - pad - length
    buffer = Buffer(
        size=buflen,
        page="current->task_frag",
        page_offset=0,
        used=length,
        regions=_regions(
            ("headroom", pad, "TUN_RX_PAD" + (" + XDP_PACKET_HEADROOM" if s.xdp else "")),
            ("frame", length, "copied from the write"),
            ("tailroom", tail, "SKB_DATA_ALIGN slack"),
            ("skb_shared_info", sh, ""),
        ),
    )
    if s.xdp:
        log.add(
            SRC,
            "tun_build_skb",
            "native XDP runs on [buf, buf + buflen] with data at buf + pad; XDP_PASS is assumed "
            "(DROP: no skb, rx_dropped++, write() still returns the full length)",
            because=(TUN_XDP,),
            verdict="XDP_PASS",
        )
    skb = build_skb(k, buflen, "current->task_frag page fragment")
    skb = skb_put(skb_reserve(skb, pad), length)
    owner = k.has(TUN_BUILD_SKB_OWNER)
    log.add(
        SKBUFF_SRC,
        "build_skb",
        "truesize = SKB_TRUESIZE(buflen - shinfo) = buflen + SKB_DATA_ALIGN(sizeof(sk_buff)); "
        "head_frag = 1; skb_reserve(pad), skb_put(len)"
        + ("; skb_set_owner_w() charges it to the tap socket" if owner else ""),
        because=(TUN_BUILD_SKB_OWNER,) if owner else (),
        truesize=skb.truesize,
        headroom=skb.data,
        tailroom=skb.end - skb.tail,
    )
    if s.frag_source is not None:
        _frag_source_whatif(k, s.frag_source, buflen, log)
    cost = Cost(allocations=1, bytes_copied=length, frags=0)
    return TapResult("tap", "build_skb", None, None, buffer, (buffer,), skb, cost, None)


def _alloc(
    k: KernelProfile,
    s: TapSetup,
    length: int,
    hdr_len: int,
    prepad: int,
    linear_max: int,
    noblock: bool,
    log: StepLog,
) -> TapResult:
    """tun_get_user's linear choice, tun_alloc_skb, sock_alloc_send_pskb, alloc_skb_with_frags."""
    assert s.sndbuf is not None
    big_paged = k.has(TUN_ALLOC_SKB_BIG_PAGED)
    linear = min(hdr_len, linear_max)
    if big_paged and linear == 0:
        linear = min(linear_max, length)
    log.add(
        SRC,
        "tun_get_user",
        "copylen = len; linear = min(hdr_len, good_linear)"
        + ("; linear == 0 → min(good_linear, copylen)" if big_paged else ""),
        because=(TUN_ALLOC_SKB_BIG_PAGED,) if big_paged else (),
        copylen=length,
        hdr_len=hdr_len,
        linear=linear,
    )
    max_order = PAGE_ALLOC_COSTLY_ORDER if big_paged else 0
    limit = k.build.max_skb_frags * (k.build.page_size << max_order)
    under_page = prepad + length < k.build.page_size
    if under_page or (not big_paged and linear == 0):
        linear = length
    elif big_paged and length - linear > limit:
        linear = length - limit
    log.add(
        SRC,
        "tun_alloc_skb",
        (
            "prepad + len < PAGE_SIZE: linear = len (no paged part)"
            if under_page
            else "linear == 0: linear = len (a fully linear skb)"
            if linear == length
            else "linear part kept; the rest goes to page frags"
        ),
        because=(TUN_ALLOC_SKB_BIG_PAGED,) if big_paged else (),
        prepad=prepad,
        len=length,
        linear=linear,
        data_len=length - linear,
        max_page_order=max_order,
    )
    data_len = length - linear
    head = kmalloc_reserve(k, prepad + linear)
    chunks = frag_chunks(k, data_len, max_order)
    high = k.has(ALLOC_SKB_WITH_FRAGS_HIGH_ORDER)
    log.add(
        SOCK_SRC,
        "sock_alloc_send_pskb",
        f"sk_wmem_alloc 0 < sk_sndbuf {s.sndbuf}: no wait"
        + ("" if noblock else " (a blocking writer would sleep here once it is full)")
        + "; alloc_skb_with_frags(header_len = prepad + linear, data_len): the head from "
        f"{head.label}, {len(chunks)} page frag(s)",
        because=tuple(
            c
            for c, on in ((SKB_SMALL_HEAD_CACHE, True), (ALLOC_SKB_WITH_FRAGS_HIGH_ORDER, high))
            if on and k.has(c)
        ),
        sk_sndbuf=s.sndbuf,
        header_len=prepad + linear,
        head=head.label,
        head_size=head.size,
        data_len=data_len,
        frag_pages=" + ".join(str(page) for _, page in chunks) or "none",
    )
    if data_len > frags_limit(k, max_order):
        return _error(f"data_len {data_len} needs more than MAX_SKB_FRAGS pages", "EMSGSIZE")
    skb = skb_put(skb_reserve(skb_from_head(k, head), prepad), linear)
    for index, (size, page) in enumerate(chunks):
        skb = skb_add_rx_frag(skb, Frag(f"frag page {index}", 0, size, page))
    log.add(
        SKBUFF_SRC,
        "alloc_skb_with_frags",
        "truesize = head allocation + SKB_DATA_ALIGN(sizeof(sk_buff)) + every frag page; "
        "skb_set_owner_w() charges it to the tap socket; skb_reserve(prepad), skb_put(linear), "
        "skb_copy_datagram_from_iter() copies the frame",
        truesize=skb.truesize,
        headlen=skb.headlen,
        data_len=skb.data_len,
        nr_frags=skb.nr_frags,
    )
    head_buffer = Buffer(
        size=head.size,
        page=head.label,
        page_offset=0,
        used=linear,
        regions=_regions(
            ("headroom", prepad, "prepad = tun->align"),
            ("frame", linear, "copied: the linear part"),
            ("tailroom", skb.end - skb.tail, ""),
            ("skb_shared_info", head.size - skb.end, ""),
        ),
    )
    pages = tuple(
        Buffer(
            size=page,
            page=f"frag page {index}",
            page_offset=0,
            used=size,
            regions=_regions(("frame", size, "frag: copied"), ("unused", page - size, "")),
        )
        for index, (size, page) in enumerate(chunks)
    )
    cost = Cost(allocations=2 + len(chunks), bytes_copied=length, frags=len(chunks))
    return TapResult(
        "tap", "alloc_skb", None, None, head_buffer, (head_buffer, *pages), skb, cost, None
    )


def _vnet_hdr_to_skb(hdr: VnetHdr, skb: Skb, log: StepLog) -> TapResult | None:
    """virtio_net_hdr_to_skb (include/linux/virtio_net.h), called before eth_type_trans."""
    if hdr.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM:
        needed = hdr.csum_start + hdr.csum_offset + 2
        if needed > skb.headlen:
            raise UnsupportedError(
                f"NEEDS_CSUM over {needed} bytes but only {skb.headlen} are linear: the "
                "pskb_may_pull() that follows is not modelled"
            )
        log.add(
            "include/linux/virtio_net.h",
            "virtio_net_hdr_to_skb",
            "NEEDS_CSUM: skb_partial_csum_set(csum_start, csum_offset) → CHECKSUM_PARTIAL "
            "(csum_start counts from the Ethernet header on TAP)",
            csum_start=hdr.csum_start,
            csum_offset=hdr.csum_offset,
            ip_summed="CHECKSUM_PARTIAL",
        )
        return None
    valid = bool(hdr.flags & VIRTIO_NET_HDR_F_DATA_VALID)
    log.add(
        "include/linux/virtio_net.h",
        "virtio_net_hdr_to_skb",
        "DATA_VALID: CHECKSUM_UNNECESSARY"
        if valid
        else "no flags and GSO_NONE: nothing to set (CHECKSUM_NONE)",
        flags=hdr.flags,
        gso_type=hdr.gso_type,
        ip_summed="CHECKSUM_UNNECESSARY" if valid else "CHECKSUM_NONE",
    )
    return None


def _generic_xdp_note(skb: Skb, log: StepLog) -> None:
    log.add(
        "net/core/dev.c",
        "do_xdp_generic",
        "tun_get_user runs the attached program as generic XDP on this skb: it needs 256 bytes "
        "of headroom and a linear skb, so pskb_expand_head() + skb_linearize() copy it; "
        "truesize is NOT updated because skb->sk is set. The skb below is the one "
        "tun_alloc_skb built; the tracepoint then shows data_len 0, nr_frags 0 and the same "
        "truesize (measured on 6.18.44: 3457 → 4352, 4000 → 8448, 9000 → 12544)",
        truesize=skb.truesize,
    )
    log.note(
        "XDP on the tun_alloc_skb path: the generic-XDP linearization is described, not laid out"
    )


def _frag_source_whatif(k: KernelProfile, source: str, buflen: int, log: StepLog) -> None:
    """The seed thread's design question: where should tun_build_skb's buffers come from?"""
    frag_page = max(SKB_FRAG_PAGE_BYTES, k.build.page_size)
    page = k.build.page_size
    if source == "full-page":
        pages_each = -(-buflen // page)
        per_page, memory = 1, pages_each * page
        summary = (
            f"full-page: one {page // 1024} KiB page per packet, {memory} bytes of memory each "
            f"for a {buflen}-byte buffer; the thread measured 1.58 Mpps against 1.95 Mpps for "
            "the page frag ('too much stress on the page allocator')"
        )
    else:
        per_page = frag_page // buflen
        memory = -(-frag_page // per_page)
        where = (
            "current->task_frag: one per writing thread, no lock (0bbd7dad34f8, every release)"
            if source == "task-frag"
            else "a per-queue page_frag as first posted: needs a lock when threads share a "
            "queue (the thread's 'tun: serialize page frag allocation' spinlock patch; no release "
            "has it)"
        )
        summary = (
            f"{source}: {per_page} packets per {frag_page // 1024} KiB fragment page, "
            f"{memory} bytes of memory each against {page} for one page per packet; {where}; "
            "1.95 Mpps (page frag) vs 1.58 Mpps (full page) in the thread"
        )
    log.add(
        SOCK_SRC,
        "skb_page_frag_refill",
        "what-if " + summary,
        because=(TUN_BUILD_SKB,),
        frag_source=source,
        buflen=buflen,
        fragment_page=frag_page if source != "full-page" else page,
        packets_per_page=per_page,
        bytes_per_packet=memory,
        full_page_bytes_per_packet=-(-buflen // page) * page,
        truesize=None if source == "full-page" else buflen + k.sk_buff_aligned,
    )
    log.note(
        "frag-source what-if: with a page fragment truesize is buflen + SKB_DATA_ALIGN(sizeof "
        "sk_buff) and the rest of the fragment page is not charged (tap-and-tx-headroom.md §C.1); "
        "how the unmerged full-page variant set truesize was not seen. Mpps figures: netdev "
        "thread 2017-08-16, Jason Wang, on 'tap: use build_skb() for small packet'"
    )
