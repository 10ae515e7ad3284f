"""The rx buffers (vnetrx/paths/virtio_net/buffers.py): one carver for `vnetrx trace` and
`vnetrx replay`, skb_page_frag_refill / virtnet_rq_alloc / page_pool as the kernel cuts pages,
get_mergeable_buf_len and the EWMA. Facts: docs/kernel/virtio-net-rx.md §5."""

from __future__ import annotations

from itertools import islice

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.paths.virtio_net.helpers import run
from tests.profiles import VIRTIO_AND_LTS_AS_TAGGED
from vnetrx.kernel.build import build_config
from vnetrx.kernel.registry import lookup
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.paths.virtio_net.buffers import (
    PostedBuffer,
    carve_fresh,
    ewma_pkt_len_add,
    get_mergeable_buf_len,
)
from vnetrx.paths.virtio_net.setup import rx_allocator
from vnetrx.replay import RingConfig, open_ring


def test_one_page_frag_page_holds_20_buffers_and_a_2048_byte_21st() -> None:
    """add_recvbuf_mergeable @6.1.192: the hole rule adds the 512 bytes no 1536-byte buffer fits
    to the 21st (20 x 1536 = 30720; 32768 - 30720 = 2048)."""
    posted = list(islice(carve_fresh(rx_allocator(lookup("6.1")), 1536, True), 22))
    assert posted[:20] == [PostedBuffer(0, 1536 * i, 1536) for i in range(20)]
    assert posted[20:] == [PostedBuffer(0, 30720, 2048), PostedBuffer(1, 0, 1536)]


@pytest.mark.parametrize(("kernel", "buf_len", "expected"), [
    # 6.13+ (premapped by default): the fresh page's first 16 bytes are struct virtnet_rq_dma;
    # 6aacd1484468 shrinks a buffer that would then overflow the page: frag0 + 16, 32752. Before
    # the fix vnetrx's trace said frag1 + 16 (it counted the 16 bytes before the refill test).
    ("6.18", 32768, ("frag0", 16, 32752)),
    ("6.18", 32760, ("frag0", 16, 32752)),  # shrunk to 32744, then the 8-byte hole is added
    # 6.12.117 has the fix but writes no dma header: shrunk to 32752, the hole gives 16 back
    ("6.12", 32768, ("frag0", 0, 32768)),
    ("6.1", 32768, ("frag0", 0, 32768)),  # no fix, no header
])
def test_a_page_sized_buffer_on_a_fresh_page(kernel: str, buf_len: int,
                                             expected: tuple[str, int, int]) -> None:
    t = run(kernel, frame_len=1000, mergeable=True, buf_len=buf_len)
    assert t.buffer is not None
    assert (t.buffer.page, t.buffer.page_offset, t.buffer.size) == expected


def test_a_64k_page_sized_buffer_on_a_premapped_64k_page() -> None:
    """arm64 with 64 KiB pages: get_mergeable_buf_len tops out at the page size, so every buffer
    hits the fresh-page shrink (65536 → 65520 at offset 16), one per page."""
    k = lookup("6.18", build_config("arm64", 65536, None, 0, "debian"))
    first, second = islice(carve_fresh(rx_allocator(k), 65536, True), 2)
    assert (first, second) == (PostedBuffer(0, 16, 65520), PostedBuffer(1, 16, 65520))


def test_7x_page_pool_pairs_per_4k_page() -> None:
    """page_pool_alloc_va @7.3.4: 1536 then the rest of the page (2560); a 3000-byte request,
    whose double does not fit a page, takes a page of its own."""
    alloc = rx_allocator(lookup("7.3"))
    assert list(islice(carve_fresh(alloc, 1536, True), 3)) == [
        PostedBuffer(0, 0, 1536), PostedBuffer(0, 1536, 2560), PostedBuffer(1, 0, 1536)]
    assert list(islice(carve_fresh(alloc, 3000, True), 2)) == [
        PostedBuffer(0, 0, 4096), PostedBuffer(1, 0, 4096)]


@given(
    kernel=st.sampled_from(VIRTIO_AND_LTS_AS_TAGGED),
    mergeable=st.booleans(),
    ring_size=st.sampled_from([8, 16, 32, 64, 128, 256]),
    mtu=st.sampled_from([1500, 1400, 9000, 65535]),
    guest_gso=st.booleans(),
    index=st.integers(0, 255),
)
def test_trace_and_replay_carve_the_same_buffers(kernel: str, mergeable: bool, ring_size: int,
                                                 mtu: int, guest_gso: bool, index: int) -> None:
    """`vnetrx trace --buffer-index N` and the ring `vnetrx replay` fills at virtnet_open (EWMA
    0) put buffer N at the same page, offset and length, whatever the ring size and MTU make
    min_buf_len (which sizes the buffers)."""
    if not mergeable and (guest_gso or mtu > 1500):
        return  # big mode: page chains, no posted-buffer history
    index %= ring_size
    cfg = RingConfig(
        VirtioRxSetup(mergeable=mergeable, mtu=mtu, guest_gso=guest_gso, ring_size=ring_size))
    k = lookup(kernel)
    _, fill = open_ring(k, cfg)
    want = fill.buffers[index].buf
    t = run(kernel, frame_len=60, mergeable=mergeable, mtu=mtu, guest_gso=guest_gso,
            ring_size=ring_size, ewma=0 if mergeable else None, buffer_index=index)
    assert t.buffer is not None
    label = ("pool" if kernel.startswith("7.") else "frag") + str(want.frag_index)
    assert (t.buffer.page, t.buffer.page_offset, t.buffer.size) == (label, want.offset, want.len)


@pytest.mark.parametrize(("ewma", "expected"), [
    # ALIGN(12 + clamp(ewma, min_buf_len 1518, 4096 - 12), 64), worked by hand
    (0, 1536),  # clamp → 1518; 1530 → 1536
    (1000, 1536),
    (1530, 1600),  # 1542 → 1600
    (1600, 1664),  # 1612 → 1664
    (4000, 4032),  # 4012 → 4032
    (5000, 4096),  # clamp → 4084; 4096
])
def test_get_mergeable_buf_len(ewma: int, expected: int) -> None:
    assert get_mergeable_buf_len(12, ewma, 1518, 4096, 64) == expected


def test_ewma_pkt_len_add_worked_by_hand() -> None:
    """DECLARE_EWMA(pkt_len, 0, 64): the first sample is taken as is, then (63 e + v) >> 6."""
    assert ewma_pkt_len_add(0, 1514) == 1514
    assert ewma_pkt_len_add(1514, 60) == 1491  # (95382 + 60) / 64 = 1491.3
    assert ewma_pkt_len_add(1491, 9014) == 1608  # (93933 + 9014) / 64 = 1608.5
    assert ewma_pkt_len_add(64, 0) == 63  # (4032 + 0) / 64 = 63


def test_posted_buffers_compare_by_value() -> None:
    """A plain class (a replay makes one per posted buffer), equal and hashed by its fields."""
    a, b = PostedBuffer(1, 1536, 2048), PostedBuffer(1, 1536, 2048)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != PostedBuffer(1, 1536, 1536) and a != PostedBuffer(0, 1536, 2048)
    assert a != (1, 1536, 2048)
    assert repr(a) == "PostedBuffer(frag_index=1, offset=1536, len=2048)"
