"""vnetrx/paths/gro.py: VLAN tags and IPv6 extension headers in GRO, per kernel and config.

Facts from the source: net/8021q/vlan_core.c:vlan_gro_receive (a packet_offload for
ETH_P_8021Q/8021AD, built in with CONFIG_VLAN_8021Q y or m; compare_vlan_header: another TCI is
another flow), net/core/gro.c:dev_gro_receive (no packet_offload for skb->protocol: GRO_NORMAL,
nothing pulled), net/ipv6/ip6_offload.c:ipv6_gro_receive / ipv6_gro_pull_exthdrs (routing,
destination options and - with hbh_offload, f2e3fc2158e6 (6.9) - hop-by-hop headers walked; a
kernel with dff0b0161ad5 alone (6.6.31+) stops at a hop-by-hop header; the old code before it
walks NEXTHDR_HOP unasked; the extension header bytes compared), net/core/gro.c:skb_gro_receive
(6.3+: netif_get_gro_max_size by skb->protocol; before: past 64 KiB only an untagged IPv6
packet whose next header is TCP) @ 5.15.215, 6.1.166, 6.6.x (unifreq tree), 6.12.15, 6.18.7.
The frames are built by vnetrx.live.gro_frames, as the live oracle writes them (the recorded
6.18.44 cases are tests/paths/test_gro_oracle.py)."""

from __future__ import annotations

from typing import Any

import pytest

from vnetrx.errors import InputError
from vnetrx.flow import tap_flow
from vnetrx.kernel.build import BuildConfig, build_config, vlan_8021q_from_kconfig
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import lookup
from vnetrx.live import gro_frames
from vnetrx.model import GroFlush, GroHow, GroResult
from vnetrx.paths.gro import (
    NEEDS_HBH,
    NEEDS_VLAN,
    frame_needs,
    gro_limits,
    network_pull,
    parse_tcp,
    read_frame,
)
from vnetrx.paths.tun import TapSetup

MSS = 1448


def k(version: str, vlan: bool = True) -> KernelProfile:
    return lookup(version, BuildConfig(vlan_8021q=vlan))


def flow(kernel: KernelProfile, burst: dict[str, Any], napi: str = "timeout",
         **limits: int) -> Any:
    writes = gro_frames.build(burst)
    return tap_flow(kernel, TapSetup(), [(None, w.frame) for w in writes], napi,
                    limits=gro_limits(kernel, limits.get("gro_max_size"),
                                      limits.get("gro_ipv4_max_size")),
                    splits=[w.split for w in writes]).gro


def summary(run: Any) -> list[tuple[int, tuple[int, ...]]]:
    return [(d.skb.len, d.frames) for d in run.delivered]


# --- VLAN ------------------------------------------------------------------------------------


def test_debian_configs_build_vlan_gro_and_the_minimal_one_does_not() -> None:
    assert build_config(config="debian").vlan_8021q
    assert build_config(config="debian-cloud").vlan_8021q
    assert not build_config(config="minimal").vlan_8021q
    assert vlan_8021q_from_kconfig("CONFIG_VLAN_8021Q=m\n")
    assert vlan_8021q_from_kconfig("CONFIG_VLAN_8021Q=y\n")
    assert not vlan_8021q_from_kconfig("# CONFIG_VLAN_8021Q is not set\n")


@pytest.mark.parametrize("family", [4, 6])
def test_a_tagged_flow_merges_through_vlan_gro_receive(family: int) -> None:
    run = flow(k("6.12.15"), {"family": family, "segments": 8, "vlan": 100})
    (d,) = run.delivered
    l3 = 20 if family == 4 else 40
    # len from skb->data (the tag, 4 bytes) on: the tag, the IP and TCP headers, 8 payloads
    assert d.skb.len == 4 + l3 + 32 + 8 * MSS and d.frames == tuple(range(8))
    assert d.skb.gso_size == MSS and d.skb.gso_segs == 8
    # tcp_gro_complete: csum_start at the TCP header, past the tag
    assert d.skb.csum_start == d.skb.data + 4 + l3


