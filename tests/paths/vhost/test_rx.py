"""vnetrx/paths/vhost/rx.py: vhost-net's handle_rx. Every expected number is read from the
kernel source (drivers/vhost/net.c:handle_rx / get_rx_bufs / vhost_net_signal_used,
drivers/virtio/virtio_net.c:add_recvbuf_small / _big, include/linux/virtio_net.h:
virtio_net_hdr_from_skb) or the fact sheets (../shared/reference/offloads-xdp.md §4.4,
gro-vhost-captures.md §2.2), written out here, not computed by the code under test."""

from __future__ import annotations

import pytest

from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.registry import lookup
from vnetrx.packet import headers_of
from vnetrx.paths.vhost.rx import (
    Discard,
    HostFrame,
    Segment,
    Signal,
    VhostRx,
    VhostRxSetup,
    check_frame,
    vhost_rx,
    vhost_rx_config,
)
from vnetrx.paths.virtio_net_hdr import VnetHdr

TCP4 = headers_of("tcp4")  # 14 + 20 + 20: csum_start 34, csum_offset 16
# the host skb of a TCPv4 TSO send: CHECKSUM_PARTIAL, gso_size 1448, skb_headlen 54
TSO = VnetHdr(1, 1, 54, 1448, 34, 16)
MRG_1536 = VhostRxSetup(mode="mergeable", buf_len=1536, uniform=True)


def run(kernel: str, setup: VhostRxSetup, *frames: HostFrame, guest: bool = False) -> VhostRx:
    return vhost_rx(lookup(kernel), setup, frames, guest=guest)


@pytest.mark.parametrize("kernel", ["6.1", "6.12", "7.3"])
def test_documented_tso_example_43_buffers(kernel: str) -> None:
    """offloads-xdp.md §4.4: a 65 550-byte TSO frame into 1536-byte buffers: 65 562 bytes with
    the 12-byte header → 43 buffers, 42 reported full (1536), the last 65 562 − 42 × 1536 =
    1050; num_buffers = 43 (uniform buffers: 7.x's page_pool would otherwise absorb holes)."""
    r = run(kernel, MRG_1536, HostFrame(65550))
    (p,) = r.packets
    assert p.sock_len == 65562
    assert p.headcount == 43
    assert p.used == (1536,) * 42 + (1050,)
    assert p.num_buffers == 43
    assert p.hdr[10:] == bytes([43, 0])


@pytest.mark.parametrize(("length", "used"), [(1523, (1535,)), (1524, (1536,)),
                                              (1525, (1536, 1))])
def test_mergeable_boundary_at_one_buffer(length: int, used: tuple[int, ...]) -> None:
    """sock_len = len + 12: 1536 bytes fill one buffer, one more byte takes a second whose used
    length is 1 (heads[headcount - 1].len = len + datalen)."""
    (p,) = run("6.1", MRG_1536, HostFrame(length)).packets
    assert p.used == used
    assert p.headcount == len(used) == p.num_buffers


@pytest.mark.parametrize(("length", "discarded"), [(65523, False), (65524, False),
                                                   (65525, True)])
def test_mergeable_overrun_past_uio_maxiov(length: int, discarded: bool) -> None:
    """Quota UIO_MAXIOV = 1024 heads: 1024 × 64-byte buffers hold 65 536 bytes = 65 524 + 12."""
    setup = VhostRxSetup(mode="mergeable", buf_len=64, uniform=True)
    (p,) = run("6.12", setup, HostFrame(length)).packets
    assert (p.discard is Discard.OVERRUN) is discarded
    assert p.headcount == 1024  # 65 523 + 12 needs 1024 buffers too (1023 × 64 = 65 472)
    if discarded:
        assert p.used == () and p.hdr == b"" and p.num_buffers is None
    else:
        assert sum(p.used) == length + 12


@pytest.mark.parametrize(("hdr_len", "length", "discarded"),
                         [(12, 1518, False), (12, 1519, True), (10, 1518, False),
                          (10, 1519, True)])
def test_small_mode_one_chain_of_hdr_len_plus_1518(hdr_len: int, length: int,
                                                   discarded: bool) -> None:
    """add_recvbuf_small posts vi->hdr_len + GOOD_PACKET_LEN (1518); quota 1: a longer frame is
    an overrun."""
    setup = VhostRxSetup(mode="small", hdr_len=hdr_len)
    (p,) = run("6.12", setup, HostFrame(length)).packets
    assert p.chains == (hdr_len + 1518,)
    assert (p.discard is not None) is discarded
    if not discarded:
        assert p.used == (hdr_len + length,)


