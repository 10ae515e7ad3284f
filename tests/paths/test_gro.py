"""vnetrx/paths/gro.py: dev_gro_receive / skb_gro_receive / tcp_gro_receive / napi_gro_complete
on one TCP flow. The expected numbers come from the kernel source (net/core/gro.c
skb_gro_receive @6.1-6.18: case A delta = truesize - SKB_TRUESIZE(skb_end_offset), case B delta
= truesize - SKB_DATA_ALIGN(sizeof(struct sk_buff)) = truesize - 256, case C delta = truesize)
and from the worked example of ../shared/reference/gro-vhost-captures.md §1.4, computed there
by hand, not by this code."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetrx.errors import InputError
from vnetrx.kernel.registry import lookup
from vnetrx.model import Frag, FragListSkb, GroFlush, GroHow, GroResult, Skb
from vnetrx.packet import build_frame, headers_of, tcp_flow_frames
from vnetrx.paths.gro import Segment, TcpHeaders, gro_receive, parse_tcp, parse_tcp_headers
from vnetrx.replay.capture import SEEN_HEAD

K61 = lookup("6.1")
MSS = 1448
HEADERS = 52  # IPv4 20 + TCP 32 (timestamps)
TCP4 = headers_of("tcp4", 12)


FLOW = [parse_tcp(f) for f in tcp_flow_frames(build_frame(14 + HEADERS + MSS, "tcp4", 12),
                                                TCP4, 70)]


def tcp(frame: int, payload: int = MSS, seq: int | None = None) -> TcpHeaders:
    """Segment ``frame`` of a steady flow (sequence numbers as if every segment before it
    carried ``MSS`` bytes, unless ``seq`` says)."""
    h = FLOW[frame]
    assert h is not None
    return h if seq is None else h._replace(seq=seq)


def copied(frame: int, payload: int = MSS, seq: int | None = None) -> Segment:
    """A 6.1 mergeable copy-path skb as the worked example has it: after eth_type_trans no
    linear bytes (page_to_skb copied only ETH_HLEN), the rest in one 1536-byte buffer's frag;
    head: a 1 KiB slice of the napi page_frag (end 704: SKB_TRUESIZE(704) = 1280)."""
    length = HEADERS + payload
    skb = Skb(head="1 KiB slice", head_size=1024, data=78, tail=78, end=704, len=length,
              data_len=length, truesize=1280 + 1536, nr_frags=1,
              frags=(Frag(f"frag{frame}", 26, length, 1536),))
    return Segment(frame, skb, True, tcp(frame, seq=seq))


def built(frame: int, payload: int = MSS, truesize: int = 2176,
          seq_after: int | None = None) -> Segment:
    """A 6.12 small-mode build_skb skb: the whole frame linear in a page-fragment head."""
    length = HEADERS + payload
    skb = Skb(head="the rx buffer (build_skb)", head_size=1920, data=90, tail=90 + length,
              end=1600, len=length, data_len=0, truesize=truesize)
    seq = 1 + frame * payload if seq_after is None else 1 + seq_after
    return Segment(frame, skb, True, tcp(frame, seq=seq), page=f"frag{frame}", page_offset=0)


def run(segments: list[Segment], per_poll: int = 64):  # type: ignore[no-untyped-def]
    polls = [[segments[i:i + per_poll]] for i in range(0, len(segments), per_poll)]
    return gro_receive(K61, polls)


def test_the_worked_example_45_segments_make_one_skb() -> None:
    # §1.4: segments 2-17 take case A (+1536), 18 is chained (+2816), 19-34 fill its frags,
    # 35 is chained, 36-45 fill its frags; 46 would reach 66,660 >= 65,536
    r = run([copied(i) for i in range(46)])
    first, second = r.delivered
    skb = first.skb
    assert first.frames == tuple(range(45)) and first.flush is GroFlush.E2BIG
    assert skb.len == 65212 and skb.gso_size == MSS and skb.gso_segs == 45
    assert skb.truesize == 3 * 2816 + 42 * 1536 == 72960
    assert skb.nr_frags == 17 and len(skb.frag_list) == 2
    assert [len(m.frags) for m in skb.frag_list] == [17, 11]
    assert skb.ip_summed == 3 and skb.gso_type_names == ("SKB_GSO_TCPV4",)
    assert second.frames == (45,) and r.steps[45].how is GroHow.AFTER_E2BIG


def test_the_held_skb_gets_its_headers_pulled_from_frag0() -> None:
    # gro_pull_from_frag0: 52 header bytes copied to the linear area, frags[0] shrinks by 52
    r = run([copied(0), copied(1)])
    skb = r.delivered[0].skb
    assert skb.headlen == HEADERS and skb.data_len == 2 * MSS
    assert skb.frags[0] == Frag("frag0", 26 + HEADERS, MSS, 1536)
    # the merged segment's frag is trimmed by skb_gro_offset - headlen = 52 (not pulled)
    assert skb.frags[1] == Frag("frag1", 26 + HEADERS, MSS, 1536)


@pytest.mark.parametrize(("count", "chained"), [(17, 0), (18, 1)])
def test_max_skb_frags_boundary(count: int, chained: int) -> None:
    # the held skb has 1 frag after the pull; 16 more fit (17 = MAX_SKB_FRAGS), the 18th
    # segment is chained on frag_list
    skb = run([copied(i) for i in range(count)]).delivered[0].skb
    assert skb.nr_frags == 17 and len(skb.frag_list) == chained


def test_e2big_boundary_is_p_len_plus_len_reaching_65536() -> None:
    # p->len + len >= gro_max_size: 52 + 2 * 32742 = 65536 refuses the second segment,
    # 52 + 2 * 32741 = 65534 merges it
    refused = run([built(0, 32742, 34000), built(1, 32742, 34000)])
    assert len(refused.delivered) == 2 and refused.delivered[0].flush is GroFlush.E2BIG
    merged = run([built(0, 32741, 34000), built(1, 32741, 34000)])
    assert len(merged.delivered) == 1 and merged.delivered[0].skb.len == 52 + 2 * 32741


def test_a_page_fragment_head_is_stolen_as_a_frag() -> None:
    # case B: first frag = the head's page from data + offset, size headlen - offset;
    # delta = 2176 - 256 = 1920
    r = run([built(0), built(1)])
    assert r.steps[1].how is GroHow.HEAD_FRAG and r.steps[1].delta_truesize == 1920
    assert r.steps[1].result is GroResult.MERGED_FREE
    skb = r.delivered[0].skb
    assert skb.truesize == 2176 + 1920 and skb.nr_frags == 1
    assert skb.frags == (Frag("frag1", 90 + HEADERS, MSS, 1920),)
    assert skb.headlen == HEADERS + MSS  # the held skb keeps its linear payload


def test_a_linear_payload_in_a_kmalloc_head_is_chained() -> None:
    seg = built(1)
    kmalloc = seg._replace(head_frag=False)
    r = run([built(0), kmalloc])
    assert r.steps[1].how is GroHow.FRAG_LIST and r.steps[1].result is GroResult.MERGED
    assert r.steps[1].delta_truesize == 2176
    assert r.delivered[0].skb.frag_list[0].len == MSS


def test_a_lone_skb_leaves_without_gso_and_validated() -> None:
    # napi_gro_complete: count 1 → gso_size 0; CHECKSUM_NONE validated → UNNECESSARY
    (only,) = run([copied(0)]).delivered
    assert only.skb.gso_size == 0 and only.skb.gso_segs == 0 and only.skb.ip_summed == 1
    assert only.flush is GroFlush.POLL_END and only.segs == 1


def test_an_aggregate_is_checksum_partial_at_the_tcp_header() -> None:
    skb = run([copied(0), copied(1)]).delivered[0].skb
    assert (skb.ip_summed, skb.csum_start, skb.csum_offset) == (3, 78 + 20, 16)
    assert skb.gso_segs == 2 and skb.gso_type == 1


def test_a_short_segment_is_merged_and_ends_the_aggregate() -> None:
    r = run([copied(0), copied(1, 1000), copied(2, seq=1 + 2 * MSS + 1000)])
    assert [d.frames for d in r.delivered] == [(0, 1), (2,)]
    assert r.delivered[0].flush is GroFlush.SHORT


def test_a_longer_segment_is_not_merged_and_held_anew() -> None:
    r = run([copied(0, 1000), copied(1, seq=1 + 1000)])
    assert [d.frames for d in r.delivered] == [(0,), (1,)]
    assert r.delivered[0].flush is GroFlush.LONGER and r.steps[1].how is GroHow.AFTER_LONGER


# --- GSO skbs (virtio_net_hdr_to_skb: SKB_GSO_DODGY, gso_segs 0) -----------------------------
# From the source: dev_gro_receive sets NAPI_GRO_CB(skb)->count = gso_segs and flushes a GSO
# skb unless it is TCP (6.1.0-6.1.6) and, from 7871f54e3dee (6.1.7, 6.2), not DODGY
# [net/core/gro.c @ 6.1.0, 6.1.6, 6.1.7]; before 5eddb24901ee every GSO skb [@ 6.0.1, 6.0.19].
# tcp_gro_receive: a GSO skb merges when gso_size == the flow's mss, and out_check_final
# flushes when len != count * gso_size; skb_gro_receive: p's count += the skb's;
# napi_gro_complete: count 1 → gso_size 0, nothing else [net/ipv4/tcp_offload.c @ 6.1.0].

K_6_1_6, K_6_1_7 = lookup("6.1.6"), lookup("6.1.7")
GSO_FRAG_TRUESIZE = 4096


def gso(frame: int, payload: int = 2 * MSS, gso_size: int = MSS, segs: int = 0,
        dodgy: bool = True, seq: int | None = None, ip_summed: int = 0) -> Segment:
    """A GSO skb as virtio_net_hdr_to_skb leaves it (SKB_GSO_TCPV4 | SKB_GSO_DODGY, gso_segs
    0), laid out like ``copied``: no linear bytes, one frag of GSO_FRAG_TRUESIZE."""
    length = HEADERS + payload
    skb = Skb(head="1 KiB slice", head_size=1024, data=78, tail=78, end=704, len=length,
              data_len=length, truesize=1280 + GSO_FRAG_TRUESIZE, nr_frags=1,
              frags=(Frag(f"frag{frame}", 26, length, GSO_FRAG_TRUESIZE),),
              gso_size=gso_size, gso_type=1 | (2 if dodgy else 0), gso_segs=segs,
              ip_summed=ip_summed)
    return Segment(frame, skb, True, tcp(frame, seq=seq))


def test_a_gso_skb_flushes_the_flow_and_goes_alone() -> None:
    # 6.1.7+ (and 6.1 = 6.1.192): dev_gro_receive flushes a DODGY GSO skb; the held skb of
    # its flow is completed (skb_gro_receive refuses it: NAPI_GRO_CB(skb)->flush)
    for k in (K61, K_6_1_7, lookup("6.2"), lookup("6.0.19"), lookup("5.15")):
        r = gro_receive(k, [[[copied(0), gso(1), copied(3, seq=1 + 3 * MSS)]]])
        assert [d.frames for d in r.delivered] == [(0,), (1,), (3,)], k.name
        assert r.delivered[0].flush is GroFlush.GSO and r.steps[1].how is GroHow.GSO
        assert r.steps[1].result is GroResult.NORMAL and r.steps[2].how is GroHow.FIRST
        assert r.delivered[1].skb.gso_size == MSS  # it leaves GRO as it came


def test_6_1_6_merges_a_dodgy_gso_skb_and_completes_at_once() -> None:
    # 6.1.6: the GSO skb (gso_size 1448 = the held mss, seq contiguous, IP ID +1) merges: its
    # frag moves (case A: delta = 1280 + 4096 - SKB_TRUESIZE(704) = 4096); p's count += 0
    # stays 1; out_check_final: 2896 != 0 * 1448 → p completed at once, count 1: gso_size 0,
    # no tcp_gro_complete (ip_summed as held: NONE validated → UNNECESSARY, no csum_start)
    r = gro_receive(K_6_1_6, [[[copied(0), gso(1), copied(3, seq=1 + 3 * MSS)]]])
    assert [d.frames for d in r.delivered] == [(0, 1), (3,)]
    first = r.delivered[0]
    assert first.flush is GroFlush.GSO_SEGS and first.segs == 1
    assert r.steps[1].result is GroResult.MERGED_FREE and r.steps[1].how is GroHow.FRAGS
    assert r.steps[1].delta_truesize == 4096
    skb = first.skb
    assert skb.len == HEADERS + 3 * MSS == 4396 and skb.data_len == 3 * MSS
    assert skb.truesize == 2816 + 4096 and skb.nr_frags == 2
    assert (skb.gso_size, skb.gso_segs, skb.gso_type) == (0, 0, 0)
    assert skb.ip_summed == 1 and skb.csum_start is None
    # the segment after it finds no held skb: held anew
    assert r.steps[2].how is GroHow.FIRST and r.delivered[1].flush is GroFlush.POLL_END


@pytest.mark.parametrize(("gso_size", "merged"), [(MSS - 1, False), (MSS, True),
                                                  (MSS + 1, False)])
def test_6_1_6_merges_only_a_gso_size_equal_to_the_mss(gso_size: int, merged: bool) -> None:
    # "flush |= (mss != skb_shinfo(skb)->gso_size)": p completed (GSO_SIZE); the GSO skb,
    # not merged, is flushed by out_check_final (len != 0 * gso_size): alone
    r = gro_receive(K_6_1_6, [[[copied(0), gso(1, gso_size=gso_size)]]])
    if merged:
        assert [d.frames for d in r.delivered] == [(0, 1)]
        return
    assert [d.frames for d in r.delivered] == [(0,), (1,)]
    assert r.delivered[0].flush is GroFlush.GSO_SIZE and r.delivered[0].skb.len == 1500
    assert r.steps[1].how is GroHow.GSO_SEGS and r.steps[1].result is GroResult.NORMAL


def test_6_1_6_never_holds_a_gso_skb_with_gso_segs_0() -> None:
    # no held skb of its flow: out_check_final, len 2896 != 0 * 1448 → flush → GRO_NORMAL;
    # so two GSO skbs in a row are never merged, on 6.1.6 as on 6.1.7
    r = gro_receive(K_6_1_6, [[[gso(0), gso(2, seq=1 + 2 * MSS)]]])
    assert [d.frames for d in r.delivered] == [(0,), (2,)]
    assert [st.how for st in r.steps] == [GroHow.GSO_SEGS, GroHow.GSO_SEGS]
    assert [d.skb.gso_size for d in r.delivered] == [MSS, MSS]


def test_6_1_6_validates_a_gso_skbs_checksum_6_1_7_does_not() -> None:
    # tcp4_gro_receive sums a CHECKSUM_NONE skb unless NAPI_GRO_CB(skb)->flush is set: on
    # 6.1.7 dev_gro_receive set it (DODGY), on 6.1.6 not: a right sum → UNNECESSARY
    assert gro_receive(K_6_1_6, [[[gso(0)]]]).delivered[0].skb.ip_summed == 1
    assert gro_receive(K_6_1_7, [[[gso(0)]]]).delivered[0].skb.ip_summed == 0
    bad = gso(0)
    bad = bad._replace(tcp=bad.tcp._replace(tcp_csum_ok=False) if bad.tcp else None)
    assert gro_receive(K_6_1_6, [[[bad]]]).steps[0].how is GroHow.BAD_CHECKSUM
    assert gro_receive(K_6_1_7, [[[bad]]]).steps[0].how is GroHow.GSO


@pytest.mark.parametrize(("payload", "merged"), [(65536 - 1500 - 1, True),
                                                 (65536 - 1500, False)])
def test_6_1_6_gso_merge_stops_at_gro_max_size(payload: int, merged: bool) -> None:
    # skb_gro_receive: p->len (1500) + len >= 65536 → -E2BIG: 64035 merges, 64036 does not
    r = gro_receive(K_6_1_6, [[[copied(0), gso(1, payload=payload)]]])
    if merged:
        assert r.delivered[0].skb.len == 65535 and r.delivered[0].flush is GroFlush.GSO_SEGS
    else:
        assert r.delivered[0].flush is GroFlush.E2BIG
        assert [d.frames for d in r.delivered] == [(0,), (1,)]


def test_a_gso_skb_with_its_gso_segs_right_counts_them() -> None:
    # a TCP GSO skb whose gso_segs is right (2 × 1448 = its len): not DODGY it merges on 6.1.7
    # and 6.2 too, DODGY only on 6.1.6. p's count 1 + 2 = 3; the IP ID of the next segment
    # must be p's + 3 (inet_gro_receive: flush_id ^= count, after the second frame made the
    # flow non-atomic: diff 1 with count 1) [net/ipv4/af_inet.c, tcp_offload.c @ 6.1.0]
    for k, dodgy in ((K_6_1_6, True), (K_6_1_7, False), (lookup("6.2"), False)):
        after = copied(3, seq=1 + 3 * MSS)  # IP ID 3
        r = gro_receive(k, [[[copied(0), gso(1, segs=2, dodgy=dodgy), after]]])
        (d,) = r.delivered
        assert d.frames == (0, 1, 3) and d.segs == 4 and d.skb.gso_segs == 4
        assert d.skb.gso_size == MSS and d.skb.len == HEADERS + 4 * MSS
        assert d.skb.gso_type == 1 and d.skb.ip_summed == 3
    # IP ID 2 (the count before the GSO skb's 2 segments): a mismatch
    early = copied(2, seq=1 + 3 * MSS)
    r = gro_receive(K_6_1_7, [[[copied(0), gso(1, segs=2, dodgy=False), early]]])
    assert [d.frames for d in r.delivered] == [(0, 1), (2,)]
    assert r.delivered[0].flush is GroFlush.MISMATCH and r.delivered[0].segs == 3
    # 6.1.7: a DODGY one is still flushed, gso_segs right or not
    r = gro_receive(K_6_1_7, [[[copied(0), gso(1, segs=2)]]])
    assert r.delivered[0].flush is GroFlush.GSO


@pytest.mark.parametrize("segs", [1, 3])
def test_gso_segs_not_matching_the_len_completes_the_aggregate(segs: int) -> None:
    # len 2896 != segs * 1448 for 1 and 3: merged (gso_size = mss), then out_check_final
    r = gro_receive(K_6_1_7, [[[copied(0), gso(1, segs=segs, dodgy=False)]]])
    (d,) = r.delivered
    assert d.flush is GroFlush.GSO_SEGS and d.segs == 1 + segs


def test_a_gso_skb_first_of_its_flow() -> None:
    # gso_segs 1 and len == gso_size: held as it is (gso_size not replaced), then an skb of
    # 1448 merges: count 2, gso_type TCPV4 | what it had
    one = gso(0, payload=MSS, segs=1, dodgy=False)
    r = gro_receive(K_6_1_7, [[[one, copied(1)]]])
    assert r.steps[0].how is GroHow.FIRST and r.delivered[0].segs == 2
    # gso_segs 2 with len 2 × 1448 would be held counting 2: the IP ID rule for a held skb
    # counting more than 1 was not read for every version
    with pytest.raises(InputError, match="counts 2 segments"):
        gro_receive(K_6_1_7, [[[gso(0, segs=2, dodgy=False)]]])


@pytest.mark.parametrize(("count", "flushes"), [
    (64, [GroFlush.BUDGET]),
    (63, [GroFlush.POLL_END]),
    (65, [GroFlush.BUDGET, GroFlush.POLL_END]),
])
def test_a_whole_budget_flushes_at_the_poll(count: int, flushes: list[GroFlush]) -> None:
    # 100-byte payloads: no -E2BIG (52 + 65 * 100 < 65536), frag_list past 17 frags
    r = run([built(i, 100, 1000) for i in range(count)])
    assert [d.flush for d in r.delivered] == flushes


# --- headers recorded at napi_gro_receive (observe --gro) ----------------------------------


FRAMES = tcp_flow_frames(build_frame(14 + HEADERS + MSS, "tcp4", 12), TCP4, 2)


def test_recorded_headers_read_as_the_whole_frame_does() -> None:
    """parse_tcp_headers on the Ethernet header and 80 bytes at the network header gives what
    parse_tcp gives on the whole frame (the checksum as the caller says)."""
    for frame in FRAMES:
        whole = parse_tcp(frame)
        assert whole is not None and whole.tcp_csum_ok
        assert parse_tcp_headers(frame[:14], frame[14:94], len(frame) - 14) == whole
        bad = parse_tcp_headers(frame[:14], frame[14:94], len(frame) - 14, tcp_csum_ok=False)
        assert bad == whole._replace(tcp_csum_ok=False)


def test_recorded_headers_cut_before_the_tcp_options_are_refused() -> None:
    frame = FRAMES[0]
    # 20 + 32 header bytes: 52 are enough, 51 are not (the 12 bytes of timestamps end at 52)
    assert parse_tcp_headers(frame[:14], frame[14:66], len(frame) - 14) is not None
    with pytest.raises(InputError, match=r"TCP options past the 51 bytes recorded \(the "
                                         r"headers end at 52\)"):
        parse_tcp_headers(frame[:14], frame[14:65], len(frame) - 14)
    with pytest.raises(InputError, match="a TCP header past the 39 bytes recorded"):
        parse_tcp_headers(frame[:14], frame[14:53], len(frame) - 14)
    with pytest.raises(InputError, match="a recorded MAC header of 13 bytes"):
        parse_tcp_headers(frame[:13], frame[14:94], len(frame) - 14)


def test_recorded_headers_of_other_protocols_are_not_tcp() -> None:
    udp = build_frame(200, "udp4", 0)
    assert parse_tcp_headers(udp[:14], udp[14:94], len(udp) - 14) is None
    frame = FRAMES[0]
    arp = frame[:12] + b"\x08\x06" + frame[14:]
    assert parse_tcp_headers(arp[:14], arp[14:94], len(arp) - 14) is None


def eth0_gso(tailroom: int) -> Segment:
    """An skb eth0 (virtio_net, mergeable, 6.18.44) handed napi_gro_receive during a
    download: a host TSO skb, 64756 bytes from the IP header, 40 of them linear (IPv4 20 +
    TCP 20; the 12 bytes of TCP timestamps are in frags[0]), gso_size 1348, DODGY|TCPV4,
    CHECKSUM_PARTIAL (tests/data/observe/eth0-6.18.44-gro-download.json)."""
    frame = FRAMES[0]
    skb = Skb(head="recorded", head_size=256, data=78, tail=118, end=118 + tailroom,
              len=64756, data_len=64716, truesize=66336, nr_frags=3,
              frags=(Frag("frag0", 0, 4000, 0), Frag("frag1", 0, 32768, 0),
                     Frag("frag2", 0, 27948, 0)),
              ip_summed=3, gso_size=1348, gso_type=0x3, gso_segs=0)
    return Segment(0, skb, False, parse_tcp_headers(frame[:14], frame[14:94], 64756))


def test_linear_headers_short_of_the_tcp_options_are_pulled_from_the_frags() -> None:
    """tcp_gro_pull_header → skb_gro_header_slow → pskb_may_pull(skb, 52): 12 bytes out of
    frags[0] into the tailroom, before the DODGY GSO skb is flushed as GRO_NORMAL: it leaves
    with headlen 52 and data_len 64704, truesize unchanged (as eth0 delivered it)."""
    r = gro_receive(lookup("6.18"), [[[eth0_gso(138)]]])
    (out,) = r.delivered
    assert r.steps[0].result is GroResult.NORMAL
    assert (out.skb.headlen, out.skb.data_len, out.skb.truesize, out.skb.nr_frags) == (
        52, 64704, 66336, 3)
    assert out.skb.frags[0] == Frag("frag0", 12, 3988, 0)


@pytest.mark.parametrize(("tailroom", "ok"), [(12, True), (11, False)])
def test_the_pull_needs_tailroom_for_the_12_bytes(tailroom: int, ok: bool) -> None:
    if ok:
        assert gro_receive(lookup("6.18"), [[[eth0_gso(tailroom)]]]).delivered[0].skb.tail == 130
        return
    with pytest.raises(InputError, match="pskb_may_pull reallocating the head"):
        gro_receive(lookup("6.18"), [[[eth0_gso(tailroom)]]])


def test_a_pure_ack_flushes_the_flow_and_goes_alone() -> None:
    # tcp_gro_receive: "flush |= (len - 1) >= mss" with an unsigned len of 0 refuses it, then
    # out_check_final's "len < mss" (mss 1 when not merged) flushes it: GRO_NORMAL
    ack = built(1, 0)
    ack = ack._replace(tcp=ack.tcp._replace(seq=1 + MSS))
    r = run([built(0), ack, built(2, seq_after=MSS)])
    assert r.steps[1].result is GroResult.NORMAL and r.steps[1].how is GroHow.NO_PAYLOAD
    assert r.delivered[0].flush is GroFlush.UNMERGEABLE and r.delivered[0].frames == (0,)
    alone = run([built(0, 0)])
    assert alone.steps[0].how is GroHow.NO_PAYLOAD  # not held, even as the first


def test_an_skb_with_a_frag_list_is_flushed_and_goes_alone() -> None:
    # dev_gro_receive: NAPI_GRO_CB(skb)->flush = skb_has_frag_list(skb)
    chained = copied(1)
    chained = chained._replace(skb=chained.skb._replace(
        frag_list=(FragListSkb(100, 768, ()),)))
    r = run([copied(0), chained])
    assert r.steps[1].how is GroHow.HAS_FRAG_LIST and r.steps[1].result is GroResult.NORMAL
    assert r.delivered[0].flush is GroFlush.UNMERGEABLE


# --- network_pull: what inet/ipv6_gro_receive pulled before a skb that is not merged as TCP ---


def _udp4(**kw: object) -> bytes:
    from vnetrx.live.gro_frames import tcp_segment

    args: dict[str, object] = {"sport": 40000, "seq": 0, "ack": 0, "flags": 0, "window": 0,
                               "options": b"", "payload": bytes(100), "ipid": 1, "df": True,
                               "ttl": 64, "udp": True}
    args.update(kw)
    return tcp_segment(4, **args)  # type: ignore[arg-type]


def test_network_pull_is_the_ip_header_inet_gro_receive_pulled() -> None:
    """inet_gro_receive (net/ipv4/af_inet.c @ 6.1.166, 6.12.15): "goto out" before
    skb_gro_pull(skb, sizeof(*iph)) for a protocol without gro_receive, a first byte other than
    0x45, a fragment or a bad header checksum; ipv6_gro_receive pulls the 40-byte header first.
    Checked on 6.1.192/6.12.117 guests (tests/data/gro/guest-*.json: v4-udp5, v6-udp5,
    v4-ip-options4, v4-more-fragments4, v4-bad-ip-csum3)."""
    from vnetrx.live.gro_frames import checksum
    from vnetrx.paths.gro import network_pull

    def pull(frame: bytes) -> int:
        return network_pull(frame[:14], frame[14:], len(frame) - 14)

    assert pull(_udp4()) == 20
    assert pull(_udp4(ip_options=True)) == 0
    assert pull(_udp4(more_fragments=True)) == 0
    assert pull(_udp4(bad_ip=True)) == 0
    icmp = bytearray(_udp4())
    icmp[23] = 1  # no inet_offloads[IPPROTO_ICMP]
    icmp[24:26] = b"\0\0"
    icmp[24:26] = checksum(bytes(icmp[14:34])).to_bytes(2, "big")  # a right header checksum
    assert pull(bytes(icmp)) == 0
    icmp[23] = 17
    icmp[24:26] = b"\0\0"
    icmp[24:26] = checksum(bytes(icmp[14:34])).to_bytes(2, "big")
    assert pull(bytes(icmp)) == 20  # the same header as UDP again
    from vnetrx.live.gro_frames import tcp_segment

    udp6 = tcp_segment(6, sport=40000, seq=0, ack=0, flags=0, window=0, options=b"",
                       payload=bytes(100), ipid=0, df=False, ttl=64, udp=True)
    assert pull(udp6) == 40
    assert pull(udp6[:14 + 39]) == 0  # shorter than an IPv6 header
    other = bytes(12) + b"\x88\xb5" + bytes(46)
    assert pull(other) == 0


# --- read_frame: a capture's common frame in one pass ---------------------------------------


def _capture_frames() -> list[tuple[bytes, int]]:
    """(captured bytes, wire length): IPv4/TCP frames, each in a shape the one-pass reading
    takes or must leave to the general one (a VLAN tag, IP options, UDP, IPv6, a fragment, a
    bad header checksum, padding, snaplen cuts at every boundary of the headers)."""
    from vnetrx.live.gro_frames import tcp_segment

    def seg(**kw: object) -> bytes:
        base: dict[str, object] = {"sport": 40000, "seq": 0x01020304, "ack": 0xA0B0C0D0,
                                   "flags": 0x18, "window": 512, "options": bytes(12),
                                   "payload": bytes(100), "ipid": 7, "df": True, "ttl": 64}
        base.update(kw)
        return tcp_segment(4, **base)  # type: ignore[arg-type]

    shapes = [seg(), seg(options=b""), seg(options=bytes(40)), seg(df=False, tos=4),
              seg(bad_ip=True), seg(more_fragments=True), seg(ip_options=True), seg(udp=True),
              seg(vlan=5), seg(payload=b""), tcp_segment(6, sport=1, seq=2, ack=3, flags=0x10,
                                                         window=1, options=b"", payload=bytes(9),
                                                         ipid=0, df=False, ttl=64)]
    out: list[tuple[bytes, int]] = []
    for frame in shapes:
        out.append((frame, len(frame)))
        out.append((frame + bytes(6), len(frame) + 6))  # Ethernet padding past tot_len
        out.extend((frame[:cut], len(frame)) for cut in range(80))  # the snaplen cut it
    doff = bytearray(seg())
    doff[46] = 0x40  # a data offset of 16 bytes: not a TCP header GRO takes
    out.append((bytes(doff), len(doff)))
    arp = bytes(12) + b"\x08\x06" + bytes(46)
    out.append((arp, len(arp)))
    return out


def test_a_capture_frame_read_in_one_pass_is_what_the_general_reading_makes() -> None:
    from vnetrx.paths import gro

    taken = 0
    for data, length in _capture_frames():
        fast = gro._read_tcp4(data, length) if len(data) >= 14 else None
        general = gro._read_any(data, length, False)
        assert gro.read_frame(data, length, False) == general
        if fast is not None:
            taken += 1
            assert fast == general
    assert taken > 100  # the common shapes, whole or cut past their headers, were taken


def test_a_common_frame_read_as_its_headers_alone_is_what_read_frame_makes_of_it() -> None:
    """read_frame_headers gives a capture's common frame as its TcpHeaders (standing for a
    GroInput with nothing else set) and any other frame as read_frame's GroInput."""
    from vnetrx.paths import gro

    alone = 0
    for data, length in _capture_frames():
        for given in (data, memoryview(data)):
            got = gro.read_frame_headers(given, length, False)
            want = gro.read_frame(data, length, False)
            if isinstance(got, gro.TcpHeaders):
                alone += 1
                assert want == gro.GroInput(got)
                assert (want.udp_validated, want.pull, want.needs, want.hbh_at) == (
                    False, 0, 0, 0)
            else:
                assert got == want
    assert alone > 200  # the common shapes, as bytes and as views


