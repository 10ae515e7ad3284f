"""virtio-net's receive path with an XDP program (vnetrx.paths.virtio_net.xdp). Every number is
from drivers/net/virtio_net.c read @6.1.192 and @6.12.117 (Debian linux-source), @5.15.215,
@6.6.150, @6.18.9 (stable mirrors), with the arithmetic in docs/kernel/xdp-source-notes.md
§A.2-§A.5; x86_64, 4 KiB pages, 64-byte cache lines, skb_shared_info 320, sk_buff 256 aligned."""

from __future__ import annotations

import pytest

from tests.paths.virtio_net.helpers import run
from vnetrx.errors import InputError, UnsupportedError
from vnetrx.model import Trace, XdpRun
from vnetrx.paths.virtio_net_hdr import VnetHdr

NEEDS_CSUM = VnetHdr(1, 0, 0, 0, 34, 16)  # a TCP/IPv4 frame with a partial checksum
DATA_VALID = VnetHdr(2, 0, 0, 0, 0, 0)
TSO = VnetHdr(1, 1, 54, 1448, 34, 16)  # GSO_TCPV4


def xdp(t: Trace) -> XdpRun:
    assert t.xdp is not None
    return t.xdp


def counters(t: Trace) -> dict[str, int]:
    return dict(xdp(t).driver)


# --- small mode ------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["5.15", "6.1", "6.6", "6.12", "6.18"])
@pytest.mark.parametrize("frame", [60, 1000, 1514])
def test_small_pass_builds_on_the_2176_byte_slot(kernel: str, frame: int) -> None:
    # add_recvbuf_small: SKB_DATA_ALIGN(12 + 64 + 1518 + 256) + 320 = 1856 + 320 = 2176;
    # receive_small: build_skb(buf, 2176) → truesize 2176 + 256, skb_reserve(64 + 256 + 12)
    t = run(kernel, frame_len=frame, xdp="pass")
    x = xdp(t)
    assert (x.headroom, x.len, x.frame_sz) == (256, frame, 2176)
    assert x.tailroom == 1600 - frame  # xdp_data_hard_end = hard_start + 2176 - 320 = buf + 1932
    assert t.outcome == "build_skb" and t.skb is not None
    s = t.skb
    assert (s.head_size, s.end, s.truesize) == (2176, 1856, 2432)
    assert (s.data, s.len, s.data_len) == (332 + 14, frame - 14, 0)
    assert x.function == ("receive_small_xdp" if kernel in ("6.6", "6.12", "6.18")
                          else "receive_small")
    assert counters(t)["rx_xdp_packets"] == 1 and counters(t)["rx_drops"] == 0


def test_small_hash_report_header_slot() -> None:
    # hdr_len 20: SKB_DATA_ALIGN(20 + 64 + 1518 + 256 = 1858) = 1920, + 320 = 2240; the RSS hash
    # is lost (skb->cb, where the header would be, stays zeroed)
    t = run("6.12", frame_len=1000, xdp="pass", hdr_len=20,
            hdr=VnetHdr(0, 0, 0, 0, 0, 0, 0, 0xdeadbeef, 3))
    assert t.skb is not None
    assert (t.skb.head_size, t.skb.truesize, t.skb.data) == (2240, 2496, 340 + 14)
    assert (t.skb.hash, t.skb.l4_hash) == (0, False)


def test_small_without_xdp_is_unchanged() -> None:
    t = run("6.12", frame_len=1000)
    assert t.xdp is None and t.skb is not None and t.skb.truesize == 1920 + 256


@pytest.mark.parametrize(("grow", "outcome"), [(524, "build_skb"), (600, "panic"),
                                                (601, "einval")])
