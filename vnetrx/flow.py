"""A TCP flow through a receive path and then GRO (``vnetrx trace --gro``).

virtio-net: N segments of the traced frame's shape arrive back to back; each lands in the next
posted buffer (``buffer_index`` + i, carved from a fresh page as add_recvbuf_* would; big mode: a
page chain each) and is decided by the receive path alone; the skbs then go through GRO
(vnetrx.paths.gro) in NAPI polls of up to 64 (a device that writes the burst before one interrupt:
vhost-net's used-ring update). tun/tap: each write(2) goes through tun_get_user, and a tap with
IFF_NAPI polls it as its NAPI mode says (``TAP_NAPI``). Core only: no click, no rich.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from vnetrx.engine import trace_tap, trace_virtio
from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import GRO_SCHEMA, MAX_SEGMENTS, GroFlush, Outcome, Skb, Value
from vnetrx.paths import virtio_net
from vnetrx.paths.gro import (
    JIFFY_NS,
    NAPI_POLL_WEIGHT,
    Delivered,
    GroInput,
    GroLimits,
    GroRun,
    GroState,
    GroStep,
    Segment,
    UdpGro,
    gro_receive,
    gso_window_note,
    read_frame,
)
from vnetrx.records import NamedTuple

if TYPE_CHECKING:
    from vnetrx.packet import Headers
    from vnetrx.paths.tun import TapSetup
    from vnetrx.paths.vhost.rx import GuestRx, Packet, VhostRxConfig
    from vnetrx.paths.virtio_net_hdr import VnetHdr

VIRTIO_NOTES = (
    "skb->hash is 0 before GRO (no HASH_REPORT): every flow is in GRO bucket 0",
    "the device writes the burst before one interrupt: polls of up to 64 (NAPI_POLL_WEIGHT); a "
    "poll that uses its whole budget flushes everything (HZ < 1000: Debian's 250)",
)
# How a tap with IFF_NAPI polls (tun_get_user queues the skb on the tfile's NAPI and schedules
# it; write() passes more = false, so every write schedules a poll). Each checked on 6.18.44
# (tests/data/gro).
TAP_NAPI = {
    "write": "IFF_NAPI as the kernel sets it up: every write(2) is polled at once, in the softirq "
    "its local_bh_enable() runs, one skb a poll, and napi_complete_done flushes it: nothing "
    "merges",
    "timeout": "gro_flush_timeout > 0 (/sys/class/net/DEV/gro_flush_timeout): napi_complete_done "
    "keeps the skbs held in the current jiffy and arms the timer, so writes within one jiffy "
    "(4 ms at HZ 250) merge and the timer's poll flushes them",
    "threaded": "threaded NAPI (/sys/class/net/DEV/threaded) with the writer and the napi kthread "
    "pinned to one CPU: the kthread polls the queued writes, up to 64 a poll",
    "frags": "IFF_NAPI_FRAGS: each writev builds NAPI's own skb (tun_napi_alloc_frags: the first "
    "iovec linear, one frag per further iovec) and napi_gro_frags, then napi_complete inside "
    "the write: every write is a GRO run of its own, nothing merges",
}
TAP_NOTES = (
    "skb->hash is 0 before GRO (tun does not set it): every flow is in GRO bucket 0",
    "HZ < 1000 (Debian's 250): a poll that uses its whole budget (64) flushes everything",
)


class FlowSegment(NamedTuple):
    """One segment as the driver handed it to napi_gro_receive."""

    frame: int
    outcome: str
    skb: Skb
    head_frag: bool
    buffer_page: str
    buffer_offset: int


class FlowRun(NamedTuple):
    schema: str
    kernel: KernelProfile
    path: str
    input: tuple[tuple[str, Value], ...]
    segments: tuple[FlowSegment, ...]
    gro: GroRun
    notes: tuple[str, ...]

    @property
    def payload(self) -> int:
        """TCP payload bytes the flow carries (what the socket reads)."""
        return sum(step.payload for step in self.gro.steps)

    @property
    def truesize_before(self) -> int:
        """The skbs' truesize as the driver handed them to GRO."""
        return sum(s.skb.truesize for s in self.segments)

    @property
    def truesize_after(self) -> int:
        """The truesize of the skbs the stack receives."""
        return sum(d.skb.truesize for d in self.gro.delivered)


