"""The TX headroom engine against docs/kernel/tx-headroom.md §3-§7 and docs/kernel/skbuff.md §4."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.profiles import series
from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.build import MAX_HEADER_BY_CONFIG, BuildConfig
from vnetrx.kernel.changes import CHANGES, TX_NEEDED_HEADROOM, UDP_UFO
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import lookup
from vnetrx.kernel.version import KernelVersion
from vnetrx.paths.tx.headroom import (
    HeadroomReport,
    TxSetup,
    ll_reserved_space,
    run_headroom,
)
from vnetrx.paths.tx.ip_output import max_tcp_header

AFTER = series("headroom", since=(3, 16))


def run(kernel: str, config: str = "debian", **setup: object) -> HeadroomReport:
    build = BuildConfig(config=config, max_header=MAX_HEADER_BY_CONFIG[config])
    return run_headroom(lookup(kernel, build), TxSetup(**setup))  # type: ignore[arg-type]


def by_payload(report: HeadroomReport, payload: int) -> tuple[int, ...]:
    result = next(r for r in report.results if r.payload == payload)
    return tuple(s.len for s in result.skbs)


# --- B.2: LL_RESERVED_SPACE ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("needed", "hh_len"), [(0, 16), (10, 32), (12, 32), (20, 48), (24, 48), (2, 32), (1, 16)]
)
def test_ll_reserved_space(needed: int, hh_len: int) -> None:
    assert ll_reserved_space(14, needed) == hh_len


def test_needed_headroom_change_is_straddled_by_profiles() -> None:
    assert TX_NEEDED_HEADROOM in CHANGES and UDP_UFO in CHANGES
    assert not lookup("3.15").has(TX_NEEDED_HEADROOM)
    assert lookup("3.16").has(TX_NEEDED_HEADROOM)
    assert lookup("4.13").has(UDP_UFO) and not lookup("4.14").has(UDP_UFO)


# --- B.6: IPv4 UDP, the seed's sizes ---------------------------------------------------------
@pytest.mark.parametrize("mergeable", [True, False])
def test_3_15_ipv4_udp_header_never_fits(mergeable: bool) -> None:
    r = run("3.15", mergeable=mergeable)
    assert r.device.hdr_len == (12 if mergeable else 10)
    assert (r.device.needed_headroom, r.device.hh_len) == (0, 16)
    for result in r.results:
        for skb in result.skbs:
            assert skb.headroom == 2
            assert skb.can_push is False
            assert skb.sg_entries == 2
            assert skb.ring_slots == 1  # 2 entries → one indirect slot
            assert skb.indirect_bytes == 32


@pytest.mark.parametrize("kernel", AFTER)
@pytest.mark.parametrize("mergeable", [True, False])
def test_3_16_and_later_header_goes_inline(kernel: str, mergeable: bool) -> None:
    r = run(kernel, mergeable=mergeable)
    assert r.device.needed_headroom == r.device.hdr_len == (12 if mergeable else 10)
    assert r.device.hh_len == 32
    for result in r.results:
        for skb in result.skbs:
            assert (skb.headroom, skb.can_push, skb.sg_entries, skb.ring_slots) == (18, True, 1, 1)
            assert skb.indirect_bytes == 0


@pytest.mark.parametrize(
    ("payload", "length"), [(64, 106), (256, 298), (512, 554), (1024, 1066), (1460, 1502)]
)
def test_seed_sizes_one_skb(payload: int, length: int) -> None:
    assert by_payload(run("3.15"), payload) == (length,)
    assert by_payload(run("6.18"), payload) == (length,)


def test_4096_without_ufo_is_three_fragments() -> None:
    before, after = run("3.15", payloads=(4096,)), run("3.16", payloads=(4096,))
    assert by_payload(before, 4096) == by_payload(after, 4096) == (1514, 1514, 1178)
    assert (before.results[0].sg_entries_total, after.results[0].sg_entries_total) == (6, 3)
    assert (before.results[0].ring_slots_total, after.results[0].ring_slots_total) == (3, 3)
    no_indirect = run("3.15", payloads=(4096,), indirect=False)
    assert no_indirect.results[0].ring_slots_total == 6
    assert run("6.18", payloads=(4096,), ufo=True).results[0].sg_entries_total == 3


@pytest.mark.parametrize(("kernel", "sg", "headroom"), [("3.15", 3, 2), ("3.16", 2, 18)])
def test_4096_with_ufo_is_one_gso_skb(kernel: str, sg: int, headroom: int) -> None:
    skb = run(kernel, payloads=(4096,), ufo=True).results[0].skbs[0]
    assert skb.gso == "UFO"
    assert (skb.headlen, skb.nr_frags, skb.len) == (42, 1, 42 + 4096)
    assert (skb.sg_entries, skb.headroom) == (sg, headroom)
    assert skb.alloc == (64 if kernel == "3.15" else 80)
    assert (skb.head, skb.truesize) == ("kmalloc-512", 768 + 4096)


def test_ufo_is_gone_in_4_14_and_small_datagrams_never_use_it() -> None:
    r = run("4.14", payloads=(4096,), ufo=True)
    assert by_payload(r, 4096) == (1514, 1514, 1178)
    assert any("UFO was removed in 4.14" in note for note in r.notes)
    # length > mtu is the trigger: 1472 + 8 = 1480 fits in one datagram; 1492 + 8 = 1500 is not
    # above the MTU (no UFO) but above mtu - 20, so it is fragmented
    assert by_payload(run("4.13", payloads=(1472,), ufo=True), 1472) == (1514,)
    assert by_payload(run("4.13", payloads=(1492,), ufo=True), 1492) == (1514, 54)


@pytest.mark.parametrize(
    ("kernel", "payload", "alloc", "head", "truesize"),
    [
        ("3.15", 64, 123, "kmalloc-512", 768),
        ("3.16", 64, 139, "kmalloc-512", 768),
        ("3.15", 1460, 1519, "kmalloc-2048", 2304),
        ("3.16", 1460, 1535, "kmalloc-2048", 2304),
        ("6.1", 64, 139, "kmalloc-512", 768),
        ("6.18", 64, 139, "skbuff_small_head (704 B object)", 960),
    ],
)
def test_head_sizes(kernel: str, payload: int, alloc: int, head: str, truesize: int) -> None:
    skb = run(kernel, payloads=(payload,)).results[0].skbs[0]
    assert (skb.alloc, skb.head, skb.truesize) == (alloc, head, truesize)


def test_small_head_cache_follows_config() -> None:
    assert run("6.6", payloads=(64,)).results[0].skbs[0].truesize == 896  # 640-byte objects
    assert run("6.18", "minimal", payloads=(64,)).results[0].skbs[0].truesize == 832  # 576


# --- B.3 IPv6 ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("mergeable", "fits"), [(False, True), (True, False)])
def test_3_15_ipv6_has_10_bytes(mergeable: bool, fits: bool) -> None:
    skb = run("3.15", ipv6=True, payloads=(64,), mergeable=mergeable).results[0].skbs[0]
    assert skb.len == 14 + 40 + 8 + 64
    assert skb.headroom == 10
    assert skb.can_push is fits
    assert skb.sg_entries == (1 if fits else 2)


def test_ipv6_after_has_26_bytes_and_fragments_lose_the_8() -> None:
    r = run("3.16", ipv6=True, payloads=(1452, 1453, 4096))
    assert by_payload(r, 1452) == (14 + 40 + 1460,)
    assert by_payload(r, 1453) == (14 + 48 + 1448, 14 + 48 + 13)  # fragment header added
    assert by_payload(r, 4096) == (1510, 1510, 1270)
    assert r.results[0].skbs[0].headroom == 26
    assert {s.headroom for s in r.results[2].skbs} == {18}  # ip6_fragment pushed frag_hdr


# --- hdr_len 20 / 24 -----------------------------------------------------------------------------
@pytest.mark.parametrize(("kernel", "hdr_len"), [("6.1", 20), ("6.18", 20), ("6.18", 24)])
def test_big_headers_double_the_reserve(kernel: str, hdr_len: int) -> None:
    r = run(kernel, hdr_len=hdr_len)
    assert (r.device.needed_headroom, r.device.hh_len) == (hdr_len, 48)
    assert {s.headroom for res in r.results for s in res.skbs} == {34}
    assert all(s.can_push for res in r.results for s in res.skbs)


@pytest.mark.parametrize(("kernel", "hdr_len"), [("5.15", 20), ("3.16", 20), ("6.12", 24)])
def test_big_headers_need_a_new_enough_kernel(kernel: str, hdr_len: int) -> None:
    with pytest.raises(UnsupportedError, match=f"hdr_len {hdr_len}"):
        run(kernel, hdr_len=hdr_len)


def test_without_any_layout_the_header_is_always_separate() -> None:
    r = run("6.18", any_layout=False, payloads=(64,))
    assert (r.device.needed_headroom, r.device.hh_len) == (0, 16)
    skb = r.results[0].skbs[0]
    assert (skb.headroom, skb.can_push, skb.sg_entries) == (2, False, 2)


# --- B.4 TCP -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kernel", "config", "mth", "headroom"),
    [
        ("3.16", "debian", 304, 238),
        ("4.14", "debian", 304, 238),
        ("6.1", "debian", 320, 254),
        ("6.18", "debian", 320, 254),
        ("6.18", "debian-cloud", 256, 190),
        ("6.18", "minimal", 192, 126),
        ("3.15", "minimal", 160, 94),
    ],
)
def test_tcp_headroom_per_config(kernel: str, config: str, mth: int, headroom: int) -> None:
    r = run(kernel, config, tcp=True)
    assert r.max_tcp_header == mth
    assert (
        max_tcp_header(lookup(kernel, BuildConfig(max_header=MAX_HEADER_BY_CONFIG[config]))) == mth
    )
    for result in r.results:
        for skb in result.skbs:
            assert skb.headroom == headroom
            assert skb.can_push  # TCP always pushes, before and after 6ebbc1a6383f


def test_tcp_payload_placement() -> None:
    old = run("3.16", tcp=True, payloads=(1000, 4096)).results
    # select_size(): SKB_WITH_OVERHEAD(2048 - 304) = 1424 linear payload bytes
    assert (old[0].skbs[0].headlen, old[0].skbs[0].nr_frags, old[0].sg_entries_total) == (
        14 + 20 + 32 + 1000,
        0,
        1,
    )
    assert (old[1].skbs[0].headlen, old[1].skbs[0].nr_frags) == (14 + 20 + 32 + 1424, 1)
    assert old[1].skbs[0].gso == "TSO"
    new = run("6.1", tcp=True, payloads=(1000,)).results[0].skbs[0]
    assert (new.headlen, new.nr_frags, new.sg_entries, new.alloc) == (66, 1, 2, 320)
    tcp_clone = next(
        s for s in run("6.1", tcp=True).results[0].steps if s.function == "tcp_transmit_skb"
    )
    assert ("skb_header_cloned", False) in tcp_clone.values


# --- invariants over many sizes --------------------------------------------------------------
@pytest.mark.parametrize("ipv6", [False, True])
@pytest.mark.parametrize("mtu", [1280, 1500, 9000])
def test_udp_bytes_add_up_and_fit_the_mtu(ipv6: bool, mtu: int) -> None:
    payloads = (1, 7, 1232, 1233, 1452, 1453, 1472, 1473, 1500, 8952, 9000, 30000, 65507)
    r = run("6.18", ipv6=ipv6, mtu=mtu, payloads=payloads)
    for result in r.results:
        sizes = [reg.size for s in result.skbs for reg in s.regions if reg.name == "payload"]
        assert sum(sizes) == result.payload
        for index, skb in enumerate(result.skbs):
            assert skb.len - 14 <= mtu  # every datagram/fragment fits the MTU
            assert sum(reg.size for reg in skb.regions) == skb.head_size
            offsets = [reg.offset for reg in skb.regions]
            assert offsets == sorted(offsets)
            if index < len(result.skbs) - 1:
                assert (sizes[index] + (8 if index == 0 else 0)) % 8 == 0  # IP fragment offsets


def test_steps_cite_file_function_and_version() -> None:
    r = run("3.16", payloads=(64,))
    sources = [s.source for s in r.steps + r.results[0].steps]
    assert "drivers/net/virtio_net.c:virtnet_probe @ 3.16.0" in sources
    assert "include/linux/netdevice.h:LL_RESERVED_SPACE @ 3.16.0" in sources
    assert "net/ipv4/ip_output.c:__ip_append_data @ 3.16.0" in sources
    assert "drivers/net/virtio_net.c:xmit_skb @ 3.16.0" in sources
    assert "drivers/virtio/virtio_ring.c:virtqueue_add @ 3.16.0" in sources
    assert r.steps[0].because == ("tx_needed_headroom",)
    assert run("3.15").steps[0].because == ()


# --- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ({"payloads": (0,)}, "payload 0 out of range for IPv4 UDP (valid: 1..65507 bytes)"),
        ({"payloads": (64, 65508)}, "payload 65508 out of range for IPv4 UDP (valid: 1..65507"),
        ({"payloads": (65528,), "ipv6": True}, "IPv6 UDP (valid: 1..65527"),
        ({"payloads": (65484,), "tcp": True}, "IPv4 TCP (valid: 1..65483"),
        ({"payloads": ()}, "no payload sizes"),
        ({"tcp": True, "ufo": True}, "--ufo is UDP fragmentation offload"),
        ({"hdr_len": 7}, "hdr_len 7 is not a virtio-net header size (valid: 10, 12, 20, 24)"),
        ({"mtu": 67}, "MTU 67 out of range for IPv4 (valid: 68..16000)"),
        ({"mtu": 1279, "ipv6": True}, "MTU 1279 out of range for IPv6 (valid: 1280..16000)"),
    ],
)
def test_bad_input(setup: dict[str, object], message: str) -> None:
    with pytest.raises(InputError) as exc:
        run("6.18", **setup)
    assert message in exc.value.message


def test_payload_limits_are_accepted() -> None:
    assert len(run("6.18", payloads=(65507,)).results[0].skbs) == 45
    assert run("6.18", payloads=(65527,), ipv6=True).results[0].payload == 65527


def test_kernel_without_headroom_path_is_refused() -> None:
    k = KernelProfile(KernelVersion(2, 6, 32))
    with pytest.raises(
        UnsupportedError, match=r"headroom path is not modelled for kernel 2\.6\.32"
    ):
        run_headroom(k, TxSetup())


def test_engine_and_json_import_neither_click_nor_rich() -> None:
    code = (
        "import sys\n"
        "from vnetrx.kernel.registry import lookup\n"
        "from vnetrx.paths.tx.headroom import TxSetup, run_headroom\n"
        "from vnetrx.render.headroom_json import render_headroom\n"
        "render_headroom(run_headroom(lookup('3.16'), TxSetup()))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'click', 'rich'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
