"""The driver side of the ring replay (vnetrx/replay/refill.py): virtnet_open's and
try_fill_recv's buffers, as docs/kernel/virtio-net-rx.md §5.1-§5.5 give them (@6.1.192, @6.12.117)."""

from __future__ import annotations

import pytest

from vnetrx.kernel.build import build_config
from vnetrx.kernel.registry import lookup
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.paths.virtio_net.buffers import PageCursor, PostedBuffer, carve
from vnetrx.paths.virtio_net.setup import rx_allocator
from vnetrx.replay import RingConfig, open_ring, replay

MERGEABLE = RingConfig(VirtioRxSetup(mergeable=True))
SMALL = RingConfig(VirtioRxSetup(mergeable=False))


def _layout(kernel: str, cfg: RingConfig, count: int) -> list[tuple[int, int, int]]:
    _, fill = open_ring(lookup(kernel), cfg)
    return [(p.buf.frag_index, p.buf.offset, p.buf.len) for p in fill.buffers[:count]]


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
    layout = _layout("6.12", RingConfig(VirtioRxSetup(mergeable=True, hdr_len=20)), 21)
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


def test_sysfs_buffer_size_follows_the_ewma() -> None:
    """mergeable_rx_buffer_size_show = get_mergeable_buf_len(ewma, room 0): 1536 at start (a
    real 6.12 guest printed 1536), 4096 = ALIGN(12 + min(9000, 4096 - 12), 64) after 9000s."""
    run = replay(lookup("6.12"), RingConfig(VirtioRxSetup(mergeable=True, mtu=9000)), [9000])
    assert open_ring(lookup("6.12"), MERGEABLE)[0].ewma == 0
    assert run.frames[0].ring.mergeable_rx_buffer_size == 4096
    run = replay(lookup("6.12"), MERGEABLE, [1200, 2000])
    assert [f.ring.mergeable_rx_buffer_size for f in run.frames] == [1536, 1536]
    assert run.frames[1].ring.ewma == (63 * 1200 + 2000) >> 6 == 1212


def test_refill_after_jumbo_frames_posts_4096_and_the_page_end_absorbs_6144() -> None:
    """Six 9000-byte frames (6 buffers each) free 36 > 32: the refill sizes with EWMA 9000 →
    4096-byte buffers, continuing frag12 at 6144; the one at 26624 would leave 2048, which it
    absorbs (6144); frag13 then holds exactly eight."""
    run = replay(lookup("6.12"), RingConfig(VirtioRxSetup(mergeable=True, mtu=9000)), [9000] * 7)
    fill = run.frames[5].refill
    assert fill is not None and (fill.ewma, fill.buf_len, len(fill.buffers)) == (9000, 4096, 36)
    assert [(p.buf.frag_index, p.buf.offset, p.buf.len) for p in fill.buffers[:8]] == [
        (12, 6144, 4096), (12, 10240, 4096), (12, 14336, 4096), (12, 18432, 4096),
        (12, 22528, 4096), (12, 26624, 6144), (13, 0, 4096), (13, 4096, 4096)]
    # the frames still use the 1536-byte buffers posted at open: the ring is FIFO
    assert {p.buf.len for f in run.frames for p in f.buffers} == {1536, 2048}
    assert dict(run.final.posted_lens)[4096] == 36 - 1


def test_a_32_entry_ring_raises_min_buf_len() -> None:
    """§5.4: min_buf_len = max(ceil((12 + 14 + 4 + 65535) / 32) - 12, 1518) = 2037 → 2112."""
    _, fill = open_ring(lookup("6.12"), RingConfig(VirtioRxSetup(mergeable=True, ring_size=32)))
    assert fill.buf_len == 2112 and len(fill.buffers) == 32


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

    cfg = RingConfig(
        VirtioRxSetup(mergeable=True, guest_gso=guest_gso, mtu=mtu, ring_size=ring_size))
    assert min_buf_len(lookup("6.12"), cfg) == expected


def test_posted_compares_by_value() -> None:
    from vnetrx.replay.state import Posted

    a = Posted(7, PostedBuffer(0, 0, 1536), 2)
    assert a == Posted(7, PostedBuffer(0, 0, 1536), 2) and hash(a) == hash(Posted(7, a.buf, 2))
    assert a != Posted(8, a.buf, 2) and a != Posted(7, a.buf, 1) and a != Posted(7, PostedBuffer(
        0, 0, 2048), 2)
    assert Posted(7, a.buf).fill == 0
    assert repr(a) == "Posted(seq=7, buf=PostedBuffer(frag_index=0, offset=0, len=1536), fill=2)"
