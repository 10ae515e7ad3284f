"""vhost-net's transmit side (paths/vhost/tx.py) against the layout facts of
docs/kernel/vhost-net.md §2-§3 (../shared/reference/offloads-xdp.md §4.2, gro-vhost-captures.md
§2.1: drivers/vhost/net.c:vhost_net_build_xdp read @6.1.192, @6.12.117, @6.18.9) and the tap
write path's numbers measured on 6.18.44 (tests/paths/tun/test_tun.py), which the
tun_get_user fallback shares."""

from __future__ import annotations

import struct

import pytest

from vnetrx.engine import trace_vhost_tx
from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.build import MAX_HEADER_BY_CONFIG, BuildConfig
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import lookup
from vnetrx.model import Trace
from vnetrx.paths.tun import TapFrame
from vnetrx.paths.vhost import VhostTxSetup, vhost_tx_config, vhost_tx_plan

# the reference machine (6.18.44, MAX_HEADER 32, skbuff_small_head 576), as tests/paths/tun
RUNNING_LIKE = BuildConfig(
    config="minimal", max_header=MAX_HEADER_BY_CONFIG["minimal"], small_head_observed=576
)
READ = ("6.1", "6.12", "6.18")  # the trees vhost_net_build_xdp was read in (§2.2)


def k618() -> KernelProfile:
    return lookup("6.18.44", RUNNING_LIKE)


def vt(length: int, kernel: str | KernelProfile = "6.12", hdr: bytes | None = None,
       **options: object) -> Trace:
    k = lookup(kernel) if isinstance(kernel, str) else kernel
    return trace_vhost_tx(k, VhostTxSetup(**options),  # type: ignore[arg-type]
                          TapFrame(length, hdr))


def skb_of(t: Trace) -> tuple[str, int, int, int, int]:
    assert t.skb is not None
    return (t.outcome, t.skb.len, t.skb.data_len, t.skb.truesize, t.skb.nr_frags)


def road(t: Trace) -> tuple[str, str]:
    assert t.vhost is not None
    return (t.vhost.path, t.vhost.reason)


def hdr(flags: int = 0, gso_type: int = 0, hdr_len: int = 0, gso_size: int = 0,
        csum_start: int = 0, csum_offset: int = 0) -> bytes:
    return struct.pack("<BBHHHHH", flags, gso_type, hdr_len, gso_size, csum_start, csum_offset,
                       0)


# --- the buffer and the skb: the §2.3 table (sock_hlen 12) ---------------------------------


@pytest.mark.parametrize("kernel", READ)
@pytest.mark.parametrize(
    ("frame", "xdp", "pad", "buflen", "truesize"),
    [
        (1000, None, 128, 1472, 1728),
        (1514, None, 128, 1984, 2240),
        (1000, "pass", 384, 1728, 1984),
        (1514, "pass", 384, 2240, 2496),
    ],
)
def test_buffer_and_truesize_of_a_batched_frame(kernel: str, frame: int, xdp: str | None,
                                                 pad: int, buflen: int, truesize: int) -> None:
    t = vt(frame, kernel, xdp=xdp)
    assert road(t) == ("batch", "batched")
    assert t.vhost is not None and t.vhost.buffer is not None
    assert (t.vhost.buffer.pad, t.vhost.buffer.buflen) == (pad, buflen)
    assert t.vhost.buffer.headroom == (256 if xdp else 0)
    # build_skb on the whole buffer: fully linear, eth_type_trans pulled 14 bytes
    assert skb_of(t) == ("build_skb", frame - 14, 0, truesize, 0)
    assert t.skb is not None and (t.skb.mac_header, t.skb.data) == (pad, pad + 14)
    assert t.buffer is not None and t.buffer.size == buflen


@pytest.mark.parametrize("kernel", READ)
@pytest.mark.parametrize(("xdp", "largest"), [(None, 3636), ("pass", 3380)])
def test_the_largest_batched_frame_and_the_next_falls_back(kernel: str, xdp: str | None,
                                                           largest: int) -> None:
    """SKB_DATA_ALIGN(len + pad) + 320 > 4096 is -ENOSPC: 3636 bytes (len 3648) fit, 3380 with
    a tun XDP program (len 3392); one more byte goes through tun_get_user."""
    at = vt(largest, kernel, xdp=xdp)
    assert road(at) == ("batch", "batched")
    assert at.vhost is not None and at.vhost.buffer is not None
    assert (at.vhost.len, at.vhost.buffer.buflen) == (largest + 12, 4096)
    assert at.vhost.buffer.max_frame == largest
    over = vt(largest + 1, kernel, xdp=xdp)
    assert road(over) == ("tun_get_user", "enospc")
    assert over.vhost is not None and over.vhost.buffer is not None
    assert over.vhost.buffer.buflen == 4160


