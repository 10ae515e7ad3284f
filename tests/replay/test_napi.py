"""The device side and the NAPI loop of the ring replay (vnetrx/replay/napi.py): the EWMA, refill
timing as virtnet_receive does it (@6.1.192, @6.12.117), batches and stalls."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.profiles import VIRTIO
from vnetrx.errors import InputError, VnetrxError
from vnetrx.kernel.registry import lookup
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.replay import RingConfig, feed, open_ring, replay, view
from vnetrx.replay.napi import every_frame, no_frame

MERGEABLE = RingConfig(VirtioRxSetup(mergeable=True))
SMALL = RingConfig(VirtioRxSetup(mergeable=False))


def test_ewma_first_sample_then_63_64ths() -> None:
    """DECLARE_EWMA(pkt_len, 0, 64) (include/linux/average.h) fed head_skb->len after each
    mergeable skb. Worked by hand: the first sample is taken as is (60); then e = (63 e + v) / 64
    rounded down: (3780 + 9014) / 64 = 199.9 → 199; (12537 + 9018) / 64 = 336.8 → 336;
    (21168 + 1000) / 64 = 346.4 → 346."""
    run = replay(lookup("6.12"), MERGEABLE, [60, 9014, 9018, 10, 1000])
    # the 10-byte frame is a short packet: dropped before an skb exists, no EWMA update
    assert [(f.ewma_before, f.ewma_after) for f in run.frames] == [
        (0, 60), (60, 199), (199, 336), (336, 336), (336, 346)]
    assert run.frames[3].trace.reason == "short_packet"


def test_small_mode_has_no_ewma_and_no_sysfs_size() -> None:
    run = replay(lookup("6.12"), SMALL, [1000])
    assert (run.frames[0].ewma_after, run.final.ewma, run.final.mergeable_rx_buffer_size) == (
        None, None, None)


def test_refill_only_when_more_than_32_descriptors_are_free() -> None:
    """virtnet_receive: num_free > min(budget 64, 256) / 2 = 32 → try_fill_recv tops up."""
    run = replay(lookup("6.1"), MERGEABLE, [60] * 34)
    assert [f.index for f in run.frames if f.refill is not None] == [32]
    assert run.frames[31].ring.num_free == 32 and run.frames[31].ring.posted == 224
    fill = run.frames[32].refill
    assert fill is not None
    assert (fill.when, fill.after_poll, len(fill.buffers), fill.buf_len) == (
        "virtnet_receive", 33, 33, 1536)
    assert [p.seq for p in fill.buffers] == list(range(256, 289))
    # the refill continues the page_frag where the initial fill stopped (frag12 + 6144)
    assert (fill.buffers[0].buf.frag_index, fill.buffers[0].buf.offset) == (12, 6144)
    assert (run.frames[32].ring.posted, run.frames[32].ring.num_free) == (256, 0)
    assert (run.frames[33].ring.num_free, run.final.fills) == (1, 2)


def test_small_ring_threshold_is_half_the_ring() -> None:
    """Ring 16: min(64, 16) / 2 = 8, so the ninth one-buffer frame triggers the refill."""
    run = replay(lookup("6.12"), RingConfig(
        VirtioRxSetup(mergeable=True, ring_size=16)), [1000] * 10)
    assert [f.index for f in run.frames if f.refill is not None] == [8]
    assert len(run.frames[8].refill.buffers) == 9  # type: ignore[union-attr]


def test_batch_up_to_the_budget_per_poll_then_refill_after_each_poll() -> None:
    run = replay(lookup("6.12"), RingConfig(VirtioRxSetup(mergeable=True), batch=100), [60] * 100)
    assert [f.poll for f in run.frames] == [1] * 64 + [2] * 36
    assert [(f.index, len(f.refill.buffers)) for f in run.frames if f.refill] == [(63, 64),
                                                                                 (99, 36)]


def test_device_waits_for_the_refill_inside_a_batch() -> None:
    """Ring 64 (threshold 32), a batch of three 40000-byte frames (26 buffers each): two fit the
    initial fill, the third waits for the refill after the first poll, which posts only the 52
    descriptors the driver took back (sized with EWMA 40000: 4096), and then takes the 12 old
    buffers plus six of the new ones."""
    cfg = RingConfig(VirtioRxSetup(mergeable=True, ring_size=64), batch=3)
    run = replay(lookup("6.12"), cfg, [40000] * 3)
    assert [f.poll for f in run.frames] == [1, 1, 2]
    assert [f.ring.posted for f in run.frames] == [12, 64, 46]
    fill = run.frames[1].refill
    assert fill is not None and (len(fill.buffers), fill.buf_len, fill.ewma) == (52, 4096, 40000)
    third = run.frames[2]
    assert [p.seq for p in third.buffers] == list(range(52, 70))
    assert [p.buf.len for p in third.buffers] == [1536] * 10 + [2048, 1536] + [4096] * 6
    assert third.trace.skb is not None
    assert third.trace.skb.truesize == 1280 + 11 * 1536 + 2048 + 6 * 4096 == 44800


def test_frame_larger_than_a_full_ring_stalls() -> None:
    with pytest.raises(VnetrxError, match="rx stall at frame 1") as info:
        replay(lookup("6.12"), RingConfig(VirtioRxSetup(mergeable=True, ring_size=8)), [60, 65535])
    assert info.value.exit_code == 1


@given(
    kernel=st.sampled_from(VIRTIO),
    frames=st.lists(st.integers(14, 65535), min_size=1, max_size=40),
    ring_size=st.sampled_from([128, 256, 1024]),
    batch=st.integers(1, 80),
)
def test_every_posted_buffer_is_used_once_in_order(
    kernel: str, frames: list[int], ring_size: int, batch: int
) -> None:
    cfg = RingConfig(VirtioRxSetup(mergeable=True, mtu=9000, ring_size=ring_size), batch=batch)
    run = replay(lookup(kernel), cfg, frames)
    seqs = [p.seq for f in run.frames for p in f.buffers]
    assert seqs == list(range(len(seqs)))
    ewma = 0
    for f in run.frames:
        lens = [p.buf.len for p in f.buffers]
        assert sum(lens) >= 12 + f.frame_len > sum(lens[:-1])  # num_buffers is minimal
        assert f.trace.skb is not None
        assert f.trace.skb.len == f.frame_len - 14
        assert f.ewma_before == ewma  # the average carries from frame to frame
        assert f.ewma_after is not None and f.ewma_after > 0
        ewma = f.ewma_after
        if f.refill is not None:  # a fill tops the ring up: only frames in flight are missing
            assert f.ring.num_free == 0 and f.ring.posted <= ring_size
    final = run.final
    assert final.posted + final.num_free == ring_size
    assert final.num_free <= cfg.refill_threshold
    assert sum(n for _, n in final.posted_lens) == final.posted


def test_feeding_in_two_parts_equals_one_replay() -> None:
    """feed() carries on from the state it leaves: two runs over a split list are one."""
    k, cfg = lookup("6.12"), RingConfig(VirtioRxSetup(mergeable=True, mtu=9000))
    frames = [60] * 11 + [9014, 9018] + [9000] * 30
    state, _ = open_ring(k, cfg)
    head = tuple(feed(k, cfg, state, frames[:12], want_trace=every_frame))
    tail = tuple(feed(k, cfg, state, frames[12:], first_index=12, want_trace=every_frame))
    whole = replay(k, cfg, frames)
    assert head + tail == whole.frames
    assert view(k, cfg, state) == whole.final


def test_polls_give_the_batches_in_order() -> None:
    run = replay(lookup("6.12"), RingConfig(
        VirtioRxSetup(mergeable=True), polls=(3, 1, 2)), [60] * 6)
    assert [f.poll for f in run.frames] == [1, 1, 1, 2, 3, 3]
    with pytest.raises(InputError, match=r"add up to the 6 frame\(s\)"):
        replay(lookup("6.12"), RingConfig(VirtioRxSetup(mergeable=True), polls=(3, 1)), [60] * 6)


@pytest.mark.parametrize(("kernel", "cfg", "with_hdrs"), [
    ("5.12", RingConfig(VirtioRxSetup(mergeable=True, mtu=9000)), False),
    ("6.1", RingConfig(VirtioRxSetup(mergeable=True, mtu=9000), batch=8), False),
    ("6.1", RingConfig(VirtioRxSetup(mergeable=True, mtu=9000), batch=8), True),
    ("6.12", RingConfig(VirtioRxSetup(mergeable=True, guest_gso=True, ring_size=64)), False),
    ("6.12", RingConfig(VirtioRxSetup(mergeable=True, guest_gso=True, ring_size=64)), True),
    ("6.12.0", RingConfig(VirtioRxSetup(mergeable=True, mtu=1500)), False),
    ("6.18", RingConfig(VirtioRxSetup(mergeable=True, mtu=9000, hdr_len=20)), True),
    ("7.3", RingConfig(VirtioRxSetup(mergeable=True, mtu=9000), batch=3), False),
    ("6.1", RingConfig(VirtioRxSetup(mergeable=False)), False),
    ("7.3", RingConfig(VirtioRxSetup(mergeable=False, ring_size=16)), False),
    ("7.3", RingConfig(VirtioRxSetup(mergeable=False, ring_size=16)), True),
    # XDP: the frame's trace decides (no plan layer), once per geometry too
    ("6.1", RingConfig(VirtioRxSetup(mergeable=False, xdp="drop")), False),
    ("6.1", RingConfig(VirtioRxSetup(mergeable=True, xdp="tx")), False),
    ("6.12", RingConfig(VirtioRxSetup(mergeable=True, mtu=9000, xdp="pass", xdp_frags=True)),
     False),
    ("6.12", RingConfig(VirtioRxSetup(mergeable=False, xdp="pass")), True),
    ("7.3", RingConfig(VirtioRxSetup(mergeable=True, xdp="pass")), True),
])
def test_plan_rows_equal_the_narrated_traces(kernel: str, cfg: RingConfig, with_hdrs: bool
                                             ) -> None:
    """Each record comes from the plan layer (one decision per geometry, reused); its narrated
    trace is made separately, by the engine, on the same buffers. Two computations of one skb:
    over 1500 mixed frames (short packets, small-mode drops, jumbo frames, 64 KiB frames on a
    guest-GSO ring; with headers: CHECKSUM_PARTIAL, TCPv4 GSO, a GSO header without a size)
    they agree."""
    import random

    from vnetrx.paths.virtio_net_hdr import VnetHdr

    rng = random.Random(f"{kernel}{cfg}{with_hdrs}")
    top = 1600 if not cfg.device.mergeable else 9014 if cfg.device.mtu == 9000 else 65535
    frames = [rng.choice([10, 60, 1514, 1518, 1519, rng.randint(1, top)]) for _ in range(1500)]
    partial = VnetHdr(1, 0, 0, 0, 34, 16)  # NEEDS_CSUM, TCP after a 20-byte IPv4 header
    gso = VnetHdr(1, 1, 66, 1448, 34, 16)  # TCPV4, MSS 1448
    bad_gso = VnetHdr(0, 1, 0, 0, 0, 0)  # TCPV4 without a size: receive_buf drops it
    hdrs = [rng.choice([None, partial, partial, gso, bad_gso]) for _ in frames]
    run = replay(lookup(kernel), cfg, frames, hdrs if with_hdrs else None)
    seen = set()
    for f in run.frames:
        t = f.trace
        assert t is not None
        d = f.decision
        assert (d.outcome, d.reason, d.counter) == (t.outcome, t.reason, t.counter), f.index
        seen.add((d.reason, None if d.skb is None else (d.skb.ip_summed, d.skb.gso_size)))
        if t.skb is None:
            assert d.skb is None
            continue
        assert d.skb is not None and t.cost is not None
        assert d.skb.frags == () and d.skb.frag_list == ()  # where they are: the trace's
        assert d.skb == t.skb._replace(frags=(), frag_list=()), f.index
        assert (d.allocations, d.bytes_copied) == (t.cost.allocations, t.cost.bytes_copied)
        assert d.frag_list == len(t.skb.frag_list)
    # what the headers make: CHECKSUM_PARTIAL (3), GSO, a drop
    if with_hdrs and cfg.device.xdp is None:
        assert {(None, (3, 0)), (None, (3, 1448)), ("bad_gso", None)} <= seen, seen
    if with_hdrs and cfg.device.xdp is not None:  # XDP refuses GSO and (6.10+) NEEDS_CSUM frames
        refused = {getattr(reason, "value", reason) for reason, _ in seen}
        assert {"xdp_gso_type", "xdp_needs_csum"} <= refused, seen


def test_decisions_are_kept_by_header_value_and_bounded() -> None:
    """``decided`` keeps decisions by header, then geometry: an equal header made anew (a JSON
    input's frames) finds the decision of the first; and past DECISIONS_KEPT decisions every
    table is dropped (a bound on memory), the next decisions made again, the same."""
    from vnetrx.paths.virtio_net_hdr import VnetHdr
    from vnetrx.replay.napi import DECISIONS_KEPT, _Run

    k, cfg = lookup("6.12"), RingConfig(VirtioRxSetup(mergeable=True))
    state, _ = open_ring(k, cfg)
    used = next(feed(k, cfg, state, [1000])).buffers  # a 1000-byte frame's buffer
    run = _Run(k, cfg, open_ring(k, cfg)[0], no_frame)
    partial = VnetHdr(1, 0, 0, 0, 34, 16)
    first = run.decided(1000, partial, used)
    assert run.decided(1000, VnetHdr(1, 0, 0, 0, 34, 16), used) is first  # equal: kept
    assert run.decided(1000, None, used) is not first and run.kept == 2
    plain = run.decided(1000, None, used)  # the frame before's geometry and header: its own
    assert plain is run.decided(1000, None, used) and plain.skb != first.skb
    assert run.decided(1000, partial, used) is first  # the same geometry, the other header's
    udp = VnetHdr(1, 0, 0, 0, 34, 6)  # csum_offset of udphdr.check
    u = run.decided(1000, udp, used)
    for _ in range(3):  # two headers taking turns (the one before the last is kept at hand)
        assert run.decided(1000, partial, used) is first
        assert run.decided(1000, udp, used) is u
        assert run.decided(1000, None, used) is plain
    assert u.skb != first.skb and run.kept == 3
    # csum_start 14..: every header another (most past the frame: dropped, decided alike)
    for start in range(14, 14 + DECISIONS_KEPT):
        run.decided(1000, VnetHdr(1, 0, 0, 0, start, 16), used)
        assert run.kept <= DECISIONS_KEPT and len(run.by_hdr) <= DECISIONS_KEPT
    again = run.decided(1000, partial, used)
    assert again is not first and again == first  # made again after the drop, the same


def test_records_stream_one_poll_at_a_time() -> None:
    """feed() takes frames as they come: the first record is out before the source runs dry."""
    k, cfg = lookup("6.12"), RingConfig(VirtioRxSetup(mergeable=True))
    state, _ = open_ring(k, cfg)
    taken = []

    def source():  # type: ignore[no-untyped-def]
        for n in range(10**9):
            taken.append(n)
            yield 1000

    records = feed(k, cfg, state, source())
    first = next(records)
    assert first.index == 0 and len(taken) <= 2


def test_compact_jsonl_lines_are_the_rows_json() -> None:
    """replay --jsonl writes each row directly; it must be json.dumps of row_to_dict."""
    import json

    from vnetrx.paths.virtio_net_hdr import VnetHdr
    from vnetrx.render.replay_json import _Rows, new_parts, row_line, row_to_dict
    from vnetrx.replay.refill import ring_config

    lengths = [10, 60, 1514, 1519, 9000, 3000] * 12
    bad_gso = VnetHdr(0, 1, 0, 0, 0, 0)  # TCPV4 without a size: dropped after receive_buf
    partial = VnetHdr(1, 0, 0, 0, 34, 16)  # NEEDS_CSUM: ip_summed CHECKSUM_PARTIAL
    hdrs = [None, bad_gso, partial] * 24
    outcomes = set()
    framed = 0  # records whose trace lists frags
    mergeable_9000 = VirtioRxSetup(mergeable=True, mtu=9000)
    for kernel, cfg, with_hdrs in (
        ("6.12", RingConfig(mergeable_9000), False),
        ("6.12", RingConfig(mergeable_9000), True),
        ("7.3", RingConfig(VirtioRxSetup(mergeable=False, ring_size=16)), False),
        ("6.12", RingConfig(mergeable_9000._replace(xdp="pass")), False),
        ("6.12", RingConfig(mergeable_9000._replace(xdp="pass", xdp_frags=True)), False),
        ("6.1", RingConfig(VirtioRxSetup(mergeable=False, xdp="drop")), False),
    ):
        k = lookup(kernel)
        run = replay(k, cfg, lengths, hdrs if with_hdrs else None)
        label = ring_config(k, cfg).alloc.label
        parts = new_parts()  # what write_rows keeps: each decision's part, written once
        rows = _Rows(label)  # one writer for the run: its parts and decimal texts kept
        for f in run.frames:
            assert rows.line(f) == json.dumps(row_to_dict(run, f))
            outcomes.add((f.decision.outcome, f.decision.reason))
            assert row_line(label, f) == json.dumps(row_to_dict(run, f))
            assert row_line(label, f, parts) == json.dumps(row_to_dict(run, f))
            # a record's skb never says where its frags are (XDP's neither): the trace does
            skb = f.decision.skb
            assert skb is None or (skb.frags, skb.frag_list) == ((), ())
            framed += f.trace is not None and f.trace.skb is not None and bool(f.trace.skb.frags)
    assert framed  # (XDP multi-buffer frames among them)
    # the cases the writer tells apart: received, dropped by the device, by the driver, by XDP
    assert {o for o, _ in outcomes} >= {"build_skb", "copy", "drop", "xdp_drop"}
    assert any(r is not None for _, r in outcomes)


def test_compact_rows_past_a_thousand_frames() -> None:
    """Rows whose index and poll have four digits or more (written from kept texts of their
    leading and last three digits), a poll of None, and runs of buffers on one page (their
    texts kept by first offset) are json.dumps of row_to_dict."""
    import json

    from vnetrx.render.replay_json import _Rows, row_to_dict
    from vnetrx.replay.refill import ring_config
    from vnetrx.replay.state import FrameRecord

    k = lookup("6.12")
    cfg = RingConfig(VirtioRxSetup(mergeable=True, mtu=9000))
    run = replay(k, cfg, [60, 9014, 1514, 3014, 66] * 220)
    rows = _Rows(ring_config(k, cfg).alloc.label)
    for f in run.frames:
        assert rows.line(f) == json.dumps(row_to_dict(run, f))
    assert run.frames[-1].index == 1099 and any(len(f.buffers) == 6 for f in run.frames)
    last = run.frames[-1]
    for index, poll in ((1000, 1001), (123456, None), (10**9 + 7, 10**9 + 8)):
        odd = FrameRecord(index, last.frame_len, poll, last.buffers, last.decision,
                          last.ewma_before, last.ewma_after, last.refill, last.ring)
        assert rows.line(odd) == json.dumps(row_to_dict(run, odd))


def test_compact_row_of_a_decision_met_with_other_lengths() -> None:
    """The writer keeps a decision's frame and buffer lengths in its text (frames sharing a
    decision share its geometry); a record whose lengths differ from the first's, were a
    decision ever shared so, is still written from its own lengths."""
    import json

    from vnetrx.render.replay_json import _Rows, row_to_dict
    from vnetrx.replay.refill import ring_config
    from vnetrx.replay.state import FrameRecord

    k = lookup("6.12")
    cfg = RingConfig(VirtioRxSetup(mergeable=True))
    run = replay(k, cfg, [60, 1000, 60])
    first, other, again = run.frames
    assert first.decision is again.decision and first.decision is not other.decision
    rows = _Rows(ring_config(k, cfg).alloc.label)
    assert rows.line(first) == json.dumps(row_to_dict(run, first))
    # the 1000-byte frame given the 60-byte frame's decision: its own lengths in the row
    odd = FrameRecord(other.index, other.frame_len, other.poll, other.buffers, first.decision,
                      other.ewma_before, other.ewma_after, other.refill, other.ring)
    line = rows.line(odd)
    assert line == json.dumps(row_to_dict(run, odd))
    assert '"frame_len": 1000' in line and '"len": 46' in line  # (the 60-byte frame's skb)
    assert rows.line(again) == json.dumps(row_to_dict(run, again))


def test_header_less_frames_are_planned_once_per_geometry() -> None:
    """A frame without a header is decided by its length and its buffers' lengths (and
    contiguity) alone, so the plan layer runs once per such geometry and every frame of that
    geometry gets that one decision (the same object: observed without patching the module,
    which compiled code would not look up); the 1500-frame comparison above checks the reused
    decisions against the engine's traces."""
    run = replay(lookup("6.12"), RingConfig(
        VirtioRxSetup(mergeable=True)), [60] * 100 + [1514] * 100,
                 want_trace=no_frame)
    decided: dict[tuple[int, int], set[int]] = {}
    for f in run.frames:
        decided.setdefault((f.frame_len, f.buffers[0].buf.len), set()).add(id(f.decision))
    # 1536-byte buffers (ALIGN(12 + GOOD_PACKET_LEN 1518, 64)), and the last of each 32 KiB
    # page, which absorbs the hole: 2048
    assert set(decided) == {(60, 1536), (60, 2048), (1514, 1536), (1514, 2048)}
    assert all(len(ids) == 1 for ids in decided.values()), decided
    assert len({i for ids in decided.values() for i in ids}) == 4


