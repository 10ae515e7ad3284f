"""Issue 5: every kernel that matters — 7.x's page_pool, the buffer a frame lands in, and
build configurations (arm64, 64 KiB pages, 128-byte lines, CONFIG_MAX_SKB_FRAGS)."""

from __future__ import annotations

import pytest

from vnetrx.engine import trace_virtio
from vnetrx.kernel.build import BuildConfig, build_config
from vnetrx.kernel.registry import lookup
from vnetrx.model import Trace
from vnetrx.paths.virtio_net import VirtioRxSetup


def run(kernel: str, build: BuildConfig | None = None, **setup: object) -> Trace:
    return trace_virtio(lookup(kernel, build), VirtioRxSetup(**setup))  # type: ignore[arg-type]


def fields(t: Trace) -> tuple[object, ...]:
    assert t.skb is not None
    return (t.outcome, t.skb.len, t.skb.data_len, t.skb.nr_frags, t.skb.truesize, t.skb.mac_header,
            t.skb.end)


# docs/kernel/virtio-net-rx.md §12.2 / §12.3 / §12.5, 7.x rows: page_pool buffers {0: 1536, 1536: 2560} and
# {0: 1920, 1920: 2176} per 4 KiB page.
@pytest.mark.parametrize("kernel", ["7.2", "7.3"])
def test_7x_mergeable_first_and_second_on_page(kernel: str) -> None:
    first = run(kernel, frame_len=1000, mergeable=True)
    assert fields(first) == ("build_skb", 986, 0, 0, 1792, 12, 1216)
    assert first.buffer is not None and (first.buffer.page, first.buffer.page_offset) == ("pool0", 0)
    second = run(kernel, frame_len=1000, mergeable=True, buffer_index=1)
    assert fields(second) == ("build_skb", 986, 0, 0, 2816, 12, 2240)
    assert second.buffer is not None and (second.buffer.page_offset, second.buffer.size) == (1536, 2560)
    assert any("virtio_rx_page_pool" in s.because for s in second.steps)


def test_7x_small_first_and_second_on_page() -> None:
    assert fields(run("7.3", frame_len=1000)) == ("build_skb", 986, 0, 0, 2176, 76, 1600)
    assert fields(run("7.3", frame_len=1000, buffer_index=1)) == (
        "build_skb", 986, 0, 0, 2432, 76, 1856)


def test_7x_1514_mergeable() -> None:
    assert fields(run("7.3", frame_len=1514, mergeable=True)) == (
        "copy", 1500, 1500, 1, 960 + 1536, 64, 384)
    assert fields(run("7.3", frame_len=1514, mergeable=True, buffer_index=1)) == (
        "build_skb", 1500, 0, 0, 2816, 12, 2240)


@pytest.mark.parametrize(("kernel", "size", "offset", "end", "truesize"),
                         [("6.1", 2048, 30720, 1728, 2304), ("6.12", 2048, 30720, 1728, 2304),
                          ("6.18", 2032, 30736, 1712, 2288)])
def test_21st_buffer_absorbs_the_hole(kernel: str, size: int, offset: int, end: int,
                                      truesize: int) -> None:
    t = run(kernel, frame_len=1514, mergeable=True, buffer_index=20)
    assert t.buffer is not None and (t.buffer.size, t.buffer.page_offset) == (size, offset)
    assert fields(t) == ("build_skb", 1500, 0, 0, truesize, 12, end)
    assert run(kernel, frame_len=1514, mergeable=True, buffer_index=19).outcome == "copy"


def test_small_buffers_17_per_frag() -> None:
    t = run("6.1", frame_len=1000, buffer_index=17)
    assert t.buffer is not None and (t.buffer.page, t.buffer.page_offset) == ("frag1", 0)
    t = run("6.18", frame_len=1000, buffer_index=16)
    assert t.buffer is not None and (t.buffer.page, t.buffer.page_offset) == ("frag0", 16 + 16 * 1920)


# --- build configurations: expected values derived here from the formulas ----------------------