def test_small_tail_growth_limits(grow: int, outcome: str) -> None:
    # the helper allows data_end up to buf + 1932 (1600 - L), but build_skb's skb->end is at
    # buf + 1856: an XDP_PASS past 1524 bytes makes skb_put() BUG (skb_over_panic) [calc]
    if outcome == "panic":
        with pytest.raises(UnsupportedError, match="skb_over_panic"):
            run("6.12", frame_len=1000, xdp="pass", xdp_adjust_tail=grow)
        return
    t = run("6.12", frame_len=1000, xdp="pass", xdp_adjust_tail=grow)
    assert t.skb is not None
    assert t.skb.len == (1000 + grow if outcome == "build_skb" else 1000) - 14


@pytest.mark.parametrize(("push", "result", "sent"), [
    (-204, "tx", 12 + 1204),  # xdpf->headroom = 256 - 204 - 40 = 12 = hdr_len
    (-205, "tx_failed", None),  # 11 < hdr_len: __virtnet_xdp_xmit_one -EOVERFLOW
    (-216, "tx_failed", None),  # data at hard_start + sizeof(struct xdp_frame)
    (-217, "tx", 12 + 1000),  # bpf_xdp_adjust_head refuses (-EINVAL): nothing changes
])
def test_small_tx_needs_room_for_the_vnet_header(push: int, result: str,
                                                  sent: int | None) -> None:
    t = run("6.12", frame_len=1000, xdp="tx", xdp_adjust_head=push)
    x = xdp(t)
    assert (x.result, x.read_len) == (result, sent)
    c = counters(t)
    assert (c["rx_xdp_tx"], c["tx_xdp_tx"], c["tx_xdp_tx_drops"]) == (
        1, 1, int(result == "tx_failed"))
    assert c["rx_drops"] == 0  # a failed xmit is not an rx drop
    assert t.outcome == ("xdp_tx" if result == "tx" else "xdp_drop")
    if sent is not None:
        assert x.read_hdr == "00" * 12 and x.tx_bytes == sent  # xdpf->len counts the header


@pytest.mark.parametrize("action", ["drop", "aborted"])
def test_drop_counts(action: str) -> None:
    t = run("6.1", frame_len=1000, xdp=action)
    assert t.outcome == "xdp_drop" and t.skb is None and t.reason is None
    c = counters(t)
    assert (c["rx_xdp_packets"], c["rx_xdp_drops"], c["rx_drops"]) == (1, 1, 1)
    assert (xdp(t).rx_packets, xdp(t).rx_bytes, xdp(t).rx_dropped) == (1, 1000, 1)


def test_small_too_long_is_a_length_error_before_xdp() -> None:
    t = run("6.12", frame_len=1519, xdp="pass")
    assert (t.outcome, t.reason, t.counter, t.xdp) == ("drop", "len_exceeds_max_size",
                                                         "rx_length_errors", None)
    assert t.buffer is not None and t.buffer.size == 2176


def test_6_18_slots_start_after_the_dma_header() -> None:
    t = run("6.18", frame_len=1000, xdp="pass")
    assert t.buffer is not None and t.buffer.page_offset == 16  # struct virtnet_rq_dma


# --- mergeable mode --------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["5.15", "6.1", "6.6", "6.12", "6.18"])
def test_mergeable_pass_in_place(kernel: str) -> None:
    # 3520-byte buffers (PAGE_SIZE - SKB_DATA_ALIGN(256 + 320)) at slot + 256; XDP_PASS builds on
    # the whole 4096-byte slot: truesize SKB_TRUESIZE(3776) = 4352, data at 256 + 12
    t = run(kernel, frame_len=1000, mergeable=True, xdp="pass")
    x = xdp(t)
    assert t.outcome == "build_skb" and t.skb is not None
    assert (t.skb.head_size, t.skb.end, t.skb.truesize, t.skb.data) == (4096, 3776, 4352, 282)
    old = kernel in ("5.15", "6.1")
    # ≤ 6.2 the xdp_buff starts at slot + hdr_len (frame_sz PAGE_SIZE - 12); 6.3+ at the slot
    assert (x.headroom, x.frame_sz) == ((256, 4084) if old else (268, 4096))
    assert x.tailroom == 3508 - 1000