def test_a_frame_read_in_a_readers_buffer_is_read_as_its_captured_bytes(tmp_path: Path) -> None:
    """read_captured reads buf[start:end] as read_frame_headers reads those bytes, whatever
    the buffer (bytes, a bytearray, a view, a mapped file) and wherever the frame sits in it,
    with the bytes around the frame not read (they differ: 0x45 and TCP's protocol number
    past a cut frame's end would make a common frame of it if they were)."""
    import mmap

    from vnetrx.paths import gro

    common = 0
    for data, length in _capture_frames():
        want = gro.read_frame_headers(data, length, False)
        common += isinstance(want, gro.TcpHeaders)
        around = b"\x45" * 7 + data + bytes(14) + b"\x45\x06" * 60
        path = tmp_path / "buf"
        path.write_bytes(around)
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            for buf in (around, bytearray(around), memoryview(around), mapped):
                assert gro.read_captured(buf, 7, 7 + len(data), length) == want
                # the first bytes read already with the record's header (capture.SEEN_HEAD of
                # them, past the frame's end where it is shorter)
                head = bytes(around[7:7 + SEEN_HEAD])
                assert gro.read_captured(buf, 7, 7 + len(data), length, head) == want
        assert gro.read_captured(data, 0, len(data), length) == want
    assert common > 100