def sda(x: int, line: int = 64) -> int:
    return -(-x // line) * line


def test_arm64_64k_pages_before_6_4() -> None:
    build = build_config("arm64", 65536)
    k = lookup("6.1", build)
    assert k.build.max_skb_frags == max(16, 65536 // 65536 + 1) == 16
    shinfo = sda(48 + 16 * 16)  # 304 → 320
    # mergeable: clamp(ewma 1000, 1518, PAGE_SIZE - 12) → ALIGN(12 + 1518, 64)
    buf_len = sda(12 + 1518)
    t = run("6.1", build, frame_len=1000, mergeable=True)
    assert t.buffer is not None and t.buffer.size == buf_len == 1536
    assert fields(t) == ("build_skb", 986, 0, 0, buf_len + 256, 12, buf_len - shinfo)
    # no small page frag on 64 KiB pages: napi_alloc_skb(128) → kmalloc(SDA(192) + 320) = 512
    t = run("6.1", build, frame_len=1514, mergeable=True)
    assert fields(t) == ("copy", 1500, 1500, 1, 512 + 256 + buf_len, 64, 512 - shinfo)
    # big mode with MTU 9000: DIV_ROUND_UP(9000, 65536) = 1 frag page; build_skb on page 0
    t = run("6.1", build, frame_len=9000, mtu=9000)
    assert fields(t) == ("build_skb", 8986, 0, 0, 65536 + 256, 32, 65536 - shinfo)
    assert len(t.buffers) == 2
    # a steady stream of 9000-byte frames: mergeable buffers of ALIGN(12 + 9000, 64)
    t = run("6.1", build, frame_len=9000, mergeable=True)
    assert t.buffer is not None and t.buffer.size == sda(12 + 9000) == 9024
    # tailroom 9024 - 12 - 9000 = 12 < 320: copy ETH_HLEN, the rest is one frag
    assert fields(t) == ("copy", 8986, 8986, 1, 512 + 256 + 9024, 64, 512 - shinfo)


def test_arm64_64k_pages_from_6_4_have_17_frags() -> None:
    assert lookup("6.6", build_config("arm64", 65536)).build.max_skb_frags == 17


def test_128_byte_cache_lines() -> None:
    build = build_config("x86_64", 4096, l1_cache_bytes=128)
    # small buffer = ALIGN(12 + 128 + 1518, 128) + ALIGN(320, 128) = 1664 + 384 (docs/kernel/skbuff.md §7.3)
    t = run("6.1", build, frame_len=1000)
    assert t.buffer is not None and t.buffer.size == 2048
    assert fields(t) == ("build_skb", 986, 0, 0, 2048 + 256, 140, 1664)


def test_max_skb_frags_45() -> None:
    build = build_config(max_skb_frags=45)
    k = lookup("6.12", build)
    assert k.build.max_skb_frags == 45
    # shinfo = SDA(48 + 16 * 45) = 768: a 1536-byte buffer builds only frames of 129..756 bytes
    assert run("6.12", build, frame_len=756, mergeable=True).outcome == "build_skb"
    assert run("6.12", build, frame_len=757, mergeable=True).outcome == "copy"
    small = run("6.12", build, frame_len=1000)
    assert small.buffer is not None and small.buffer.size == 1600 + 768


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
    first = trace_virtio(k, VirtioRxSetup(frame_len=9014, mergeable=True, buffers=posted[11:]))
    second = trace_virtio(k, VirtioRxSetup(frame_len=9018, mergeable=True, buffers=posted[17:]))
    assert first.skb is not None and second.skb is not None
    assert (first.skb.truesize, first.skb.nr_frags) == (10496, 1)
    assert (second.skb.truesize, second.skb.nr_frags) == (11008, 2)
    assert [b.size for b in second.buffers] == [1536, 1536, 1536, 2048, 1536, 1536]


def test_frag_list_past_max_skb_frags() -> None:
    """receive_mergeable checks nr_frags == MAX_SKB_FRAGS *before* trying to coalesce: once the
    head has 17 frags, even a buffer contiguous with the 17th goes to a new alloc_skb(0) skb on
    the head's frag_list, whose truesize the head adds (docs/kernel/virtio-net-rx.md §9 step 6.4).
    On 7.3 (2 page_pool buffers per 4 KiB page), a 65535-byte frame starting at the second
    buffer of a page spans 33 buffers in 17 pages; the 17th page's pair splits."""
    from vnetrx.paths.virtio_net import VirtioRxSetup as Setup
    from vnetrx.sweep import virtio_rows

    setup = {"mergeable": True, "buffer_index": 1, "ewma": 1000}
    t = run("7.3", frame_len=65535, **setup)
    assert t.skb is not None and len(t.buffers) == 33
    assert t.skb.nr_frags == 17
    [chained] = t.skb.frag_list
    assert (chained.len, chained.truesize, len(chained.frags)) == (11, 960 + 2560, 1)
    buffers_truesize = sum(b.size for b in t.buffers)  # the frame's 33 buffers
    assert t.skb.truesize == 960 + buffers_truesize + 960  # napi head + buffers + alloc_skb(0)
    assert t.skb.data_len == 65535 - 14  # the head's data_len counts the frag_list bytes
    # the sweep's fast path agrees
    [row] = virtio_rows(lookup("7.3"), Setup(frame_len=1, **setup), [65535])  # type: ignore[arg-type]
    assert (row.nr_frags, row.truesize) == (17, t.skb.truesize)
