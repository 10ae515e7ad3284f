"""XDP on the tap path (vnetrx.paths.tun.xdp): native XDP in tun_build_skb and generic XDP on
a built skb, per verdict. Numbers from tun.c/dev.c read @6.1.192, @6.12.117, @6.18.9 and the
XDP fact sheet (B.2-B.4), and measured on 6.18.44 with ``vnetrx verify tap --xdp all
--variants`` (350/350)."""

from __future__ import annotations

import pytest

from tests.paths.tun.test_tun import k618, tap
from vnetrx.errors import InputError
from vnetrx.kernel.registry import lookup
from vnetrx.model import Trace, XdpRun


def run(t: Trace) -> XdpRun:
    assert t.xdp is not None
    return t.xdp


@pytest.mark.parametrize(
    ("frame", "frame_sz", "tailroom", "truesize"),
    # buflen = SKB_DATA_ALIGN(len + 64 + 256) + 320; tailroom = the cache-line slack only
    [(1000, 1664, 24, 1920), (1514, 2176, 22, 2432), (1024, 1664, 0, 1920),
     (3456, 4096, 0, 4352)],
)
def test_native_pass_xdp_buff(frame: int, frame_sz: int, tailroom: int, truesize: int) -> None:
    t = tap(frame, xdp="pass")
    x = run(t)
    assert (x.mode, x.function, x.headroom, x.len) == ("native", "tun_build_skb", 320, frame)
    assert (x.frame_sz, x.tailroom) == (frame_sz, tailroom)
    assert t.outcome == "build_skb" and t.skb is not None and t.skb.truesize == truesize
    assert t.skb.data == 320 + 14  # skb_reserve(pad) then eth_type_trans


@pytest.mark.parametrize("action", ["drop", "aborted"])
def test_native_drop_counts_rx_dropped_and_write_succeeds(action: str) -> None:
    t = tap(1000, xdp=action)
    x = run(t)
    assert t.outcome == "xdp_drop" and t.skb is None and t.errno is None
    assert (x.rx_packets, x.rx_dropped, x.tx_packets, x.read_len) == (0, 1, 0, None)


def test_native_tx_reads_back_a_zero_header_and_the_frame() -> None:
    t = tap(1000, xdp="tx", vnet_hdr_sz=12)
    x = run(t)
    assert t.outcome == "xdp_tx" and t.skb is None
    assert (x.read_len, x.read_hdr) == (1012, "00" * 12)
    assert (x.rx_packets, x.rx_bytes, x.tx_packets, x.tx_bytes) == (1, 1000, 1, 1012)


def test_native_tx_without_vnet_hdr_reads_the_bare_frame() -> None:
    x = run(tap(1000, xdp="tx", vnet_hdr=False))
    assert (x.read_len, x.read_hdr) == (1000, None)


@pytest.mark.parametrize(("release", "rx_packets"),
                         [("6.1.75", 0), ("6.1.76", 1), ("6.6.14", 0), ("6.6.15", 1),
                          ("6.7", 0), ("6.8", 1), ("5.15.150", 0)])
def test_tx_rx_stats_arrive_with_f1084c427f55(release: str, rx_packets: int) -> None:
    x = run(tap(1000, lookup(release), xdp="tx"))
    assert x.rx_packets == rx_packets


@pytest.mark.parametrize(("frame", "result", "rx_dropped"),
                         [(1518, "redirect", 0), (1519, "redirect_failed", 1)])
def test_redirect_back_to_the_tap_stops_at_mtu_plus_18(frame: int, result: str,
                                                        rx_dropped: int) -> None:
    t = tap(frame, xdp="redirect")
    x = run(t)
    assert x.result == result and x.rx_dropped == rx_dropped
    assert t.outcome == ("xdp_redirect" if result == "redirect" else "xdp_drop")
    assert x.errno == (None if result == "redirect" else "EMSGSIZE")


def test_failed_redirect_counts_nothing_before_5744ba05e7c4() -> None:
    assert run(tap(2000, lookup("6.1.75"), xdp="redirect")).rx_dropped == 0


@pytest.mark.parametrize(
    ("frame", "head", "truesize"),
    # measured on 6.18.44: truesize stays what tun_alloc_skb charged (socket-owned skb)
    [(3457, "kmalloc-8192", 4352), (4000, "pages (16384 B)", 8448),
     (9000, "pages (16384 B)", 12544)],
)
def test_generic_pass_linearises_with_256_bytes_of_headroom(frame: int, head: str,
                                                            truesize: int) -> None:
    t = tap(frame, xdp="pass")
    x = run(t)
    assert x.mode == "generic" and x.headroom == 256 and x.copied == frame
    assert t.skb is not None
    assert (t.skb.data_len, t.skb.nr_frags, t.skb.truesize, t.skb.head) == (0, 0, truesize, head)
    assert t.skb.data - 14 == 256


def test_generic_xdp_on_a_blocking_write() -> None:
    t = tap(1000, xdp="pass", blocking=True)
    assert t.outcome == "alloc_skb" and run(t).mode == "generic"


def test_generic_drop_moves_no_counter() -> None:
    x = run(tap(9000, xdp="drop"))
    assert (x.result, x.rx_packets, x.rx_dropped, x.tx_packets) == ("drop", 0, 0, 0)


def test_generic_tx_counts_skb_len_not_the_header() -> None:
    x = run(tap(9000, xdp="tx"))
    assert (x.read_len, x.tx_bytes, x.rx_packets) == (9010, 9000, 0)