def check_segments(count: int) -> None:
    if not 1 <= count <= MAX_SEGMENTS:
        raise InputError(f"--segments {count} out of range (valid: 1..{MAX_SEGMENTS})")


def virtio_flow(k: KernelProfile, setup: virtio_net.VirtioRxSetup, first: virtio_net.RxFrame,
                frames: Sequence[bytes], limits: GroLimits | None = None) -> FlowRun:
    """``frames`` (e.g. packet.tcp_flow_frames of the traced frame) received by virtio-net
    with ``setup``'s device, one a buffer from ``first``'s on, each behind ``first``'s
    header, then GRO."""
    check_segments(len(frames))
    limits = limits or GroLimits()
    c = virtio_net.config(k, virtio_net.check_virtio_setup(k, setup))
    # big mode posts page chains from rq->pages: every segment gets the same kind of chain
    step = 0 if c.mode == "big" else 1
    segments, gro_segments = [], []
    path = ""
    for i, frame in enumerate(frames):
        trace = trace_virtio(k, setup, first._replace(
            len=len(frame), buffer_index=first.buffer_index + i * step))
        path = trace.path
        if trace.skb is None or trace.buffer is None or trace.outcome not in (
            Outcome.BUILD_SKB, Outcome.COPY
        ):
            raise InputError(
                f"segment {i} does not reach GRO: {trace.outcome}"
                + (f" ({trace.reason})" if trace.reason else "")
            )
        # build_skb wraps the rx buffer (a page fragment: head_frag); a copy's head comes from
        # napi_alloc_skb, a page fragment or kmalloc as its size says
        head_frag = trace.outcome == Outcome.BUILD_SKB or c.napi_head.frag
        seg = FlowSegment(i, trace.outcome, trace.skb, head_frag, trace.buffer.page,
                          trace.buffer.page_offset)
        segments.append(seg)
        gro_segments.append(_segment(seg, frame))
    # each poll ends with napi_complete_done, which flushes everything: a run per poll
    runs = [[gro_segments[i:i + NAPI_POLL_WEIGHT]]
            for i in range(0, len(gro_segments), NAPI_POLL_WEIGHT)]
    run = gro_receive(k, runs, limits=limits)
    inputs: tuple[tuple[str, Value], ...] = (
        ("frame_len", len(frames[0])),
        ("segments", len(frames)),
        ("mergeable", setup.mergeable),
        ("guest_gso", setup.guest_gso),
        ("mtu", setup.mtu),
        ("hdr_len", c.hdr_len),
        ("buffer_index", first.buffer_index),
        ("hdr", None if first.hdr is None else first.hdr.to_bytes(c.hdr_len).hex()),
        ("xdp", setup.xdp),
        ("gro_max_size", limits.gro_max_size),
        ("gro_ipv4_max_size", limits.gro_ipv4_max_size),
    )
    return FlowRun(GRO_SCHEMA, k, path, inputs, tuple(segments), run,
                   (*VIRTIO_NOTES, *_gso_notes(k, segments)))


def _gso_notes(k: KernelProfile, segments: Sequence[FlowSegment]) -> tuple[str, ...]:
    """gso_window_note when a segment is a GSO skb."""
    note = gso_window_note(k)
    return (note,) if note and any(s.skb.gso_size for s in segments) else ()