@pytest.mark.parametrize(("length", "discarded"), [(1514, False), (1515, True)])
def test_vlan_tag_adds_four(length: int, discarded: bool) -> None:
    """__skb_array_len_with_tag: skb->len + VLAN_HLEN; the small chain holds 1518 frame bytes."""
    (p,) = run("6.1", VhostRxSetup(mode="small"), HostFrame(length, vlan=True)).packets
    assert p.sock_len == length + 4 + 12
    assert (p.discard is not None) is discarded


@pytest.mark.parametrize(("kernel", "chain"), [
    # MAX_SKB_FRAGS 17: 12 + (17 + 1) × 4096 − sizeof(padded_vnet_hdr) (32 from 5.18, else 16)
    ("6.12", 12 + 18 * 4096 - 32),
    ("5.15", 12 + 18 * 4096 - 16),
])
def test_big_mode_chain_with_guest_gso(kernel: str, chain: int) -> None:
    (p,) = run(kernel, VhostRxSetup(mode="big"), HostFrame(60000)).packets
    assert p.chains == (chain,)
    assert p.used == (60012,)


@pytest.mark.parametrize(("kernel", "chain"), [
    # 6.1+ without guest GSO: DIV_ROUND_UP(9000, 4096) = 3 pages + page 0: 12 + 4 × 4096 − 32
    ("6.1", 12 + 4 * 4096 - 32),
    # 5.15: MAX_SKB_FRAGS (17) pages whatever the MTU; padded_vnet_hdr 16
    ("5.15", 12 + 18 * 4096 - 16),
])
def test_big_mode_mtu_sized_chain(kernel: str, chain: int) -> None:
    setup = VhostRxSetup(mode="big", mtu=9000, tap_offload=False)
    (p,) = run(kernel, setup, HostFrame(100)).packets
    assert p.chains == (chain,)


@pytest.mark.parametrize(("length", "discarded"), [(16352, False), (16353, True)])
def test_big_mode_overrun_boundary(length: int, discarded: bool) -> None:
    setup = VhostRxSetup(mode="big", mtu=9000, tap_offload=False)
    (p,) = run("6.12", setup, HostFrame(length)).packets
    assert (p.discard is Discard.OVERRUN) is discarded
    if not discarded:
        assert p.used == (length + 12,)


@pytest.mark.parametrize("kernel", ["6.1", "6.12"])
def test_linux_guest_buffers_absorb_the_page_hole(kernel: str) -> None:
    """add_recvbuf_mergeable: 1536-byte buffers from a 32 KiB page_frag; the 21st (offset
    30 720) leaves 512 bytes, less than another buffer, and takes them: 2048 bytes."""
    setup = VhostRxSetup(mode="mergeable", buf_len=1536)
    r = run(kernel, setup, *[HostFrame(2100)] * 11)
    assert r.packets[10].chains == (2048, 1536)
    assert r.packets[10].used == (2048, 2112 - 2048)
    assert r.packets[10].buffers[0].offset == 30720


def test_discarded_packet_gives_its_buffer_back() -> None:
    """get_rx_bufs' err path: vhost_discard_vq_desc; the next packet takes the same buffer."""
    r = run("6.12", VhostRxSetup(mode="small"), HostFrame(2000), HostFrame(60))
    first, second = r.packets
    assert first.discard is Discard.OVERRUN
    assert first.buffers == second.buffers
    assert second.buffers[0].offset == 0  # the first buffer of the fresh page


@pytest.mark.parametrize(("kernel", "hdr", "untouched"), [
    # VERSION_1 without MRG_RXBUF: num_buffers only from 6.14 (a3b9c053d82a)
    ("6.12", "00000000000000000000", 2),
    ("6.18", "000000000000000000000100", 0),
])
def test_num_buffers_with_version_1_only(kernel: str, hdr: str, untouched: int) -> None:
    (p,) = run(kernel, VhostRxSetup(mode="small", hdr_len=12), HostFrame(100)).packets
    assert p.hdr.hex() == hdr
    assert p.hdr_untouched == untouched


@pytest.mark.parametrize("kernel", ["6.1", "6.12", "6.18"])
def test_legacy_header_has_no_num_buffers(kernel: str) -> None:
    (p,) = run(kernel, VhostRxSetup(mode="small", hdr_len=10), HostFrame(100)).packets
    assert p.hdr == bytes(10) and p.num_buffers is None and p.hdr_untouched == 0


