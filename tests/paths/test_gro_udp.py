"""vnetrx/paths/gro.py: UDP datagrams in GRO (udp4/6_gro_receive, udp_gro_receive,
udp_gro_receive_segment, skb_gro_receive_list, udp4/6_gro_complete in net/ipv4/udp_offload.c
and net/ipv6/udp_offload.c @ 5.15.215, 6.1.166, 6.12.15, 6.18.7: the same steps in each). The
recorded 6.18.44 cases with a UDP_GRO socket are in tests/paths/test_gro_oracle.py."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from vnetrx.flow import tap_flow
from vnetrx.kernel.registry import lookup
from vnetrx.live import gro_frames
from vnetrx.model import GroFlush, GroHow, GroResult
from vnetrx.paths.gro import UdpGro, gro_limits, parse_udp
from vnetrx.paths.tun import TapSetup

K = lookup("6.18.7")
SOCKET = UdpGro(sockets=(5001,))


def run(frames: list[bytes], udp_gro: UdpGro = SOCKET, **limits: int) -> Any:
    return tap_flow(K, TapSetup(), [(None, f) for f in frames], "timeout",
                    limits=gro_limits(K, limits.get("gro_max_size"),
                                      limits.get("gro_ipv4_max_size")),
                    udp_gro=udp_gro).gro


def datagrams(count: int, payload: int | list[int] = 1448) -> list[bytes]:
    return [w.frame for w in gro_frames.build({"segments": count, "l4": "udp",
                                               "payload": payload})]


def test_the_mode_follows_udp_gro_receive() -> None:
    assert UdpGro().mode(5001) is None
    assert UdpGro(sockets=(5001,)).mode(5001) == "segment"
    assert UdpGro(sockets=(5001,)).mode(5002) is None
    assert UdpGro(fwd=True).mode(5002) == "segment"
    # is_flist = sk ? !GRO_ENABLED : 1: a UDP_GRO socket keeps its datagrams off the list
    assert UdpGro(fraglist=True).mode(5001) == "fraglist"
    assert UdpGro(sockets=(5001,), fraglist=True).mode(5001) == "segment"


def test_a_zero_checksum_is_never_merged() -> None:
    frames = datagrams(3)
    zero = [f[:40] + b"\0\0" + f[42:] for f in frames]  # the UDP check field (14 + 20 + 6)
    h = parse_udp(zero[0])
    assert h is not None and h.udp_check == 0 and h.tcp_csum_ok
    gro = run(zero)
    assert [s.how for s in gro.steps] == [GroHow.UDP_UNMERGEABLE] * 3
    assert [s.result for s in gro.steps] == [GroResult.NORMAL] * 3


def test_a_length_field_other_than_the_datagrams_is_never_merged() -> None:
    short = []
    for f in datagrams(2):
        ulen = struct.unpack_from("!H", f, 38)[0]
        udp = f[34:38] + struct.pack("!HH", ulen - 1, 0) + f[42:]
        # the checksum GRO validates: the pseudo header with the datagram's real length
        pseudo = f[26:34] + struct.pack("!BBH", 0, 17, len(udp))
        check = gro_frames.checksum(pseudo + udp)
        short.append(f[:34] + udp[:6] + struct.pack("!H", check) + udp[8:])
    h = parse_udp(short[0])
    assert h is not None and h.tcp_csum_ok and h.udp_len == len(short[0]) - 34 - 1
    gro = run(short)
    assert [s.how for s in gro.steps] == [GroHow.UDP_UNMERGEABLE] * 2


@pytest.mark.parametrize(("count", "segs"), [(45, [45]), (46, [45, 1])])
def test_udp_stops_at_64k_even_with_big_tcp_limits(count: int, segs: list[int]) -> None:
    # skb_gro_receive: past GRO_LEGACY_MAX_SIZE only TCP; 20 + 8 + 45 x 1448 = 65188
    gro = run(datagrams(count), gro_max_size=185000, gro_ipv4_max_size=185000)
    assert [len(d.frames) for d in gro.delivered] == segs
    if count == 46:
        assert gro.delivered[0].flush is GroFlush.E2BIG


@pytest.mark.parametrize(("count", "segs"), [(45, [45]), (46, [45, 1])])
def test_the_fraglist_limit_counts_the_whole_next_skb(count: int, segs: list[int]) -> None:
    # skb_gro_receive_list: p->len + skb->len >= 65536 with skb->len from the IP header:
    # 65188 + 1476 for the 46th
    gro = run(datagrams(count), UdpGro(fraglist=True))
    assert [len(d.frames) for d in gro.delivered] == segs
    first = gro.delivered[0].skb
    assert len(first.frag_list) == segs[0] - 1 and first.nr_frags == 0


def test_a_shorter_datagram_is_merged_and_ends_the_aggregate() -> None:
    gro = run(datagrams(4, [1448, 1448, 1000, 1448]))
    assert [d.frames for d in gro.delivered] == [(0, 1, 2), (3,)]
    assert gro.delivered[0].flush is GroFlush.SHORT


def test_a_udp_datagram_in_a_tcp_gso_skb_is_refused_where_gro_lets_it_in() -> None:
    # dev_gro_receive lets a GSO skb in when skb_is_gso_tcp (5eddb24901ee), on 6.1.0-6.1.6
    # a DODGY one too: what udp_gro_receive does with a TCP GSO type was not read. 6.1.7
    # flushes it (7871f54e3dee) before UDP looks at it.
    from vnetrx.errors import InputError
    from vnetrx.model import Skb
    from vnetrx.paths.gro import Segment, gro_receive, read_frame

    frame = datagrams(1, 2896)[0]
    length = len(frame) - 14
    skb = Skb(head="h", head_size=4096, data=64, tail=64 + length, end=3840, len=length,
              data_len=0, truesize=4864, gso_size=1448, gso_type=1 | 2)
    seg = Segment(0, skb, True, read_frame(frame, len(frame), whole=True).tcp)
    with pytest.raises(InputError, match=r"UDP datagram in a TCP GSO skb on 6\.1\.6"):
        gro_receive(lookup("6.1.6"), [[[seg]]], udp_gro=SOCKET)
    (d,) = gro_receive(lookup("6.1.7"), [[[seg]]], udp_gro=SOCKET).delivered
    assert d.frames == (0,) and d.skb.gso_size == 1448