def test_without_vlan_8021q_a_tagged_frame_is_normal_and_nothing_is_pulled() -> None:
    run = flow(k("6.12.15", vlan=False), {"segments": 3, "vlan": 100})
    assert [s.how for s in run.steps] == [GroHow.NOT_PARSED] * 3
    assert [s.result for s in run.steps] == [GroResult.NORMAL] * 3
    assert summary(run) == [(1504, (0,)), (1504, (1,)), (1504, (2,))]
    frame = gro_frames.build({"segments": 1, "vlan": 100})[0].frame
    assert frame_needs(frame, len(frame)) == (NEEDS_VLAN, 0)


def test_another_tci_is_another_flow() -> None:
    # compare_vlan_header: segment 4 (TCI 101) is held as its own flow, and segment 5 (TCI
    # 100, seq after segment 4) no longer follows the first aggregate: that one completes
    run = flow(k("6.12.15"), {"segments": 8, "vlan": 100, "vlan_change": [4]})
    assert [d.frames for d in run.delivered] == [(0, 1, 2, 3), (4,), (5, 6, 7)]
    assert [d.flush for d in run.delivered] == [GroFlush.MISMATCH, GroFlush.TIMER,
                                                GroFlush.TIMER]


def test_an_untagged_segment_is_another_flow_by_its_ethernet_type() -> None:
    run = flow(k("6.12.15"), {"segments": 8, "vlan": 100, "untagged": [4]})
    assert [d.frames for d in run.delivered] == [(0, 1, 2, 3), (4,), (5, 6, 7)]


def test_a_tagged_ipv6_flow_is_limited_by_gro_ipv4_max_size_from_6_3() -> None:
    # netif_get_gro_max_size reads skb->protocol: ETH_P_8021Q is not ETH_P_IPV6
    burst = {"family": 6, "segments": 60, "vlan": 100}
    tagged = flow(k("6.12.15"), burst, gro_max_size=185000)
    assert [len(d.frames) for d in tagged.delivered] == [45, 15]
    assert tagged.delivered[0].flush is GroFlush.E2BIG
    both = flow(k("6.12.15"), burst, gro_max_size=185000, gro_ipv4_max_size=185000)
    assert [len(d.frames) for d in both.delivered] == [60]
    untagged = flow(k("6.12.15"), {"family": 6, "segments": 60}, gro_max_size=185000)
    assert [len(d.frames) for d in untagged.delivered] == [60]


def test_network_pull_counts_the_tag() -> None:
    udp = gro_frames.build({"segments": 1, "vlan": 7, "udp": [0]})[0].frame
    assert network_pull(udp[:14], udp[14:], len(udp) - 14) == 24
    assert read_frame(udp, len(udp), True).udp_validated


# --- IPv6 extension headers --------------------------------------------------------------------


@pytest.mark.parametrize("chain", [[["dest", 8]], [["routing", 24]], [["hbh", 8]],
                                   [["hbh", 8], ["dest", 16]]])
def test_walked_extension_headers_merge(chain: list[list[Any]]) -> None:
    run = flow(k("6.18.7"), {"family": 6, "segments": 8, "exthdrs": chain})
    (d,) = run.delivered
    ext = sum(size for _, size in chain)
    assert d.skb.len == 40 + ext + 32 + 8 * MSS
    assert d.skb.csum_start == d.skb.data + 40 + ext