def test_gso_header_bytes() -> None:
    """virtio_net_hdr_from_skb: flags NEEDS_CSUM, gso_type TCPV4, hdr_len = skb_headlen 54
    (0x36), gso_size 1448 (0x5a8), csum_start 34 (0x22), csum_offset 16; then num_buffers."""
    (p,) = run("6.12", MRG_1536, HostFrame(1514 + 1448 * 3, TSO, TCP4)).packets
    assert p.hdr.hex() == "01013600a8052200100004" + "00"
    assert p.num_buffers == 4


def test_gso_header_with_vlan_moves_csum_start() -> None:
    """csum_start = skb_checksum_start_offset + vlan_hlen: 34 + 4 = 38 (0x26); hdr_len stays
    skb_headlen."""
    (p,) = run("6.12", MRG_1536, HostFrame(3000, TSO, TCP4, vlan=True)).packets
    assert p.hdr[:10].hex() == "01013600a80526001000"


def test_data_valid_and_ecn() -> None:
    valid, ecn = run("6.12", MRG_1536, HostFrame(1514, VnetHdr(2, 0, 0, 0, 0, 0)),
                     HostFrame(5000, TSO._replace(gso_type=0x81), TCP4)).packets
    assert valid.hdr[:10].hex() == "02000000000000000000"
    assert ecn.hdr[:2].hex() == "0181"


def test_no_tap_offload_segments_and_finishes_the_checksum() -> None:
    """skb_gso_segment: 54 header bytes + 1448 each, the last the rest; skb_checksum_help: each
    segment CHECKSUM_NONE (flags 0)."""
    setup = VhostRxSetup(mode="mergeable", buf_len=1536, tap_offload=False)
    r = run("6.12", setup, HostFrame(54 + 1448 * 2 + 100, TSO, TCP4))
    (x,) = r.xmits
    assert x.segmented is Segment.NO_TSO and x.csum_help
    assert [p.skb.len for p in r.packets] == [1502, 1502, 154]
    assert all(p.hdr == bytes(10) + b"\x01\x00" for p in r.packets)


def test_small_mode_segments_but_keeps_csum_offload() -> None:
    """No guest GSO in small mode (no TUN_F_TSO*), TUN_F_CSUM kept: segments stay PARTIAL."""
    r = run("6.12", VhostRxSetup(mode="small"), HostFrame(54 + 1448 + 10, TSO, TCP4))
    assert [p.skb.len for p in r.packets] == [1502, 64]
    assert all(p.hdr[:10].hex() == "01000000000022001000" for p in r.packets)


@pytest.mark.parametrize(("kernel", "whole"), [("6.1", False), ("6.12", True)])
def test_uso_reaches_the_tap_whole_from_6_2(kernel: str, whole: bool) -> None:
    udp = headers_of("udp4")  # 14 + 20 + 8
    uso = VnetHdr(1, 5, 42, 1400, 34, 6)
    r = run(kernel, MRG_1536, HostFrame(42 + 1400 * 3, uso, udp))
    assert (r.xmits[0].segmented is None) is whole
    if whole:
        assert r.packets[0].hdr[1] == 5  # VIRTIO_NET_HDR_GSO_UDP_L4
    else:
        assert r.xmits[0].segmented is Segment.NO_USO and len(r.packets) == 3


@pytest.mark.parametrize(("count", "signals"), [
    (64, {63: Signal.EMPTY}),
    (65, {64: Signal.DONE_IDX}),
    (66, {64: Signal.DONE_IDX, 65: Signal.EMPTY}),
])
def test_signal_when_done_idx_passes_64(count: int, signals: dict[int, Signal]) -> None:
    """nvq->done_idx > VHOST_NET_BATCH signals; so does the end of handle_rx (if any heads)."""
    r = run("6.12", MRG_1536, *[HostFrame(60)] * count)
    assert {p.seq: p.signal for p in r.packets if p.signal} == signals


def test_packet_weight_ends_a_run() -> None:
    """vhost_exceeds_weight: 256 packets per run; batches of 64 pointers."""
    r = run("6.12", MRG_1536, *[HostFrame(60)] * 300)
    p255, p256 = r.packets[255], r.packets[256]
    assert p255.run == 0 and p256.run == 1
    assert p255.signal is Signal.WEIGHT
    assert [r.packets[i].batch for i in (63, 64, 256)] == [0, 1, 4]
    assert [p.seq for p in r.packets if p.signal is Signal.DONE_IDX] == [64, 129, 194]
    # run 1: 44 packets, done_idx 44, signalled at the empty ring
    assert r.packets[299].signal is Signal.EMPTY and r.packets[299].done_idx == 44