def test_enospc_frames_get_the_tap_writes_skb() -> None:
    """The -ENOSPC fallback is a sendmsg into tun_get_user: the skb the tap path measured on
    6.18.44 for a write of that length (3637..3712: a fully linear kmalloc-4096 head, 4352;
    3800: 8448)."""
    k = k618()
    assert skb_of(vt(3637, k)) == ("alloc_skb", 3623, 0, 4352, 0)
    assert skb_of(vt(3712, k)) == ("alloc_skb", 3698, 0, 4352, 0)
    assert skb_of(vt(3800, k)) == ("alloc_skb", 3786, 0, 8448, 0)


def test_with_xdp_frames_over_the_batch_limit_still_build_in_tun_get_user() -> None:
    """3381..3456 fall back from the batch (tun XDP) but tun_can_build_skb still takes them
    (docs/kernel/vhost-net.md §5 question 1): tun_build_skb with the program's headroom."""
    t = vt(3381, xdp="pass")
    assert road(t) == ("tun_get_user", "enospc")
    assert t.outcome == "build_skb" and t.xdp is not None and t.xdp.function == "tun_build_skb"


def test_a_finite_sndbuf_never_batches() -> None:
    """handle_tx_copy: sock_can_batch = sk_sndbuf == INT_MAX; tun_can_build_skb then fails on
    the sndbuf too: tun_alloc_skb, 2304 for 1000 bytes on 6.18.44 (measured for a tap write
    with TUNSETSNDBUF 65536)."""
    t = vt(1000, k618(), sndbuf=65536)
    assert road(t) == ("tun_get_user", "sndbuf")
    assert t.vhost is not None and t.vhost.buffer is None and t.vhost.sk_sndbuf == 65536
    assert skb_of(t) == ("alloc_skb", 986, 0, 2304, 0)
    # INT_MAX - 1 is finite as well; INT_MAX itself batches
    assert road(vt(1000, sndbuf=2**31 - 2)) == ("tun_get_user", "sndbuf")
    assert road(vt(1000, sndbuf=2**31 - 1)) == ("batch", "batched")


def test_zerocopy_copies_frames_below_goodcopy_len_through_tun_get_user() -> None:
    """handle_tx_zerocopy: zcopy_used needs len >= VHOST_GOODCOPY_LEN (256, the header
    included); shorter frames are sent with msg_control NULL: a tap write of that length."""
    t = vt(243, k618(), zcopy=True)  # len 255
    assert road(t) == ("tun_get_user", "zerocopy")
    assert t.vhost is not None and t.vhost.zerocopy and t.vhost.buffer is None
    assert t.outcome == "build_skb" and not t.vhost.zcopy_used
    assert vt(244, k618(), zcopy=True).vhost.zcopy_used  # type: ignore[union-attr]  # len 256


# --- refusals ------------------------------------------------------------------------------


def test_needs_csum_raising_hdr_len_past_len_stalls_the_queue() -> None:
    """vhost_net_build_xdp: the NEEDS_CSUM fix-up makes hdr_len csum_start + csum_offset + 2;
    above len (header included) it is -EINVAL, and handle_tx_copy discards the descriptor and
    stops: nothing reaches the tap."""
    # 1000-byte frame, len 1012: 994 + 16 + 2 = 1012 passes, 995 + 16 + 2 = 1013 does not
    ok = vt(1000, hdr=hdr(flags=1, csum_start=994, csum_offset=16))
    assert road(ok) == ("batch", "batched")
    bad = vt(1000, hdr=hdr(flags=1, csum_start=995, csum_offset=16))
    assert road(bad) == ("batch", "einval")
    assert (bad.outcome, bad.reason, bad.errno, bad.skb) == (
        "error", "hdr_len_exceeds_len", "EINVAL", None)
    assert bad.vhost is not None and bad.vhost.stalled


def test_a_plain_hdr_len_past_the_frame_is_not_refused_by_vhost() -> None:
    """Without NEEDS_CSUM vhost_net_build_xdp never compares hdr_len (the test sits inside
    the fix-up) and tun_xdp_one has no such check; tun_get_user does (a write fails)."""
    t = vt(100, hdr=hdr(hdr_len=2000))
    assert road(t) == ("batch", "batched") and t.outcome == "build_skb"
    fallback = vt(100, sndbuf=65536, hdr=hdr(hdr_len=2000))
    assert (fallback.outcome, fallback.errno) == ("error", "EINVAL")


def test_a_refused_gso_header_is_dropped_in_tun_xdp_one() -> None:
    """virtio_net_hdr_to_skb failing in tun_xdp_one: rx_frame_errors++, the skb freed, no
    error for the guest. 6.6.46 checks csum_offset 16 on every TCP GSO header
    (docs/kernel/offloads.md: 6.6.46-51)."""
    t = vt(1000, "6.6.46", hdr=hdr(gso_type=1, hdr_len=54, gso_size=100))
    assert road(t) == ("batch", "batched")
    assert (t.outcome, t.reason, t.counter, t.skb) == ("drop", "bad_gso", "rx_frame_errors",
                                                       None)
    assert t.refused_by is not None and "csum_offset" in t.refused_by.reason


