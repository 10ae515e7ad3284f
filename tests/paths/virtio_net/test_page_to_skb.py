"""drivers/net/virtio_net.c:page_to_skb (vnetrx/paths/virtio_net/page_to_skb.py): build_skb around
the buffer or a napi_alloc_skb copy, per version; numbers from docs/kernel/virtio-net-rx.md §6, §12
and real Debian 6.1.192 / 6.12.117 guests. skb fields are after eth_type_trans."""

from __future__ import annotations

import pytest

from tests.paths.virtio_net.helpers import MINIMAL, run, summary
from tests.profiles import LTS_AS_TAGGED, series, version_key
from vnetrx.kernel.build import BuildConfig, build_config
from vnetrx.kernel.registry import lookup


# §12.1: 1000-byte frame, mergeable, hdr 12.
@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        ("5.12", ("copy", 986, 986, 1, 2304, 64, 192)),
        ("5.13", ("build_skb", 986, 0, 0, 1792, 12, 1216)),
        ("5.15", ("build_skb", 986, 0, 0, 1792, 12, 1216)),
        ("6.1", ("build_skb", 986, 0, 0, 1792, 12, 1216)),
        ("6.1.0", ("build_skb", 986, 0, 0, 1792, 12, 1216)),
        ("6.6", ("build_skb", 986, 0, 0, 1792, 12, 1216)),
        ("6.12", ("build_skb", 986, 0, 0, 1792, 12, 1216)),
        ("6.18", ("build_skb", 986, 0, 0, 1792, 12, 1216)),
    ],
)
def test_mergeable_1000(kernel: str, expected: tuple[object, ...]) -> None:
    t = run(kernel, frame_len=1000, mergeable=True)
    assert t.path == "virtio-mergeable"
    assert summary(t) == expected


def test_mergeable_1000_on_5_12_copies_eth_hlen_and_hangs_the_rest_as_frag_0() -> None:
    t = run("5.12", frame_len=1000, mergeable=True)
    assert t.skb is not None and t.cost is not None
    frag = t.skb.frags[0]
    assert (frag.offset, frag.size, frag.truesize) == (26, 986, 1536)
    assert (t.cost.bytes_copied, t.cost.allocations) == (14, 2)
    assert t.skb.head == "kmalloc-512"


def test_seed_patch_saves_the_copy_and_the_head_allocation() -> None:
    before, after = (run(k, frame_len=1000, mergeable=True) for k in ("5.12", "5.13"))
    assert before.cost is not None and after.cost is not None
    assert (before.cost.allocations, after.cost.allocations) == (2, 1)
    assert (before.cost.bytes_copied, after.cost.bytes_copied) == (14, 0)
    assert "page_to_skb_build_skb" in [c for s in after.steps for c in s.because]


# §12.4: copy-path cases, mergeable, 1536-byte buffers.
@pytest.mark.parametrize(
    ("kernel", "build", "truesize", "end", "frag_offset"),
    [
        ("5.12", None, 2304, 192, 26),
        ("5.15", None, 2304, 192, 26),
        ("6.1", None, 2816, 704, 26),
        ("6.12", None, 2816, 704, 26),
        ("6.18", None, 2496, 384, 42),
        ("6.18", MINIMAL, 2368, 256, 42),
    ],
)
def test_mergeable_1514_copies_14_bytes(kernel: str, build: BuildConfig | None, truesize: int,
                                        end: int, frag_offset: int) -> None:
    t = run(kernel, build, frame_len=1514, mergeable=True)
    assert summary(t) == ("copy", 1500, 1500, 1, truesize, 64, end)
    assert t.skb is not None and t.skb.frags[0].offset == frag_offset


@pytest.mark.parametrize(
    ("kernel", "build", "truesize"),
    [("5.12", None, 768), ("5.15", None, 768), ("6.1", None, 1280), ("6.12", None, 1280),
     ("6.18", None, 960), ("6.18", MINIMAL, 832)],
)
def test_mergeable_100_copies_all(kernel: str, build: BuildConfig | None, truesize: int) -> None:
    t = run(kernel, build, frame_len=100, mergeable=True)
    assert t.skb is not None
    assert (t.outcome, t.skb.len, t.skb.data_len, t.skb.nr_frags) == ("copy", 86, 0, 0)
    assert (t.skb.truesize, t.skb.mac_header, t.skb.tail) == (truesize, 64, 164)


@pytest.mark.parametrize(("kernel", "buf_len", "end", "truesize"),
                         [("6.1", 2048, 1728, 2304), ("6.18", 2032, 1712, 2288)])
def test_last_buffer_of_a_frag_page_builds_a_1514_frame(kernel: str, buf_len: int, end: int,
                                                        truesize: int) -> None:
    t = run(kernel, frame_len=1514, mergeable=True, buf_len=buf_len)
    assert summary(t) == ("build_skb", 1500, 0, 0, truesize, 12, end)


@pytest.mark.parametrize(("frame", "outcome"),
                         [(128, "copy"), (129, "build_skb"), (1204, "build_skb"), (1205, "copy")])
def test_mergeable_build_skb_window(frame: int, outcome: str) -> None:
    assert run("6.1", frame_len=frame, mergeable=True).outcome == outcome