def test_gso_frames_skip_native_xdp() -> None:
    # hdr: NEEDS_CSUM, GSO_TCPV4, hdr_len 54, gso_size 1448, csum 34/16
    hdr = bytes.fromhex("01013600a80522001000")
    t = tap(3000, xdp="pass", hdr=hdr)
    x = run(t)
    assert x.mode == "generic" and x.copied == 0  # pad 320: enough headroom, linear
    assert t.buffer is not None and t.buffer.size == 3648  # SDA(3000 + 320) = 3328, + 320


def test_6_1_measures_generic_headroom_at_the_network_header() -> None:
    steps = [s for s in tap(3457, lookup("6.1.192"), xdp="pass").steps
             if s.function == "netif_receive_generic_xdp"]
    assert dict(steps[0].values)["headroom"] == 78  # L3; 6.9+ measures 64 at the MAC header
    steps = [s for s in tap(3457, k618(), xdp="pass").steps
             if s.function == "netif_receive_generic_xdp"]
    assert dict(steps[0].values)["headroom"] == 64


def test_unknown_action_names_the_valid_ones() -> None:
    with pytest.raises(InputError, match=r"unknown \(valid: aborted, drop, pass, tx, redirect\)"):
        tap(100, xdp="bounce")


# --- what the program does to the frame: bpf_xdp_adjust_head / _tail ------------------------


@pytest.mark.parametrize(("head", "skb_len", "headroom"), [
    (-100, 1086, 220),
    (-280, 1266, 40),  # data_hard_start + sizeof(struct xdp_frame) = 40: the lowest data
    (-281, 986, 320),  # -EINVAL: nothing changes
    (986, 0, 1306),  # pulled to 14 bytes: data_end - ETH_HLEN
    (987, 986, 320),  # -EINVAL
])
def test_native_adjust_head(head: int, skb_len: int, headroom: int) -> None:
    t = tap(1000, xdp="pass", xdp_adjust_head=head)
    assert t.skb is not None and t.skb.len == skb_len and t.skb.truesize == 1920
    assert run(t).headroom == headroom


@pytest.mark.parametrize(("tail", "skb_len"), [(24, 1010), (25, 986), (-986, 0), (-987, 986)])
def test_native_adjust_tail_stops_at_the_cache_line_slack(tail: int, skb_len: int) -> None:
    # buflen 1664: xdp_data_hard_end = 1664 - 320 = 1344, data_end 1320
    t = tap(1000, xdp="pass", xdp_adjust_tail=tail)
    assert t.skb is not None and t.skb.len == skb_len


def test_tx_reads_back_the_adjusted_frame() -> None:
    x = run(tap(1000, xdp="tx", xdp_adjust_head=-100))
    assert (x.read_len, x.rx_bytes, x.tx_bytes) == (1110, 1100, 1110)


def test_generic_head_room_is_256_so_a_250_push_is_refused() -> None:
    # measured on 6.18.44: native 1000-byte PASS with head -250 → len 1236; blocking (generic,
    # headroom 256 at the MAC header) → 986, the helper refused (256 - 250 < 40)
    assert tap(1000, xdp="pass", xdp_adjust_head=-250).skb.len == 1236  # type: ignore[union-attr]
    generic = tap(1000, xdp="pass", xdp_adjust_head=-250, blocking=True)
    assert generic.skb is not None and generic.skb.len == 986
    assert tap(1000, xdp="pass", xdp_adjust_head=-216, blocking=True).skb.len == 1202  # type: ignore[union-attr]


def test_xdp_frame_is_32_bytes_before_5_18() -> None:
    t = tap(1000, lookup("5.15"), xdp="pass", xdp_adjust_head=-288)
    assert t.skb is not None and t.skb.len == 1274  # 320 - 288 = 32 = sizeof(struct xdp_frame)


def test_adjustments_need_a_program() -> None:
    with pytest.raises(InputError, match="give --xdp ACTION too"):
        tap(1000, xdp_adjust_head=-10)


@pytest.mark.parametrize(("release", "limit", "words"), [
    ("6.18", 3456, "counts XDP_PACKET_HEADROOM always"),
    ("5.15.100", 3712, "buflen can exceed PAGE_SIZE"),
])
def test_tun_xdp_set_never_refuses_and_names_the_build_limit(release: str, limit: int,
                                                            words: str) -> None:
    from vnetrx.paths.tun.xdp import tun_xdp_set

    check, effects = tun_xdp_set(lookup(release))
    assert "no MTU, offload or queue check" in check
    how = dict(effects)["build_skb limit"]
    assert how.startswith(f"{limit} bytes") and words in how


@pytest.mark.parametrize(("kernel", "native"), [("6.14", 0), ("6.18", 32)])
def test_metadata_on_tun(kernel: str, native: int) -> None:
    # native XDP in tun_build_skb supports metadata from 6.15 (c2315ebb0588, 0ca23a4d64ce):
    # before, bpf_xdp_adjust_meta fails with -ENOTSUPP; generic XDP always supports it
    k = lookup(kernel)
    t = tap(1000, k, xdp="pass", xdp_meta=32)
    assert t.skb is not None and t.skb.meta_len == native
    g = tap(9000, k, xdp="pass", xdp_meta=32)
    assert run(g).mode == "generic" and g.skb is not None and g.skb.meta_len == 32