@pytest.mark.parametrize(("frame", "outcome"), [(0, "drop"), (13, "drop"), (14, "build_skb")])
def test_short_frames_on_the_batch_path(frame: int, outcome: str) -> None:
    """tun_xdp_one: data_end - data < ETH_HLEN is -EINVAL (049584807f1d, 6.11; 6.1.102)."""
    t = vt(frame, "6.12")
    assert t.outcome == outcome
    if outcome == "drop":
        assert (t.reason, t.counter) == ("short_frame", None)


def test_short_frames_before_the_fix_are_refused_not_guessed() -> None:
    with pytest.raises(UnsupportedError, match="CVE-2024-41091"):
        vt(13, "6.1.101")
    assert vt(13, "6.1.102").reason == "short_frame"
    assert vt(14, "6.1.101").outcome == "build_skb"


@pytest.mark.parametrize(("size", "ok"), [(9, False), (10, True), (11, False), (12, True),
                                          (13, False), (24, False)])
def test_sock_hlen_is_10_or_12(size: int, ok: bool) -> None:
    if ok:
        t = vt(1000, vnet_hdr_sz=size)
        assert t.vhost is not None and t.vhost.sock_hlen == size and t.vhost.len == 1000 + size
    else:
        with pytest.raises(InputError, match="valid: 10"):
            vt(1000, vnet_hdr_sz=size)


def test_a_gso_frame_passes_generic_xdp_as_built() -> None:
    # tun_xdp_one: a GSO frame skips native XDP and the program runs on the skb
    # (do_xdp_generic); XDP_PASS leaves it as built. Real 6.1.192 and 6.12.117 guests
    # (tests/data/vhost, case tx-xdp-gso-3000): build_skb(3776), truesize 4032
    gso = hdr(gso_type=1, hdr_len=54, gso_size=1448, flags=1, csum_start=34, csum_offset=16)
    for kernel in ("6.1.192", "6.12.117"):
        t = vt(3000, xdp="pass", hdr=gso, kernel=kernel)
        assert t.outcome == "build_skb" and t.skb is not None
        assert (t.skb.truesize, t.skb.gso_size) == (4032, 1448)
    with pytest.raises(UnsupportedError, match="models its XDP_PASS only"):
        vt(3000, xdp="drop", hdr=gso)


# --- XDP on vhost's buffer -----------------------------------------------------------------


@pytest.mark.parametrize(("action", "outcome"), [("drop", "xdp_drop"), ("aborted", "xdp_drop"),
                                                 ("tx", "xdp_tx"), ("pass", "build_skb")])
def test_native_xdp_runs_on_vhosts_buffer(action: str, outcome: str) -> None:
    t = vt(1000, xdp=action)
    assert t.outcome == outcome and t.xdp is not None
    assert (t.xdp.function, t.xdp.mode, t.xdp.headroom, t.xdp.frame_sz) == (
        "tun_xdp_one", "native", 384, 1728)


# --- per version ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kernel", "page_frag", "hdr_offset"),
    [("5.12", "vhost_net_page_frag_refill", 4), ("6.6", "vhost_net_page_frag_refill", 4),
     ("6.12", "page_frag_alloc_align", 4), ("6.18", "page_frag_alloc_align", 0),
     ("7.3", "page_frag_alloc_align", 0)],
)
def test_the_page_frag_source_and_the_header_place(kernel: str, page_frag: str,
                                                   hdr_offset: int) -> None:
    """vhost's own refill with the USHRT_MAX bias before 6.9 (4051bd8129ac); struct
    tun_xdp_hdr (the header at buf + 4) before 6.17, the header memcpy()d to buf + 0 after."""
    t = vt(1000, kernel)
    assert t.vhost is not None and t.vhost.buffer is not None
    assert (t.vhost.page_frag, t.vhost.buffer.hdr_offset) == (page_frag, hdr_offset)
    assert t.buffer is not None
    first = t.buffer.regions[0]
    assert (first.name, first.offset) == (("vnet_hdr", 0) if hdr_offset == 0
                                          else ("tun_xdp_hdr", 0))
    assert skb_of(t) == ("build_skb", 986, 0, 1728, 0)


def test_vhost_tx_needs_the_batching_kernel() -> None:
    with pytest.raises(UnsupportedError, match=r"4\.20"):
        vt(1000, "4.14")


def test_the_weights_and_the_delivery_are_in_the_record() -> None:
    t = vt(1000)
    assert t.vhost is not None
    assert (t.vhost.batch, t.vhost.weight, t.vhost.pkt_weight) == (64, 0x80000, 256)
    assert t.vhost.delivery == "netif_receive_skb"
    napi = vt(1000, napi=True)
    assert napi.vhost is not None and napi.vhost.delivery == "napi_gro_receive"
    assert vt(0).vhost.delivery is None  # type: ignore[union-attr]


def test_the_plan_decides_without_a_log_and_sweeps_agree() -> None:
    c = vhost_tx_config(lookup("6.12"), VhostTxSetup())
    p = vhost_tx_plan(c, 3636, words=False)
    assert (str(p.road), str(p.why)) == ("batch", "batched")
    assert p.skb is not None and p.skb.truesize == 4352
    q = vhost_tx_plan(c, 3637, words=False)
    assert (str(q.road), str(q.why)) == ("tun_get_user", "enospc")
