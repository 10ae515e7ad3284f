"""A TCP flow through a receive path and then GRO (``vnetrx trace --gro --segments N``).

N segments of the traced frame's shape arrive back to back: each lands in the next posted
buffer (``buffer_index`` + i, carved from a fresh page as add_recvbuf_* would; big mode: a page
chain each) and is decided by
the receive path alone; the skbs then go through GRO (vnetrx.paths.gro) in NAPI polls of up to
64 (a device that writes the burst before one interrupt: vhost-net's used-ring update). Core
only: no click, no rich.
"""

from __future__ import annotations

from vnetrx.engine import trace_virtio
from vnetrx.errors import InputError
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import GRO_SCHEMA, Outcome, Skb, Value
from vnetrx.packet import Headers
from vnetrx.paths import virtio_net
from vnetrx.paths.gro import NAPI_POLL_WEIGHT, GroRun, Segment, gro_receive
from vnetrx.records import NamedTuple

MAX_SEGMENTS = 4096

NOTES = (
    "segments of one TCP flow, contiguous, flags ACK only, the same options and ack_seq, "
    "incrementing IPv4 IDs with DF (a Linux sender), correct checksums",
    "skb->hash is 0 before GRO (no HASH_REPORT): every flow is in GRO bucket 0",
    "the device writes the burst before one interrupt: polls of up to 64 (NAPI_POLL_WEIGHT); a "
    "poll that uses its whole budget flushes everything (HZ < 1000: Debian's 250)",
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


def virtio_flow(k: KernelProfile, setup: virtio_net.VirtioRxSetup, headers: Headers,
                count: int) -> FlowRun:
    """``count`` segments of ``setup``'s frame (whose headers are ``headers``) through
    virtio-net's receive path, then GRO."""
    if not 1 <= count <= MAX_SEGMENTS:
        raise InputError(f"--segments {count} out of range (valid: 1..{MAX_SEGMENTS})")
    if not headers.tcp:
        raise InputError(
            "--gro needs a TCP frame (--l4 tcp4|tcp6, or --frame with one): GRO merges TCP "
            "segments; plain UDP is not merged without a UDP GRO socket"
        )
    c = virtio_net.config(k, virtio_net.check_virtio_setup(k, setup))
    segments = []
    path = ""
    # big mode posts page chains from rq->pages: every segment gets the same kind of chain
    step = 0 if c.mode == "big" else 1
    for i in range(count):
        trace = trace_virtio(k, setup._replace(buffer_index=setup.buffer_index + i * step))
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
        segments.append(FlowSegment(i, trace.outcome, trace.skb, head_frag, trace.buffer.page,
                                    trace.buffer.page_offset))
    gro_segments = [
        Segment(s.frame, s.skb, s.head_frag, headers.ipv6, headers.transport - headers.network,
                headers.transport_len, s.buffer_page, s.buffer_offset)
        for s in segments
    ]
    polls = [gro_segments[i:i + NAPI_POLL_WEIGHT]
             for i in range(0, len(gro_segments), NAPI_POLL_WEIGHT)]
    run = gro_receive(k, polls)
    inputs: tuple[tuple[str, Value], ...] = (
        ("frame_len", setup.frame_len),
        ("l4", headers.l4),
        ("segments", count),
        ("mergeable", setup.mergeable),
        ("guest_gso", setup.guest_gso),
        ("mtu", setup.mtu),
        ("hdr_len", c.hdr_len),
        ("buffer_index", setup.buffer_index),
        ("hdr", None if setup.hdr is None else setup.hdr.to_bytes(c.hdr_len).hex()),
        ("xdp", setup.xdp),
    )
    return FlowRun(GRO_SCHEMA, k, path, inputs, tuple(segments), run, NOTES)
