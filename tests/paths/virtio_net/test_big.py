"""receive_big and add_recvbuf_big (vnetrx/paths/virtio_net/big.py): docs/kernel/virtio-net-rx.md
§5.3, §8, §12.4."""

from __future__ import annotations

import pytest

from tests.paths.virtio_net.helpers import run, summary


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
    assert summary(t) == expected


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
    assert summary(t) == ("build_skb", 986, 0, 0, 4352, 32, 3776)
    assert len(t.buffers) == 4  # DIV_ROUND_UP(9000, 4096) + 1 pages


def test_big_mode_frame_over_the_chain() -> None:
    # MTU 9000 without guest GSO: 4 pages, 4 * 4096 - 32 = 16352 frame bytes.
    assert run("6.1.192", frame_len=16352, mtu=9000).outcome == "copy"
    assert run("6.1.192", frame_len=16353, mtu=9000).reason == "len_exceeds_allocated_size"
    assert run("6.1.0", frame_len=16353, mtu=9000).reason == "exceeds_buffer"