def tap_flow(k: KernelProfile, setup: TapSetup, writes: Sequence[tuple[bytes | None, bytes]],
             napi: str, gro: bool = True, limits: GroLimits | None = None,
             splits: Sequence[tuple[int, ...]] | None = None,
             udp_gro: UdpGro | None = None) -> FlowRun:
    """Each write (its vnet header, None for zeros, and the Ethernet frame) into a tap
    with IFF_NAPI, through tun_get_user and then GRO, polled as ``napi`` says (TAP_NAPI);
    ``udp_gro``: what lets UDP datagrams merge."""
    if napi not in TAP_NAPI:
        raise InputError(f"NAPI mode {napi!r} is not one of {', '.join(TAP_NAPI)}")
    check_segments(len(writes))
    limits = limits or GroLimits()
    segments, gro_segments = [], []
    for i, (hdr, frame) in enumerate(writes):
        seg = tap_write(k, setup, i, hdr, len(frame), napi, splits[i] if splits else ())
        if isinstance(seg, str):
            raise InputError(f"write {i} {seg}")
        segments.append(seg)
        gro_segments.append(_segment(seg, frame))
    if napi == "timeout":
        runs = [[[s] for s in gro_segments]]
        end = GroFlush.TIMER
    elif napi == "threaded":
        runs = [[gro_segments[i:i + NAPI_POLL_WEIGHT]]
                for i in range(0, len(gro_segments), NAPI_POLL_WEIGHT)]
        end = GroFlush.POLL_END
    else:
        runs = [[[s]] for s in gro_segments]
        end = GroFlush.POLL_END
    run = gro_receive(k, runs, end=end, gro=gro, limits=limits, udp_gro=udp_gro)
    inputs: tuple[tuple[str, Value], ...] = (
        ("frame_len", len(writes[0][1])),
        ("segments", len(writes)),
        ("napi", napi),
        ("gro", gro),
        ("blocking", setup.blocking),
        ("sndbuf", setup.sndbuf),
        ("vnet_hdr", setup.vnet_hdr),
        ("gro_max_size", limits.gro_max_size),
        ("gro_ipv4_max_size", limits.gro_ipv4_max_size),
    )
    return FlowRun(GRO_SCHEMA, k, "tap", inputs, tuple(segments), run,
                   (*TAP_NOTES, TAP_NAPI[napi],
                    *((WITHIN_A_JIFFY_NOTE,) if napi == "timeout" else ()),
                    *_gso_notes(k, segments)))


def tap_write(k: KernelProfile, setup: TapSetup, i: int, hdr: bytes | None, frame_len: int,
              napi: str, split: tuple[int, ...] = ()) -> FlowSegment | str:
    """Write ``i`` (its vnet header, None for zeros, and a frame of ``frame_len`` bytes)
    into an IFF_NAPI tap: the skb tun_get_user (or, ``napi`` "frags", tun_napi_alloc_frags)
    hands napi_gro_receive, or why it does not (a phrase following "write N")."""
    if napi == "frags":
        return _napi_frags_segment(k, setup, i, hdr, frame_len, split)
    from vnetrx.paths.tun import TapFrame

    trace = trace_tap(k, setup, TapFrame(frame_len, hdr))
    if trace.skb is None or trace.outcome not in (Outcome.BUILD_SKB, Outcome.ALLOC_SKB):
        return (f"does not reach GRO: {trace.outcome}"
                + (f" ({trace.reason})" if trace.reason else ""))
    # tun_build_skb: build_skb on a page fragment (head_frag); tun_alloc_skb: a kmalloc'd head
    # from sock_alloc_send_pskb
    return FlowSegment(i, trace.outcome, trace.skb, trace.outcome == Outcome.BUILD_SKB,
                       trace.buffer.page if trace.buffer is not None else "task_frag",
                       trace.buffer.page_offset if trace.buffer is not None else 0)


class TapWrite(NamedTuple):
    """One write of a replay into a tap: its frame's length, vnet header (None: zeros),
    what GRO reads of the frame, and (IFF_NAPI_FRAGS) its iovec boundaries."""

    frame: int  # its index in the replay
    frame_len: int
    hdr: bytes | None
    gro_input: GroInput
    split: tuple[int, ...] = ()
    time: int | None = None  # when it was written (a capture record's time stamp), ns
    jiffies: int | None = None  # the jiffies it was polled in, when recorded (else from time)


class GroClock(NamedTuple):
    """gro_flush_timeout with the writes' times: each write is polled when it is written, in
    the jiffy ``(time - first write's time + phase_ns) // jiffy_ns`` (where the jiffy ticks
    fall is not in a capture: ``phase_ns`` says where the first write falls in its jiffy)."""

    timeout_ns: int
    phase_ns: int = 0
    jiffy_ns: int = JIFFY_NS


TIMED_NOTE = (
    "the writes are polled at their capture times: a poll completes the skbs held in an "
    "earlier jiffy (HZ 250: 4 ms; the first write assumed at the start of its jiffy, where the "
    "ticks fall is not in a capture), and the gro_flush_timeout timer, armed at every poll "
    "that leaves an skb held, flushes everything when no write comes before it expires"
)
WITHIN_A_JIFFY_NOTE = (
    "the writes are assumed to come within one jiffy (4 ms at HZ 250), so every held skb waits "
    "for the gro_flush_timeout timer"
)
UNTIMED_NOTE = ("the writes have no times (JSON frames, or --gro-flush-timeout not given): "
                + WITHIN_A_JIFFY_NOTE)


