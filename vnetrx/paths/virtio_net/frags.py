"""receive_mergeable's loop over the buffers after the first (virtnet_skb_append_frag from 6.5):
chain a new frag_list skb when the current one has MAX_SKB_FRAGS frags, coalesce a buffer into
the last frag when it continues it in the same page (skb_can_coalesce → skb_coalesce_rx_frag),
else add a frag (skb_add_rx_frag). Counted by contiguity runs for sweeps, walked buffer by
buffer for the narration and whenever a frag_list may be needed; both give the same count.
Facts: docs/kernel/virtio-net-rx.md §9.
"""

from __future__ import annotations

from typing import Final

from vnetrx.model import Buffer
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net.buffers import Carved, PostedBuffer
from vnetrx.paths.virtio_net.plan import Append, Plan, PlanFrag
from vnetrx.paths.virtio_net.setup import Config
from vnetrx.records import NamedTuple

SRC: Final = "drivers/net/virtio_net.c"


def count_frags(info: Carved, count: int, frag0: bool) -> tuple[int, int]:
    """The head skb's frags counted by contiguity runs (no frag_list), and the truesize the
    buffers after the first add: (nr_frags, truesize)."""
    if count <= 1:
        return int(frag0), 0
    later_runs = info.run[count - 1] - info.run[1] + 1
    joins_frag0 = frag0 and info.run[1] == info.run[0]
    nr_frags = later_runs + (int(frag0) if not joins_frag0 else 0)
    return nr_frags, info.prefix[count] - info.prefix[1]


class Walked(NamedTuple):
    frags: tuple[PlanFrag, ...]  # the head skb's
    chained: tuple[tuple[PlanFrag, ...], ...]  # each frag_list skb's
    appends: tuple[Append, ...]  # per buffer after the first


def walk_frags(
    posted: tuple[PostedBuffer, ...],
    used: tuple[int, ...],
    frag0: tuple[int, int] | None,
    max_frags: int,
) -> Walked:
    """The loop, buffer by buffer. ``frag0``: (offset, size) of what page_to_skb left in the
    first buffer, if anything."""
    skbs: list[list[PlanFrag]] = [[]]
    if frag0 is not None:
        skbs[0].append(PlanFrag(0, frag0[0], frag0[1], posted[0].len))
    appends: list[Append] = []
    for index in range(1, len(posted)):
        buf, size = posted[index], used[index]
        new_skb = len(skbs[-1]) == max_frags
        if new_skb:
            skbs.append([])
        curr = skbs[-1]
        if curr:
            last = curr[-1]
            if posted[last.buffer].frag_index == buf.frag_index and (
                last.offset + last.size == buf.offset
            ):
                curr[-1] = PlanFrag(last.buffer, last.offset, last.size + size,
                                    last.truesize + buf.len)
                appends.append(Append(len(skbs) - 1, len(curr) - 1, True, new_skb))
                continue
        curr.append(PlanFrag(index, buf.offset, size, buf.len))
        appends.append(Append(len(skbs) - 1, len(curr) - 1, False, new_skb))
    return Walked(tuple(skbs[0]), tuple(tuple(f) for f in skbs[1:]), tuple(appends))


def narrate_appends(c: Config, p: Plan, buffers: tuple[Buffer, ...], log: StepLog) -> None:
    """The loop's steps, one per buffer after the first, from the plan's record."""
    for index, step in enumerate(p.appends, 1):
        buf, used = buffers[index], p.used[index]
        name = "head skb" if step.skb == 0 else f"frag_list skb {step.skb}"
        if step.new_skb:
            previous = "head skb" if step.skb == 1 else f"frag_list skb {step.skb - 1}"
            log.add(
                SRC,
                "receive_mergeable",
                f"the {previous} already has MAX_SKB_FRAGS = {c.max_skb_frags} frags: "
                "alloc_skb(0, GFP_ATOMIC) becomes "
                + ("skb_shinfo(head_skb)->frag_list" if step.skb == 1 else "curr_skb->next")
                + f"; head_skb->truesize += {c.frag_list_truesize}",
                MAX_SKB_FRAGS=c.max_skb_frags,
                truesize=c.frag_list_truesize,
            )
        if step.coalesced:
            log.add(
                SRC,
                "receive_mergeable",
                f"buffer at {buf.page}+{buf.page_offset} continues frag {step.frag} of the "
                f"{name}: skb_coalesce_rx_frag grows it by {used}",
                offset=buf.page_offset,
                len=used,
                truesize=buf.size,
            )
            continue
        log.add(
            SRC,
            "receive_mergeable",
            f"buffer at {buf.page}+{buf.page_offset} becomes frag {step.frag} of the {name} "
            "(skb_add_rx_frag)",
            offset=buf.page_offset,
            len=used,
            truesize=buf.size,
        )