def test_a_pcap_reader_reads_with_each_record_what_gro_reads_of_a_common_frame() -> None:
    from vnetrx.paths import gro

    assert SEEN_HEAD == gro.TCP4_HEADERS  # 14 + 20 + 60: Ethernet, IPv4, the longest TCP header


def test_a_frame_given_as_a_view_reads_as_its_bytes_and_the_view_is_not_kept() -> None:
    """A reader may hand a view of its buffer: the record is the one the bytes make (a
    capture's frame, checksums trusted, and a whole frame, summed), its byte fields are
    bytes, and no view of the buffer outlives the call (the buffer can be resized)."""
    from vnetrx.paths import gro

    frames = _capture_frames()
    frames.append((bytes(10), 60))  # shorter than an Ethernet header
    for data, length in frames:
        for whole in (False, True):
            if whole and len(data) != length:
                continue
            buffer = bytearray(b"\xAA" * 7 + data + b"\x55" * 5)
            view = memoryview(buffer)
            got = gro.read_frame(view[7:7 + len(data)], length, whole)
            view.release()
            buffer.extend(b"\0")  # BufferError while any view of it is alive
            buffer[:] = bytes(len(buffer))  # what the reader reads next
            assert got == gro.read_frame(data, length, whole), (data.hex(), length, whole)
            if got.tcp is not None:
                h = got.tcp
                assert {type(h.mac), type(h.addresses), type(h.options)} == {bytes}