def test_byte_weight_ends_a_run() -> None:
    """0x80000 bytes of vhost_len per run: 9012 × 58 = 522 696 < 524 288 ≤ 9012 × 59."""
    r = run("6.12", VhostRxSetup(mode="mergeable", buf_len=4096), *[HostFrame(9000)] * 60)
    assert [p.run for p in r.packets[57:60]] == [0, 0, 1]
    assert r.packets[58].signal is Signal.WEIGHT


def test_discard_counts_for_the_packet_weight_not_for_done_idx() -> None:
    frames = [HostFrame(2000)] * 255 + [HostFrame(60)] * 2
    r = run("6.12", VhostRxSetup(mode="small"), *frames)
    assert r.packets[254].done_idx == 0 and r.packets[254].signal is None
    assert r.packets[255].run == 0 and r.packets[255].signal is Signal.WEIGHT
    assert r.packets[256].run == 1


def test_guest_receives_what_vhost_wrote() -> None:
    r = run("6.12", MRG_1536, HostFrame(3000, TSO, TCP4), guest=True)
    (g,) = r.guest
    assert g is not None and g.frame == 3000
    skb = g.delivery.skb
    assert skb is not None
    assert skb.gso_size == 1448 and skb.ip_summed == 3  # CHECKSUM_PARTIAL
    assert skb.len == 3000 - 14  # after eth_type_trans


def test_guest_sees_nothing_of_a_discard() -> None:
    r = run("6.12", VhostRxSetup(mode="small"), HostFrame(1600), guest=True)
    assert r.guest == (None,)


@pytest.mark.parametrize(("frame", "message"), [
    (HostFrame(0), "length 0 out of range (valid: 1..65589"),
    (HostFrame(65590), "(valid: 1..65589"),
    (HostFrame(100, VnetHdr(3, 0, 0, 0, 0, 0)), "not both (valid: 0, 1, 2)"),
    (HostFrame(100, VnetHdr(1, 7, 0, 0, 0, 0)), "valid: 0 none, 1 tcpv4"),
    (HostFrame(100, VnetHdr(0, 1, 54, 1448, 0, 0)), "set NEEDS_CSUM"),
    (HostFrame(100, VnetHdr(1, 1, 101, 1448, 34, 16)), "valid: 14..100"),
    (HostFrame(100, VnetHdr(1, 0, 0, 0, 97, 2)), "lies past the 100-byte frame"),
    (HostFrame(100, VnetHdr(1, 0, 0, 0, 96, 2)), None),
    (HostFrame(100, VnetHdr(0, 0, 0, 1448, 0, 0)), "gso_type is 0"),
])
def test_check_frame(frame: HostFrame, message: str | None) -> None:
    if message is None:
        check_frame(frame)
        return
    with pytest.raises(InputError, match=None) as caught:
        check_frame(frame)
    assert message in str(caught.value)


def test_ufo_is_refused_as_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="UFO"):
        check_frame(HostFrame(3000, VnetHdr(1, 3, 42, 1400, 34, 6)))


@pytest.mark.parametrize(("setup", "message"), [
    (VhostRxSetup(mode="mergeable", hdr_len=10), "cannot go with MRG_RXBUF"),
    (VhostRxSetup(mode="small", buf_len=1536), "needs --mergeable"),
    (VhostRxSetup(mode="small", mtu=9000), "at most 1500"),
    (VhostRxSetup(mode="big", tap_offload=False), "--mtu 1501..65535"),
    (VhostRxSetup(mode="mergeable", hdr_len=20), "valid: 10 legacy, 12"),
    (VhostRxSetup(mode="mergeable", buf_len=25), "valid: 26..32768"),
    (VhostRxSetup(mode="mergeable", buf_len=26), None),
])
def test_setup_checks(setup: VhostRxSetup, message: str | None) -> None:
    if message is None:
        vhost_rx_config(lookup("6.12"), setup)
        return
    with pytest.raises(InputError) as caught:
        vhost_rx_config(lookup("6.12"), setup)
    assert message in str(caught.value)


def test_segmenting_needs_the_headers() -> None:
    setup = VhostRxSetup(mode="mergeable", buf_len=1536, tap_offload=False)
    with pytest.raises(InputError, match="give its l4"):
        run("6.12", setup, HostFrame(5000, TSO))