@pytest.mark.parametrize(("frame", "outcome", "truesize"), [
    (128, "copy", None), (129, "build_skb", 4352)])
def test_mergeable_6_1_short_frames_are_copied(frame: int, outcome: str,
                                               truesize: int | None) -> None:
    # ≤ 6.2 XDP_PASS goes through page_to_skb: len <= GOOD_COPY_LEN (128) is copied
    t = run("6.1", frame_len=frame, mergeable=True, xdp="pass")
    assert t.outcome == outcome
    if truesize is not None:
        assert t.skb is not None and t.skb.truesize == truesize


def test_mergeable_6_12_never_copies() -> None:
    t = run("6.12", frame_len=60, mergeable=True, xdp="pass")
    assert t.outcome == "build_skb" and t.skb is not None and t.skb.truesize == 4352


@pytest.mark.parametrize("kernel", ["6.1", "6.12"])
@pytest.mark.parametrize(("frame", "fits"), [(3508, True), (3509, False)])
def test_mergeable_one_buffer_boundary(kernel: str, frame: int, fits: bool) -> None:
    # 12 + 3508 = 3520 fills one buffer; one more byte needs a second, and xdp_linearize_page
    # gives up (256 + 3520 + 92... > PAGE_SIZE): dropped before the program runs
    t = run(kernel, frame_len=frame, mergeable=True, xdp="pass", mtu=4000 if kernel == "6.1"
            else 3506)
    if fits:
        assert t.outcome == "build_skb"
        return
    assert (t.outcome, t.reason) == ("xdp_drop", "xdp_linearize")
    x = xdp(t)
    assert (x.ran, x.refused, x.copied) == (False, "linearize", 3520)
    c = counters(t)
    assert (c["rx_xdp_packets"], c["rx_xdp_drops"], c["rx_drops"]) == (0, 1, 1)


def test_mergeable_multi_buffer_with_frags() -> None:
    # 9014 + 12 = 3520 + 3520 + 1986: in place, 2 frags, truesize 4352 + 2 × 4096
    t = run("6.12", frame_len=9014, mergeable=True, mtu=9000, xdp="pass", xdp_frags=True)
    assert t.skb is not None
    s = t.skb
    assert (s.len, s.data_len, s.nr_frags, s.truesize) == (9000, 5506, 2, 12544)
    assert [(f.offset, f.size, f.truesize) for f in s.frags] == [(4096 + 256, 3520, 4096),
                                                                  (8192 + 256, 1986, 4096)]
    x = xdp(t)
    assert (x.nr_frags, x.frags_size, x.len) == (2, 5506, 3508)


@pytest.mark.parametrize(("frame", "ok"), [(18 * 3520 - 12, True), (18 * 3520 - 11, False)])
def test_mergeable_at_most_18_buffers(frame: int, ok: bool) -> None:
    # virtnet_build_xdp_buff_mrg: num_buf > MAX_SKB_FRAGS + 1 → -EINVAL
    t = run("6.12", frame_len=frame, mergeable=True, mtu=65535 - 14, xdp="pass",
            xdp_frags=True)
    if ok:
        assert t.skb is not None and t.skb.nr_frags == 17
    else:
        assert (t.outcome, t.reason) == ("xdp_drop", "xdp_too_many_buffers")


def test_frags_tail_cannot_grow() -> None:
    t = run("6.12", frame_len=9014, mergeable=True, mtu=9000, xdp="pass", xdp_frags=True,
            xdp_adjust_tail=10)
    assert t.skb is not None and t.skb.len == 9000
    assert any(s.function == "bpf_xdp_frags_increase_tail" for s in t.steps)


def test_frags_needs_6_3() -> None:
    with pytest.raises(UnsupportedError, match=r"6\.3"):
        run("6.1", frame_len=1000, mergeable=True, xdp="pass", xdp_frags=True)


