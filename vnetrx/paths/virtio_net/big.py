"""drivers/net/virtio_net.c, big mode (no MRG_RXBUF; guest GSO or an MTU above 1500):
add_recvbuf_big posts a chain of whole pages per descriptor; receive_big hands page 0 to
page_to_skb with truesize PAGE_SIZE, and the rest of the chain becomes frags or goes back to
rq->pages (give_pages). The plan and its narration side by side.
Facts: docs/kernel/virtio-net-rx.md §5.3, §6, §8.
"""

from __future__ import annotations

from typing import Final

from vnetrx.kernel.changes import (
    BIG_BUILD_SKB_GIVE_PAGES,
    BIG_PACKETS_MTU_SIZED,
    BIG_RECV_LEN_CHECK,
)
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.model import Buffer
from vnetrx.paths.maps import regions
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net import page_to_skb as p2s
from vnetrx.paths.virtio_net.plan import Drop, Plan, PlanFrag, dropped
from vnetrx.paths.virtio_net.setup import Config
from vnetrx.paths.virtio_net.virtqueue import narrate_too_long as _too_long

SRC: Final = "drivers/net/virtio_net.c"
PATH: Final = "virtio-big"


def plan_big(c: Config, frame: int, detail: bool = True) -> Plan:
    """add_recvbuf_big + receive_big + page_to_skb with truesize PAGE_SIZE per page. Without
    ``detail`` (sweeps) the frags are counted, not listed."""
    page, hp = c.page_size, c.big_padded
    if frame > c.big_capacity:  # receive_big's max_len check (0c716703965f)
        reason = Drop.LEN_EXCEEDS_ALLOCATED_SIZE if c.big_len_check else Drop.EXCEEDS_BUFFER
        return dropped(reason, page)
    used = _chain_used(c, frame) if detail else ()
    if frame < ETH_HLEN:
        return dropped(Drop.SHORT_PACKET, page, (), used)
    h = p2s.page_to_skb(c, page, hp, frame)
    if h.outcome == "build_skb":
        return Plan(outcome="build_skb", reason=None, why=h.why, buf_len=page, buffers=(),
                    used=used, tailroom=h.tailroom, copy=0, frag0=False, head_size=h.head_size,
                    end=h.end, data=h.data, tail=h.tail, len=frame, data_len=0,
                    truesize=h.truesize, frags=(), appends=(), pages_used=1, nr_frags=0)
    copy = h.copy
    rest, offset = frame - copy, hp + copy
    frags: list[PlanFrag] = []
    if detail:
        while rest:  # the rest of page 0 after the copy, then whole pages of the chain
            size = min(page - offset, rest)
            frags.append(PlanFrag(len(frags), offset, size, page))
            rest, offset = rest - size, 0
        nr_frags = len(frags)
    else:
        first = min(page - offset, rest)
        nr_frags = (1 + -(-(rest - first) // page)) if rest else 0
    return Plan(outcome="copy", reason=None, why=h.why, buf_len=page, buffers=(), used=used,
                tailroom=h.tailroom, copy=copy, frag0=frame > copy, head_size=h.head_size,
                end=h.end, data=h.data, tail=h.tail, len=frame, data_len=frame - copy,
                truesize=h.truesize + page * nr_frags, frags=tuple(frags), appends=(),
                pages_used=max(1, nr_frags), nr_frags=nr_frags)


def _chain_used(c: Config, frame: int) -> tuple[int, ...]:
    """Bytes the device writes into each page of the chain: the header and up to PAGE_SIZE -
    sizeof(padded_vnet_hdr) frame bytes in page 0, then whole pages."""
    in_page0 = min(frame, c.page_size - c.big_padded)
    return (c.hdr_len + in_page0, *[
        max(0, min(c.page_size, frame - in_page0 - (i - 1) * c.page_size))
        for i in range(1, c.big_num_skbfrags + 1)
    ])


def narrate_posting(c: Config, log: StepLog) -> None:
    """add_recvbuf_big's step."""
    n = c.big_num_skbfrags
    log.add(
        SRC,
        "add_recvbuf_big",
        f"post a chain of {n + 1} pages in {n + 2} sg entries: sg[0] = {c.hdr_len} header bytes "
        f"at page 0, sg[1] = page 0 from sizeof(padded_vnet_hdr) = {c.big_padded}, then whole "
        "pages",
        c.cite(BIG_PACKETS_MTU_SIZED),
        num_skbfrags=n,
        pages=n + 1,
        sg_entries=n + 2,
        padded_vnet_hdr=c.big_padded,
        capacity=c.big_capacity,
    )


def chain(c: Config, p: Plan) -> tuple[Buffer, ...]:
    """The posted pages with what the device wrote into each."""
    return tuple(Buffer(c.page_size, f"page{i}", 0, used) for i, used in enumerate(p.used))


def page0(c: Config, p: Plan) -> Buffer:
    """Page 0's map after page_to_skb (or, on a drop, as the device left it)."""
    size, hp = c.page_size, c.big_padded
    lead = (
        ("vnet_hdr", c.hdr_len, ""),
        ("padding", hp - c.hdr_len,
         "sizeof(padded_vnet_hdr) - hdr_len; the device never writes it"),
    )
    in_page0 = p.used[0] - c.hdr_len
    outcome = None if p.outcome == "drop" else p.outcome
    return Buffer(size, "page0", 0, p.used[0],
                  p2s.used_regions(c, size, lead, in_page0, outcome, p.copy))


def too_long_map(c: Config) -> Buffer:
    """Page 0 when the frame does not fit the chain: only the header is written."""
    hdr, hp = c.hdr_len, c.big_padded
    return Buffer(
        c.page_size,
        "page0",
        0,
        hdr,
        regions(
            ("vnet_hdr", hdr, ""),
            ("padding", hp - hdr, "the device never writes it"),
            ("rx space", c.page_size - hp, "frame continues in the chained pages"),
        ),
    )


def narrate_too_long(c: Config, p: Plan, frame: int, log: StepLog) -> None:
    """receive_big's length check (6.18 and backports), or page_to_skb's trust before it."""
    # pr_debug("%s: rx error: len %u exceeds allocated size %lu\n", ...): len and max_len
    # both count the header (max_len = (num_skbfrags + 1) * PAGE_SIZE - padded + hdr_len)
    hdr = c.hdr_len
    _too_long(c, p, log, frame, c.big_capacity, "receive_big", BIG_RECV_LEN_CHECK,
              f"'rx error: len {frame + hdr} exceeds allocated size {c.big_capacity + hdr}' "
              "(pr_debug); drops++")


def narrate_receive(c: Config, p: Plan, frame: int, log: StepLog) -> None:
    """receive_big: its length check, page_to_skb, then the chain's fate."""
    if c.big_len_check:
        log.add(
            SRC,
            "receive_big",
            f"length check passes: len {c.hdr_len + frame} <= max_len "
            f"{c.big_capacity + c.hdr_len}",
            c.cite(BIG_RECV_LEN_CHECK),
            len=c.hdr_len + frame,
            max_len=c.big_capacity + c.hdr_len,
        )
    p2s.narrate(c, p, log, frame, c.page_size, c.big_padded)
    pages = c.big_num_skbfrags + 1
    if p.outcome == "build_skb":
        _release_chain(c, log, pages - 1)
        return
    if not c.big_len_check:  # page_to_skb's own guard before 0c716703965f
        limit = c.max_skb_frags * c.page_size
        rest = frame - p.copy
        log.add(
            SRC,
            "page_to_skb",
            f"'too much data' check passes: {rest} <= MAX_SKB_FRAGS * PAGE_SIZE = {limit}",
            len=rest,
            limit=limit,
        )
    log.add(
        SRC,
        "page_to_skb",
        f"{p.nr_frags} page(s) of the chain become frags, each adding PAGE_SIZE "
        "to truesize even when partly used",
        nr_frags=p.nr_frags,
    )
    if p.nr_frags < pages:
        log.add(
            SRC,
            "give_pages",
            f"the unused {pages - p.nr_frags} page(s) of the chain go back to rq->pages",
            pages=pages - p.nr_frags,
        )


def _release_chain(c: Config, log: StepLog, spare: int) -> None:
    """build_skb used page 0 only: the chained pages go back (5.15+) or leak (5.13, 5.14)."""
    if not spare:
        return
    if c.big_give_pages:
        log.add(
            SRC,
            "give_pages",
            f"the {spare} chained page(s) the frame did not reach go back to rq->pages",
            c.cite(BIG_BUILD_SKB_GIVE_PAGES),
            pages=spare,
        )
        return
    log.add(
        SRC,
        "page_to_skb",
        f"BUG in {c.kernel}: the {spare} chained page(s) after "
        "page 0 are never returned (leaked); fixed in 5.15 by 'virtio-net: fix pages "
        "leaking when building skb in big mode'",
        pages_leaked=spare,
    )
    log.note(f"{c.kernel} leaks {spare} page(s) per big-mode packet that takes build_skb")
