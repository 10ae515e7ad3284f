"""receive_mergeable and add_recvbuf_mergeable (vnetrx/paths/virtio_net/mergeable.py):
docs/kernel/virtio-net-rx.md §5.4, §5.5, §9, §12.2, §12.5, and real 6.12 guests."""

from __future__ import annotations

import pytest

from tests.paths.virtio_net.helpers import run, summary
from vnetrx.engine import trace_virtio
from vnetrx.kernel.registry import lookup
from vnetrx.paths.virtio_net import RxFrame, VirtioRxSetup


def test_buffer_map_1000_mergeable_6_18_starts_at_page_offset_16() -> None:
    t = run("6.18", frame_len=1000, mergeable=True)
    assert t.buffer is not None
    assert t.buffer.page_offset == 16  # struct virtnet_rq_dma heads the page from 6.13
    assert [(r.name, r.offset, r.size) for r in t.buffer.regions] == [
        ("vnet_hdr", 0, 12), ("frame", 12, 1000), ("tailroom", 1012, 204),
        ("skb_shared_info", 1216, 320)]


def test_mergeable_1400_on_6_1_is_copy_plus_one_frag() -> None:
    assert summary(run("6.1", frame_len=1400, mergeable=True)) == (
        "copy", 1386, 1386, 1, 2816, 64, 704)


def test_multi_buffer_frames_coalesce_into_one_frag() -> None:
    # issue 9: an 8000-byte frame over six 1536-byte buffers ends with nr_frags 1;
    # a real 6.12 guest showed 9014-byte frames with truesize 10496 and one frag.
    t = run("6.1", frame_len=8000, mergeable=True, ewma=1000)
    assert t.skb is not None and len(t.buffers) == 6
    assert (t.skb.nr_frags, t.skb.truesize, t.skb.len) == (1, 10496, 7986)
    t = run("6.12", frame_len=9014, mergeable=True, ewma=1000)
    assert t.skb is not None and (t.skb.nr_frags, t.skb.truesize) == (1, 10496)


def test_steady_stream_of_jumbo_frames_gets_page_sized_buffers() -> None:
    t = run("6.1", frame_len=9000, mergeable=True)
    assert t.buffer is not None and t.buffer.size == 4096  # ewma 9000 → clamp to PAGE_SIZE - 12
    assert t.skb is not None and t.skb.truesize == 1280 + 3 * 4096


# docs/kernel/virtio-net-rx.md §12.2 / §12.3 / §12.5, 7.x rows: page_pool buffers {0: 1536, 1536: 2560} and
# {0: 1920, 1920: 2176} per 4 KiB page.
@pytest.mark.parametrize("kernel", ["7.2", "7.3"])
def test_7x_mergeable_first_and_second_on_page(kernel: str) -> None:
    first = run(kernel, frame_len=1000, mergeable=True)
    assert summary(first) == ("build_skb", 986, 0, 0, 1792, 12, 1216)
    assert first.buffer is not None and (first.buffer.page, first.buffer.page_offset) == ("pool0", 0)
    second = run(kernel, frame_len=1000, mergeable=True, buffer_index=1)
    assert summary(second) == ("build_skb", 986, 0, 0, 2816, 12, 2240)
    assert second.buffer is not None and (second.buffer.page_offset, second.buffer.size) == (1536, 2560)
    assert any("virtio_rx_page_pool" in s.because for s in second.steps)


def test_7x_1514_mergeable() -> None:
    assert summary(run("7.3", frame_len=1514, mergeable=True)) == (
        "copy", 1500, 1500, 1, 960 + 1536, 64, 384)
    assert summary(run("7.3", frame_len=1514, mergeable=True, buffer_index=1)) == (
        "build_skb", 1500, 0, 0, 2816, 12, 2240)


@pytest.mark.parametrize(("kernel", "size", "offset", "end", "truesize"),
                         [("6.1", 2048, 30720, 1728, 2304), ("6.12", 2048, 30720, 1728, 2304),
                          ("6.18", 2032, 30736, 1712, 2288)])
def test_21st_buffer_absorbs_the_hole(kernel: str, size: int, offset: int, end: int,
                                      truesize: int) -> None:
    t = run(kernel, frame_len=1514, mergeable=True, buffer_index=20)
    assert t.buffer is not None and (t.buffer.size, t.buffer.page_offset) == (size, offset)
    assert summary(t) == ("build_skb", 1500, 0, 0, truesize, 12, end)
    assert run(kernel, frame_len=1514, mergeable=True, buffer_index=19).outcome == "copy"


def test_real_612_guest_9014_then_9018() -> None:
    """Issue 9: on a real 6.12 guest, 9014- and 9018-byte frames sent one after the other came
    out with truesize 10496 (one frag) and 11008 (two frags). The guest's earlier traffic is not
    known; assuming the first frame started at posted buffer 11 of the ring's initial 1536-byte
    buffers, the second starts at 17, spans the 2048-byte 21st buffer of the page and crosses
    into the next page: both numbers follow. (Had the second frame's buffers been contiguous
    1536s in one page, it would show 10496 = 1280 + 6 x 1536 with one frag, like the first.)"""
    from itertools import islice

    from vnetrx.paths.virtio_net.buffers import carve_fresh
    from vnetrx.paths.virtio_net.setup import rx_allocator

    k = lookup("6.12")
    posted = tuple(islice(carve_fresh(rx_allocator(k), 1536, True), 40))
    first = trace_virtio(k, VirtioRxSetup(mergeable=True), RxFrame(9014, buffers=posted[11:]))
    second = trace_virtio(k, VirtioRxSetup(mergeable=True), RxFrame(9018, buffers=posted[17:]))
    assert first.skb is not None and second.skb is not None
    assert (first.skb.truesize, first.skb.nr_frags) == (10496, 1)
    assert (second.skb.truesize, second.skb.nr_frags) == (11008, 2)
    assert [b.size for b in second.buffers] == [1536, 1536, 1536, 2048, 1536, 1536]
