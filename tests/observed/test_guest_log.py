"""vnetrx/observed/guest_log.py: a lab guest's serial log (its VNETRX status lines, the
napi_gro_receive_entry tracepoint and the gro kprobe lines) and its version."""

from __future__ import annotations

from vnetrx.observed.guest_log import guest_version, parse_kprobe, parse_log, parse_tracepoint
from vnetrx.observed.rx_event import RxEvent

MERGEABLE_FEATURES = "0010010000000001111101010000110010000000100000000000000000000000"
TRACEPOINT = (
    "init-1 [000] ..s1. 3.159122: napi_gro_receive_entry: dev=eth0 napi_id=0x2001 "
    "queue_mapping=1 skbaddr=(____ptrval____) vlan_tagged=0 vlan_proto=0x0000 vlan_tci=0x0000 "
    "protocol=0x88b5 ip_summed=0 hash=0x00000000 l4_hash=0 len=46 data_len=0 truesize=1280 "
    "mac_header_valid=1 mac_header=-14 nr_frags=0 gso_size=0 gso_type=0x0"
)
KPROBE = (
    "init-1 [000] ..s1. 3.156854: gro: (napi_gro_receive+0x0/0x200) head=0xffff8a69c2cf7c00 "
    "data=0xffff8a69c2cf7c4e tail=124 end=704 mac_header=64 len=46"
)


def test_parse_tracepoint_and_kprobe() -> None:
    event = parse_tracepoint(TRACEPOINT)
    assert event == RxEvent(dev="eth0", len=46, data_len=0, truesize=1280, nr_frags=0,
                            protocol=0x88B5, queue_mapping=1, event="napi_gro_receive_entry")
    assert parse_tracepoint("something else") is None
    assert parse_tracepoint(TRACEPOINT.replace("truesize=1280", "truesize=x")) is None
    probe = parse_kprobe(KPROBE)
    assert probe is not None
    assert probe["data"] - probe["head"] == 78
    assert (probe["tail"], probe["end"], probe["mac_header"]) == (124, 704, 64)


def test_parse_log_pairs_kprobe_with_tracepoint() -> None:
    text = "\n".join(
        [
            "\x1bc garbage from the firmware",
            f"VNETRX features {MERGEABLE_FEATURES}",
            "VNETRX mtu 1500",
            "VNETRX kprobe on",
            "VNETRX trace-begin",
            KPROBE,
            TRACEPOINT,
            TRACEPOINT.replace("len=46", "len=86"),  # no kprobe line before it
            "VNETRX trace-end",
            TRACEPOINT,  # after the dump: ignored
        ]
    )
    log = parse_log(text)
    assert log.complete and log.kprobe
    assert log.mtu == 1500 and "MRG_RXBUF" in log.features
    assert [e.len for e in log.events] == [46, 86]
    assert (log.events[0].data, log.events[0].end, log.events[0].mac_header) == (78, 704, 64)
    assert log.events[1].data is None


def test_parse_log_errors_and_incomplete() -> None:
    log = parse_log("VNETRX error insmod virtio_net\r\nVNETRX ready\r\n")
    assert log.errors == ("insmod virtio_net",)
    assert not log.complete


def test_guest_version() -> None:
    status = {"version": "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-26)"}
    assert guest_version(status, "6.1.0-57-amd64") == "6.1.192"
    assert guest_version({}, "6.1.0-57-amd64") == "6.1.0-57-amd64"
