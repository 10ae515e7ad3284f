"""virtnet_probe's setup on other builds (vnetrx/paths/virtio_net/setup.py): arm64, 64 KiB pages,
MAX_SKB_FRAGS; expected values derived from the formulas of docs/kernel/skbuff.md §7."""

from __future__ import annotations

from tests.paths.virtio_net.helpers import run, sda, summary
from vnetrx.kernel.build import build_config
from vnetrx.kernel.registry import lookup


def test_arm64_64k_pages_before_6_4() -> None:
    build = build_config("arm64", 65536)
    k = lookup("6.1", build)
    assert k.build.max_skb_frags == max(16, 65536 // 65536 + 1) == 16
    shinfo = sda(48 + 16 * 16)  # 304 → 320
    # mergeable: clamp(ewma 1000, 1518, PAGE_SIZE - 12) → ALIGN(12 + 1518, 64)
    buf_len = sda(12 + 1518)
    t = run("6.1", build, frame_len=1000, mergeable=True)
    assert t.buffer is not None and t.buffer.size == buf_len == 1536
    assert summary(t) == ("build_skb", 986, 0, 0, buf_len + 256, 12, buf_len - shinfo)
    # no small page frag on 64 KiB pages: napi_alloc_skb(128) → kmalloc(SDA(192) + 320) = 512
    t = run("6.1", build, frame_len=1514, mergeable=True)
    assert summary(t) == ("copy", 1500, 1500, 1, 512 + 256 + buf_len, 64, 512 - shinfo)
    # big mode with MTU 9000: DIV_ROUND_UP(9000, 65536) = 1 frag page; build_skb on page 0
    t = run("6.1", build, frame_len=9000, mtu=9000)
    assert summary(t) == ("build_skb", 8986, 0, 0, 65536 + 256, 32, 65536 - shinfo)
    assert len(t.buffers) == 2
    # a steady stream of 9000-byte frames: mergeable buffers of ALIGN(12 + 9000, 64)
    t = run("6.1", build, frame_len=9000, mergeable=True)
    assert t.buffer is not None and t.buffer.size == sda(12 + 9000) == 9024
    # tailroom 9024 - 12 - 9000 = 12 < 320: copy ETH_HLEN, the rest is one frag
    assert summary(t) == ("copy", 8986, 8986, 1, 512 + 256 + 9024, 64, 512 - shinfo)


def test_arm64_64k_pages_from_6_4_have_17_frags() -> None:
    assert lookup("6.6", build_config("arm64", 65536)).build.max_skb_frags == 17


def test_a_config_replaced_carves_for_its_own_buffer_index() -> None:
    """The posted buffers are memoised by buffer index and length: the device with a frame
    landing in the 21st buffer of a 32 KiB page_frag page (for_frame: sharing the first's
    memo) carves that buffer, the
    2048-byte one (README), not the first it carved before. Configs stay equal whatever each
    has memoised."""
    from vnetrx.paths import virtio_net
    from vnetrx.paths.virtio_net.mergeable import plan_mergeable

    k = lookup("6.12")
    first = virtio_net.config(k, virtio_net.check_virtio_setup(
        k, virtio_net.VirtioRxSetup(mergeable=True)))
    assert plan_mergeable(first, 1514).buffers[0].len == 1536
    twenty_first = virtio_net.for_frame(first, virtio_net.RxFrame(1514, buffer_index=20))
    buf = plan_mergeable(twenty_first, 1514).buffers[0]
    assert (buf.offset, buf.len) == (20 * 1536, 2048)
    fresh = virtio_net.config(k, virtio_net.check_virtio_setup(
        k, virtio_net.VirtioRxSetup(mergeable=True)))
    assert fresh == first and len(fresh.carved) == 0 < len(first.carved)
