"""`vnetrx decode`: field decoding, frame summaries, csum placement, and the tap-write checks of
tun_get_user + virtio_net_hdr_to_skb per kernel (include/linux/virtio_net.h read @6.1.192 and
@6.12.117)."""

from __future__ import annotations

import json
import struct

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.decode import csum_place, decode, parse_frame, parse_hex
from vnetrx.errors import InputError
from vnetrx.kernel.registry import lookup
from vnetrx.paths.tun.vnet_hdr import csum_hdr_len, validate
from vnetrx.paths.virtio_net_hdr import VnetHdr

K61, K612, K73 = lookup("6.1"), lookup("6.12"), lookup("7.3")

ETH = bytes.fromhex("020000000001" "020000000002" "0800")
ETH6 = bytes.fromhex("020000000001" "020000000002" "86dd")


def hdr(flags: int = 0, gso: int = 0, hdr_len: int = 0, gso_size: int = 0, start: int = 0,
        off: int = 0) -> bytes:
    return struct.pack("<BBHHHH", flags, gso, hdr_len, gso_size, start, off)


def ipv4(proto: int, payload_len: int) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + payload_len, 0, 0x4000, 64, proto, 0,
                       bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))


def udp_frame(payload: int = 4) -> bytes:
    return ETH + ipv4(17, 8 + payload) + struct.pack("!HHHH", 1234, 5678, 8 + payload, 0) + \
        bytes(payload)


def tcp_frame(payload: int = 100) -> bytes:
    tcp = struct.pack("!HHIIHHHH", 80, 443, 1, 2, (5 << 12) | 0x18, 65535, 0, 0)
    return ETH + ipv4(6, 20 + payload) + tcp + bytes(payload)


def tcp6_frame(payload: int = 100) -> bytes:
    ip6 = struct.pack("!IHBB16s16s", 0x60000000, 20 + payload, 6, 64, bytes(15) + b"\x01",
                      bytes(15) + b"\x02")
    tcp = struct.pack("!HHIIHHHH", 80, 443, 1, 2, (5 << 12) | 0x10, 100, 0, 0)
    return ETH6 + ip6 + tcp + bytes(payload)


# --- parsing the input ------------------------------------------------------------------


def test_parse_hex_accepts_the_usual_spellings() -> None:
    assert parse_hex("01 00:0a-0B") == b"\x01\x00\x0a\x0b"
    assert parse_hex("0x01 0x02\n") == b"\x01\x02"
    assert parse_hex(r"\x01\x02\xff") == b"\x01\x02\xff"