def replay_tap_gro(k: KernelProfile, setup: TapSetup, writes: Iterable[TapWrite], napi: str,
                   gro: bool = True, limits: GroLimits | None = None,
                   refused: list[str] | None = None,
                   clock: GroClock | None = None,
                   steps: list[GroStep] | None = None,
                   udp_gro: UdpGro | None = None) -> Iterator[tuple[int, Delivered]]:
    """``replay --path tap --gro``: each write through tun_get_user and the tap's NAPI, polled
    as ``napi`` says (TAP_NAPI), streamed: every skb the stack receives with its poll (the
    write that ended it; threaded: the kthread's poll), in delivery order. A write that does
    not reach GRO is left out, and why goes to ``refused``. ``clock`` (napi "timeout"): the
    writes' times age the held skbs (napi_complete_done's flush_old, the hrtimer); without
    it every write is taken to come within one jiffy. ``steps``: gets what GRO did with each
    input (its gro_result)."""
    if napi not in TAP_NAPI:
        raise InputError(f"NAPI mode {napi!r} is not one of {', '.join(TAP_NAPI)}")
    state = GroState(k, limits, gro, record_steps=steps is not None, udp_gro=udp_gro)
    skbs: dict[tuple[int, bytes | None], FlowSegment | str] = {}  # a write's skb by its shape
    poll = in_poll = 0
    timed = clock is not None and napi == "timeout"
    stamped: bool | None = None  # whether the writes have times (the first one says)
    first: int | None = None  # the first write's time
    last: int | None = None
    deadline: int | None = None  # when the gro_flush_timeout hrtimer fires
    for w in writes:
        if timed and stamped is None:
            stamped = w.time is not None
        if timed and clock is not None and stamped:
            if w.time is None:
                raise InputError(f"frame {w.frame} has no time stamp (a pcapng Simple Packet "
                                 "Block): the writes' times age the held skbs")
            if last is not None and w.time < last:
                raise InputError(f"frame {w.frame} is stamped {last - w.time} ns before the "
                                 "frame ahead of it: the writes' times must not go back")
            first = w.time if first is None else first
            last = w.time
            if deadline is not None and w.time >= deadline:
                # napi_watchdog schedules the NAPI; its poll does no work: napi_complete_done(n,
                # 0) flushes everything
                state.flush_all(GroFlush.TIMER)
                deadline = None
                for d in state.take():
                    yield poll, d
            state.jiffies = (w.jiffies if w.jiffies is not None
                             else (w.time - first + clock.phase_ns) // clock.jiffy_ns)
        if napi == "frags" or len(skbs) > 4096:
            seg = tap_write(k, setup, w.frame, w.hdr, w.frame_len, napi, w.split)
        else:  # tun_get_user's skb depends on the length and the header only
            key = (w.frame_len, w.hdr)
            seg = skbs.get(key) or skbs.setdefault(
                key, tap_write(k, setup, w.frame, w.hdr, w.frame_len, napi))
        if isinstance(seg, str):
            if refused is not None:
                refused.append(f"write {w.frame} {seg}")
            continue
        if napi == "threaded":  # the kthread polls up to 64 queued writes
            if in_poll == 0:
                poll += 1
        else:  # one poll per write (timeout: the held skbs stay across them)
            poll += 1
        state.receive(Segment(w.frame, seg.skb, seg.head_frag, w.gro_input.tcp,
                              seg.buffer_page, seg.buffer_offset, w.gro_input.udp_validated,
                              w.gro_input.pull, w.gro_input.needs, w.gro_input.hbh_at))
        if steps is not None:
            steps.extend(state.steps)
            state.steps.clear()
        in_poll += 1
        if napi == "threaded":
            if in_poll == NAPI_POLL_WEIGHT:
                state.flush_all(GroFlush.BUDGET)
                in_poll = 0
        elif napi != "timeout":
            state.flush_all(GroFlush.POLL_END)
            in_poll = 0
        elif timed and clock is not None and stamped and state.held:
            # napi_complete_done(n, 1) with a held skb: timeout = gro_flush_timeout, so
            # flush_old, and the hrtimer (re)armed for timeout ns
            state.flush_old()
            deadline = (w.time or 0) + clock.timeout_ns
        for d in state.take():
            yield poll, d
    state.flush_all(GroFlush.TIMER if napi == "timeout" else GroFlush.POLL_END)
    for d in state.take():
        yield poll, d


def _napi_frags_segment(k: KernelProfile, setup: TapSetup, i: int, hdr: bytes | None,
                        frame_len: int, split: tuple[int, ...]) -> FlowSegment:
    """An IFF_NAPI_FRAGS write (``split``: the iovec boundaries, offsets into the vnet header
    and the frame): the skb tun_napi_alloc_frags and napi_frags_skb make of it."""
    from vnetrx.paths.tun.napi_frags import napi_frags_skb

    header = hdr or b""
    hdr_len = (setup.vnet_hdr_sz or 10) if setup.vnet_hdr else 0
    if any(header) and setup.vnet_hdr:  # virtio_net_hdr_to_skb's offloads on this skb
        raise InputError(f"write {i}: an IFF_NAPI_FRAGS write with a vnet header's checksum "
                         "or GSO request is not modelled")
    total = hdr_len + frame_len
    cuts = (0, *split, total)
    if any(b <= a for a, b in itertools.pairwise(cuts)) or cuts[-2] >= total:
        raise InputError(f"write {i}: iovec boundaries {split} are not increasing offsets "
                         f"inside its {total} bytes")
    skb = napi_frags_skb(k, tuple(b - a for a, b in itertools.pairwise(cuts)), hdr_len)
    return FlowSegment(i, Outcome.ALLOC_SKB, skb, False, "napi_get_frags", 0)


def _segment(seg: FlowSegment, frame: bytes) -> Segment:
    gro_input = read_frame(frame, len(frame), whole=True)
    return Segment(seg.frame, seg.skb, seg.head_frag, gro_input.tcp, seg.buffer_page,
                   seg.buffer_offset, gro_input.udp_validated, gro_input.pull, gro_input.needs,
                   gro_input.hbh_at)


VHOST_RX_NOTES = (
    "the guest's GRO: skb->hash is 0 (vhost-net offers no HASH_REPORT): every flow is in GRO "
    "bucket 0; HZ < 1000 (Debian's 250): a poll that uses its whole budget (64) flushes "
    "everything",
)
VHOST_POLLS_NOTE = (
    "the guest polls what each vhost_net_signal_used made visible (done_idx > 64, the weight, "
    "the empty ring: real 6.1 and 6.12 vhost-net signalled 100 queued frames twice), up to 64 "
    "packets a poll, before vhost signals again (assumed: a guest faster than the host; "
    "--polls gives the grouping a real guest's napi:napi_poll reported)")


def vhost_rx_gro(k: KernelProfile, rows: Iterable[tuple[object, Packet, GuestRx | None]],
                 read: Callable[[int], GroInput], polls: Sequence[int] = (),
                 gro: bool = True, limits: GroLimits | None = None,
                 ) -> Iterator[tuple[int, Delivered]]:
    """``replay --path vhost-rx --gro``: the packets handle_rx put in the guest's ring
    (``rows``: vhost_rx_stream's), received by the guest's virtio-net driver (their
    ``GuestRx``) and then its GRO, NAPI poll by NAPI poll (budget 64): by default the guest
    polls each batch a vhost_net_signal_used made visible (``VHOST_POLLS_NOTE``); ``polls``:
    how many of the packets vhost used (discards left out) each poll took, in order. Every skb
    the stack receives, with its poll (from 1), in delivery order. ``read(frame)``: what GRO
    reads of the input frame's headers."""
    state = GroState(k, limits, gro, record_steps=False)
    poll = 1
    in_poll = 0
    given = iter(polls)
    size = next(given, 0) if polls else NAPI_POLL_WEIGHT
    used = 0
    for _x, p, g in rows:
        if p.discard is not None:  # no used-ring entry: nothing for the guest to poll
            if not polls and p.signal is not None and in_poll:  # the heads before it
                state.flush_all(GroFlush.POLL_END)
                yield from ((poll, d) for d in state.take())
                poll, in_poll = poll + 1, 0
            continue
        if polls and size == 0:
            raise InputError(f"the polls ({', '.join(map(str, polls))}) cover fewer than the "
                             f"packets vhost put in the guest's ring (more than {used})")
        used += 1
        skb = g.delivery.skb if g is not None else None
        if g is not None and skb is not None:
            head_frag = g.plan.outcome == "build_skb" or g.config.napi_head.frag
            gro_input = read(p.skb.frame)
            state.receive(Segment(p.skb.frame, skb, head_frag, gro_input.tcp,
                                  udp_validated=gro_input.udp_validated, pull=gro_input.pull))
        in_poll += 1
        ends = in_poll == size if polls else (in_poll == NAPI_POLL_WEIGHT
                                             or p.signal is not None)
        if ends:
            state.flush_all(GroFlush.BUDGET if in_poll >= NAPI_POLL_WEIGHT
                            else GroFlush.POLL_END)
            yield from ((poll, d) for d in state.take())
            poll, in_poll = poll + 1, 0
            if polls:
                size = next(given, 0)
    if polls and (in_poll or size or next(given, None) is not None):
        raise InputError(f"the polls ({', '.join(map(str, polls))}) add up to {sum(polls)}; "
                         f"vhost put {used} packet(s) in the guest's ring")
    if in_poll:  # the default grouping ends with a signal: nothing is left here
        state.flush_all(GroFlush.POLL_END)
        yield from ((poll, d) for d in state.take())


def vhost_rx_flow(k: KernelProfile, c: VhostRxConfig, frames: Sequence[bytes],
                  state: VnetHdr | None, headers: Headers | None = None,
                  limits: GroLimits | None = None) -> FlowRun:
    """``trace --path vhost-rx --gro``: ``frames`` (a TCP flow of the traced frame's shape,
    each with the skb state ``state``) queued on the host's tap as one burst, through
    handle_rx into the guest's ring (``c``), the guest's receive path and its GRO, polled as
    vhost signals (``VHOST_POLLS_NOTE``)."""
    from vnetrx.paths.vhost.rx import NOTES, HostFrame, host_skbs, vhost_rx_stream

    check_segments(len(frames))
    limits = limits or GroLimits()
    xmits, skbs = host_skbs(c, [HostFrame(len(f), state, headers) for f in frames])
    if any(x.segmented is not None for x in xmits):
        raise UnsupportedError(
            "the host stack segments these GSO skbs before the tap: the segments' own headers, "
            "which GRO reads, are not modelled", hint="keep the tap's offloads (drop "
            "--no-tap-offload), or trace one segment's shape")
    segments: list[FlowSegment] = []
    polls: list[list[Segment]] = []
    poll: list[Segment] = []
    path = ""
    for _x, p, g in vhost_rx_stream(k, c, xmits, skbs):
        i = p.skb.frame
        skb = None if g is None else g.delivery.skb
        if g is None or skb is None:
            why = ("discarded by handle_rx (overrun)" if p.discard is not None else
                   "not received by a Linux guest" if g is None else
                   f"dropped by the guest ({g.delivery.reason})")
            raise InputError(f"segment {i} does not reach GRO: {why}")
        path = f"virtio-{g.config.mode}"
        head_frag = g.plan.outcome == "build_skb" or g.config.napi_head.frag
        first = p.buffers[0] if p.buffers else None
        seg = FlowSegment(i, g.plan.outcome, skb, head_frag,
                          "" if first is None else g.config.alloc.label(first.frag_index),
                          0 if first is None else first.offset)
        segments.append(seg)
        poll.append(_segment(seg, frames[i]))
        if len(poll) == NAPI_POLL_WEIGHT or p.signal is not None:
            polls.append(poll)
            poll = []
    if poll:
        polls.append(poll)
    run = gro_receive(k, [[q] for q in polls], limits=limits)
    s = c.setup
    inputs: tuple[tuple[str, Value], ...] = (
        ("via", "vhost-rx"),
        ("frame_len", len(frames[0])),
        ("segments", len(frames)),
        ("mode", s.mode),
        ("hdr_len", s.hdr_len),
        ("buf_len", c.buf_len),
        ("mtu", s.mtu),
        ("hdr", None if state is None else state.to_bytes(10).hex()),
        ("tap_offload", s.tap_offload),
        ("polls", ",".join(str(len(q)) for q in polls)),
        ("gro_max_size", limits.gro_max_size),
        ("gro_ipv4_max_size", limits.gro_ipv4_max_size),
    )
    return FlowRun(GRO_SCHEMA, k, path, inputs, tuple(segments), run,
                   (*NOTES, *VHOST_RX_NOTES, VHOST_POLLS_NOTE))