@pytest.mark.parametrize(("version", "merges"), [
    ("5.15.215", True),   # ipv6_gso_pull_exthdrs takes NEXTHDR_HOP unasked
    ("6.1.166", True),
    ("6.6.30", True),
    ("6.6.31", False),    # dff0b0161ad5 without hbh_offload: the walk stops at it
    ("6.6.150", False),
    ("6.8", True),
    ("6.9", True),        # hbh_offload
    ("6.18.7", True),
])
def test_a_hop_by_hop_header_per_version(version: str, merges: bool) -> None:
    run = flow(k(version), {"family": 6, "segments": 4, "exthdrs": [["hbh", 8]]})
    if merges:
        assert [d.frames for d in run.delivered] == [(0, 1, 2, 3)]
    else:
        assert [s.how for s in run.steps] == [GroHow.NOT_PARSED] * 4
        assert [d.frames for d in run.delivered] == [(0,), (1,), (2,), (3,)]


def test_destination_options_merge_on_6_6_31_too() -> None:
    run = flow(k("6.6.31"), {"family": 6, "segments": 4, "exthdrs": [["dest", 8]]})
    assert [d.frames for d in run.delivered] == [(0, 1, 2, 3)]


def test_other_extension_header_bytes_are_another_flow() -> None:
    run = flow(k("6.18.7"), {"family": 6, "segments": 8, "exthdrs": [["dest", 8]],
                             "exthdr_change": [4]})
    assert [d.frames for d in run.delivered] == [(0, 1, 2, 3), (4,), (5, 6, 7)]


def test_a_fragment_header_stops_the_walk_and_goes_alone() -> None:
    run = flow(k("6.18.7"), {"family": 6, "segments": 8, "exthdrs": [["dest", 8]],
                             "fragment": [4]})
    assert run.steps[4].how is GroHow.NOT_TCP and run.steps[4].result is GroResult.NORMAL
    frame = gro_frames.build({"family": 6, "segments": 1, "exthdrs": [["dest", 8]],
                              "fragment": [0]})[0].frame
    # ipv6_gro_pull_exthdrs pulled the IPv6 header and the destination options
    assert network_pull(frame[:14], frame[14:], len(frame) - 14) == 48


@pytest.mark.parametrize(("chain", "first"), [([], 7), ([["dest", 8]], 6)])
def test_the_64k_limit_counts_the_extension_headers(chain: list[list[Any]], first: int) -> None:
    # 72 + 7 x 9351 = 65529 < 65536; 80 + 7 x 9351 = 65537
    run = flow(k("6.18.7"), {"family": 6, "segments": 8, "payload": 9351, "exthdrs": chain})
    assert len(run.delivered[0].frames) == first


@pytest.mark.parametrize(("version", "segments"), [("6.1.166", 45), ("6.3", 100),
                                                   ("6.18.7", 100)])
def test_big_tcp_with_an_extension_header(version: str, segments: int) -> None:
    # before 6.3 skb_gro_receive lets an aggregate past 64 KiB only when ipv6_hdr(p)->nexthdr
    # is TCP; from 6.3 when NAPI_GRO_CB(skb)->proto is
    run = flow(k(version), {"family": 6, "segments": 100, "exthdrs": [["dest", 8]]},
               gro_max_size=185000)
    assert len(run.delivered[0].frames) == segments


def test_a_hop_by_hop_header_is_read_where_it_is() -> None:
    frame = gro_frames.build({"family": 6, "segments": 1, "exthdrs": [["dest", 8], ["hbh", 8]]})[
        0].frame
    assert frame_needs(frame, len(frame)) == (NEEDS_HBH, 48)
    h = parse_tcp(frame)
    assert h is not None and h.network_len == 56


def test_frag0_extension_headers_before_dff0b0161_are_refused() -> None:
    # IFF_NAPI_FRAGS: no linear bytes; the old ipv6_gro_receive __pskb_pulls the headers
    with pytest.raises(InputError, match="dff0b0161ad5"):
        flow(k("6.1.166"), {"family": 6, "segments": 2, "exthdrs": [["dest", 8]],
                            "split": [66]}, napi="frags")
    run = flow(k("6.12.15"), {"family": 6, "segments": 2, "exthdrs": [["dest", 8]],
                              "split": [66]}, napi="frags")
    assert len(run.delivered) == 2
