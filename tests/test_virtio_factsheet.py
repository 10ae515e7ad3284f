"""The worked examples of docs/kernel/virtio-net-rx.md §12 and the numbers in issue 2, some of
them observed in real Debian 6.1.192 / 6.12.117 guests. skb fields are after eth_type_trans."""

from __future__ import annotations

import pytest

from vnetrx.engine import trace_virtio
from vnetrx.kernel.build import BuildConfig
from vnetrx.kernel.registry import lookup
from vnetrx.model import Trace
from vnetrx.paths.virtio_net import VirtioRxSetup

MINIMAL = BuildConfig(config="minimal", max_header=32)  # this machine's 6.18.44 config


def run(kernel: str, build: BuildConfig | None = None, **setup: object) -> Trace:
    return trace_virtio(lookup(kernel, build), VirtioRxSetup(**setup))  # type: ignore[arg-type]


def skb_summary(t: Trace) -> tuple[str, int, int, int, int, int | None, int]:
    assert t.skb is not None
    s = t.skb
    return (t.outcome, s.len, s.data_len, s.nr_frags, s.truesize, s.mac_header, s.end)


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
    assert skb_summary(t) == expected


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


def test_buffer_map_1000_mergeable_6_18_starts_at_page_offset_16() -> None:
    t = run("6.18", frame_len=1000, mergeable=True)
    assert t.buffer is not None
    assert t.buffer.page_offset == 16  # struct virtnet_rq_dma heads the page from 6.13
    assert [(r.name, r.offset, r.size) for r in t.buffer.regions] == [
        ("vnet_hdr", 0, 12), ("frame", 12, 1000), ("tailroom", 1012, 204),
        ("skb_shared_info", 1216, 320)]


# §12.2: small mode (no MRG_RXBUF, no guest GSO, MTU 1500).
@pytest.mark.parametrize("kernel", ["5.12", "5.13", "5.15", "6.1", "6.6", "6.12", "6.18"])
def test_small_1000(kernel: str) -> None:
    t = run(kernel, frame_len=1000)
    assert t.path == "virtio-small"
    assert skb_summary(t) == ("build_skb", 986, 0, 0, 2176, 76, 1600)
    assert t.buffer is not None and t.buffer.size == 1920


def test_small_legacy_header_and_hash_report() -> None:
    assert skb_summary(run("6.1", frame_len=1000, hdr_len=10)) == (
        "build_skb", 986, 0, 0, 2176, 74, 1600)
    t = run("6.1", frame_len=1000, hdr_len=20)
    assert skb_summary(t) == ("build_skb", 986, 0, 0, 2240, 84, 1664)
    assert t.buffer is not None and t.buffer.size == 1984


# §12.3: MRG_RXBUF off, guest TSO on → big mode.
@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        ("5.12", ("copy", 986, 986, 1, 4864, 64, 192)),
        ("5.13", ("build_skb", 986, 0, 0, 4352, 16, 3776)),
        ("5.15", ("build_skb", 986, 0, 0, 4352, 16, 3776)),
        ("6.1", ("build_skb", 986, 0, 0, 4352, 32, 3776)),
        ("6.18", ("build_skb", 986, 0, 0, 4352, 32, 3776)),
    ],
)
def test_big_guest_gso_1000(kernel: str, expected: tuple[object, ...]) -> None:
    t = run(kernel, frame_len=1000, guest_gso=True)
    assert t.path == "virtio-big"
    assert skb_summary(t) == expected


def test_big_5_12_frag_starts_after_the_padded_header() -> None:
    t = run("5.12", frame_len=1000, guest_gso=True)
    assert t.skb is not None
    assert [(f.offset, f.size, f.truesize) for f in t.skb.frags] == [(30, 986, 4096)]


def test_big_5_13_leaks_the_chain_and_5_15_returns_it() -> None:
    leak = run("5.13", frame_len=1000, guest_gso=True)
    assert any("leak" in n for n in leak.notes)
    assert any(s.function == "page_to_skb" and dict(s.values).get("pages_leaked") == 17
               for s in leak.steps)
    fixed = run("5.15", frame_len=1000, guest_gso=True)
    assert any(s.function == "give_pages" and "big_build_skb_give_pages" in s.because
               for s in fixed.steps)


def test_big_mtu_9000_on_6_1() -> None:
    t = run("6.1", frame_len=1000, mtu=9000)
    assert skb_summary(t) == ("build_skb", 986, 0, 0, 4352, 32, 3776)
    assert len(t.buffers) == 4  # DIV_ROUND_UP(9000, 4096) + 1 pages


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
    assert skb_summary(t) == ("copy", 1500, 1500, 1, truesize, 64, end)
    assert t.skb is not None and t.skb.frags[0].offset == frag_offset


def test_mergeable_1400_on_6_1_is_copy_plus_one_frag() -> None:
    assert skb_summary(run("6.1", frame_len=1400, mergeable=True)) == (
        "copy", 1386, 1386, 1, 2816, 64, 704)


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
    assert skb_summary(t) == ("build_skb", 1500, 0, 0, truesize, 12, end)


@pytest.mark.parametrize(("frame", "outcome"),
                         [(128, "copy"), (129, "build_skb"), (1204, "build_skb"), (1205, "copy")])
def test_mergeable_build_skb_window(frame: int, outcome: str) -> None:
    assert run("6.1", frame_len=frame, mergeable=True).outcome == outcome


@pytest.mark.parametrize(("kernel", "largest"), [("5.15", 3760), ("6.1", 3744)])
def test_big_largest_build_skb_frame(kernel: str, largest: int) -> None:
    assert run(kernel, frame_len=largest, guest_gso=True).outcome == "build_skb"
    assert run(kernel, frame_len=largest + 1, guest_gso=True).outcome == "copy"


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


@pytest.mark.parametrize(("kernel", "reason"),
                         [("5.12", "exceeds_buffer"), ("5.13", "exceeds_buffer"),
                          ("5.15", "len_exceeds_max_size"), ("6.18", "len_exceeds_max_size")])
def test_small_mode_frame_over_1518(kernel: str, reason: str) -> None:
    t = run(kernel, frame_len=1519)
    assert (t.outcome, t.reason, t.skb) == ("drop", reason, None)
    assert run(kernel, frame_len=1518).outcome == "build_skb"


def test_big_mode_frame_over_the_chain() -> None:
    # MTU 9000 without guest GSO: 4 pages, 4 * 4096 - 32 = 16352 frame bytes.
    assert run("6.1.192", frame_len=16352, mtu=9000).outcome == "copy"
    assert run("6.1.192", frame_len=16353, mtu=9000).reason == "len_exceeds_allocated_size"
    assert run("6.1.0", frame_len=16353, mtu=9000).reason == "exceeds_buffer"


@pytest.mark.parametrize("mode", [{}, {"mergeable": True}, {"guest_gso": True}])
def test_short_packet(mode: dict[str, bool]) -> None:
    t = run("6.1", frame_len=13, **mode)
    assert (t.outcome, t.reason) == ("drop", "short_packet")
    assert run("6.1", frame_len=14, **mode).skb is not None
