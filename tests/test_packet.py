"""vnetrx/packet.py: the frames vnetrx builds and the headers a sender writes for them."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from vnetrx.decode import parse_frame
from vnetrx.errors import InputError
from vnetrx.packet import (
    build_frame,
    check_fits,
    find_headers,
    headers_of,
    offload_header,
    parse_gso,
    read_frame,
)
from vnetrx.paths.virtio_net_hdr import DATA_VALID, GSO_ECN, GSO_TCPV4, NEEDS_CSUM, VnetHdr


@pytest.mark.parametrize(("l4", "options", "transport", "end"), [
    ("tcp4", 0, 34, 54), ("tcp4", 12, 34, 66), ("tcp6", 0, 54, 74), ("udp4", 0, 34, 42),
    ("udp6", 0, 54, 62),
])
def test_header_offsets(l4: str, options: int, transport: int, end: int) -> None:
    """Ethernet 14 + IPv4 20 / IPv6 40, then TCP 20 (+ options) or UDP 8."""
    h = headers_of(l4, options)
    assert (h.transport, h.end) == (transport, end)


def test_built_frames_parse_back_with_their_lengths() -> None:
    frame = build_frame(1514, "tcp4", 12)
    assert len(frame) == 1514
    layers, notes = parse_frame(frame)
    names = [layer.name for layer in layers]
    assert names[:4] == ["ethernet", "ipv4", "tcp", "payload"]
    ip = struct.unpack_from("!H", frame, 16)[0]
    assert ip == 1500  # IPv4 total length
    assert frame[46] >> 4 == 8  # TCP data offset: 32 bytes
    assert find_headers(frame).l4 == "tcp4" and find_headers(frame).end == 66
    v6 = build_frame(200, "udp6")
    assert struct.unpack_from("!H", v6, 18)[0] == 200 - 54  # IPv6 payload length
    assert struct.unpack_from("!H", v6, 54 + 4)[0] == 200 - 54  # UDP length
    assert not notes


def test_a_frame_shorter_than_its_headers_is_cut() -> None:
    assert len(build_frame(40, "tcp4")) == 40


@pytest.mark.parametrize(("l4", "options", "end"), [
    ("tcp4", 0, 54), ("tcp4", 12, 66), ("tcp6", 0, 74), ("tcp6", 40, 114), ("udp4", 0, 42),
    ("udp6", 0, 62),
])
def test_a_frame_asked_for_must_hold_its_headers(l4: str, options: int, end: int) -> None:
    """Ethernet 14 + IPv4 20 / IPv6 40 + TCP 20 (+ options) / UDP 8: one byte short is refused
    (it would carry no whole TCP/UDP header), the headers alone are a frame."""
    assert check_fits(end, l4, options).end == end
    with pytest.raises(InputError, match=rf"--len {end - 1} is too short for a {l4} frame.*"
                                         rf"its headers take {end} bytes.*valid: {end}\.\.65535"):
        check_fits(end - 1, l4, options)


def test_offload_headers() -> None:
    tcp = headers_of("tcp4")
    assert offload_header(tcp, "partial", None) == VnetHdr(NEEDS_CSUM, 0, 0, 0, 34, 16)
    assert offload_header(tcp, "valid", None) == VnetHdr(DATA_VALID, 0, 0, 0, 0, 0)
    # GSO without --csum: NEEDS_CSUM, and hdr_len covers Ethernet + IP + TCP
    assert offload_header(tcp, None, (GSO_TCPV4, 1448)) == VnetHdr(
        NEEDS_CSUM, GSO_TCPV4, 54, 1448, 34, 16)
    assert offload_header(headers_of("udp6"), "partial", None).csum_offset == 6


def test_gso_specs() -> None:
    assert parse_gso("tcpv4:1448") == (GSO_TCPV4, 1448)
    assert parse_gso("tcpv4:1448+ecn") == (GSO_TCPV4 | GSO_ECN, 1448)
    assert parse_gso("udp_l4:1472") == (5, 1472)
    for bad in ("tcp:1", "tcpv4", "tcpv4:0", "tcpv4:65536"):
        with pytest.raises(InputError):
            parse_gso(bad)


@pytest.mark.parametrize(("l4", "options", "message"), [
    ("tcp5", 0, "not one of"), ("tcp4", 6, "multiple of 4"), ("tcp4", 44, "out of range"),
    ("udp4", 4, "needs a TCP frame"),
])
def test_bad_frames(l4: str, options: int, message: str) -> None:
    with pytest.raises(InputError, match=message):
        headers_of(l4, options)


def test_vnet_hdr_bytes_round_trip_and_match_the_layouts() -> None:
    from vnetrx.layouts.virtio_net import virtio_net_hdr_mrg_rxbuf, virtio_net_hdr_v1_hash

    h = VnetHdr(1, 1, 54, 1448, 34, 16, 3, 0x12345678, 2)
    assert VnetHdr.from_bytes(h.to_bytes(20)) == h
    mrg = virtio_net_hdr_mrg_rxbuf().struct().parse(h.to_bytes(12))
    assert (mrg.hdr.gso_size, mrg.hdr.csum_start, mrg.num_buffers) == (1448, 34, 3)
    v1 = virtio_net_hdr_v1_hash().struct().parse(h.to_bytes(20))
    assert (v1.hash_value_lo, v1.hash_value_hi, v1.hash_report) == (0x5678, 0x1234, 2)
    assert len(h.to_bytes(24)) == 24


def test_read_frame_raw_and_pcap(tmp_path: Path) -> None:
    raw = tmp_path / "f.bin"
    raw.write_bytes(build_frame(100, "udp4"))
    assert read_frame(str(raw)) == build_frame(100, "udp4")
    dpkt = pytest.importorskip("dpkt")
    cap = tmp_path / "f.pcap"
    with cap.open("wb") as out:
        writer = dpkt.pcap.Writer(out)
        writer.writepkt(build_frame(1514, "tcp4"), ts=0)
        writer.writepkt(build_frame(60, "tcp4"), ts=1)
    assert len(read_frame(str(cap))) == 1514
    empty = tmp_path / "e.bin"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        read_frame(str(empty))


def test_transport_of_captured_frames() -> None:
    from vnetrx.packet import transport_of

    def where(frame: bytes) -> tuple[object, ...]:
        h = transport_of(frame)
        return (h.l4, h.transport, h.transport_len, h.network)

    assert where(build_frame(1514, "tcp4", 12)) == ("tcp4", 34, 32, 14)
    assert where(build_frame(200, "udp6")) == ("udp6", 54, 8, 14)
    tagged = build_frame(100, "tcp4")
    tagged = tagged[:12] + bytes.fromhex("810000640800") + tagged[14:]  # an 802.1Q tag
    assert where(tagged) == ("tcp4", 38, 20, 18)
    options = bytearray(build_frame(100, "udp4"))
    options[14] = 0x46  # IHL 6: 4 bytes of IPv4 options
    assert transport_of(bytes(options)).transport == 38
    fragment = bytearray(build_frame(100, "udp4"))
    fragment[20] = 0x20  # more fragments
    assert transport_of(bytes(fragment)).l4 is None
    assert transport_of(bytes(60)).l4 is None and transport_of(b"").l4 is None


def test_derive_is_given_enough_of_a_frame_for_the_longest_headers() -> None:
    """A replay that derives headers from a capture copies only DERIVE_HEAD bytes of each
    frame: transport_of of the longest headers it reads (two VLAN tags, a 60-byte IPv4 header,
    a 60-byte TCP header) finds the same there as in the whole frame."""
    from vnetrx.packet import transport_of
    from vnetrx.replay.frames import DERIVE_HEAD

    frame = bytearray(build_frame(1514, "tcp4", 40))  # TCP: 20 + 40 option bytes
    ip = bytes(frame[14:34]) + bytes(40)  # IPv4 with 40 option bytes: IHL 15
    frame = (frame[:12] + bytes.fromhex("88a8000a 8100 0014 0800") + bytes([0x4F])
             + ip[1:] + frame[34:])
    h = transport_of(bytes(frame))
    assert (h.l4, h.network, h.transport, h.transport_len) == ("tcp4", 22, 82, 60)
    assert h.end == 142 and DERIVE_HEAD == 96  # (the TCP options are not read: 142 > 96)
    assert transport_of(bytes(frame[:DERIVE_HEAD])) == h
    assert transport_of(bytes(frame[:95])) == h  # TCP's data offset: byte 82 + 12
    assert transport_of(bytes(frame[:94])).l4 is None  # (the data offset is read)


def test_capture_headers() -> None:
    """A host's tap: frames up to MTU + Ethernet header get NEEDS_CSUM; longer ones are GSO,
    gso_size the MTU less the IP and TCP headers (1500 - 20 - 32 with timestamps = 1448)."""
    from vnetrx.packet import capture_header, transport_of

    tcp = transport_of(build_frame(9014, "tcp4", 12))
    assert capture_header(tcp, 1514, 1500, None, "auto") == VnetHdr(NEEDS_CSUM, 0, 0, 0, 34, 16)
    assert capture_header(tcp, 9014, 1500, None, "auto") == VnetHdr(
        NEEDS_CSUM, GSO_TCPV4, 66, 1448, 34, 16)
    assert capture_header(tcp, 9014, 1500, 1400, "auto").gso_size == 1400  # type: ignore[union-attr]
    assert capture_header(tcp, 9014, 1500, None, "auto-valid") == VnetHdr(
        DATA_VALID, GSO_TCPV4, 66, 1448, 0, 0)
    assert capture_header(transport_of(bytes(60)), 60, 1500, None, "auto") is None


@pytest.mark.parametrize("mode", ["auto", "auto-valid"])
def test_capture_deriver_gives_each_frame_capture_header(mode: str) -> None:
    """The replay's deriver: for every frame, capture_header of where its headers are; frames
    alike in those and in being over the MTU or not share one header (the MTU boundary ± 1)."""
    from vnetrx.packet import CaptureDeriver, capture_header, transport_of

    mtu = 1500
    derive = CaptureDeriver(mode, mtu, None)
    frames = [build_frame(9014, "tcp4", 12), build_frame(9014, "tcp6", 12),
              *(build_frame(9014, l4) for l4 in ("tcp4", "tcp6", "udp4", "udp6")), bytes(60)]
    for frame in frames:
        h = transport_of(frame)
        for length in (60, h.network + mtu - 1, h.network + mtu, h.network + mtu + 1, 9014):
            assert derive(length, frame) == capture_header(h, length, mtu, None, mode)
    tcp = build_frame(9014, "tcp4")
    assert derive(1514, tcp) is derive(1000, tcp)  # the same header object, made once
    assert derive(1515, tcp) is not derive(1514, tcp)
    assert derive(1515, tcp).gso_size == mtu - 20 - 20  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["auto", "auto-valid"])
def test_capture_deriver_pairs_are_its_headers_of_keyed_frames(mode: str) -> None:
    """``pairs`` of frames read as transport_key << KEY_SHIFT | length (capture.read_keyed):
    each frame's length and the header the deriver gives its bytes, the same objects."""
    from vnetrx.packet import KEY_SHIFT, CaptureDeriver, transport_key

    derive = CaptureDeriver(mode, 1500, None)
    frames = [(build_frame(1514, "tcp4", 12), 1514), (build_frame(1515, "tcp4"), 1515),
              (build_frame(9014, "udp6"), 9014), (bytes(60), 60), (bytes(60), 9014)]
    keyed = [transport_key(f) << KEY_SHIFT | n for f, n in frames]
    pairs = derive.pairs(keyed)
    assert [n for n, _ in pairs] == [1514, 1515, 9014, 60, 9014]
    assert all(hdr is derive(n, f) for (n, hdr), (f, _) in zip(pairs, frames, strict=True))
    assert [p[1] is None for p in pairs] == [False, False, False, True, True]