@pytest.mark.parametrize(("kernel", "largest"), [("5.15", 3760), ("6.1", 3744)])
def test_big_largest_build_skb_frame(kernel: str, largest: int) -> None:
    assert run(kernel, frame_len=largest, guest_gso=True).outcome == "build_skb"
    assert run(kernel, frame_len=largest + 1, guest_gso=True).outcome == "copy"


def test_max_skb_frags_45() -> None:
    build = build_config(max_skb_frags=45)
    k = lookup("6.12", build)
    assert k.build.max_skb_frags == 45
    # shinfo = SDA(48 + 16 * 45) = 768: a 1536-byte buffer builds only frames of 129..756 bytes
    assert run("6.12", build, frame_len=756, mergeable=True).outcome == "build_skb"
    assert run("6.12", build, frame_len=757, mergeable=True).outcome == "copy"
    small = run("6.12", build, frame_len=1000)
    assert small.buffer is not None and small.buffer.size == 1600 + 768


# --- the two thresholds of page_to_skb's test, ± 1, per version --------------------------------
# page_to_skb (fb32856b16ad, 5.13; docs/kernel/virtio-net-rx.md §6.2-§6.7): build_skb when
# len > GOOD_COPY_LEN (128) and tailroom = truesize - hdr_padded_len - len >= SKB_DATA_ALIGN(
# sizeof(struct skb_shared_info)) (320 with 17 frags, x86_64). 5.12 has no such test.
BUILD_KERNELS = sorted(series("virtio", since=(5, 13)) + LTS_AS_TAGGED, key=version_key)


@pytest.mark.parametrize("kernel", BUILD_KERNELS)
def test_good_copy_len_plus_minus_one(kernel: str) -> None:
    """128 bytes are copied whole into the napi head; 129 are built around the buffer."""
    at = run(kernel, frame_len=128, mergeable=True)
    above = run(kernel, frame_len=129, mergeable=True)
    assert (at.outcome, above.outcome) == ("copy", "build_skb")
    assert at.cost is not None and at.cost.bytes_copied == 128
    assert above.cost is not None and above.cost.bytes_copied == 0


@pytest.mark.parametrize(("kernel", "buffer_index", "buffer", "largest"), [
    # a 1536-byte buffer (get_mergeable_buf_len at EWMA <= 1518), hdr_padded_len 12:
    # 1536 - 12 - 1204 = 320 → build; 1205 leaves 319 → copy
    *((k, 0, 1536, 1204) for k in BUILD_KERNELS),
    # the 21st buffer of a 32 KiB page_frag page absorbs the rest: 2048 (2032 from 6.13, whose
    # pages start with the 16-byte struct virtnet_rq_dma)
    ("6.1", 20, 2048, 1716), ("6.12", 20, 2048, 1716), ("6.18", 20, 2032, 1700),
    # 7.x page_pool: the second buffer of a 4 KiB page is 2560 bytes
    ("7.3", 1, 2560, 2228),
])
def test_tailroom_equal_to_shinfo_builds_one_less_copies(kernel: str, buffer_index: int,
                                                         buffer: int, largest: int) -> None:
    built = run(kernel, frame_len=largest, mergeable=True, ewma=1000, buffer_index=buffer_index)
    copied = run(kernel, frame_len=largest + 1, mergeable=True, ewma=1000,
                 buffer_index=buffer_index)
    assert built.buffer is not None and built.buffer.size == buffer
    assert (built.outcome, copied.outcome) == ("build_skb", "copy")
    step = next(s for s in built.steps if s.function == "page_to_skb")
    assert (dict(step.values)["tailroom"], dict(step.values)["shinfo_size"]) == (320, 320)
    step = next(s for s in copied.steps if s.function == "page_to_skb")
    assert dict(step.values)["tailroom"] == 319


@pytest.mark.parametrize("length", [129, 1000, 1204])
def test_5_12_always_copies(length: int) -> None:
    """5.12's page_to_skb has no build_skb branch (docs/kernel/virtio-net-rx.md §6.1)."""
    t = run("5.12", frame_len=length, mergeable=True)
    assert t.outcome == "copy"
    assert t.cost is not None and t.cost.bytes_copied == 14  # ETH_HLEN: the napi head's tailroom is 128


def test_net_ip_align_never_builds() -> None:
    """"restrict build_skb() use to some arches": page_to_skb tests !NET_IP_ALIGN first. No
    profiled arch has NET_IP_ALIGN 2, so the rule is checked on the setup directly."""

    from vnetrx.paths import virtio_net
    from vnetrx.paths.virtio_net.page_to_skb import Build, build_or_copy

    k = lookup("6.1")
    c = virtio_net.config(k, virtio_net.check_virtio_setup(
        k, virtio_net.VirtioRxSetup(mergeable=True)))
    assert build_or_copy(c, 1000, 1536, 12) == (Build.BUILD, 524)
    assert build_or_copy(c._replace(net_ip_align=2), 1000, 1536, 12)[0] is Build.NET_IP_ALIGN
    assert build_or_copy(c, 128, 1536, 12)[0] is Build.SHORT
    assert build_or_copy(c, 1205, 1536, 12) == (Build.NO_TAILROOM, 319)