# --- the header: GSO, NEEDS_CSUM, DATA_VALID ---------------------------------------------------


@pytest.mark.parametrize("kernel", ["5.15", "6.1", "6.12"])
@pytest.mark.parametrize("mergeable", [False, True])
def test_gso_frames_are_dropped_before_the_program(kernel: str, mergeable: bool) -> None:
    t = run(kernel, frame_len=1514, mergeable=mergeable, xdp="pass", hdr=TSO)
    assert (t.outcome, t.reason) == ("xdp_drop", "xdp_gso_type")
    assert counters(t)["rx_xdp_packets"] == 0


@pytest.mark.parametrize(("kernel", "dropped"), [
    ("6.1", False), ("6.6.35", False), ("6.6.36", True), ("6.8", False), ("6.12", True)])
def test_needs_csum_dropped_from_6_10_and_6_6_36(kernel: str, dropped: bool) -> None:
    t = run(kernel, frame_len=1514, mergeable=True, xdp="pass", hdr=NEEDS_CSUM)
    if dropped:
        assert (t.outcome, t.reason) == ("xdp_drop", "xdp_needs_csum")
    else:  # the program sees it and the skb says CHECKSUM_NONE: the header is not copied
        assert t.skb is not None and t.skb.ip_summed == 0


@pytest.mark.parametrize(("kernel", "ip_summed"), [("6.1", 0), ("6.6.35", 0), ("6.6.36", 1),
                                                   ("6.12", 1)])
def test_data_valid_survives_pass_only_with_saved_flags(kernel: str, ip_summed: int) -> None:
    t = run(kernel, frame_len=1514, xdp="pass", hdr=DATA_VALID)
    assert t.skb is not None and t.skb.ip_summed == ip_summed


# --- attach, modes, redirect -----------------------------------------------------------------


@pytest.mark.parametrize(("kernel", "mtu", "attach"), [
    ("6.1", 4064, True), ("6.1", 4065, False), ("6.12", 3506, True), ("6.12", 3507, False)])
def test_attach_refusal_is_an_error_trace(kernel: str, mtu: int, attach: bool) -> None:
    t = run(kernel, frame_len=1000, mergeable=True, mtu=mtu, xdp="pass")
    if attach:
        assert t.outcome == "build_skb"
        return
    assert (t.outcome, t.errno, t.reason, t.skb) == ("error", "EINVAL", "xdp_attach_refused",
                                                      None)
    assert any("MTU too large to enable XDP" in n for n in t.notes)


def test_big_mode_never_runs_the_program() -> None:
    t = run("6.12", frame_len=1000, guest_gso=True, xdp="drop")
    assert t.path == "virtio-big" and t.outcome == "build_skb" and t.xdp is None
    assert any(s.function == "receive_big" and "no XDP hook" in s.summary for s in t.steps)


@pytest.mark.parametrize(("frame", "result"), [(1518, "redirect"), (1519, "redirect_failed")])
def test_redirect_to_itself_is_bounded_by_the_mtu(frame: int, result: str) -> None:
    # xdp_ok_fwd_dev: mtu 1500 + ETH_HLEN + VLAN_HLEN = 1518 (a host may send more to a
    # mergeable guest than its MTU)
    t = run("6.12", frame_len=frame, mergeable=True, xdp="redirect")
    x = xdp(t)
    assert x.result == result
    c = counters(t)
    assert c["rx_xdp_redirects"] == 1 and c["rx_xdp_drops"] == int(result != "redirect")


def test_options_need_a_program_and_old_kernels_refuse() -> None:
    with pytest.raises(InputError, match="--xdp ACTION"):
        run("6.12", frame_len=1000, xdp_adjust_head=-10)
    with pytest.raises(UnsupportedError, match=r"5\.13"):
        run("5.12", frame_len=1000, xdp="pass")
    with pytest.raises(InputError, match="unknown"):
        run("6.12", frame_len=1000, xdp="bounce")


