"""vnetrx replay as a whole (vnetrx/replay/__init__.py): whole sequences real Debian 6.1.192 and
6.12.117 guests received, and bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests import DATA as TESTS_DATA
from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.registry import lookup
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.replay import RingConfig, replay

MERGEABLE = RingConfig(VirtioRxSetup(mergeable=True))
SMALL = RingConfig(VirtioRxSetup(mergeable=False))


@pytest.mark.parametrize("kernel", ["6.1", "6.12"])
def test_9014_then_9018_from_buffer_17(kernel: str) -> None:
    """Issue 9's observation (6.12 guest): 9014 then 9018 → truesize 10496 (1 frag) and 11008
    (2 frags). Assumption: since the interface came up the guest had received 11 frames that
    took one buffer each (any length up to 1524) and nothing refilled: the 9014 starts at
    buffer 11, the 9018 at 17, spanning the 2048-byte 21st buffer and the next page."""
    run = replay(lookup(kernel), RingConfig(
        VirtioRxSetup(mergeable=True, mtu=9000)), [60] * 11 + [9014, 9018])
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


@pytest.mark.parametrize(
    ("cfg", "frames", "message"),
    [
        (MERGEABLE, [], "no frames"),
        (MERGEABLE, [60, -1], r"frame 1: length -1 out of range \(valid: 0\.\.65535\)"),
        (MERGEABLE, [65536], "length 65536 out of range"),
        (RingConfig(VirtioRxSetup(mergeable=True, ring_size=0)), [60], "ring size 0 out of range"),
        (RingConfig(VirtioRxSetup(mergeable=True), batch=0), [60], "batch 0 out of range"),
    ],
)
def test_bad_input_is_an_input_error(cfg: RingConfig, frames: list[int], message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        replay(lookup("6.12"), cfg, frames)
    assert info.value.exit_code == 2


def test_big_mode_has_no_ring_to_follow() -> None:
    """Big mode (MTU 9000, no MRG_RXBUF): no initial fill, no EWMA, no ring view; each frame is
    in a page chain of its own (no posted buffers), polled as --batch says. A 1514-byte frame
    is build_skb with truesize 4352 and a 9014-byte one a copy with 3 frags and truesize 13568,
    as a real 6.12.117 guest's skbs were (tests/data/gro/guest-linux-6.12.117.big.json:
    frames 65 and 409); one longer than the chain's (3 + 1) * 4096 - sizeof(padded_vnet_hdr)
    32 = 16352 bytes is the device's drop (no poll)."""
    run = replay(lookup("6.12.117"), RingConfig(VirtioRxSetup(mtu=9000), batch=2),
                 [1514, 9014, 16352, 16353])
    assert (run.initial_fill, run.final, run.min_buf_len) == (None, None, None)
    got = [(f.poll, f.buffers, f.ewma_after, f.ring, f.refill, f.decision.outcome,
            None if f.decision.skb is None else (f.decision.skb.truesize,
                                                 f.decision.skb.nr_frags))
           for f in run.frames]
    assert got[:2] == [(1, (), None, None, None, "build_skb", (4352, 0)),
                       (1, (), None, None, None, "copy", (13568, 3))]
    assert got[2][0] == 2 and got[2][5] == "copy"
    assert got[3][0] is None and got[3][5] == "drop"


def test_big_mode_with_xdp_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="big mode"):
        replay(lookup("6.12"), RingConfig(VirtioRxSetup(mtu=9000, xdp="pass")), [1000])


DATA = TESTS_DATA / "replay"


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
    cfg = RingConfig(VirtioRxSetup(mergeable=True, mtu=9000), batch=batch)
    assert _mismatches(kernel, cfg, f"mergeable-mtu9000-random-{kernel}.log") == []


def test_real_guest_refill_timing_decides_the_buffer_sizes() -> None:
    """30 frames of about 1200 bytes, then 34 of 12000..16000: the refills are sized by an EWMA
    still climbing, so when the driver polled matters. The 6.12 guest (TCG) received all 64 in
    one go: the ring ran dry after frame 52 (252 buffers), then one poll, one refill of 252 with
    EWMA 5175 → 4096-byte buffers. One frame per poll instead would refill every few frames with
    1536..4096-byte buffers as the EWMA climbs: from frame 53 (the first in a refilled buffer)
    nothing matches."""
    name = "mergeable-mtu9000-ramp-6.12.117.log"
    assert _mismatches("6.12.117", RingConfig(
        VirtioRxSetup(mergeable=True, mtu=9000), batch=64), name) == []
    one_by_one = _mismatches("6.12.117", RingConfig(VirtioRxSetup(mergeable=True, mtu=9000)), name)
    assert one_by_one == list(range(53, 64))


def test_real_guest_poll_boundary_found_by_the_model() -> None:
    """The same ramp on the 6.1 guest: it polled once after frame 32 (its refill then posted 58
    buffers of 1792 bytes, EWMA 1737), then took the rest; with that grouping (--polls 33,31)
    all 64 match. (The split was found by trying every two-poll grouping against the log.)"""
    name = "mergeable-mtu9000-ramp-6.1.192.log"
    cfg = RingConfig(VirtioRxSetup(mergeable=True, mtu=9000), polls=(33, 31))
    assert _mismatches("6.1.192", cfg, name) == []
    assert _mismatches("6.1.192", RingConfig(
        VirtioRxSetup(mergeable=True, mtu=9000), batch=64), name) != []