def test_transport_of_boundaries() -> None:
    """transport_of's reads at their edges: two tags followed, a third not; each header needed
    whole (IPv4's 20 bytes, IPv6's 40, TCP's first 13 for its data offset; UDP's none); DF is
    not a fragment, an offset is; a TCP data offset below 5 reads as 20 bytes."""
    from vnetrx.packet import transport_of

    def where(frame: bytes) -> tuple[object, ...]:
        h = transport_of(frame)
        return (h.l4, h.transport, h.transport_len, h.network)

    tcp = build_frame(100, "tcp4")
    qinq = tcp[:12] + bytes.fromhex("88a8000a81000064") + tcp[12:]
    assert where(qinq) == ("tcp4", 42, 20, 22)
    three = tcp[:12] + bytes.fromhex("88a8000a8100006481000065") + tcp[12:]
    assert where(three)[0] is None
    assert where(tcp[:14 + 19])[0] is None and where(tcp[:14 + 20])[0] is None  # no TCP bytes
    assert where(tcp[:34 + 12])[0] is None and where(tcp[:34 + 13]) == ("tcp4", 34, 20, 14)
    udp = build_frame(100, "udp4")
    assert where(udp[:33])[0] is None and where(udp[:34]) == ("udp4", 34, 8, 14)
    tcp6 = build_frame(100, "tcp6")
    assert where(tcp6[:53])[0] is None and where(tcp6[:54 + 13]) == ("tcp6", 54, 20, 14)
    ext = bytearray(tcp6)
    ext[20] = 0  # a hop-by-hop options header next: not followed
    assert where(bytes(ext))[0] is None
    frag = bytearray(udp)
    frag[21] = 1  # fragment offset 1 (x 8 bytes)
    assert where(bytes(frag))[0] is None
    frag[20], frag[21] = 0x40, 0  # DF alone
    assert where(bytes(frag)) == ("udp4", 34, 8, 14)
    small, big = bytearray(tcp), bytearray(tcp)
    small[34 + 12], big[34 + 12] = 0x20, 0xF0  # data offset 2 (invalid), 15
    assert where(bytes(small))[2] == 20 and where(bytes(big))[2] == 60
    assert where(bytes(13))[0] is None and where(bytes(14)) == (None, 0, 0, 14)
