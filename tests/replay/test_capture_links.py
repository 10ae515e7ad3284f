"""Captures of other link types than Ethernet (issue 28): Linux cooked SLL and SLL2 (what
`tcpdump -i any` writes) and raw IP, read as the Ethernet frames a device received. The cooked
headers are laid out as libpcap's pcap-linktype(7) and include/uapi/linux/if_packet.h give
them (SLL: pkttype, hatype, halen, addr[8], protocol; SLL2: protocol, reserved, ifindex, hatype,
pkttype, halen, addr[8]); tcpdump 4.99 reads the files these tests write the same way."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.errors import InputError
from vnetrx.packet import build_frame
from vnetrx.replay.capture import Cooked, read_capture

SRC = bytes.fromhex("020000000002")
FRAMES = [build_frame(n, l4) for n, l4 in ((1514, "tcp4"), (66, "tcp4"), (300, "udp6"),
                                             (9014, "tcp6"))]
HOST, OUTGOING = 0, 4
ETHER, LOOPBACK = 1, 772


def pcap(link: int, packets: list[bytes], lengths: list[int] | None = None) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, link)
    for i, packet in enumerate(packets):
        length = lengths[i] if lengths else len(packet)
        out += struct.pack("<IIII", i, 0, len(packet), length) + packet
    return out


def sll(frame: bytes, pkttype: int = HOST, hatype: int = ETHER) -> bytes:
    return struct.pack(">HHH8s", pkttype, hatype, 6, frame[6:12]) + frame[12:14] + frame[14:]


def sll2(frame: bytes, ifindex: int = 4, pkttype: int = HOST, hatype: int = ETHER) -> bytes:
    return (frame[12:14] + bytes(2) + struct.pack(">IHBB8s", ifindex, hatype, pkttype, 6,
                                                   frame[6:12]) + frame[14:])


def read(data: bytes, cooked: Cooked | None = None) -> list[tuple[int, bytes]]:
    return [(f.length, f.data) for f in read_capture(io.BytesIO(data), "test", cooked=cooked)]


def as_received(frame: bytes) -> bytes:
    """The frame as a cooked capture gives it back: the destination MAC is not in it."""
    return bytes(6) + frame[6:]


@pytest.mark.parametrize(("link", "wrap"), [(113, sll), (276, sll2)], ids=["sll", "sll2"])
def test_cooked_packets_read_as_the_ethernet_frames_received(
    link: int, wrap: Callable[[bytes], bytes]
) -> None:
    got = read(pcap(link, [wrap(f) for f in FRAMES]))
    assert got == [(len(f), as_received(f)) for f in FRAMES]


def test_wire_lengths_are_the_frames_not_the_cooked_packets() -> None:
    # a snaplen of 100 keeps the cooked header and 80 bytes; the wire length is the packet's
    packets = [sll2(f)[:100] for f in FRAMES]
    got = read(pcap(276, packets, [len(f) - 14 + 20 for f in FRAMES]))
    assert [length for length, _ in got] == [len(f) for f in FRAMES]
    assert got[0][1] == as_received(FRAMES[0])[:94]


def test_raw_ip_gets_an_ethernet_header_by_ip_version() -> None:
    for link in (101, 228, 229):
        got = read(pcap(link, [f[14:] for f in FRAMES]))
        assert [(n, d[12:14]) for n, d in got] == [
            (len(f), f[12:14]) for f in FRAMES]


def test_what_this_host_sent_and_loopback_are_left_out_and_counted() -> None:
    cooked = Cooked()
    packets = [sll2(FRAMES[0]), sll2(FRAMES[1], pkttype=OUTGOING),
               sll2(FRAMES[2], ifindex=1, hatype=LOOPBACK), sll2(FRAMES[3])]
    got = read(pcap(276, packets), cooked)
    assert [n for n, _ in got] == [len(FRAMES[0]), len(FRAMES[3])]
    assert (cooked.outgoing, cooked.not_ethernet, cooked.other_interface) == (1, 1, 0)
    note = cooked.note()
    assert note is not None and "left out: 1 sent by this host, 1 of non-Ethernet" in note


def test_ifindex_selects_one_interface() -> None:
    cooked = Cooked(ifindex=7)
    got = read(pcap(276, [sll2(FRAMES[0], ifindex=4), sll2(FRAMES[1], ifindex=7)]), cooked)
    assert [n for n, _ in got] == [len(FRAMES[1])] and cooked.other_interface == 1


def test_other_link_types_are_refused_naming_the_ones_read() -> None:
    with pytest.raises(InputError, match=r"link type 105, which vnetrx does not read \(it reads "
                                         r"Ethernet \(1\), Linux cooked SLL \(113\)"):
        read(pcap(105, [FRAMES[0]]))


def test_a_cooked_replay_equals_the_ethernet_one(tmp_path: Path) -> None:
    eth, cooked = tmp_path / "eth.pcap", tmp_path / "any.pcap"
    eth.write_bytes(pcap(1, FRAMES))
    cooked.write_bytes(pcap(276, [sll2(f) for f in FRAMES]
                            + [sll2(FRAMES[0], pkttype=OUTGOING)]))
    runner = CliRunner()
    args = ["replay", "--mergeable", "--mtu", "9000", "--jsonl", "--offload", "auto"]
    a = runner.invoke(cli, [*args, "--from", str(eth)])
    b = runner.invoke(cli, [*args, "--from", str(cooked)])
    assert a.exit_code == b.exit_code == 0, b.output
    assert a.stdout == b.stdout
    assert b.stderr.startswith("vnetrx: note: a Linux cooked SLL2 (276) capture")
    assert "left out: 1 sent by this host" in b.stderr


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed")
def test_tcpdump_reads_the_test_captures_as_these_packets(tmp_path: Path) -> None:
    path = tmp_path / "any.pcap"
    path.write_bytes(pcap(276, [sll2(f) for f in FRAMES]))
    out = subprocess.run(["tcpdump", "-nr", str(path)], capture_output=True, text=True,
                         check=True).stdout
    assert out.count(" In ") == len(FRAMES)
    assert "LINUX_SLL2" in subprocess.run(["tcpdump", "-nr", str(path)], capture_output=True,
                                          text=True).stderr
