"""`vnetrx lab virtio --xdp ACTION` checked again from saved serial logs of real Debian guests
(6.1.0-57 = 6.1.192, 6.12.117), without a boot: every frame, the driver's XDP counters (ethtool
-S, per queue on 6.1, totals and per queue on 6.12) and sysfs rx_dropped agree with the model.
The logs were written by `--serial-log` on 2026-12-01."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetrx.lab.compare import LabReport
from vnetrx.lab.initramfs import init_script
from vnetrx.lab.run import recheck_log, serial_header, xdp_from_header
from vnetrx.lab.xdp_probe import keep_args, parse_stats

LOGS = Path(__file__).parent.parent / "data" / "lab_xdp"


def report(name: str) -> LabReport:
    return recheck_log((LOGS / name).read_text(), None)


def counters(r: LabReport) -> dict[str, tuple[int, int | None]]:
    return {name: (predicted, observed) for name, predicted, observed in r.xdp_counters}


def frame(r: LabReport, length: int) -> dict[str, object]:
    return next(f.predicted for f in r.frames if f.frame_len == length)


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")))
def test_every_saved_run_matches(name: str) -> None:
    r = report(name)
    assert r.match, [(f.frame_len, f.predicted, f.observed) for f in r.frames if not f.match]
    assert r.xdp is not None and r.xdp.match and r.xdp.observed_errno is None
    assert all(observed is not None for _, _, observed in r.xdp_counters)


def test_6_1_drop_program_and_the_backported_length_check() -> None:
    # 14 frames reach the XDP branch (13 bytes is a short packet): the program drops 8, and 6
    # span several 3520-byte buffers, which xdp_linearize_page refuses; on 6.1 a full second
    # buffer also fails check_mergeable_len (ctx truesize 3520 - room 576 = 2944), 5 of them
    r = report("mergeable-drop-6.1.0-57-amd64.log")
    c = counters(r)
    assert c["rx_xdp_drops"] == (14, 14) and c["rx_drops"] == (14, 14)
    assert c["rx_xdp_packets"] == (9, 9)  # 8 frames the program saw and the sentinel
    assert r.rx_length_errors == (1 + 5, 6)
    assert frame(r, 3509)["reason"] == "xdp_linearize"  # second buffer: 1 byte, passes the check
    assert frame(r, 9014)["reason"] == "xdp_len_check"


def test_6_12_multi_buffer_frames_with_frags() -> None:
    r = report("mergeable-pass-frags-6.12.117+deb12-amd64.log")
    big = frame(r, 63348)  # 18 × 3520 - 12: the most a multi-buffer xdp_buff takes
    assert (big["nr_frags"], big["data_len"], big["truesize"]) == (17, 59840, 4352 + 17 * 4096)
    assert frame(r, 63349)["reason"] == "xdp_too_many_buffers"
    assert frame(r, 9014)["truesize"] == 12544
    assert counters(r)["rx_xdp_drops"] == (2, 2)  # 63349 and 65535


def test_6_12_small_mode_slots() -> None:
    r = report("small-pass-6.12.117+deb12-amd64.log")
    assert frame(r, 1000)["truesize"] == 2432 and frame(r, 1000)["data"] == 346


def test_6_1_xdp_tx_counters() -> None:
    r = report("mergeable-gso-tx-6.1.0-57-amd64.log")
    c = counters(r)
    assert c["rx_xdp_tx"] == (8, 8) and c["tx_xdp_tx"] == (8, 8)
    # what the backend took off the tx queue is not in the serial log
    assert r.transmitted == ((26, 72, 140, 141, 1012, 1526, 3012, 3520), None)


def test_stats_parsing_sums_queues_and_ignores_6_12_totals() -> None:
    assert parse_stats("rx_queue_0_xdp_drops 2 rx_queue_1_xdp_drops 3 tx_queue_0_xdp_tx 1") == {
        "rx_xdp_drops": 5, "tx_xdp_tx": 1}
    assert parse_stats("rx_xdp_drops 5 rx0_xdp_drops 2 rx1_xdp_drops 3") == {"rx_xdp_drops": 5}
    assert parse_stats("rx_xdp_drops 5") == {"rx_xdp_drops": 5}
    assert parse_stats("error 95") is None and parse_stats("") is None


def test_init_script_attaches_before_link_up_and_reads_counters() -> None:
    script = init_script(["virtio_net"], "52:54:00:12:34:56", None, xdp_keep=keep_args("drop",
                                                                                       True))
    attach = script.index("/bin/xdpprobe $dev keep 1 1 0x88b6")
    assert attach < script.index("ip link set $dev up")
    assert script.index("/bin/xdpprobe $dev stats") > script.index("say rx_dropped")
    assert "xdpprobe" not in init_script(["virtio_net"], "52:54:00:12:34:56", None)


def test_serial_header_carries_the_program() -> None:
    header = serial_header("mergeable", None, (60, 1000), xdp="tx", xdp_frags=True)
    assert xdp_from_header(header) == ("tx", True, False)
    assert xdp_from_header(serial_header("small", None, (60,))) == (None, False, False)
    late = serial_header("small", None, (60,), xdp="pass", xdp_late=True)
    assert xdp_from_header(late) == ("pass", False, True)


def test_attached_late_old_buffers_are_copied() -> None:
    # 6.1, EWMA-0 ring of 1536-byte buffers: 3000 + 12 over two is linearised (4352); 3509 + 12
    # over three does not fit one page after 256 of headroom (3328 + 449 + 320 > 4096)
    r = report("mergeable-pass-late-6.1.0-57-amd64.log")
    assert frame(r, 3000)["truesize"] == 4352 and frame(r, 3509)["outcome"] == "drop"
    assert frame(r, 60)["outcome"] == "copy"  # ≤ 6.2: page_to_skb copies it again
    # 6.12 with frags: only the first old buffer is copied, the rest stay frags (1536 each)
    f = report("mergeable-pass-frags-late-6.12.117+deb12-amd64.log")
    assert (frame(f, 9014)["nr_frags"], frame(f, 9014)["truesize"]) == (5, 4352 + 4 * 1536 + 2048)


@pytest.mark.parametrize(("log", "dropped"), [
    ("mergeable-gso-offloads-pass-6.1.0-57-amd64.log", 17),  # the GSO frames
    ("mergeable-gso-offloads-pass-6.12.117+deb12-amd64.log", 22),  # and NEEDS_CSUM (6.10+)
])
def test_real_tcp_udp_frames_with_offload_headers(log: str, dropped: int) -> None:
    # --offloads: TCP/UDP frames behind NEEDS_CSUM / DATA_VALID / TSO / UFO / USO headers;
    # XDP drops GSO headers in every version, NEEDS_CSUM from 6.10 (703eec1b2422)
    r = report(log)
    assert counters(r)["rx_xdp_drops"] == (dropped, dropped)