@pytest.mark.parametrize(("text", "message"), [
    ("", "no bytes given"),
    ("012", "odd number of hex digits (3)"),
    ("01zz", "'z' is not a hex digit"),
])
def test_parse_hex_rejects(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_hex(text)


def test_truncated_header_is_an_input_error() -> None:
    with pytest.raises(InputError, match="9 byte"):
        decode(K612, bytes(9))
    with pytest.raises(InputError, match="a 12-byte"):
        decode(K612, bytes(10), hdr_len=12)


# --- fields -----------------------------------------------------------------------------


def test_fields_are_named_and_explained() -> None:
    d = decode(K612, hdr(1, 0x81, 54, 1448, 34, 16) + tcp_frame())
    by_name = {f.name: f for f in d.fields}
    assert [f.name for f in d.fields] == ["flags", "gso_type", "hdr_len", "gso_size",
                                          "csum_start", "csum_offset"]
    assert by_name["flags"].meaning == "VIRTIO_NET_HDR_F_NEEDS_CSUM"
    assert by_name["gso_type"].meaning == "VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN"
    assert (by_name["gso_size"].value, by_name["gso_size"].offset) == (1448, 4)
    assert by_name["csum_start"].meaning == "frame byte 34: the first byte of the tcp header"
    assert by_name["csum_offset"].meaning == "checksum at frame bytes 50..51 = tcp.check"
    assert d.flag_names == ("NEEDS_CSUM",)
    assert d.gso_name == "TCPV4 | ECN"


def test_mrg_rxbuf_header_has_num_buffers_and_nested_names() -> None:
    d = decode(K612, hdr(2) + b"\x03\x00", hdr_len=12)
    assert d.struct == "virtio_net_hdr_mrg_rxbuf"
    assert [(f.name, f.offset, f.value) for f in d.fields][-1] == ("num_buffers", 10, 3)
    assert d.fields[0].name == "hdr.flags" and d.fields[0].meaning == "VIRTIO_NET_HDR_F_DATA_VALID"


def test_hash_header_splits_hash_value_from_6_18() -> None:
    raw = hdr() + b"\x01\x00" + struct.pack("<IHH", 0x12345678, 2, 0)
    old = {f.name: f.value for f in decode(K612, raw, hdr_len=20).fields}
    new = {f.name: f.value for f in decode(K73, raw, hdr_len=20).fields}
    assert old["hash_value"] == 0x12345678 and old["hash_report"] == 2
    assert (new["hash_value_lo"], new["hash_value_hi"]) == (0x5678, 0x1234)
    meaning = {f.name: f.meaning for f in decode(K73, raw, hdr_len=20).fields}
    assert meaning["hash_report"] == "VIRTIO_NET_HASH_REPORT_TCPv4"


def test_unknown_flag_bits_are_reported() -> None:
    d = decode(K612, hdr(0x31))
    assert d.flag_names == ("NEEDS_CSUM",)
    assert d.flags_unknown == 0x30


# --- the frame --------------------------------------------------------------------------


def test_frame_layers_with_a_vlan_tag() -> None:
    tagged = ETH[:12] + b"\x81\x00\x20\x64\x08\x00" + udp_frame()[14:]
    layers, notes = parse_frame(tagged)
    assert [(x.name, x.offset, x.length) for x in layers] == [
        ("ethernet", 0, 14), ("vlan", 14, 4), ("ipv4", 18, 20), ("udp", 38, 8),
        ("payload", 46, 4)]
    assert "VLAN 100 (pcp 1)" in layers[1].summary
    assert notes == ()


def test_ipv6_tcp_frame() -> None:
    layers, _ = parse_frame(tcp6_frame(10))
    assert [x.name for x in layers] == ["ethernet", "ipv6", "tcp", "payload"]
    assert layers[2].offset == 54
    assert "::1 → " not in layers[1].summary  # full groups, not compressed
    assert layers[1].summary.startswith("0:0:0:0:0:0:0:1 → 0:0:0:0:0:0:0:2")


def test_truncated_frame_is_a_note_not_an_error() -> None:
    layers, notes = parse_frame(udp_frame()[:30])
    assert [x.name for x in layers] == ["ethernet"]
    assert notes == ("frame ends inside the IPv4 header (16 of 20 bytes at 14)",)


def test_csum_place_names_the_field_or_says_what_it_hits() -> None:
    layers, _ = parse_frame(udp_frame())
    good = csum_place(VnetHdr(1, 0, 0, 0, 34, 6), layers, 46)
    assert (good.field, good.field_at) == ("udp.check", 40)
    wrong = csum_place(VnetHdr(1, 0, 0, 0, 34, 16), layers, 46)  # TCP's offset on a UDP frame
    assert wrong.field is None
    assert wrong.explanation == "checksum at frame bytes 50..51: past the end of the frame"
    ip = csum_place(VnetHdr(1, 0, 0, 0, 14, 10), layers, 46)
    assert ip.field == "ipv4.check"
    assert ip.start_in == "frame byte 14: the first byte of the ipv4 header"


# --- validation: tun_get_user -------------------------------------------------------------


def test_needs_csum_raises_hdr_len_and_wraps_at_16_bits() -> None:
    assert csum_hdr_len(VnetHdr(1, 0, 0, 0, 34, 6)) == 42
    assert csum_hdr_len(VnetHdr(1, 0, 100, 0, 34, 6)) == 100
    assert csum_hdr_len(VnetHdr(0, 0, 0, 0, 34, 6)) == 0
    assert csum_hdr_len(VnetHdr(1, 0, 0, 0, 65535, 0)) == 1  # 65537 & 0xffff


def test_hdr_len_larger_than_the_frame() -> None:
    v = validate(K612, VnetHdr(0, 0, 200, 0, 0, 0), 100, headroom=64)
    assert (v.accepted, v.errno, v.function) == (False, "EINVAL", "tun_get_user")
    assert v.reason == "hdr_len 200 exceeds the 100-byte frame"


def test_short_tap_frame_and_short_hdr_len() -> None:
    assert validate(K612, VnetHdr(0, 0, 0, 0, 0, 0), 13, headroom=64).function == "tun_get_user"
    v = validate(K612, VnetHdr(0, 0, 10, 0, 0, 0), 60, headroom=64)
    assert (v.accepted, v.function) == (False, "tun_get_user")
    assert validate(K612, VnetHdr(0, 0, 0, 0, 0, 0), 14, headroom=64).accepted is True


def test_wrapped_hdr_len_fails_the_eth_hlen_check() -> None:
    v = validate(K612, VnetHdr(1, 0, 0, 0, 65535, 0), 100, headroom=64)
    assert v.hdr_len == 1
    assert v.reason == "hdr_len 1 below ETH_HLEN (14)"
    assert validate(K612, VnetHdr(0, 0, 0, 0, 0, 0), 13, headroom=64).reason == (
        "frame of 13 bytes below ETH_HLEN (14)")


# --- validation: virtio_net_hdr_to_skb ----------------------------------------------------


def test_plain_needs_csum_udp_is_accepted_everywhere_modelled() -> None:
    for k in (K61, K612, K73):
        d = decode(k, hdr(1, 0, 0, 0, 34, 6) + udp_frame())
        assert d.verdict is not None
        assert (d.verdict.accepted, d.verdict.gso) == (True, False)


def test_bad_gso_type() -> None:
    v = validate(K612, VnetHdr(0, 7, 0, 1000, 0, 0), 1000, headroom=64)
    assert (v.accepted, v.function) == (False, "virtio_net_hdr_to_skb")
    assert "gso_type 0x07 & ~ECN = 7 is none of the accepted types (1, 3, 4, 5)" in str(v.reason)


def test_ecn_bit_alone_is_einval() -> None:
    v = validate(K612, VnetHdr(0, 0x80, 0, 1000, 0, 0), 1000, headroom=64)
    assert v.errno == "EINVAL"
    assert "the ECN bit alone" in str(v.reason)


def test_gso_size_zero_with_a_gso_type() -> None:
    v = validate(K612, VnetHdr(1, 1, 0, 0, 34, 16), 1000, headroom=64)
    assert v.reason == "gso_type 0x01 with gso_size 0"


def test_udp_l4_is_einval_on_6_1_and_accepted_on_6_12() -> None:
    h = VnetHdr(1, 5, 0, 1000, 34, 6)
    old = validate(K61, h, 3000, headroom=64)
    assert old.accepted is False
    assert "GSO_UDP_L4 (5) is accepted from 6.2" in str(old.reason)
    new = validate(K612, h, 3000, headroom=64)
    assert (new.accepted, new.gso) == (True, True)


@pytest.mark.parametrize(("h", "frame_len", "reason"), [
    (VnetHdr(0, 5, 0, 1000, 0, 0), 3000, "GSO_UDP_L4 without NEEDS_CSUM"),
    (VnetHdr(1, 5, 0, 1000, 34, 16), 3000, "GSO_UDP_L4 with csum_offset 16, not 6 (udphdr.check)"),
    # UDP_MAX_SEGMENTS is 128 on 6.12: 42 + 1281 - 42 > 10 * 128
    (VnetHdr(1, 5, 0, 10, 34, 6), 42 + 1281,
     "GSO_UDP_L4 payload 1281 > gso_size 10 × UDP_MAX_SEGMENTS 128 = 1280"),
    (VnetHdr(1, 0x85, 0, 1000, 34, 6), 3000, "GSO_UDP_L4 with the ECN bit"),
])
def test_udp_l4_rules_on_6_12(h: VnetHdr, frame_len: int, reason: str) -> None:
    v = validate(K612, h, frame_len, headroom=64)
    assert v.accepted is False
    assert reason in str(v.reason)


def test_udp_l4_segment_limit_boundary() -> None:
    ok = validate(K612, VnetHdr(1, 5, 0, 10, 34, 6), 42 + 1280, headroom=64)
    assert ok.accepted is True


def test_csum_outside_the_frame() -> None:
    v = validate(K612, VnetHdr(1, 0, 0, 0, 90, 6), 100, headroom=64)
    assert v.accepted is True  # 90 + 6 + 2 = 98 ≤ 100
    v = validate(K612, VnetHdr(1, 0, 0, 0, 95, 6), 100, headroom=64)
    assert v.function == "tun_get_user"  # the hdr_len fix-up (103) catches it first
    # csum_start + csum_offset + 2 = 65552 wraps to hdr_len 16, which passes tun_get_user;
    # virtio_net_hdr_to_skb computes in 32 bits and cannot pull 65552 bytes.
    v = validate(K612, VnetHdr(1, 0, 0, 0, 65530, 20), 100, headroom=64)
    assert (v.hdr_len, v.function) == (16, "virtio_net_hdr_to_skb")
    assert "= 65552 bytes needed, the frame has 100 (pskb_may_pull fails)" in str(v.reason)


def test_tcp_gso_needs_thlen_bytes_after_csum_start() -> None:
    # tun_get_user raises hdr_len to 34 + 16 + 2 = 52 ≤ 53, but virtio_net_hdr_to_skb needs
    # start + max(thlen 20, off + 2) = 54 > 53
    v = validate(K612, VnetHdr(1, 1, 0, 1000, 34, 16), 53, headroom=64)
    assert (v.hdr_len, v.function) == (52, "virtio_net_hdr_to_skb")
    assert "= 54 bytes needed, the frame has 53" in str(v.reason)
    assert validate(K612, VnetHdr(1, 1, 0, 1000, 34, 16), 54, headroom=64).accepted is True


def test_transport_offset_below_nh_min_len_is_einval_from_6_12_only() -> None:
    h = VnetHdr(1, 0, 0, 0, 10, 6)
    assert validate(K61, h, 100, headroom=64).accepted is True
    v = validate(K612, h, 100, headroom=64)
    assert v.accepted is False
    assert "csum_start 10 is below nh_min_len 20" in str(v.reason)
    assert v.checks[-1].because == ("vnet_hdr_transport_floor",)
    tcp6 = validate(K612, VnetHdr(1, 4, 0, 1000, 34, 16), 2000, headroom=64)
    assert "nh_min_len 40" in str(tcp6.reason)  # GSO_TCPV6 needs an IPv6 header's 40


def test_tcp_gso_csum_offset_must_be_16() -> None:
    v = validate(K61, VnetHdr(1, 1, 0, 1448, 34, 6), 3000, headroom=64)
    assert v.reason == "TCP GSO with csum_offset 6, not 16 (tcphdr.check)"


def test_gso_by_frags_is_refused() -> None:
    v = validate(K612, VnetHdr(1, 1, 0, 0xFFFF, 34, 16), 3000, headroom=64)
    assert v.reason == "gso_size 0xffff is GSO_BY_FRAGS, reserved for the kernel"


def test_small_gso_packet_is_not_gso() -> None:
    v = validate(K612, VnetHdr(1, 1, 0, 1448, 34, 16), 1000, headroom=64)
    assert (v.accepted, v.gso) == (True, False)
    big = validate(K612, VnetHdr(1, 1, 0, 1448, 34, 16), 3000, headroom=64)
    assert big.gso is True
    assert "gso_type 0x3 (SKB_GSO_TCPV4|SKB_GSO_DODGY)" in big.checks[-1].detail


def test_gso_without_needs_csum_pulls_nh_min_len_plus_thlen_on_6_12() -> None:
    h = VnetHdr(0, 1, 0, 1000, 0, 0)
    assert validate(K61, h, 30, headroom=64).accepted is True  # pulls thlen 20 only
    v = validate(K612, h, 30, headroom=64)
    assert v.reason == ("GSO without NEEDS_CSUM: nh_min_len + thlen = 40 bytes needed, the frame "
                        "has 30 (pskb_may_pull fails)")


def test_skb_partial_csum_set_16_bit_limit() -> None:
    # headroom 64 + csum_start 65471 = 65535: refused since 424f8416bb39 (>= U16_MAX)
    v = validate(K612, VnetHdr(1, 0, 0, 0, 65471, 0), 65535, headroom=64)
    assert v.function == "skb_partial_csum_set"
    assert "= 65535 does not fit skb->csum_start (≥ 65535" in str(v.reason)
    assert validate(K612, VnetHdr(1, 0, 0, 0, 65470, 0), 65535, headroom=64).accepted is True


def test_tunnel_bits_with_a_24_byte_header_on_6_18_check_the_offsets() -> None:
    """virtio_net_hdr_tnl_to_skb @6.18.9: outer_th_offset 0 is below ETH_HLEN + 20."""
    h = VnetHdr(1, 0x21, 0, 1000, 34, 16)
    tunnel = validate(lookup("6.18"), h, 3000, headroom=64, vnet_hdr_sz=24)
    assert tunnel.modelled and tunnel.errno == "EINVAL"
    assert tunnel.reason is not None and "outer_th_offset 0" in tunnel.reason
    good = h._replace(csum_start=84, outer_th_offset=34, inner_nh_offset=64)
    assert validate(lookup("6.18"), good, 3000, headroom=64, vnet_hdr_sz=24).accepted
    # no UDP-tunnel GSO negotiated (6.18), or no tunnel support at all (6.12): -EINVAL
    not_negotiated = validate(lookup("6.18"), h, 3000, headroom=64)
    assert not_negotiated.function == "virtio_net_hdr_tnl_to_skb"
    assert validate(K612, h, 3000, headroom=64).errno == "EINVAL"


def test_header_only_needs_len_to_validate() -> None:
    assert decode(K612, hdr(1, 0, 0, 0, 34, 6)).verdict is None
    d = decode(K612, hdr(1, 0, 0, 0, 34, 6), frame_len=30)
    assert d.verdict is not None and d.verdict.accepted is False
    with pytest.raises(InputError, match="--len 3 is shorter"):
        decode(K612, hdr() + bytes(10), frame_len=3)


def test_tap_engine_shares_the_csum_fixup() -> None:
    """paths/tun.py uses the same csum_hdr_len: a NEEDS_CSUM header past the frame fails there
    with the same hdr_len."""
    from vnetrx.engine import trace_tap
    from vnetrx.paths.tun import TapFrame, TapSetup

    t = trace_tap(K612, TapSetup(), TapFrame(100, hdr(1, 0, 0, 0, 95, 6)))
    assert (t.outcome, t.errno, t.reason) == ("error", "EINVAL",
                                              "hdr_len 103 exceeds the 100-byte frame")
    v = validate(K612, VnetHdr(1, 0, 0, 0, 95, 6), 100, headroom=64)
    assert v.reason == t.reason


# --- CLI ------------------------------------------------------------------------------------


def test_cli_text(runner: CliRunner) -> None:
    raw = (hdr(1, 0, 0, 0, 34, 6) + udp_frame()).hex()
    result = runner.invoke(cli, ["decode", raw, "--kernel", "6.12"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "struct virtio_net_hdr (10 bytes) on Linux 6.12.117" in out
    assert "10.0.0.1 → 10.0.0.2, proto 17 (UDP)" in out
    assert "csum_offset 6 → checksum at frame bytes 40..41 = udp.check" in out
    assert "include/linux/virtio_net.h:virtio_net_hdr_to_skb @ 6.12.117" in out
    assert "Verdict: write() is accepted; not a GSO skb" in out


def test_cli_einval_verdict_exits_zero_and_says_why(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["decode", hdr(1, 5, 0, 1000, 34, 6).hex(), "--len", "3000",
                                 "--kernel", "6.1"])
    assert result.exit_code == 0
    assert "Verdict: write() fails with EINVAL in virtio_net_hdr_to_skb" in result.stdout


def test_cli_json(runner: CliRunner) -> None:
    raw = (hdr(1, 0x81, 0, 1448, 34, 16) + tcp_frame(3000)).hex()
    result = runner.invoke(cli, ["decode", raw, "--json", "--kernel", "6.12"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["schema"] == "vnetrx.decode/1"
    assert doc["input"] == {"hdr_len": 10, "header_hex": hdr(1, 0x81, 0, 1448, 34, 16).hex(),
                            "frame_bytes": 3054, "frame_len": 3054}
    assert doc["header"]["gso_type"] == {"value": 0x81, "name": "TCPV4 | ECN", "ecn": True}
    assert doc["csum"]["field"] == "tcp.check"
    assert doc["validation"]["accepted"] is True and doc["validation"]["gso"] is True
    assert [x["name"] for x in doc["frame"]["layers"]] == ["ethernet", "ipv4", "tcp", "payload"]


def test_cli_stdin_and_file(runner: CliRunner, tmp_path: object) -> None:
    from pathlib import Path

    raw = hdr(1, 0, 0, 0, 34, 6) + udp_frame()
    result = runner.invoke(cli, ["decode", "-", "--json"], input=raw.hex(" ", 4) + "\n")
    assert json.loads(result.stdout)["input"]["frame_bytes"] == 46
    path = Path(str(tmp_path)) / "w.bin"
    path.write_bytes(raw)
    result = runner.invoke(cli, ["decode", "--file", str(path), "--json"])
    assert json.loads(result.stdout)["csum"]["field"] == "udp.check"


@pytest.mark.parametrize(("args", "message"), [
    (["decode", "0100"], "2 byte(s) given, a 10-byte virtio_net_hdr needs 10"),
    (["decode", "xyz"], "'x' is not a hex digit"),
    (["decode"], "no bytes given"),
    (["decode", "--file", "/nonexistent/vnetrx"], "cannot read /nonexistent/vnetrx"),
    (["decode", "00" * 10, "--hdr-len", "11"], "Invalid value for '--hdr-len'"),
    (["decode", "00" * 10, "--file", "x"], "give the bytes once"),
])
def test_cli_errors_are_one_line_exit_2(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(cli, args)
    assert result.exit_code == 2
    assert result.stderr.startswith("vnetrx: error: ")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("argv", "expected"), [
    (["decode", "00" * 10, "--json"], ""),
    (["schema", "decode"], ""),
    (["decode", "0100", "--json"], ""),  # the error path too
    (["decode", "00" * 10], "rich"),  # the check can fail: text output does load rich
])
def test_json_paths_do_not_import_rich(argv: list[str], expected: str) -> None:
    import subprocess
    import sys

    setup = f"""
sys.argv = ['vnetrx', *{argv!r}]
import io, contextlib
from vnetrx.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
"""
    code = setup + "\nprint(','.join(sorted({m.split('.')[0] for m in sys.modules} & {'rich'})))"
    out = subprocess.run([sys.executable, "-c", "import sys" + code], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == expected