# --- 7.x: page_pool buffers (7.1.5, 7.2.12, 7.3.4 read: the same functions) ----------------


@pytest.mark.parametrize("kernel", ["7.2", "7.3"])
def test_page_pool_small_slot_is_a_whole_page(kernel: str) -> None:
    # page_pool_alloc_va: 2 × 2176 > PAGE_SIZE → a whole page; receive_small_xdp's buflen is the
    # ctx truesize (4096), so XDP_PASS builds on the page: truesize SKB_TRUESIZE(3776) = 4352
    t = run(kernel, frame_len=1000, xdp="pass")
    assert t.skb is not None and t.buffer is not None
    assert (t.buffer.size, t.buffer.page_offset) == (4096, 0)
    assert (t.skb.head_size, t.skb.end, t.skb.truesize) == (4096, 3776, 4352)
    x = xdp(t)
    assert (x.frame_sz, x.tailroom) == (4096, 76 + 4096 - 320 - 332 - 1000)


@pytest.mark.parametrize(("grow", "ok"), [(2444, True), (2445, False)])
def test_page_pool_small_safe_growth(grow: int, ok: bool) -> None:
    # skb->end at +3776, xdp_data_hard_end at +3852: frames of 3445..3520 bytes would BUG
    if ok:
        t = run("7.3", frame_len=1000, xdp="pass", xdp_adjust_tail=grow)
        assert t.skb is not None and t.skb.len == 1000 + grow - 14
    else:
        with pytest.raises(UnsupportedError, match="skb_over_panic"):
            run("7.3", frame_len=1000, xdp="pass", xdp_adjust_tail=grow)


def test_page_pool_mergeable_pages() -> None:
    t = run("7.3", frame_len=9014, mergeable=True, mtu=9000, xdp="pass", xdp_frags=True)
    assert t.skb is not None and t.skb.truesize == 12544
    assert [(f.page, f.offset) for f in t.skb.frags] == [("pool1", 256), ("pool2", 256)]


@pytest.mark.parametrize(("kernel", "reason", "counter"), [
    ("6.1.192", "xdp_len_check", "rx_length_errors"),  # measured in a Debian 6.1.192 guest
    ("6.1.143", "xdp_linearize", "drops"),  # before the backport
    ("6.12.117", "xdp_linearize", "drops"),  # 6.3+ ctx truesize 4096: 3520 <= 4096 - 576
])
def test_check_mergeable_len_on_a_full_second_buffer(kernel: str, reason: str,
                                                     counter: str) -> None:
    # 9014 + 12 = 3520 + 3520 + 1986; up to 6.2 the ctx truesize is 3520, so the second buffer
    # fails len > truesize - room = 2944
    t = run(kernel, frame_len=9014, mergeable=True, xdp="pass")
    assert (t.outcome, t.reason, t.counter) == ("xdp_drop", reason, counter)
    assert counters(t)["rx_xdp_drops"] == 1


def test_check_mergeable_len_passes_a_one_byte_second_buffer() -> None:
    t = run("6.1.192", frame_len=3509, mergeable=True, xdp="pass")
    assert (t.reason, t.counter) == ("xdp_linearize", "drops")


# --- bpf_xdp_adjust_meta ---------------------------------------------------------------------


@pytest.mark.parametrize(("kernel", "meta", "kept"), [
    ("6.1", 32, 32), ("6.1", 36, 0),  # xdp_metalen_invalid: > 32 up to 6.7
    ("6.8", 36, 36),  # 252 from 6.8 (2ebe81c81435)
    ("6.12", 216, 216), ("6.12", 220, 0),  # room: 256 of headroom - sizeof(struct xdp_frame)
    ("6.12", 30, 0),  # not a multiple of 4
])
def test_metadata_limits(kernel: str, meta: int, kept: int) -> None:
    t = run(kernel, frame_len=1000, xdp="pass", xdp_meta=meta)
    assert t.skb is not None and t.skb.meta_len == kept and xdp(t).meta_len == kept
    assert t.skb.data == 332 + 14  # the metadata sits in the headroom, data does not move