def test_guest_gso_without_mergeable_is_big_mode() -> None:
    """Guest GSO, no MRG_RXBUF: big mode, each frame decided alone. A real 6.1.192 guest
    (tests/data/gro/guest-linux-6.1.192.big-gso.json, frames 39 and 182, neither merged by
    GRO) made a 60-byte frame an skb of truesize 1280 and a 5858-byte TCPv4 GSO frame
    (NEEDS_CSUM at 34+16, gso_size 1448) one of truesize 9472 with 2 frags, SKB_GSO_TCPV4 |
    SKB_GSO_DODGY (3), CHECKSUM_PARTIAL."""
    from vnetrx.paths.virtio_net_hdr import VnetHdr

    gso = VnetHdr.from_bytes(bytes.fromhex("01014200a80522001000"))
    run = replay(lookup("6.1.192"), RingConfig(VirtioRxSetup(guest_gso=True), batch=2),
                 [60, 5858], [None, gso])
    skbs = [f.decision.skb for f in run.frames]
    assert all(skb is not None for skb in skbs)
    assert [(s.truesize, s.nr_frags) for s in skbs if s is not None] == [(1280, 0), (9472, 2)]
    assert [(s.gso_size, s.gso_type, s.ip_summed) for s in skbs if s is not None][1] == (
        1448, 3, 3)
    assert [f.poll for f in run.frames] == [1, 1]
    assert "no EWMA, no page_frag" in run.notes[0]


# --- frames with their virtio_net_hdr (a JSON array of objects) ---------------------------------


def test_json_objects_give_each_frame_its_header(tmp_path: Path) -> None:
    from vnetrx.replay.frames import read_frames

    path = tmp_path / "frames.json"
    path.write_text(json.dumps([
        {"len": 60},
        {"len": 2950, "hdr": "01013600a80522001000", "l4": "tcp4"},
        {"len": 3000, "hdr": "02013600a80500000000", "l4": "tcp4", "tcp_options": 12},
    ]))
    lengths, hdrs = read_frames(str(path))
    assert lengths == (60, 2950, 3000)
    assert hdrs is not None and hdrs[0] is None and hdrs[1] is not None
    assert (hdrs[1].gso_size, hdrs[2].flags) == (1448, 2)
    cfg = RingConfig(VirtioRxSetup(mergeable=True, guest_gso=True))
    # 6.6.44: 2950 = 2 × 1448 + 54 is refused ("missing check"); 6.6.46: the DATA_VALID TSO
    # frame is (csum_offset 0 != 16); the ring and the EWMA go on either way
    for kernel, dropped in (("6.6.44", 1), ("6.6.46", 2), ("6.6.52", None)):
        result = replay(lookup(kernel), cfg, lengths, hdrs)
        reasons = [f.trace.reason for f in result.frames]
        assert reasons == [None if i != dropped else "bad_gso" for i in range(3)]
        # DECLARE_EWMA(pkt_len, 0, 64): (60·63 + 2950) >> 6 = 105, (105·63 + 3000) >> 6 = 150;
        # receive_mergeable updates it before virtio_net_hdr_to_skb refuses a header
        assert [f.ewma_after for f in result.frames] == [60, 105, 150]


@pytest.mark.parametrize(("body", "message"), [
    ([{"len": 60, "size": 1}], "unknown key(s) size"),
    ([{"len": "60"}], '"len" (a whole number) or "frame"'),
    ([{"hdr": "00"}], '"len" (a whole number) or "frame"'),
    ([{"len": 60, "l4": "sctp"}], "is not one of none"),
    ([{"len": 60, "hdr": "zz"}], "is not hex"),
    ([{"len": 60, "hdr": "00" * 11}], "give the 10-byte virtio_net_hdr, or 12"),
    ([{"len": 60, "hdr": "00" * 13}], "give the 10-byte virtio_net_hdr, or 12"),
    ([{"frame": "00" * 60, "len": 60}], 'leave out "len"'),
    ([{"frame": "00" * 60, "l4": "tcp4"}], 'leave out "l4"'),
    ([{"frame": "00" * 13}], "has 13 bytes (an Ethernet frame has at least 14)"),
    ([{"frame": "0g"}], '"frame" \'0g\' is not hex'),
    ([{"frame": 5}], '"frame" must be a hex string'),
    ([{"len": 60, "tcp_options": 4}], "needs a TCP"),
    ([{"len": 60}, 61], "expected an object"),
])
def test_bad_json_objects(tmp_path: Path, body: object, message: str) -> None:
    from vnetrx.replay.frames import read_frames

    path = tmp_path / "frames.json"
    path.write_text(json.dumps(body))
    with pytest.raises(InputError, match=re.escape(message)):
        read_frames(str(path))
