"""The GRO oracle's pure parts: the bursts it writes (rebuilt byte for byte from the data file),
the BPF assembler's output, and how records become inputs and delivered skbs. No root needed."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from vnetrx.live import gro_frames, grobpf
from vnetrx.live.gro import analyse, incomplete_reason, split_reason, still_held

DATA = Path(__file__).resolve().parents[1] / "data" / "gro" / "linux-6.18.44.json"


def ones_sum(data: bytes) -> int:
    """An independent RFC 1071 sum (not gro_frames.checksum): big-endian words, end-around."""
    data += b"\0" * (len(data) % 2)
    total = 0
    for i in range(0, len(data), 2):
        total += data[i] << 8 | data[i + 1]
        total = (total & 0xFFFF) + (total >> 16)
    return total


def test_checksum_of_the_rfc_1071_style_textbook_header() -> None:
    # the IPv4 header of the classic worked example (192.168.0.1 -> 192.168.0.199): 0xb861
    header = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert gro_frames.checksum(header) == 0xB861


@pytest.mark.parametrize("family", [4, 6])
def test_segments_carry_valid_checksums_and_the_layout_asked(family: int) -> None:
    writes = gro_frames.build({"family": family, "segments": 3, "payload": 1448})
    l3 = 20 if family == 4 else 40
    for k, write in enumerate(writes):
        frame = write.frame
        assert len(frame) == 14 + l3 + 32 + 1448
        tcp = frame[14 + l3:]
        assert struct.unpack("!I", tcp[4:8])[0] == gro_frames.SEQ0 + 1448 * k
        assert tcp[12] >> 4 == 8  # doff: 20 + NOP NOP TS
        if family == 4:
            assert ones_sum(frame[14:34]) == 0xFFFF
            pseudo = frame[26:34] + struct.pack("!HH", 6, len(tcp))
            assert struct.unpack("!H", frame[18:20])[0] == 0x100 + k  # incrementing id
        else:
            pseudo = frame[22:54] + struct.pack("!IxxxB", len(tcp), 6)
        assert ones_sum(pseudo + tcp) == 0xFFFF


def test_bad_checksum_fixed_id_and_no_df() -> None:
    writes = gro_frames.build({"segments": 3, "bad_tcp_csum": [1], "ipid": "fixed", "df": False})
    sums = [ones_sum(w.frame[26:34] + struct.pack("!HH", 6, len(w.frame) - 34) + w.frame[34:])
            for w in writes]
    assert sums[0] == sums[2] == 0xFFFF and sums[1] != 0xFFFF
    assert {w.frame[18:20] for w in writes} == {b"\x01\x00"}
    assert {w.frame[20:22] for w in writes} == {b"\x00\x00"}


def test_gso_frame_has_a_dodgy_candidate_vnet_header() -> None:
    writes = gro_frames.build({"segments": 3, "vnet": "none", "gso": {"at": 1, "segments": 4}})
    assert [len(w.frame) for w in writes] == [1514, 14 + 52 + 4 * 1448, 1514]
    flags, gso_type, hdr_len, gso_size, start, offset = struct.unpack("<BBHHHH", writes[1].hdr)
    assert (flags, gso_type, hdr_len, gso_size, start, offset) == (1, 1, 66, 1448, 34, 16)
    assert writes[0].hdr == bytes(10)
    assert writes[2].seq == gro_frames.SEQ0 + 5 * 1448


def test_ip_level_variations() -> None:
    writes = gro_frames.build({"segments": 6, "tos_change": [1], "df_change": [2],
                               "ip_options": [3], "more_fragments": [4], "udp": [5]})
    frames = [w.frame for w in writes]
    assert [f[15] for f in frames] == [0, 4, 0, 0, 0, 0]  # TOS
    assert [f[20:22].hex() for f in frames] == ["4000", "4000", "0000", "4000", "6000",
                                                "4000"]  # DF flipped; DF|MF
    assert frames[3][14] == 0x46 and ones_sum(frames[3][14:38]) == 0xFFFF  # ihl 6
    assert frames[5][23] == 17 and len(frames[5]) == 14 + 20 + 8 + 1448  # UDP
    udp = frames[5][34:]
    pseudo = frames[5][26:34] + struct.pack("!HH", 17, len(udp))
    assert ones_sum(pseudo + udp) == 0xFFFF
    # the UDP datagram takes no TCP sequence space
    assert writes[5].seq == gro_frames.SEQ0 + 5 * 1448


def test_ipv6_traffic_class_and_flow_label() -> None:
    writes = gro_frames.build({"family": 6, "segments": 3, "tos_change": [1],
                               "flowlabel_change": [2]})
    assert [w.frame[14:18].hex() for w in writes] == ["60000000", "60400000", "60000001"]


def test_non_ip_frame_in_a_burst() -> None:
    writes = gro_frames.build({"segments": 3, "other": [1]})
    assert writes[1].frame == gro_frames.DST_MAC + gro_frames.SRC_MAC + b"\x88\xb5" + bytes(46)
    assert writes[2].seq == gro_frames.SEQ0 + 1448


def test_writev_split() -> None:
    (write,) = gro_frames.build({"segments": 1, "split": [14, 66]})
    assert [len(v) for v in write.iovecs()] == [14, 52, 1448]


def test_unknown_burst_key_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown burst keys"):
        gro_frames.build({"segmnets": 3})


def data_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(DATA.read_text())["cases"]
    return cases


def test_data_file_bursts_rebuild_byte_for_byte() -> None:
    for case in data_cases():
        writes = gro_frames.build(case["burst"])
        digest = hashlib.sha256(b"".join(w.hdr + w.frame for w in writes)).hexdigest()
        assert digest == case["writes_sha256"], case["name"]
        assert (writes[0].hdr + writes[0].frame).hex() == case["frame0"], case["name"]
        # a timed burst spans jiffies: where a tick falls may differ from one repeat to the
        # next (its recorded times say where it fell in the run kept)
        assert case["deterministic"] or case["tap"].get("timed"), case["name"]
        assert case["repeats"] == 3, case["name"]


def test_data_file_kernel_facts() -> None:
    """What the running kernel answered (6.18.44), read back: the 64 KiB cut between 45 and
    46 full segments, MAX_SKB_FRAGS 17 before a frag_list, no merge without a flush timeout."""
    by = {c["name"]: c["observed"] for c in data_cases()}
    (seg45,) = by["seg45"]["skbs"]
    assert (seg45["len"], seg45["gso_segs"], seg45["nr_frags"]) == (52 + 45 * 1448, 45, 17)
    assert [s["frames"] for s in by["seg46"]["skbs"]] == [list(range(45)), [45]]
    assert by["seg18"]["skbs"][0]["frag_list"]["count"] == 0
    assert by["seg19"]["skbs"][0]["frag_list"]["count"] == 1
    assert [len(s["frames"]) for s in by["timeout0"]["skbs"]] == [1] * 8


# --- the assembler ------------------------------------------------------------------------


def offsets() -> grobpf.SkbOffsets:
    """The 6.18.44 layout (from its BTF), so that the assembler test needs no kernel."""
    return grobpf.SkbOffsets(
        skb_size=224, shinfo_size=320, dev=16, name=280, next=0, len=112, data_len=116,
        truesize=208, head=192, data=200, tail=184, end=188, csum_start=136, csum_offset=138,
        network_header=180, transport_header=178, mac_header=182, ip_summed_bit=1029,
        head_frag_bit=1013, pp_recycle_bit=1015, nr_frags=2, gso_size=4, gso_segs=6,
        gso_type=24, frag_list=8, frags=48, frag_size=16, frag_len=8, frag_offset=12,
        max_skb_frags=17)


def insns(code: bytes) -> list[tuple[int, int, int, int, int]]:
    out = []
    for i in range(0, len(code), 8):
        op, regs, off, imm = struct.unpack("<BBhi", code[i:i + 8])
        out.append((op, regs & 0xF, regs >> 4, off, imm))
    return out


def test_skb_program_starts_with_the_skb_and_every_jump_lands_on_the_exit() -> None:
    code = grobpf.skb_program(offsets(), grobpf.DELIVERED, "vnx0123456789", 3, 4, None, 2)
    ops = insns(code)
    assert ops[0] == (0x79, 6, 1, 0, 0)  # r6 = *(u64 *)(r1 + 0): args[0], the skb
    assert ops[-2:] == [(0xB7, 0, 0, 0, 0), (0x95, 0, 0, 0, 0)]  # r0 = 0; exit
    exit_at = len(ops) - 2
    for i, (op, *_rest, off, _imm) in enumerate(ops):
        if op in (0x15, 0x5D):  # jeq imm / jne reg: only ever to "out"
            assert i + 1 + off == exit_at
    # the device name is compared as two 64-bit words (ld_imm64 low/high halves)
    name = b"vnx0123456789\0\0\0"
    words = [struct.unpack("<Q", name[:8])[0], struct.unpack("<Q", name[8:])[0]]
    loads = [(ops[i][4] & 0xFFFFFFFF) | (ops[i + 1][4] & 0xFFFFFFFF) << 32
             for i, o in enumerate(ops) if o[0] == 0x18 and o[2] == 0]
    assert loads == words


def test_record_layout() -> None:
    o = offsets()
    assert (o.skb_at, o.shinfo_at, o.packet_at, o.mac_at, o.record_size) == (
        64, 288, 608, 688, 704)


# --- records into inputs and skbs ----------------------------------------------------------


def rec(kind: str, jiffies: int = 100, ktime: int = 0, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"kind": kind, "jiffies": jiffies, "ktime": ktime, "tid": 1}
    if kind != "exit":
        base.update({"skb": fields.pop("skb", 1), "len": 1500, "data_len": 0, "truesize": 2176,
                     "nr_frags": 0, "gso_size": 0, "gso_segs": 0, "gso_type": 0,
                     "ip_summed": 0, "csum_start": 0, "csum_offset": 0, "head_frag": 1,
                     "data": 78, "network_header": 78, "frags": [], "headlen": 1500,
                     "packet": fields.pop("packet", "")})
    base.update(fields)
    return base


def packet_of(write: gro_frames.Write) -> str:
    return write.frame[14:94].hex()


def test_a_merge_delivered_before_its_exit_still_counts() -> None:
    """PSH on the 8th segment: gro_normal_batch (8) is reached inside gro_receive_skb, so
    net:netif_receive_skb fires before napi_gro_receive_exit of the last input."""
    writes = gro_frames.build({"segments": 2, "psh": [1]})
    records = [rec("entry", skb=10, packet=packet_of(writes[0])), rec("exit", ret=2),
               rec("entry", skb=20, packet=packet_of(writes[1])),
               rec("delivered", skb=10, packet=packet_of(writes[0]), len=2948),
               rec("exit", ret=1)]
    out = analyse(records, writes, [1514, 1514])
    assert [i["verdict"] for i in out["inputs"]] == ["HELD", "MERGED_FREE"]
    assert [s["frames"] for s in out["skbs"]] == [[0, 1]]


def test_records_out_of_order_are_refused() -> None:
    from vnetrx.errors import VnetrxError

    writes = gro_frames.build({"segments": 2})
    records = [rec("entry", packet=packet_of(writes[1])), rec("exit", ret=2)]
    with pytest.raises(VnetrxError, match="out of order"):
        analyse(records, writes, [1514, 1514])


def test_split_reasons() -> None:
    clean = [rec("entry", ktime=0), rec("exit", ktime=1, ret=2), rec("entry", ktime=2),
             rec("exit", ktime=3, ret=1), rec("delivered", jiffies=105, ktime=20_000_000)]
    assert split_reason(clean, 20_000_000) is None  # the timer's delivery, later: fine
    ticked = [*clean[:2], rec("entry", jiffies=101, ktime=2), *clean[3:]]
    assert split_reason(ticked, 20_000_000) == "a jiffy tick inside the burst (100 -> 101)"
    early = [*clean[:4], rec("delivered", jiffies=101, ktime=4)]
    assert split_reason(early, 20_000_000) == "an skb delivered at jiffy 101 during the burst"
    assert split_reason([], 1) == "no input reached GRO"


def test_still_held_counts_kept_and_passed_on_skbs_until_delivered() -> None:
    # verdicts: 0 MERGED, 1 MERGED_FREE, 2 HELD, 3 NORMAL (enum gro_result)
    burst = [rec("entry", skb=0xA), rec("exit", ret=2), rec("entry", skb=0xB),
             rec("exit", ret=1), rec("entry", skb=0xC), rec("exit", ret=3),
             rec("entry", skb=0xD), rec("exit", ret=0)]
    assert still_held(burst) == 2  # A held, C passed on; B freed, D merged into A
    assert still_held([*burst, rec("delivered", skb=0xC)]) == 1
    assert still_held([*burst, rec("delivered", skb=0xC), rec("delivered", skb=0xA)]) == 0
    # an address delivered and then taken again by a later input that GRO holds
    reused = [rec("entry", skb=0xA), rec("exit", ret=2), rec("delivered", skb=0xA),
              rec("entry", skb=0xA), rec("exit", ret=2)]
    assert still_held(reused) == 1
    assert still_held([*reused, rec("delivered", skb=0xA)]) == 0
    # an exit without its entry (another device's, before ours) holds nothing
    assert still_held([rec("exit", ret=2)]) == 0


def test_a_burst_missing_a_delivery_or_a_record_is_incomplete() -> None:
    held = [rec("entry", skb=0xA), rec("exit", ret=2)]
    assert incomplete_reason({"records": [*held, rec("delivered", skb=0xA)], "lost": 0}) is None
    assert incomplete_reason({"records": held, "lost": 0}) == \
        "1 skb(s) GRO kept were not seen leaving it within 2 s of the flush timeout"
    assert incomplete_reason({"records": [*held, rec("delivered", skb=0xA)], "lost": 3}) == \
        "the record queue refused 3 record(s)"


def test_poll_program_reads_napi_work_budget_and_jumps_only_to_the_exit() -> None:
    code = grobpf.poll_program(offsets(), "eth0", 3, 4, 5)
    ops = insns(code)
    # r6 = args[0] (the napi), r8 = args[1] (work), r9 = args[2] (budget)
    assert ops[:3] == [(0x79, 6, 1, 0, 0), (0x79, 8, 1, 8, 0), (0x79, 9, 1, 16, 0)]
    assert ops[-2:] == [(0xB7, 0, 0, 0, 0), (0x95, 0, 0, 0, 0)]
    exit_at = len(ops) - 2
    jumps = [(i, off) for i, (op, *_r, off, _imm) in enumerate(ops) if op in (0x15, 0x5D)]
    # every filter jump goes to the exit; the last one skips the lost counter after a push
    # the queue accepted (r0 == 0)
    assert all(i + 1 + off == exit_at for i, off in jumps[:-1])
    assert jumps[-1][0] + 1 + jumps[-1][1] == exit_at
    # work and budget stored at the record's first body words
    assert (0x7B, 7, 8, 64, 0) in ops and (0x7B, 7, 9, 72, 0) in ops
    # napi->dev read from napi_struct.dev (48 on 6.18.44)
    assert (0x07, 3, 0, 0, 48) in ops


def test_decode_reads_a_poll_record() -> None:
    o = offsets()
    record = bytearray(o.record_size)
    struct.pack_into("<QQQQQQ", record, 0, grobpf.POLL, 5, 7, 9, 0xFFFF8881, 1)
    struct.pack_into("<qq", record, o.skb_at, 3, 64)
    assert grobpf.decode(bytes(record), o) == {
        "kind": "poll", "ktime": 5, "jiffies": 7, "tid": 9, "cpu": 1, "napi": 0xFFFF8881,
        "work": 3, "budget": 64}