_BUFFER = st.tuples(st.integers(0, 3), st.integers(0, 40000), st.integers(1, (1 << 20) - 1))


@given(st.lists(st.tuples(st.integers(0, 65535), st.lists(_BUFFER, max_size=6)),
                min_size=2, max_size=2))
# the same geometry in other places (contiguous in page 0 / in page 3): one key
@example([(3000, [(0, 0, 1536), (0, 1536, 1536)]), (3000, [(3, 64, 1536), (3, 1600, 1536)])])
# a 0-byte frame in two buffers against a frame in one: the leading bit keeps them apart
@example([(0, [(0, 0, 3), (0, 3, 5)]), (3 << 1 | 1 << 17, [(0, 0, 5)])])
# a run of six (a 9014-byte frame's) and the same run one buffer shorter, or not contiguous
@example([(9014, [(1, 1536 * i, 1536) for i in range(6)]),
          (9014, [(1, 1536 * i, 1536) for i in range(5)])])
@example([(3014, [(0, 0, 1536), (0, 1536, 1536)]), (3014, [(0, 0, 1536), (0, 1600, 1536)])])
def test_geometry_keys_tell_geometries_apart(pair: list[tuple[int, list[Any]]]) -> None:
    """Two frames share a decision key exactly when their lengths, buffer lengths and
    contiguity (what a decision reads) are the same; a frame in one buffer gets the key
    ``decided`` makes for it inline; buffers that follow one another, all of one length, a key
    of their own (``_run_geometry``: a machine word), any others ``_geometry``'s."""
    from itertools import pairwise

    from vnetrx.paths.virtio_net.buffers import PostedBuffer
    from vnetrx.replay.napi import BUFFER_BITS, FIRST_BIT, _geometry, _run_geometry
    from vnetrx.replay.state import Posted

    def shown(bufs: list[Any]) -> tuple[Posted, ...]:
        return tuple(Posted(i, PostedBuffer(*b)) for i, b in enumerate(bufs))

    def read(frame_len: int, bufs: list[Any]) -> tuple[object, ...]:  # what a decision reads
        return (frame_len, tuple(b[2] for b in bufs),
                tuple(a[0] == b[0] and a[1] + a[2] == b[1] for a, b in pairwise(bufs)))

    (len_a, a), (len_b, b) = pair
    same = read(len_a, a) == read(len_b, b)
    assert (_geometry(len_a, shown(a)) == _geometry(len_b, shown(b))) == same
    # decided's key: one buffer inline, more by _run_geometry
    assert (_run_geometry(len_a, shown(a)) == _run_geometry(len_b, shown(b))) == same
    if len(a) == 1:
        assert _geometry(len_a, shown(a)) == (FIRST_BIT | len_a) << BUFFER_BITS | a[0][2] << 1
    run = len(a) > 0 and all(x[0] == y[0] and x[1] + x[2] == y[1] and x[2] == y[2]
                             for x, y in pairwise(a))
    key = _run_geometry(len_a, shown(a))
    assert (key < 0) == run and (run or key == _geometry(len_a, shown(a)))
    assert -(1 << 62) <= key < 0 if run else key > 0  # a run's fits a machine word
