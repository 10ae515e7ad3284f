"""receive_small and add_recvbuf_small (vnetrx/paths/virtio_net/small.py): docs/kernel/virtio-net-rx.md
§5.2, §7, §12.3."""

from __future__ import annotations

import pytest

from tests.paths.virtio_net.helpers import run, summary
from tests.profiles import VIRTIO
from vnetrx.kernel.build import build_config


# §12.2: small mode (no MRG_RXBUF, no guest GSO, MTU 1500).
@pytest.mark.parametrize("kernel", VIRTIO)
def test_small_1000(kernel: str) -> None:
    t = run(kernel, frame_len=1000)
    assert t.path == "virtio-small"
    assert summary(t) == ("build_skb", 986, 0, 0, 2176, 76, 1600)
    assert t.buffer is not None and t.buffer.size == 1920


def test_small_legacy_header_and_hash_report() -> None:
    assert summary(run("6.1", frame_len=1000, hdr_len=10)) == (
        "build_skb", 986, 0, 0, 2176, 74, 1600)
    t = run("6.1", frame_len=1000, hdr_len=20)
    assert summary(t) == ("build_skb", 986, 0, 0, 2240, 84, 1664)
    assert t.buffer is not None and t.buffer.size == 1984


@pytest.mark.parametrize(("kernel", "reason"),
                         [("5.12", "exceeds_buffer"), ("5.13", "exceeds_buffer"),
                          ("5.15", "len_exceeds_max_size"), ("6.18", "len_exceeds_max_size")])
def test_small_mode_frame_over_1518(kernel: str, reason: str) -> None:
    t = run(kernel, frame_len=1519)
    assert (t.outcome, t.reason, t.skb) == ("drop", reason, None)
    assert run(kernel, frame_len=1518).outcome == "build_skb"


def test_7x_small_first_and_second_on_page() -> None:
    assert summary(run("7.3", frame_len=1000)) == ("build_skb", 986, 0, 0, 2176, 76, 1600)
    assert summary(run("7.3", frame_len=1000, buffer_index=1)) == (
        "build_skb", 986, 0, 0, 2432, 76, 1856)


def test_small_buffers_17_per_frag() -> None:
    t = run("6.1", frame_len=1000, buffer_index=17)
    assert t.buffer is not None and (t.buffer.page, t.buffer.page_offset) == ("frag1", 0)
    t = run("6.18", frame_len=1000, buffer_index=16)
    assert t.buffer is not None and (t.buffer.page, t.buffer.page_offset) == ("frag0", 16 + 16 * 1920)


def test_128_byte_cache_lines() -> None:
    build = build_config("x86_64", 4096, l1_cache_bytes=128)
    # small buffer = ALIGN(12 + 128 + 1518, 128) + ALIGN(320, 128) = 1664 + 384 (docs/kernel/skbuff.md §7.3)
    t = run("6.1", build, frame_len=1000)
    assert t.buffer is not None and t.buffer.size == 2048
    assert summary(t) == ("build_skb", 986, 0, 0, 2048 + 256, 140, 1664)
