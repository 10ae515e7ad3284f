"""Mirrors drivers/net/virtio_net.c: add_recvbuf_big + receive_big (page chains, page_to_skb\nwith truesize PAGE_SIZE per page, give_pages), narrated from virtio_rx_plan."""

from __future__ import annotations

from vnetrx.kernel.changes import (
    BIG_BUILD_SKB_GIVE_PAGES,
    BIG_PACKETS_MTU_SIZED,
    BIG_RECV_LEN_CHECK,
)
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Buffer, Frag
from vnetrx.paths import virtio_rx_plan as plans
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net_common import (
    SRC,
    RxResult,
    cost,
    drop,
    oversized,
    page_to_skb,
    regions,
    short_packet,
    skb,
    used_regions,
)
from vnetrx.paths.virtio_rx_plan import VirtioRxSetup


def receive_big(
    k: KernelProfile, s: VirtioRxSetup, c: plans.Config, p: plans.Plan, log: StepLog
) -> RxResult:
    """add_recvbuf_big + receive_big: a chain of pages; page_to_skb with truesize PAGE_SIZE."""
    assert s.hdr_len is not None
    hdr, frame, page_size = s.hdr_len, s.frame_len, c.page_size
    n, hp, capacity = c.big_num_skbfrags, c.big_padded, c.big_capacity
    log.add(
        SRC,
        "add_recvbuf_big",
        f"post a chain of {n + 1} pages in {n + 2} sg entries: sg[0] = {hdr} header bytes at "
        f"page 0, sg[1] = page 0 from sizeof(padded_vnet_hdr) = {hp}, then whole pages",
        k.present(BIG_PACKETS_MTU_SIZED),
        num_skbfrags=n,
        pages=n + 1,
        sg_entries=n + 2,
        padded_vnet_hdr=hp,
        capacity=capacity,
    )
    in_page0 = min(frame, page_size - hp)
    buffers = tuple(
        Buffer(
            page_size,
            f"page{i}",
            0,
            hdr + in_page0
            if i == 0
            else max(0, min(page_size, frame - in_page0 - (i - 1) * page_size)),
        )
        for i in range(n + 1)
    )
    if p.reason in ("len_exceeds_allocated_size", "exceeds_buffer"):
        page0 = Buffer(
            page_size,
            "page0",
            0,
            hdr,
            regions(
                ("vnet_hdr", hdr, ""),
                ("padding", hp - hdr, "the device never writes it"),
                ("rx space", page_size - hp, "frame continues in the chained pages"),
            ),
        )
        return oversized(
            k,
            log,
            "virtio-big",
            page0,
            frame,
            capacity,
            "receive_big",
            BIG_RECV_LEN_CHECK,
            p.reason or "",
            "rx error: len %u exceeds allocated size %lu; drops++",
        )
    if short_packet(s, p, log):
        return drop("virtio-big", "short_packet", _big_page0(c, hdr, frame, None, 0), buffers)
    if k.has(BIG_RECV_LEN_CHECK):
        log.add(
            SRC,
            "receive_big",
            f"length check passes: len {hdr + frame} <= max_len {capacity + hdr}",
            (BIG_RECV_LEN_CHECK,),
            len=hdr + frame,
            max_len=capacity + hdr,
        )
    page_to_skb(k, log, c, p, frame, page_size, hp)
    if p.outcome == "build_skb":
        _big_release_chain(k, log, n)
    else:
        _big_frags(k, log, c, p, frame - p.copy, n + 1)
    frags = tuple(Frag(f"page{i}", off, size, ts) for i, off, size, ts in p.frags)
    page0 = _big_page0(c, hdr, frame, p.outcome, p.copy)
    return RxResult(
        "virtio-big", p.outcome, None, page0, (page0, *buffers[1:]), skb(c, p, frags), cost(p)
    )


def _big_frags(
    k: KernelProfile, log: StepLog, c: plans.Config, p: plans.Plan, rest: int, pages: int
) -> None:
    """page_to_skb's big-mode loop: one frag per chained page, each adding PAGE_SIZE to truesize."""
    if not k.has(BIG_RECV_LEN_CHECK):
        limit = k.build.max_skb_frags * c.page_size
        log.add(
            SRC,
            "page_to_skb",
            f"'too much data' check passes: {rest} <= MAX_SKB_FRAGS * PAGE_SIZE = {limit}",
            len=rest,
            limit=limit,
        )
    used = len(p.frags)
    log.add(
        SRC,
        "page_to_skb",
        f"{used} page(s) of the chain become frags, each adding PAGE_SIZE "
        "to truesize even when partly used",
        nr_frags=used,
    )
    if used < pages:
        log.add(
            SRC,
            "give_pages",
            f"the unused {pages - used} page(s) of the chain go back to rq->pages",
            pages=pages - used,
        )


def _big_release_chain(k: KernelProfile, log: StepLog, spare: int) -> None:
    if not spare:
        return
    if k.has(BIG_BUILD_SKB_GIVE_PAGES):
        log.add(
            SRC,
            "give_pages",
            f"the {spare} chained page(s) the frame did not reach go back to rq->pages",
            (BIG_BUILD_SKB_GIVE_PAGES,),
            pages=spare,
        )
    else:
        log.add(
            SRC,
            "page_to_skb",
            f"BUG in {k.name}: the {spare} chained page(s) after "
            "page 0 are never returned (leaked); fixed in 5.15 by 'virtio-net: fix pages "
            "leaking when building skb in big mode'",
            pages_leaked=spare,
        )
        log.note(f"{k.name} leaks {spare} page(s) per big-mode packet that takes build_skb")


def _big_page0(c: plans.Config, hdr: int, frame: int, outcome: str | None, copied: int) -> Buffer:
    size, hp = c.page_size, c.big_padded
    lead = (
        ("vnet_hdr", hdr, ""),
        ("padding", hp - hdr, "sizeof(padded_vnet_hdr) - hdr_len; the device never writes it"),
    )
    in_page0 = min(frame, size - hp)
    return Buffer(
        size, "page0", 0, hdr + in_page0, used_regions(c, size, lead, in_page0, outcome, copied)
    )