def test_the_one_pass_reading_reads_the_fields_where_the_headers_have_them() -> None:
    import struct

    from vnetrx.live.gro_frames import tcp_segment
    from vnetrx.paths import gro

    frame = tcp_segment(4, sport=40001, seq=0xFEDCBA98, ack=0x12345678, flags=0x18,
                        window=0x0203, options=bytes(12), payload=bytes(1448), ipid=0xBEEF,
                        df=True, ttl=61, tos=8)
    got = gro._read_tcp4(frame, len(frame))
    assert got is not None and got.tcp is not None
    h = got.tcp
    assert (h.sport, h.dport, h.seq, h.ack) == (40001, 5001, 0xFEDCBA98, 0x12345678)
    # tcp_flag_word: doff 8 (32 bytes), ACK|PSH, window 0x0203
    assert h.flag_word == struct.unpack("!I", bytes([0x80, 0x18, 0x02, 0x03]))[0]
    assert (h.ttl, h.tos, h.df, h.ip_id) == (61, 8, True, 0xBEEF)
    assert (h.network_len, h.tcp_len, h.options, h.nhoff) == (20, 32, bytes(12), 0)
    assert h.network_ok and h.tot_len_ok and h.tcp_csum_ok and not h.ipv6
    assert h.addresses == bytes([192, 0, 2, 1, 192, 0, 2, 2, 6]) and h.mac == frame[:14]
    assert (got.udp_validated, got.pull, got.needs, got.hbh_at) == (False, 0, 0, 0)
