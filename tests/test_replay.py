"""The ring model behind `vnetrx replay` (issue 9): carving and EWMA arithmetic against the fact
sheet (docs/kernel/virtio-net-rx.md §5.1-§5.5), refill timing as virtnet_receive does it
(@6.1.192, @6.12.117), and whole sequences a real guest received."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vnetrx.errors import InputError, UnsupportedError, VnetrxError
from vnetrx.kernel.build import build_config
from vnetrx.kernel.registry import lookup
from vnetrx.paths.virtio_net.buffers import PageCursor, PostedBuffer, carve, ewma_pkt_len_add
from vnetrx.paths.virtio_net.setup import rx_allocator
from vnetrx.replay import (
    RingConfig,
    feed,
    open_ring,
    replay,
    view,
)

MERGEABLE = RingConfig(mergeable=True)
SMALL = RingConfig(mergeable=False)


def _layout(kernel: str, cfg: RingConfig, count: int) -> list[tuple[int, int, int]]:
    _, fill = open_ring(lookup(kernel), cfg)
    return [(p.buf.frag_index, p.buf.offset, p.buf.len) for p in fill.buffers[:count]]


# --- §5.4-§5.5: the initial fill -------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["5.12", "6.1", "6.12"])
def test_initial_fill_1536_buffers_21st_absorbs_the_hole(kernel: str) -> None:
    """EWMA 0 → clamp to min_buf_len 1518 → ALIGN(12 + 1518, 64) = 1536; 20 of them from offset
    0, the 21st at 30720 takes the remaining 2048, the 22nd opens the next page."""
    layout = _layout(kernel, MERGEABLE, 22)
    assert layout[:20] == [(0, 1536 * i, 1536) for i in range(20)]
    assert layout[20:] == [(0, 30720, 2048), (1, 0, 1536)]


@pytest.mark.parametrize("kernel", ["6.18", "6.18.44"])
def test_initial_fill_from_6_13_starts_after_the_dma_header(kernel: str) -> None:
    """virtnet_rq_dma (16 bytes) heads every page: 16, 1552, ... 29200, then 30736 with 2032."""
    layout = _layout(kernel, MERGEABLE, 22)
    assert layout[:20] == [(0, 16 + 1536 * i, 1536) for i in range(20)]
    assert layout[20:] == [(0, 30736, 2032), (1, 16, 1536)]


def test_initial_fill_hash_report_header_1600_buffers() -> None:
    """§5.4: hdr_len 20 → ALIGN(20 + 1518, 64) = 1600; the 20th ends at 32000 and absorbs the
    768 left: 2368."""
    layout = _layout("6.12", RingConfig(mergeable=True, hdr_len=20), 21)
    assert layout[18:] == [(0, 28800, 1600), (0, 30400, 2368), (1, 0, 1600)]


def test_initial_fill_7x_page_pool_pairs_per_page() -> None:
    assert _layout("7.3", MERGEABLE, 4) == [(0, 0, 1536), (0, 1536, 2560), (1, 0, 1536),
                                             (1, 1536, 2560)]


def test_initial_fill_covers_the_ring_and_leaves_the_page_frag_where_it_stopped() -> None:
    """256 buffers = 12 pages of 21 + 4 buffers: the page_frag is at frag12 + 4 x 1536."""
    state, fill = open_ring(lookup("6.12"), MERGEABLE)
    assert len(fill.buffers) == len(state.posted) == 256
    assert (fill.when, fill.ewma, fill.buf_len) == ("virtnet_open", 0, 1536)
    assert (state.alloc.page, state.alloc.offset, state.alloc.size) == (12, 6144, 32768)
    assert [p.seq for p in state.posted] == list(range(256))
    assert state.num_free == 0


def test_small_mode_fill_1920_buffers_17_per_page() -> None:
    """§5.2: bufsize SDA(12 + 64 + 1518) + 320 = 1920, no hole logic; 17 per 32 KiB page."""
    layout = _layout("6.12", SMALL, 18)
    assert layout == [(0, 1920 * i, 1920) for i in range(17)] + [(1, 0, 1920)]
    assert _layout("6.18", SMALL, 18)[16:] == [(0, 16 + 1920 * 16, 1920), (1, 16, 1920)]


def test_fresh_premapped_page_shrinks_a_whole_page_buffer() -> None:
    """add_recvbuf_mergeable @6.12.117: on a fresh page, len + 16 > size → len -= 16 (reached on
    64 KiB pages, where get_mergeable_buf_len tops out at the page size)."""
    k = lookup("6.18", build_config("arm64", 65536, None, 0, "debian"))
    buf, cursor = carve(rx_allocator(k), PageCursor(), 65536, mergeable=True)
    assert buf == PostedBuffer(0, 16, 65520)
    assert (cursor.page, cursor.offset) == (0, 65536)
    buf, cursor = carve(rx_allocator(k), cursor, 65536, mergeable=True)
    assert buf == PostedBuffer(1, 16, 65520)


# --- the EWMA ---------------------------------------------------------------------------------


def test_ewma_first_sample_then_63_64ths() -> None:
    """DECLARE_EWMA(pkt_len, 0, 64): e = v if e == 0 else (63e + v) >> 6, head_skb->len."""
    assert ewma_pkt_len_add(0, 60) == 60
    assert ewma_pkt_len_add(60, 9014) == (63 * 60 + 9014) >> 6 == 199
    assert ewma_pkt_len_add(199, 9018) == (63 * 199 + 9018) >> 6 == 336
    run = replay(lookup("6.12"), MERGEABLE, [60, 9014, 9018, 10, 1000])
    # the 10-byte frame is a short packet: dropped before an skb exists, no EWMA update
    assert [(f.ewma_before, f.ewma_after) for f in run.frames] == [
        (0, 60), (60, 199), (199, 336), (336, 336), (336, (63 * 336 + 1000) >> 6)]
    assert run.frames[3].trace.reason == "short_packet"


def test_small_mode_has_no_ewma_and_no_sysfs_size() -> None:
    run = replay(lookup("6.12"), SMALL, [1000])
    assert (run.frames[0].ewma_after, run.final.ewma, run.final.mergeable_rx_buffer_size) == (
        None, None, None)


def test_sysfs_buffer_size_follows_the_ewma() -> None:
    """mergeable_rx_buffer_size_show = get_mergeable_buf_len(ewma, room 0): 1536 at start (a
    real 6.12 guest printed 1536), 4096 = ALIGN(12 + min(9000, 4096 - 12), 64) after 9000s."""
    run = replay(lookup("6.12"), RingConfig(mergeable=True, mtu=9000), [9000])
    assert open_ring(lookup("6.12"), MERGEABLE)[0].ewma == 0
    assert run.frames[0].ring.mergeable_rx_buffer_size == 4096
    run = replay(lookup("6.12"), MERGEABLE, [1200, 2000])
    assert [f.ring.mergeable_rx_buffer_size for f in run.frames] == [1536, 1536]
    assert run.frames[1].ring.ewma == (63 * 1200 + 2000) >> 6 == 1212


# --- refill timing ----------------------------------------------------------------------------


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
    run = replay(lookup("6.12"), RingConfig(mergeable=True, ring_size=16), [1000] * 10)
    assert [f.index for f in run.frames if f.refill is not None] == [8]
    assert len(run.frames[8].refill.buffers) == 9  # type: ignore[union-attr]


def test_refill_after_jumbo_frames_posts_4096_and_the_page_end_absorbs_6144() -> None:
    """Six 9000-byte frames (6 buffers each) free 36 > 32: the refill sizes with EWMA 9000 →
    4096-byte buffers, continuing frag12 at 6144; the one at 26624 would leave 2048, which it
    absorbs (6144); frag13 then holds exactly eight."""
    run = replay(lookup("6.12"), RingConfig(mergeable=True, mtu=9000), [9000] * 7)
    fill = run.frames[5].refill
    assert fill is not None and (fill.ewma, fill.buf_len, len(fill.buffers)) == (9000, 4096, 36)
    assert [(p.buf.frag_index, p.buf.offset, p.buf.len) for p in fill.buffers[:8]] == [
        (12, 6144, 4096), (12, 10240, 4096), (12, 14336, 4096), (12, 18432, 4096),
        (12, 22528, 4096), (12, 26624, 6144), (13, 0, 4096), (13, 4096, 4096)]
    # the frames still use the 1536-byte buffers posted at open: the ring is FIFO
    assert {p.buf.len for f in run.frames for p in f.buffers} == {1536, 2048}
    assert dict(run.final.posted_lens)[4096] == 36 - 1


def test_batch_up_to_the_budget_per_poll_then_refill_after_each_poll() -> None:
    run = replay(lookup("6.12"), RingConfig(mergeable=True, batch=100), [60] * 100)
    assert [f.poll for f in run.frames] == [1] * 64 + [2] * 36
    assert [(f.index, len(f.refill.buffers)) for f in run.frames if f.refill] == [(63, 64),
                                                                                 (99, 36)]


def test_device_waits_for_the_refill_inside_a_batch() -> None:
    """Ring 64 (threshold 32), a batch of three 40000-byte frames (26 buffers each): two fit the
    initial fill, the third waits for the refill after the first poll, which posts only the 52
    descriptors the driver took back (sized with EWMA 40000: 4096), and then takes the 12 old
    buffers plus six of the new ones."""
    cfg = RingConfig(mergeable=True, ring_size=64, batch=3)
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


def test_a_32_entry_ring_raises_min_buf_len() -> None:
    """§5.4: min_buf_len = max(ceil((12 + 14 + 4 + 65535) / 32) - 12, 1518) = 2037 → 2112."""
    _, fill = open_ring(lookup("6.12"), RingConfig(mergeable=True, ring_size=32))
    assert fill.buf_len == 2112 and len(fill.buffers) == 32


def test_frame_larger_than_a_full_ring_stalls() -> None:
    with pytest.raises(VnetrxError, match="rx stall at frame 1") as info:
        replay(lookup("6.12"), RingConfig(mergeable=True, ring_size=8), [60, 65535])
    assert info.value.exit_code == 1


# --- whole sequences --------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["6.1", "6.12"])
def test_9014_then_9018_from_buffer_17(kernel: str) -> None:
    """Issue 9's observation (6.12 guest): 9014 then 9018 → truesize 10496 (1 frag) and 11008
    (2 frags). Assumption: since the interface came up the guest had received 11 frames that
    took one buffer each (any length up to 1524) and nothing refilled: the 9014 starts at
    buffer 11, the 9018 at 17, spanning the 2048-byte 21st buffer and the next page."""
    run = replay(lookup(kernel), RingConfig(mergeable=True, mtu=9000), [60] * 11 + [9014, 9018])
    first, second = run.frames[11], run.frames[12]
    assert [p.seq for p in first.buffers] == list(range(11, 17))
    assert [p.seq for p in second.buffers] == list(range(17, 23))
    assert first.trace.skb is not None and second.trace.skb is not None
    assert (first.trace.skb.truesize, first.trace.skb.nr_frags) == (10496, 1)
    assert (second.trace.skb.truesize, second.trace.skb.nr_frags) == (11008, 2)
    assert [p.buf.len for p in second.buffers] == [1536, 1536, 1536, 2048, 1536, 1536]
    assert [(f.page, f.offset, f.size) for f in second.trace.skb.frags] == [
        ("frag0", 26112 + 26, 6630), ("frag1", 0, 9018 + 12 - 6656)]


# A real guest boot (vnetrx lab, QEMU, ring 256, MTU 1500, mergeable): the frames in order with
# the truesize and nr_frags napi_gro_receive_entry printed, identical on Debian 6.1.192 and
# 6.12.117; for build_skb frames the head address modulo 32 KiB gave the buffer's page offset.
LAB_MERGEABLE = [
    (10, None, None), (13, None, None),  # short packets: dropped, one buffer each
    (14, 1280, 0), (60, 1280, 0), (100, 1280, 0), (127, 1280, 0), (128, 1280, 0),
    (129, 1792, 0), (200, 1792, 0), (1000, 1792, 0), (1204, 1792, 0), (1205, 2816, 1),
    (1400, 2816, 1), (1524, 2816, 1), (1525, 4352, 1), (2000, 4352, 1), (3000, 4352, 1),
    (1514, 2304, 0), (3060, 4352, 1), (3061, 5888, 1), (4000, 5888, 1), (9014, 10496, 1),
    (20000, 21760, 2), (65535, 68352, 3), (1100, 1792, 0), (1500, 2816, 1),
]
LAB_BUILD_SKB_OFFSETS = {129: 10752, 200: 12288, 1000: 13824, 1204: 15360, 1514: 30720,
                         1100: 10752}


@pytest.mark.parametrize("kernel", ["6.1.192", "6.12.117"])
def test_real_guest_mergeable_sequence(kernel: str) -> None:
    run = replay(lookup(kernel), MERGEABLE, [n for n, _, _ in LAB_MERGEABLE])
    got = [(f.frame_len, f.trace.skb and f.trace.skb.truesize, f.trace.skb and f.trace.skb.nr_frags)
           for f in run.frames]
    assert got == LAB_MERGEABLE
    offsets = {f.frame_len: f.buffers[0].buf.offset for f in run.frames
               if f.trace.outcome == "build_skb"}
    assert offsets == LAB_BUILD_SKB_OFFSETS
    # the 65535-byte frame used 43 buffers (frag2+9216 .. frag4+9216); 1100 lands after them
    big = run.frames[23]
    assert (len(big.buffers), big.buffers[0].seq) == (43, 48)
    assert (run.frames[24].buffers[0].buf.frag_index, run.frames[24].buffers[0].seq) == (4, 91)


def test_real_guest_small_sequence() -> None:
    """vnetrx lab --mode small on 6.12.117: every frame up to 1518 bytes is build_skb in its own
    1920-byte buffer (truesize 2176); the head addresses walk 1920 apart and the 18th buffer
    (the 1514-byte frame after the 13-byte short packet and 16 others) opens a new page at 0."""
    lens = [13, 60, 64, 100, 127, 128, 129, 130, 200, 256, 512, 1000, 1024, 1200, 1400, 1499,
            1500, 1514, 1515, 1517, 1518, 1519, 1600, 9000]
    run = replay(lookup("6.12.117"), SMALL, lens)
    built = [f for f in run.frames if f.trace.skb is not None]
    assert len(built) == 20 and {f.trace.skb.truesize for f in built} == {2176}  # type: ignore[union-attr]
    assert [(f.buffers[0].buf.frag_index, f.buffers[0].buf.offset) for f in built][15:18] == [
        (0, 30720), (1, 0), (1, 1920)]
    # longer than one small buffer: the device cannot deliver them and uses no buffer
    assert [(f.frame_len, f.buffers, f.poll) for f in run.frames[-3:]] == [
        (1519, (), None), (1600, (), None), (9000, (), None)]
    assert run.final.next_buffer is not None and run.final.next_buffer.seq == 21


def test_7x_second_buffer_of_a_pool_page_is_2560() -> None:
    """§12.1: 7.x, 1000-byte frames: the first buffer of a pool page gives truesize 1792, the
    second (alloc 2560) 2816."""
    run = replay(lookup("7.3"), MERGEABLE, [1000, 1000])
    assert [f.trace.skb.truesize for f in run.frames] == [1792, 2816]  # type: ignore[union-attr]
    assert [f.trace.buffers[0].page for f in run.frames] == ["pool0", "pool0"]


def test_replay_is_pure() -> None:
    k = lookup("6.12")
    assert replay(k, MERGEABLE, [60, 3000, 9000]) == replay(k, MERGEABLE, [60, 3000, 9000])


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cfg", "frames", "message"),
    [
        (MERGEABLE, [], "no frames"),
        (MERGEABLE, [60, 0], "frame 1: length 0 out of range"),
        (MERGEABLE, [65536], "length 65536 out of range"),
        (RingConfig(mergeable=True, ring_size=0), [60], "ring size 0 out of range"),
        (RingConfig(mergeable=True, batch=0), [60], "batch 0 out of range"),
    ],
)
def test_bad_input_is_an_input_error(cfg: RingConfig, frames: list[int], message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        replay(lookup("6.12"), cfg, frames)
    assert info.value.exit_code == 2


def test_big_mode_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="big mode"):
        replay(lookup("6.12"), RingConfig(mergeable=False, mtu=9000), [1000])


# --- properties -------------------------------------------------------------------------------


@given(
    kernel=st.sampled_from(["5.15", "6.1", "6.12", "6.18", "7.3"]),
    frames=st.lists(st.integers(14, 65535), min_size=1, max_size=40),
    ring_size=st.sampled_from([128, 256, 1024]),
    batch=st.integers(1, 80),
)
def test_every_posted_buffer_is_used_once_in_order(
    kernel: str, frames: list[int], ring_size: int, batch: int
) -> None:
    cfg = RingConfig(mergeable=True, mtu=9000, ring_size=ring_size, batch=batch)
    run = replay(lookup(kernel), cfg, frames)
    seqs = [p.seq for f in run.frames for p in f.buffers]
    assert seqs == list(range(len(seqs)))
    ewma = 0
    for f in run.frames:
        lens = [p.buf.len for p in f.buffers]
        assert sum(lens) >= 12 + f.frame_len > sum(lens[:-1])  # num_buffers is minimal
        assert f.trace.skb is not None
        assert f.trace.skb.len == f.frame_len - 14
        ewma = ewma_pkt_len_add(ewma, f.frame_len)
        assert f.ewma_after == ewma
        if f.refill is not None:  # a fill tops the ring up: only frames in flight are missing
            assert f.ring.num_free == 0 and f.ring.posted <= ring_size
    final = run.final
    assert final.posted + final.num_free == ring_size
    assert final.num_free <= cfg.refill_threshold
    assert sum(n for _, n in final.posted_lens) == final.posted


def test_feeding_in_two_parts_equals_one_replay() -> None:
    """feed() is the pure step: state in, new state and records out."""
    k, cfg = lookup("6.12"), RingConfig(mergeable=True, mtu=9000)
    frames = [60] * 11 + [9014, 9018] + [9000] * 30
    state, _ = open_ring(k, cfg)
    state, head = feed(k, cfg, state, frames[:12])
    state, tail = feed(k, cfg, state, frames[12:], first_index=12)
    whole = replay(k, cfg, frames)
    assert head + tail == whole.frames
    assert view(k, cfg, state) == whole.final


# --- real guests past the first ring's worth of buffers --------------------------------------

DATA = Path(__file__).parent / "data" / "replay"
_ENTRY = re.compile(
    r"napi_gro_receive_entry: .*? len=(\d+) data_len=(\d+) truesize=(\d+) .*?nr_frags=(\d+)")
_KPROBE = re.compile(r"gro: .*? head=0x([0-9a-f]+) data=0x[0-9a-f]+ tail=(\d+) end=(\d+)")


def _guest(name: str) -> tuple[list[int], list[tuple[int, ...]]]:
    """(lengths sent, per frame: len, data_len, truesize, nr_frags, tail, end, head % 32 KiB)."""
    text = (DATA / name).read_text()
    lengths = [int(n) for n in text.splitlines()[1].split(":", 1)[1].split(",")]
    entries, probes = _ENTRY.findall(text), _KPROBE.findall(text)
    seen = [(*(int(x) for x in e), int(p[1]), int(p[2]), int(p[0], 16) % 32768)
            for e, p in zip(entries, probes, strict=True)]
    return lengths, seen[: len(lengths)]  # the last event is the guest's end-of-run marker


def _mismatches(kernel: str, cfg: RingConfig, name: str) -> list[int]:
    lengths, seen = _guest(name)
    assert len(lengths) == len(seen) == 64
    run = replay(lookup(kernel), cfg, lengths)
    bad = []
    for f, obs in zip(run.frames, seen, strict=True):
        skb = f.trace.skb
        assert skb is not None
        pred = (skb.len, skb.data_len, skb.truesize, skb.nr_frags, skb.tail, skb.end)
        head_ok = f.trace.outcome != "build_skb" or f.buffers[0].buf.offset == obs[6]
        if pred != obs[:6] or not head_ok:
            bad.append(f.index)
    return bad


@pytest.mark.parametrize("kernel", ["6.1.192", "6.12.117"])
@pytest.mark.parametrize("batch", [1, 64])
def test_real_guest_64_jumbo_frames_through_two_rings(kernel: str, batch: int) -> None:
    """64 frames of 60..16384 bytes (305 buffers: the last 49 come from refills) on real 6.1
    and 6.12 guests, MTU 9000: every frame's len, data_len, truesize, nr_frags, tail, end and,
    for build_skb, the buffer's offset in its page match. The EWMA passes 4084 with the first
    frame, so every refill posts 4096-byte buffers whatever the poll timing."""
    cfg = RingConfig(mergeable=True, mtu=9000, batch=batch)
    assert _mismatches(kernel, cfg, f"mergeable-mtu9000-random-{kernel}.log") == []


def test_real_guest_refill_timing_decides_the_buffer_sizes() -> None:
    """30 frames of about 1200 bytes, then 34 of 12000..16000: the refills are sized by an EWMA
    still climbing, so when the driver polled matters. The 6.12 guest (TCG) received all 64 in
    one go: the ring ran dry after frame 52 (252 buffers), then one poll, one refill of 252 with
    EWMA 5175 → 4096-byte buffers. One frame per poll instead would refill every few frames with
    1536..4096-byte buffers as the EWMA climbs: from frame 53 (the first in a refilled buffer)
    nothing matches."""
    name = "mergeable-mtu9000-ramp-6.12.117.log"
    assert _mismatches("6.12.117", RingConfig(mergeable=True, mtu=9000, batch=64), name) == []
    one_by_one = _mismatches("6.12.117", RingConfig(mergeable=True, mtu=9000), name)
    assert one_by_one == list(range(53, 64))


def test_real_guest_poll_boundary_found_by_the_model() -> None:
    """The same ramp on the 6.1 guest: it polled once after frame 32 (its refill then posted 58
    buffers of 1792 bytes, EWMA 1737), then took the rest; with that grouping (--polls 33,31)
    all 64 match. (The split was found by trying every two-poll grouping against the log.)"""
    name = "mergeable-mtu9000-ramp-6.1.192.log"
    cfg = RingConfig(mergeable=True, mtu=9000, polls=(33, 31))
    assert _mismatches("6.1.192", cfg, name) == []
    assert _mismatches("6.1.192", RingConfig(mergeable=True, mtu=9000, batch=64), name) != []


def test_polls_give_the_batches_in_order() -> None:
    run = replay(lookup("6.12"), RingConfig(mergeable=True, polls=(3, 1, 2)), [60] * 6)
    assert [f.poll for f in run.frames] == [1, 1, 1, 2, 3, 3]
    with pytest.raises(InputError, match=r"add up to the 6 frame\(s\)"):
        replay(lookup("6.12"), RingConfig(mergeable=True, polls=(3, 1)), [60] * 6)


@pytest.mark.parametrize(("guest_gso", "mtu", "ring_size", "expected"), [
    # mergeable_min_buf_len @6.1/@6.12: max(ceil((12 + 14 + 4 + packet_len) / ring) - 12, 1518),
    # packet_len IP_MAX_MTU with vi->big_packets (guest GSO or MTU > 1500), else dev->max_mtu.
    (False, 1400, 32, 1518),  # ceil(1430 / 32) = 45
    (True, 1400, 32, 2037),  # ceil(65565 / 32) = 2049, minus hdr_len 12
    (False, 1500, 32, 2037),  # no VIRTIO_NET_F_MTU: max_mtu 65535
    (True, 1400, 256, 1518),  # ceil(65565 / 256) = 257: the floor wins at QEMU's default ring
])
def test_guest_gso_sizes_min_buf_len(guest_gso: bool, mtu: int, ring_size: int,
                                     expected: int) -> None:
    from vnetrx.replay.refill import min_buf_len

    cfg = RingConfig(mergeable=True, guest_gso=guest_gso, mtu=mtu, ring_size=ring_size)
    assert min_buf_len(lookup("6.12"), cfg) == expected


def test_guest_gso_without_mergeable_is_big_mode() -> None:
    with pytest.raises(UnsupportedError, match="guest GSO without --mergeable selects big mode"):
        replay(lookup("6.1"), RingConfig(mergeable=False, guest_gso=True), [60])
