"""receive_buf (vnetrx/paths/virtio_net/receive_buf.py): the short-packet guard, the dispatch, and
the skb napi_gro_receive sees; docs/kernel/virtio-net-rx.md §4."""

from __future__ import annotations

import pytest

from tests.paths.virtio_net.helpers import run


@pytest.mark.parametrize("mode", [{}, {"mergeable": True}, {"guest_gso": True}])
def test_short_packet(mode: dict[str, bool]) -> None:
    t = run("6.1", frame_len=13, **mode)
    assert (t.outcome, t.reason) == ("drop", "short_packet")
    assert run("6.1", frame_len=14, **mode).skb is not None


@pytest.mark.parametrize(("kernel", "mode", "freed"), [
    ("6.1", {}, "put_page(virt_to_head_page(buf))"),
    ("6.1", {"mergeable": True}, "put_page(virt_to_head_page(buf))"),
    ("6.12", {"guest_gso": True}, "give_pages"),
    ("6.12", {"mtu": 9000}, "give_pages"),
    ("7.3", {"mergeable": True}, "page_pool"),
])
@pytest.mark.parametrize("hdr_len", [10, 12, 20])
def test_a_header_only_write_is_a_short_packet(kernel: str, mode: dict[str, object], freed: str,
                                              hdr_len: int) -> None:
    """The device wrote the virtio-net header alone (frame length 0): receive_buf's guard
    ``len < vi->hdr_len + ETH_HLEN`` drops it into rx_length_errors (no drops++), as 6.1 and
    6.12 guests count it; the buffer goes back by mode."""
    if hdr_len == 10 and mode.get("mergeable"):
        hdr_len = 12  # mergeable buffers always carry num_buffers
    t = run(kernel, frame_len=0, hdr_len=hdr_len, **mode)
    assert (t.outcome, t.reason, t.counter, t.skb) == ("drop", "short_packet",
                                                       "rx_length_errors", None)
    guard = next(step for step in t.steps if step.function == "receive_buf")
    assert dict(guard.values) == {"len": hdr_len, "hdr_len": hdr_len, "ETH_HLEN": 14}
    assert "the device wrote the header alone" in guard.summary and freed in guard.summary
    assert "header alone" not in next(
        s.summary for s in run(kernel, frame_len=1, hdr_len=hdr_len, **mode).steps
        if s.function == "receive_buf")


@pytest.mark.parametrize(("mode", "path"), [
    ({}, "virtio-small"), ({"guest_gso": True}, "virtio-big"), ({"mtu": 9000}, "virtio-big"),
    ({"mergeable": True}, "virtio-mergeable"), ({"mergeable": True, "guest_gso": True},
                                                "virtio-mergeable"),
])
def test_dispatch_by_the_negotiated_features(mode: dict[str, object], path: str) -> None:
    """receive_buf: vi->mergeable_rx_bufs → receive_mergeable (even with guest GSO), else
    vi->big_packets (guest GSO or MTU > 1500) → receive_big, else receive_small."""
    assert run("6.12", frame_len=1000, **mode).path == path


def test_the_skb_napi_gro_receive_sees_has_the_ethernet_header_pulled() -> None:
    """eth_type_trans: mac_header at the old data, data and len moved by ETH_HLEN (14). A
    1000-byte frame built in a mergeable buffer (hdr_padded_len 12): mac_header 12, data 26,
    tail 1012, len 986; the napi_gro_receive_entry tracepoint of a real 6.12 guest printed
    len=986 data_len=0 truesize=1792 for it (tests/data/lab)."""
    t = run("6.12", frame_len=1000, mergeable=True)
    assert t.skb is not None
    assert (t.skb.mac_header, t.skb.data, t.skb.tail, t.skb.len, t.skb.headlen) == (
        12, 26, 1012, 986, 986)
    # c86c120fde29 (6.11) moved the tail of receive_buf into virtnet_receive_done
    assert [s.function for s in t.steps][-2:] == ["virtnet_receive_done", "eth_type_trans"]
    old = run("6.6", frame_len=1000, mergeable=True)
    assert [s.function for s in old.steps][-2:] == ["receive_buf", "eth_type_trans"]


@pytest.mark.parametrize(("report", "l4_hash"), [(2, True), (1, False), (0, False), (42, False)])
def test_hash_report_sets_skb_hash(report: int, l4_hash: bool) -> None:
    """hdr_len 20 (VIRTIO_NET_F_HASH_REPORT): virtio_skb_set_hash → skb_set_hash(hash_value,
    type); TCPv4 (2) is an L4 hash, IPv4 (1) L3, NONE or an unknown type still sets skb->hash
    (drivers/net/virtio_net.c:virtio_skb_set_hash @ 6.12.117)."""
    from vnetrx.paths.virtio_net_hdr import VnetHdr

    hdr = VnetHdr(0, 0, 0, 0, 0, 0, hash_value=0xDEADBEEF, hash_report=report)
    t = run("6.12", frame_len=1000, mergeable=True, hdr_len=20, hdr=hdr)
    assert t.skb is not None
    assert (t.skb.hash, t.skb.l4_hash) == (0xDEADBEEF, l4_hash)
    plain = run("6.12", frame_len=1000, mergeable=True, hdr_len=12, hdr=hdr)
    assert plain.skb is not None and plain.skb.hash == 0  # no hash report negotiated


def test_delivery_record_made_without_its_python_new() -> None:
    """_delivery is ``Delivery(...)`` built by tuple.__new__: the same class and fields, the
    csum_check default included (a field added to Delivery and not to _delivery fails here)."""
    from vnetrx.paths.virtio_net.plan import Drop
    from vnetrx.paths.virtio_net.receive_buf import Delivery, _delivery

    made = _delivery(None, Drop.BAD_GSO, None)
    assert type(made) is Delivery and made == Delivery(None, Drop.BAD_GSO, None)
    assert made.csum_check is None and len(made) == len(Delivery._fields)