def test_metadata_below_the_xdp_frame_is_refused() -> None:
    # data at hard_start + 256; after pushing the head by 216, 40 bytes (sizeof(struct
    # xdp_frame)) remain: no room for metadata
    t = run("6.12", frame_len=1000, xdp="pass", xdp_adjust_head=-216, xdp_meta=4)
    assert t.skb is not None and t.skb.meta_len == 0


@pytest.mark.parametrize(("frame", "outcome", "copied"), [(96, "copy", 128), (97, "build_skb", 0)])
def test_metadata_counts_in_page_to_skbs_copy_test(frame: int, outcome: str, copied: int) -> None:
    # ≤ 6.2 page_to_skb gets len + metasize: 96 + 32 = 128 <= GOOD_COPY_LEN is copied, metadata
    # included; then __skb_pull(metasize)
    t = run("6.1", frame_len=frame, mergeable=True, xdp="pass", xdp_meta=32)
    assert t.outcome == outcome and t.skb is not None and t.skb.meta_len == 32
    assert t.cost is not None and t.cost.bytes_copied == copied
    assert t.skb.len == frame - 14


# --- buffers posted before the attach (the rings are not reset: xdp_linearize_page) ----------


@pytest.mark.parametrize("kernel", ["6.1", "6.12", "7.3"])
def test_old_small_buffer_is_copied_to_a_fresh_page(kernel: str) -> None:
    # ctx headroom 0 < 256: alloc_page, copy hdr_len + len to +320; buflen is the formula
    # (2176, also with 7.x's page_pool), so truesize 2432 whatever the page
    t = run(kernel, frame_len=1000, xdp="pass", xdp_posted_before=True)
    assert t.skb is not None and t.cost is not None
    assert (t.skb.truesize, t.skb.data, t.skb.head_size) == (2432, 346, 2176)
    assert (t.cost.allocations, t.cost.bytes_copied, xdp(t).copied) == (2, 1012, 1012)
    assert "xdp_linearize_page" in t.skb.head


@pytest.mark.parametrize(("kernel", "frame", "outcome", "linearized", "copied"), [
    ("6.1", 3000, "build_skb", 3012, 3012),  # hdr_len + 3000 <= 3520: fits one page
    ("6.12", 3000, "build_skb", 3012, 3012),
    ("6.1", 60, "copy", 72, 72 + 60),  # ≤ 6.2: page_to_skb then copies a short frame again
    ("6.12", 60, "build_skb", 72, 72),  # 6.3+: build_skb_from_xdp_buff never copies
    ("6.12", 3509, "xdp_drop", 0, None),  # 256 + 3521 + 320 > 4096: no page is allocated
])
def test_old_mergeable_buffers_are_linearised(kernel: str, frame: int, outcome: str,
                                              linearized: int, copied: int | None) -> None:
    t = run(kernel, frame_len=frame, mergeable=True, xdp="pass", xdp_posted_before=True)
    assert (t.outcome, xdp(t).copied) == (outcome, linearized)
    if copied is not None:
        assert t.skb is not None and t.cost is not None
        assert t.cost.bytes_copied == copied
        assert t.skb.truesize == (4352 if outcome == "build_skb" else 1280)


def test_old_buffers_in_the_ewma_0_ring_6_1() -> None:
    # the lab's ring: 1536-byte buffers (EWMA 0); 3000 + 12 spans two, both copied
    t = run("6.1", frame_len=3000, mergeable=True, ewma=0, xdp="pass", xdp_posted_before=True)
    assert len(t.buffers) == 2 and t.skb is not None and t.skb.truesize == 4352
    assert t.reason is None and xdp(t).copied == 3012
