"""A stateful virtio-net receive queue: the buffers posted in the avail ring, the page_frag (or
7.x page_pool) they are carved from, the packet-length EWMA that sizes them, and the NAPI refill
that posts new ones. Pure: a state goes in, a new state (and per-frame traces) come out.

The parts live next door, each with the kernel code it mirrors: state.py (the config, state and
result values), refill.py (the driver side: try_fill_recv and virtnet_open; the buffer sizes and
the page_frag/page_pool carving are the receive path's own, paths/virtio_net/buffers.py) and
napi.py (the device side and the NAPI loop: virtnet_receive, receive_mergeable's EWMA update, the
refill check; big mode's page chains, decided one frame at a time); frames.py reads the frames. This module checks the input, runs the replay and
assembles its notes.

Big mode (no MRG_RXBUF; guest GSO or an MTU above 1500) has no page_frag, no EWMA and no
carved buffers: each frame lands in a page chain of its own, so a big-mode replay is each frame
decided alone, in order, with its NAPI poll; the chains' occupancy of the ring is not followed
(``big_notes``).

Not modelled (stated in every replay's notes): ``skb_page_frag_refill``'s reuse of the current
page from offset 0 when ``page_ref_count == 1`` (only possible once every buffer carved from it
has been used *and* its skb freed); the order-0 fallback of the page_frag; OOM during a refill.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths.virtio_net import MAX_FRAME_LEN
from vnetrx.paths.virtio_net_hdr import VnetHdr
from vnetrx.replay.napi import SRC, buffers_needed, every_frame, feed, no_frame
from vnetrx.replay.refill import (
    backing_page_size,
    buffer_len,
    min_buf_len,
    open_ring,
    page_label,
    ring_config,
    try_fill_recv,
    view,
)
from vnetrx.replay.state import (
    Decision,
    Fill,
    FrameRecord,
    Posted,
    Replay,
    RingConfig,
    RingState,
    RingView,
)
from vnetrx.replay.summary import Totals

__all__ = [
    "MAX_FRAMES",
    "MAX_RING_SIZE",
    "SRC",
    "Decision",
    "Fill",
    "FrameRecord",
    "Posted",
    "Replay",
    "RingConfig",
    "RingState",
    "RingView",
    "Stream",
    "backing_page_size",
    "buffer_len",
    "buffers_needed",
    "check_ring",
    "feed",
    "min_buf_len",
    "new_totals",
    "open_ring",
    "page_label",
    "replay",
    "replay_notes",
    "ring_config",
    "try_fill_recv",
    "validate",
    "view",
]

MAX_RING_SIZE: Final = 32768  # virtio: a split ring has at most 32768 entries
MAX_FRAMES: Final = 100_000


def replay(
    k: KernelProfile,
    cfg: RingConfig,
    frames: Sequence[int],
    hdrs: Sequence[VnetHdr | None] | None = None,
    want_trace: Callable[[int], bool] = every_frame,
    until: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> Replay:
    """virtnet_open, then ``frames`` (lengths after the virtio-net header) through the ring;
    ``hdrs``: the virtio_net_hdr the device wrote in front of each (None: all zero);
    ``want_trace(index)``: keep that frame's narrated trace (default: every frame's);
    ``until``: wraps the frames to end the replay early (vnetrx.stop: Ctrl-C)."""
    validate(k, cfg, frames)
    if hdrs is not None and len(hdrs) != len(frames):
        raise InputError(f"{len(hdrs)} headers for {len(frames)} frames")
    given: Iterable[Any] = frames if hdrs is None else zip(frames, hdrs, strict=True)
    stream = Stream(k, cfg, given if until is None else until(given), want_trace)
    records = tuple(stream.records)
    return Replay(
        kernel=k,
        config=cfg,
        min_buf_len=stream.min_buf_len,
        initial_fill=stream.initial_fill,
        frames=records,
        final=stream.final(),
        notes=replay_notes(k, cfg),
    )


class Stream:
    """A replay as it runs: the ring opened (``initial_fill``), then ``records``, an iterator
    that feeds the frames through it one NAPI poll at a time (constant memory whatever the
    number of frames), and ``final()``, the ring once they are through."""

    def __init__(
        self,
        k: KernelProfile,
        cfg: RingConfig,
        frames: Iterable[int | tuple[int, VnetHdr | None]],
        want_trace: Callable[[int], bool] = no_frame,
        rings: bool = True,
        frags: bool = False,
    ) -> None:
        check_ring(k, cfg)
        self.kernel, self.config = k, cfg
        self.min_buf_len = min_buf_len(k, cfg) if cfg.device.mergeable else None
        self.big = ring_config(k, cfg).mode == "big"
        # big mode posts page chains from rq->pages, which are not followed: no initial fill
        self.initial_fill: Fill | None = None
        if self.big:
            self.state = RingState()
        else:
            self.state, self.initial_fill = open_ring(k, cfg)
        self.records = feed(k, cfg, self.state, frames, want_trace=want_trace,
                            rings=rings, frags=frags)
        self.notes = replay_notes(k, cfg)

    def final(self) -> RingView | None:
        """The ring after the last frame (None in big mode: its chains are not followed)."""
        return None if self.big else view(self.kernel, self.config, self.state)


def new_totals(k: KernelProfile, cfg: RingConfig) -> Totals:
    """Totals for this ring's frames (big mode: each received frame counts its chain's
    pages as buffers)."""
    c = ring_config(k, cfg)
    return Totals(chain_pages=c.big_num_skbfrags + 1) if c.mode == "big" else Totals()


def validate(k: KernelProfile, cfg: RingConfig, frames: Sequence[int]) -> None:
    """The checks of a replay whose frames are all known up front (a list; ``replay``)."""
    if not frames:
        raise InputError("no frames to replay (give at least one length)")
    if len(frames) > MAX_FRAMES:
        raise InputError(f"{len(frames)} frames is too many (valid: 1..{MAX_FRAMES})")
    for index, length in enumerate(frames):
        if not 0 <= length <= MAX_FRAME_LEN:  # 0: a header-only write (a short packet)
            raise InputError(
                f"frame {index}: length {length} out of range (valid: 0..{MAX_FRAME_LEN})"
            )
    if cfg.polls and (min(cfg.polls) < 1 or sum(cfg.polls) != len(frames)):
        raise InputError(
            f"the batches ({', '.join(map(str, cfg.polls))}) must be at least 1 frame each and "
            f"add up to the {len(frames)} frame(s)"
        )
    check_ring(k, cfg)


def check_ring(k: KernelProfile, cfg: RingConfig) -> None:
    """The checks of the ring itself, whatever the frames."""
    d = cfg.device
    if not 1 <= d.ring_size <= MAX_RING_SIZE:
        raise InputError(f"ring size {d.ring_size} out of range (valid: 1..{MAX_RING_SIZE})")
    if not 1 <= cfg.batch <= MAX_FRAMES:
        raise InputError(f"batch {cfg.batch} out of range (valid: 1..{MAX_FRAMES})")
    if cfg.polls and min(cfg.polls) < 1:
        raise InputError(f"the batches ({', '.join(map(str, cfg.polls))}) must be at least 1 "
                         "frame each")
    c = ring_config(k, cfg)  # the receive path's own checks of the setup (hdr_len, MTU, ...)
    if c.mode == "big" and d.xdp is not None:
        raise UnsupportedError(
            "replay of big mode (no --mergeable; guest GSO or an MTU above 1500) with an XDP "
            "program is not modelled: big mode has no XDP hook and virtnet_xdp_set's answer "
            "depends on the offloads; `vnetrx trace --xdp ACTION` shows one frame"
        )


def replay_notes(k: KernelProfile, cfg: RingConfig) -> tuple[str, ...]:
    if ring_config(k, cfg).mode == "big":
        return big_notes(k, cfg)
    notes = [
        f"the ring is filled at virtnet_open with the EWMA at 0 and refilled after a NAPI poll "
        f"(budget {cfg.budget}) only when more than {cfg.refill_threshold} descriptors are free; "
        + (
            f"the device writes batches of {', '.join(map(str, cfg.polls))} frame(s), each "
            "received before the next (--polls)"
            if cfg.polls
            else f"the device writes {cfg.batch} frame(s) before each poll (--batch)"
        ),
    ]
    if cfg.device.xdp is not None:
        notes.append(
            f"an XDP program returning {cfg.device.xdp} was attached before virtnet_open, so every "
            "buffer has the XDP geometry; each frame is decided by its full trace "
            "(vnetrx trace --xdp), and the EWMA, which does not size XDP buffers, is not "
            "followed")
    alloc = ring_config(k, cfg).alloc
    if alloc.page_pool:
        notes.append(
            "page_pool recycling is not modelled: every page gets a new label (which physical "
            "page comes back does not change any offset)"
        )
    else:
        notes.append(
            "skb_page_frag_refill's reuse of a page whose every buffer was used and freed "
            "(page_ref_count == 1) is not modelled: vnetrx assumes the skbs still hold it"
        )
    if alloc.dma_header:
        notes.append(
            f"every page_frag page starts with the {alloc.dma_header}-byte struct virtnet_rq_dma"
        )
    return tuple(notes)


def big_notes(k: KernelProfile, cfg: RingConfig) -> tuple[str, ...]:
    """What a big-mode replay follows and what it does not."""
    c = ring_config(k, cfg)
    n = c.big_num_skbfrags
    descriptors = n + 2
    return (
        f"big mode: add_recvbuf_big posts each buffer as a chain of {n + 1} pages "
        f"({descriptors} sg entries) from rq->pages (get_a_page, else alloc_page; never the "
        "page_frag or a page_pool), and receive_big decides each frame in a chain of its own "
        "(what `vnetrx trace` shows for it): there is no EWMA, no page_frag and no "
        "mergeable_rx_buffer_size, so those fields are null",
        "the chains' occupancy of the ring is not followed: without "
        f"VIRTIO_RING_F_INDIRECT_DESC a chain takes {descriptors} descriptors (a ring of "
        f"{cfg.device.ring_size} holds {cfg.device.ring_size // descriptors} chains), with it "
        "one; a frame never waits for a chain and the refills (try_fill_recv when more than "
        f"{cfg.refill_threshold} descriptors are free) are not shown: keep each batch within "
        "the chains the ring holds",
        (f"the device writes batches of {', '.join(map(str, cfg.polls))} frame(s), each "
         "received before the next (--polls)" if cfg.polls
         else f"the device writes {cfg.batch} frame(s) before each poll (--batch)")
        + f"; a NAPI poll takes at most {cfg.budget}",
    )
