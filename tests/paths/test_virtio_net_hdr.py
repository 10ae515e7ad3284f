"""paths/virtio_net_hdr.py: include/linux/virtio_net.h:virtio_net_hdr_to_skb, release by release.

Each expectation is worked out by hand from the function's text in the stable trees read point
release by point release (docs/kernel/offloads.md §8; unifreq/linux-5.15.y, -6.1.y, -6.6.y; Debian
6.1.192 and 6.12.117), on both sides of every boundary. The skb is linear (a tap write's or a
build_skb head): headroom 64, data at the Ethernet header.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vnetrx.kernel.registry import lookup
from vnetrx.model import Frag, Skb
from vnetrx.paths.virtio_net_hdr import (
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    DATA_VALID,
    GSO_TCPV4,
    GSO_UDP,
    GSO_UDP_L4,
    NEEDS_CSUM,
    HdrResult,
    VnetHdr,
    hdr_rules,
    virtio_net_hdr_to_skb,
)

HEADROOM = 64


def run(kernel: str, h: VnetHdr, frame_len: int, ip_summed: int = 0) -> HdrResult:
    k = lookup(kernel)
    end = HEADROOM + frame_len
    skb = Skb("test", end + 320, HEADROOM, end, end, frame_len, 0, 0, ip_summed=ip_summed)
    return virtio_net_hdr_to_skb(k, hdr_rules(k), skb, h, owned=False)


def accepted(kernel: str, h: VnetHdr, frame_len: int, ip_summed: int = 0) -> bool:
    return run(kernel, h, frame_len, ip_summed).skb is not None


# A TCP segment the host's GRO merged (or a guest's TSO frame): csum_start 34 (Ethernet + IPv4),
# csum_offset 16 (tcphdr.check)
TSO4 = VnetHdr(NEEDS_CSUM, GSO_TCPV4, 54, 1448, 34, 16)
# The same without NEEDS_CSUM: what a device sends with DATA_VALID (checksum already verified)
TSO4_VALID = VnetHdr(DATA_VALID, GSO_TCPV4, 54, 1448, 0, 0)


@pytest.mark.parametrize(("kernel", "ok"), [
    ("5.15.166", True), ("5.15.167", False), ("5.15.168", True),
    ("6.1.106", True), ("6.1.107", False), ("6.1.110", False), ("6.1.111", True),
    ("6.6.45", True), ("6.6.46", False), ("6.6.51", False), ("6.6.52", True),
    ("6.12", True),
])
def test_tcp_gso_without_needs_csum_in_the_unconditional_csum_offset_window(
        kernel: str, ok: bool) -> None:
    """89add40066f9 tested csum_offset == 16 on every TCP GSO skb; one without NEEDS_CSUM has
    csum_offset 0 (CHECKSUM_UNNECESSARY from DATA_VALID), so it was dropped until 6513eb3d3191
    limited the test to CHECKSUM_PARTIAL."""
    result = run(kernel, TSO4_VALID, 3000, ip_summed=CHECKSUM_UNNECESSARY)
    assert (result.skb is not None) is ok
    if not ok:
        assert result.failed is not None
        assert result.failed.reason == (
            "TCP GSO with csum_offset 0, not 16 (tcphdr.check): this kernel tests it even "
            "without NEEDS_CSUM")
        assert result.failed.because == ("vnet_hdr_tcp_csum_offset",)


def test_tcp_gso_with_the_wrong_csum_offset_is_refused_from_the_csum_offset_change_on() -> None:
    h = VnetHdr(NEEDS_CSUM, GSO_TCPV4, 0, 1448, 34, 6)
    assert accepted("6.6.45", h, 3000)
    assert not accepted("6.6.46", h, 3000)
    assert not accepted("6.6.52", h, 3000)  # CHECKSUM_PARTIAL: still tested after the tightening


# "net: missing check virtio": NEEDS_CSUM and gso_size: skb->len / gso_size ≥ 1, gso_size >
# needed, remainder 0 or > needed; needed = csum_start + max(thlen 20, csum_offset + 2) = 54
@pytest.mark.parametrize(("frame_len", "ok"), [
    (2 * 1448, True),  # remainder 0
    (2 * 1448 + 54, False),  # remainder == needed
    (2 * 1448 + 55, True),
    (2 * 1448 + 1, False),
    (1447, False),  # shorter than one segment
    (1448, True),
])
def test_missing_check_window_6_6_44(frame_len: int, ok: bool) -> None:
    assert accepted("6.6.44", TSO4, frame_len) is ok
    assert accepted("6.6.45", TSO4, frame_len) is ok
    # before and after its two point releases every one of these frames is accepted
    for kernel in ("6.6.43", "6.6.46", "6.1.102", "6.1.107", "5.15.164", "5.15.167"):
        assert accepted(kernel, TSO4, frame_len)
    assert accepted("6.1.103", TSO4, frame_len) is ok
    assert accepted("5.15.166", TSO4, frame_len) is ok


def test_missing_check_also_refuses_gso_size_not_above_the_headers() -> None:
    h = VnetHdr(NEEDS_CSUM, GSO_TCPV4, 0, 54, 34, 16)  # gso_size == needed
    result = run("6.6.44", h, 3000)
    assert result.failed is not None
    assert result.failed.because == ("vnet_hdr_missing_check",)
    assert "gso_size not above the 54 header bytes" in result.failed.reason
    # gso_size 55: 3000 = 54 × 55 + 30, and a remainder of 30 is not above 54 either
    assert not accepted("6.6.44", VnetHdr(NEEDS_CSUM, GSO_TCPV4, 0, 55, 34, 16), 3000)
    assert accepted("6.6.44", VnetHdr(NEEDS_CSUM, GSO_TCPV4, 0, 55, 34, 16), 55 * 54)


@pytest.mark.parametrize(("kernel", "clamped"), [
    ("6.1.187", False), ("6.1.188", True), ("6.6.156", False), ("6.6.157", True),
    ("6.12.109", False), ("6.12.110", True), ("6.18.44", False), ("6.18.52", True),
    ("7.2.6", False), ("7.2.7", True), ("7.3", True), ("5.15.221", True),
])
def test_tcp_gso_size_below_tcp_min_gso_size_is_raised_to_8(kernel: str,
                                                             clamped: bool) -> None:
    """c27c449d455a: gso_size = max(gso_size, TCP_MIN_GSO_SIZE) before the 'too small' test.
    p_off = 34 + 20 = 54; a 100-byte frame has 46 payload bytes > 8, so it stays GSO."""
    result = run(kernel, VnetHdr(NEEDS_CSUM, GSO_TCPV4, 0, 1, 34, 16), 100)
    assert result.skb is not None
    assert result.skb.gso_size == (8 if clamped else 1)


def test_tcp_min_gso_size_clamp_can_make_a_frame_too_small_to_be_gso() -> None:
    # 5 payload bytes: > gso_size 1, but ≤ 8
    h = VnetHdr(NEEDS_CSUM, GSO_TCPV4, 0, 1, 34, 16)
    before, after = run("6.1.187", h, 59).skb, run("6.1.188", h, 59).skb
    assert before is not None and after is not None
    assert (before.gso_size, after.gso_size) == (1, 0)


def test_ufo_too_small_test_leaves_out_the_udp_header_from_5_15_5() -> None:
    """cf9acc90c80e: nh_off -= thlen for UFO. NEEDS_CSUM p_off = 34 + 8 = 42; a 1040-byte frame
    with gso_size 1000: 1040 - 42 = 998 (not GSO) before, 1040 - 34 = 1006 (GSO) after."""
    h = VnetHdr(NEEDS_CSUM, GSO_UDP, 0, 1000, 34, 6)
    old, new = run("5.15.4", h, 1040).skb, run("5.15.5", h, 1040).skb
    assert old is not None and new is not None
    assert (old.gso_size, new.gso_size) == (0, 1000)


def test_gso_by_frags_is_refused_from_6_1_47() -> None:
    h = VnetHdr(NEEDS_CSUM, GSO_TCPV4, 0, 0xFFFF, 34, 16)
    assert accepted("6.1.46", h, 3000)  # too small to be GSO with gso_size 65535: accepted
    assert not accepted("6.1.47", h, 3000)
    assert not accepted("5.15.128", h, 3000)
    assert accepted("5.15.127", h, 3000)


def test_udp_l4_is_unknown_on_every_6_1_and_accepted_from_6_2() -> None:
    h = VnetHdr(NEEDS_CSUM, GSO_UDP_L4, 0, 1000, 34, 6)
    for kernel in ("6.1.0", "6.1.107", "6.1.192", "5.15.215"):
        result = run(kernel, h, 3000)
        assert result.failed is not None and result.failed.test.startswith("gso_type & ~")
    result = run("6.6.0", h, 3000)
    assert result.skb is not None and result.skb.gso_type_names == (
        "SKB_GSO_DODGY", "SKB_GSO_UDP_L4")


def test_udp_max_segments_64_then_128_in_6_6_29() -> None:
    h = VnetHdr(NEEDS_CSUM, GSO_UDP_L4, 0, 10, 34, 6)
    # payload = frame - p_off (34 + 8 = 42)
    assert accepted("6.6.28", h, 42 + 640)
    assert not accepted("6.6.28", h, 42 + 641)
    assert accepted("6.6.29", h, 42 + 641)
    assert accepted("6.6.29", h, 42 + 1280)
    assert not accepted("6.6.29", h, 42 + 1281)


def test_gso_without_needs_csum_pulls_nh_min_len_from_6_6_14() -> None:
    """9181d6f8a2bb: p_off = nh_min_len (20) + thlen (20) instead of thlen."""
    h = VnetHdr(0, GSO_TCPV4, 0, 1000, 0, 0)
    assert accepted("6.6.13", h, 39)
    assert not accepted("6.6.14", h, 39)
    assert accepted("6.6.14", h, 40)
    assert accepted("6.1.192", h, 20)  # never in 6.1.y


def test_csum_start_inside_the_ip_header() -> None:
    """NEEDS_CSUM, csum_start 10, csum_offset 6, no GSO: 6.6.14-6.6.54 pull
    max(nh_min_len 20, 10) = 20 bytes (a 19-byte frame fails); 6.6.55 (49d14b54a527) refuses
    csum_start < 20 outright."""
    h = VnetHdr(NEEDS_CSUM, 0, 0, 0, 10, 6)
    assert accepted("6.6.13", h, 19)
    assert not accepted("6.6.14", h, 19)
    assert accepted("6.6.54", h, 20)
    result = run("6.6.55", h, 100)
    assert result.failed is not None and result.failed.because == ("vnet_hdr_transport_floor",)
    assert accepted("6.1.192", h, 19)


def test_skb_partial_csum_set_refuses_u16_max_from_6_1_30() -> None:
    h = VnetHdr(NEEDS_CSUM, 0, 0, 0, 65535 - HEADROOM, 0)  # headroom + csum_start = 65535
    assert accepted("6.1.29", h, 65535)
    result = run("6.1.30", h, 65535)
    assert result.failed is not None and result.failed.function == "skb_partial_csum_set"
    assert accepted("5.15.215", h, 65535)


def test_what_an_accepted_header_sets() -> None:
    """skb_partial_csum_set: CHECKSUM_PARTIAL, csum_start from skb->head, the offset as given;
    gso fields only when skb->len - nh_off > gso_size, with SKB_GSO_DODGY and gso_segs 0."""
    result = run("6.12", TSO4, 3000)
    skb = result.skb
    assert skb is not None
    assert (skb.ip_summed, skb.csum_start, skb.csum_offset) == (CHECKSUM_PARTIAL, 64 + 34, 16)
    assert (skb.gso_size, skb.gso_type, skb.gso_segs) == (1448, 0x3, 0)
    assert skb.mac_header == HEADROOM
    assert result.pulled == 0  # linear already


def test_the_pulls_move_bytes_from_frags_into_the_head() -> None:
    """A copy-path skb (14 linear bytes, the rest in a frag, 626 bytes of tailroom on 6.12):
    NEEDS_CSUM IPv4/TCP GSO pulls 54 bytes linear, no pskb_expand_head."""
    k = lookup("6.12")
    skb = Skb("napi", 1024, 64, 78, 704, 3000, 2986, 2816, 1,
              frags=(Frag("page", 0, 2986, 1536),))
    result = virtio_net_hdr_to_skb(k, hdr_rules(k), skb, TSO4, owned=False)
    assert result.skb is not None
    assert (result.skb.headlen, result.pulled, result.expanded) == (54, 40, False)
    assert result.skb.truesize == 2816


@settings(max_examples=300, deadline=None)
@given(
    kernel=st.sampled_from(["5.15.166", "5.15.167", "6.1.47", "6.1.107", "6.6.29", "6.6.44",
                            "6.6.52", "6.12", "6.18", "7.3"]),
    flags=st.sampled_from([0, NEEDS_CSUM, DATA_VALID]),
    gso_type=st.sampled_from([0, GSO_TCPV4, 4, GSO_UDP, GSO_UDP_L4, 0x80, 0x81, 7]),
    hdr_len=st.integers(0, 200),
    gso_size=st.sampled_from([0, 1, 7, 8, 100, 1448, 1472, 0xFFFF]),
    csum_start=st.sampled_from([0, 14, 20, 34, 54, 0xFFF0]),
    csum_offset=st.sampled_from([0, 6, 16, 18]),
    frame_len=st.integers(1, 65535),
    linear=st.integers(1, 128),
)
def test_deciding_without_words_decides_the_same(
    kernel: str, flags: int, gso_type: int, hdr_len: int, gso_size: int, csum_start: int,
    csum_offset: int, frame_len: int, linear: int,
) -> None:
    """``narrate=False`` (sweeps, replay decisions) leaves out the checks' words and nothing
    else: the same skb, the same refusal-or-not, as the narrated run."""
    k = lookup(kernel)
    h = VnetHdr(flags, gso_type, hdr_len, gso_size, csum_start, csum_offset)
    head = min(linear, frame_len)
    rest = frame_len - head
    skb = Skb("test", HEADROOM + head + 320, HEADROOM, HEADROOM + head, HEADROOM + head,
              frame_len, rest, 4096, 1 if rest else 0,
              frags=(Frag("page", 0, rest, 4096),) if rest else ())
    told = virtio_net_hdr_to_skb(k, hdr_rules(k), skb, h, owned=False)
    quiet = virtio_net_hdr_to_skb(k, hdr_rules(k), skb, h, owned=False, narrate=False)
    assert quiet.skb == told.skb
    assert (quiet.pulled, quiet.expanded) == (told.pulled, told.expanded)
    assert quiet.checks == () and quiet.failed is None
    assert told.checks and (told.failed is None) == (told.skb is not None)
