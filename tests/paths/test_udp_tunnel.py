"""UDP-tunnel GSO (6.17+): virtio_net_hdr_tnl_to_skb on a tap write, tun's set_offload, vhost's
24-byte header. Facts: include/linux/virtio_net.h:virtio_net_hdr_tnl_to_skb, drivers/net/tun.c:
set_offload, tun_vnet.h:tun_vnet_hdr_guest_features @6.17.0 and @6.18.9; the recording: ``vnetrx
verify tap --tunnels`` on 6.18.44."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from vnetrx.engine import trace_tap
from vnetrx.errors import InputError
from vnetrx.kernel.registry import lookup
from vnetrx.live import verify
from vnetrx.observed.tap_write import WriteCase
from vnetrx.packet import build_tunnel_frame, parse_tunnel
from vnetrx.paths.tun import TapFrame, TapSetup
from vnetrx.paths.tun.offload import set_offload
from vnetrx.paths.vhost import VhostTxSetup, vhost_tx_config
from vnetrx.paths.virtio_net_hdr import VnetHdr

DATA = Path(__file__).parent.parent / "data" / "tap_tunnel" / "verify-tunnels-6.18.44.json"
# outer Ethernet 14 + IPv4 20 → outer UDP at 34; + UDP 8 + VXLAN 8 + inner Ethernet 14 → 64;
# inner IPv4 20 → inner TCP at 84; TCP 20 → hdr_len 104
GOOD = VnetHdr(1, 0x21, 104, 1448, 84, 16, outer_th_offset=34, inner_nh_offset=64)


def _write(kernel: str, h: VnetHdr, length: int = 3000, size: int = 24):
    frame = build_tunnel_frame(length, parse_tunnel("ipv4"), "tcp4")
    return trace_tap(lookup(kernel), TapSetup(vnet_hdr_sz=size, frame=frame),
                     TapFrame(length, h.to_bytes(24)[:size]))


def test_recorded_on_6_18_44_every_write_matches() -> None:
    doc = json.loads(DATA.read_text())
    assert doc["kernel"]["name"] == "6.18.44" and doc["total"] == 105
    # this machine's 6.18.44 is the "minimal" config preset (MAX_HEADER 32: a 576-byte
    # skbuff_small_head, as tests/live/test_observe.py explains)
    from vnetrx.kernel.choice import BuildChoice, load_profile

    k = load_profile("6.18.44", "minimal", BuildChoice("x86_64", "4k", None, None))
    names = {f.name for f in fields(WriteCase)}
    for frame in doc["frames"]:
        o = frame["options"]
        case = WriteCase(frame_len=frame["frame_len"],
                         **{n: o[n] for n in o if n in names and n != "hdr"},
                         hdr=None if o["hdr"] is None else bytes.fromhex(o["hdr"]))
        predicted = verify.predict(k, case)
        assert all(verify.compare(predicted, frame["observed"]).values()), (o, predicted)


def test_recorded_tunnel_bit_on_a_non_gso_skb() -> None:
    """Measured: a tunnel header whose frame is not above one segment still leaves
    SKB_GSO_UDP_TUNNEL (0x400) in gso_type, with gso_size 0."""
    doc = json.loads(DATA.read_text())
    small = [f["observed"] for f in doc["frames"]
             if f["frame_len"] == 200 and f["options"].get("tunnel") == "ipv4"]
    assert small and all(o["gso_type"] == 0x400 and o["gso_size"] == 0 for o in small)
    assert _write("6.18.44", GOOD, 200).skb.gso_type == 0x400


@pytest.mark.parametrize(("change", "ok"), [
    ({"outer_th_offset": 33}, False), ({"outer_th_offset": 34}, True),
    ({"inner_nh_offset": 41}, False), ({"inner_nh_offset": 42}, True),
    ({"csum_start": 83}, False), ({"csum_start": 84}, True),
])
def test_offset_order_boundaries(change: dict[str, int], ok: bool) -> None:
    t = _write("6.18.44", GOOD._replace(**change))
    assert (t.errno is None) is ok


def test_tunnel_fields_from_skb_head() -> None:
    from vnetrx.paths.tun.get_user import for_write, tap_config, tap_plan

    skb = _write("6.18.44", GOOD).skb
    assert skb.gso_type == 0x403  # TCPV4 | DODGY | UDP_TUNNEL
    frame = build_tunnel_frame(3000, parse_tunnel("ipv4"), "tcp4")
    c = for_write(tap_config(lookup("6.18.44"), TapSetup(vnet_hdr_sz=24, frame=frame)),
                  TapFrame(3000, GOOD.to_bytes(24)))
    offload = tap_plan(c, 3000).offload
    assert offload is not None and offload.encap is not None
    # tun_build_skb's headroom 64: the offsets count from skb->head
    assert offload.encap == (98, 128, 148, 0x0800)
    csum = _write("6.18.44", GOOD._replace(flags=1 | 8)).skb
    assert csum.gso_type == 0x803  # SKB_GSO_UDP_TUNNEL_CSUM instead


@pytest.mark.parametrize(("kernel", "errno"), [("6.16.9", "EINVAL"), ("6.17.0", None)])
def test_release_boundary(kernel: str, errno: str | None) -> None:
    """Before 6.17 tun reads 10 bytes and 0x21 is no gso_type virtio_net_hdr_to_skb knows."""
    assert _write(kernel, GOOD).errno == errno


def test_vnet_hdr_sz_12_refuses_the_tunnel_bits() -> None:
    t = _write("6.18.44", GOOD, size=12)
    assert t.errno == "EINVAL"


@pytest.mark.parametrize(("kernel", "flags", "errno"), [
    ("6.18.44", 0x80, "EINVAL"),  # no TUN_F_CSUM
    ("6.18.44", 0x81, "EINVAL"),  # no plain GSO offload
    ("6.18.44", 0x83, None),
    ("6.18.44", 0x103, "EINVAL"),  # the csum flag without the tunnel flag
    ("6.18.44", 0x183, None),
    ("6.18.44", 0xE1, None),  # USO4 + USO6
    ("6.18.44", 0xA1, "EINVAL"),  # USO4 alone is not taken
    ("6.16.9", 0x83, "EINVAL"),
    ("6.17.0", 0x83, None),
])
def test_set_offload(kernel: str, flags: int, errno: str | None) -> None:
    assert set_offload(lookup(kernel), flags).errno == errno


@pytest.mark.parametrize(("kernel", "ok"), [("6.16.9", False), ("6.17.0", True)])
def test_vhost_tx_24_byte_header(kernel: str, ok: bool) -> None:
    if ok:
        c = vhost_tx_config(lookup(kernel), VhostTxSetup(vnet_hdr_sz=24))
        assert c.sock_hlen == 24 and c.tap.tunnel
        assert c.pad == 128  # SKB_DATA_ALIGN(VHOST_NET_RX_PAD 64 + 24)
    else:
        with pytest.raises(InputError, match=r"valid: 10 .*24 with UDP-tunnel GSO from 6\.17"):
            vhost_tx_config(lookup(kernel), VhostTxSetup(vnet_hdr_sz=24))


def test_header_bytes_round_trip() -> None:
    raw = GOOD.to_bytes(24)
    assert raw[20:24] == bytes([34, 0, 64, 0])
    assert VnetHdr.from_bytes(raw) == GOOD._replace(num_buffers=0, hash_value=0, hash_report=0)


def test_vhost_rx_24_byte_header_is_refused_with_its_reason() -> None:
    from vnetrx.errors import UnsupportedError
    from vnetrx.paths.vhost.rx import VhostRxSetup, vhost_rx_config

    with pytest.raises(UnsupportedError, match=r"bytes 12\.\.23 are not settled"):
        vhost_rx_config(lookup("6.17.0"), VhostRxSetup(hdr_len=24))
    with pytest.raises(InputError, match="not one vhost-net serves"):
        vhost_rx_config(lookup("6.16.9"), VhostRxSetup(hdr_len=24))


# --- virtio-net's receive (virtnet_receive_done @6.18.9) ----------------------------------------


def _virtio(udp_tunnel: str | None, h: VnetHdr, kernel: str = "6.18.44", hdr_len: int | None = None):
    from vnetrx.engine import trace_virtio
    from vnetrx.paths.virtio_net import RxFrame, VirtioRxSetup

    return trace_virtio(lookup(kernel), VirtioRxSetup(mergeable=True, hdr_len=hdr_len,
                                                      udp_tunnel=udp_tunnel), RxFrame(3000, h))


@pytest.mark.parametrize(("features", "flags", "gso_type"), [
    ("gso", 1, 0x403),  # vi->rx_tnl: accepted
    ("gso", 1 | 8, None),  # UDP_TUNNEL_CSUM without rx_tnl_csum: "bad gso"
    ("gso-csum", 1 | 8, 0x803),
    ("host", 1, None),  # HOST_UDP_TUNNEL_GSO only: rx_tnl false
])
def test_virtio_receive_gates(features: str, flags: int, gso_type: int | None) -> None:
    t = _virtio(features, GOOD._replace(flags=flags))
    if gso_type is None:
        assert t.outcome == "drop" and t.skb is None
    else:
        assert t.skb is not None and t.skb.gso_type == gso_type


def test_virtio_handle_csum_offload() -> None:
    """DATA_VALID with a tunnel gso_type: "bad csum"; DATA_VALID | UDP_TUNNEL_CSUM without a
    tunnel type needs rx_tnl_csum."""
    bad = _virtio("gso-csum", GOOD._replace(flags=2 | 1))
    assert bad.outcome == "drop" and bad.reason == "bad_csum"
    plain = VnetHdr(2 | 8, 0, 0, 0, 0, 0)
    assert _virtio("gso", plain).reason == "bad_csum"
    assert _virtio("gso-csum", plain).skb is not None


def test_virtio_udp_tunnel_needs_6_17_and_24() -> None:
    from vnetrx.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match=r"valid: --kernel 6\.17 or later"):
        _virtio("gso", GOOD, kernel="6.16.9")
    with pytest.raises(InputError, match="hdr_len 24"):
        _virtio("gso", GOOD, hdr_len=12)
    with pytest.raises(UnsupportedError, match="was not said"):
        _virtio(None, GOOD, hdr_len=24)


def test_verify_text_shows_the_offload_answer() -> None:
    from rich.console import Console

    from vnetrx.live.verify import FrameCheck
    from vnetrx.render.verify_text import verify_renderable

    doc = json.loads(DATA.read_text())
    checks = [FrameCheck(f["frame_len"], f["options"], f["predicted"], f["observed"],
                         f["fields"]) for f in doc["frames"][:10]]
    console = Console(width=250, color_system=None)
    with console.capture() as cap:
        console.print(verify_renderable("6.18.44", "recorded", checks))
    text = cap.get()
    assert "TUNSETOFFLOAD 0x80 " in text and "EINVAL ✓" in text
    assert "vxlan over ipv4" in text and "0/1024 ✓" in text and "10/10 frames match" in text


@pytest.mark.parametrize("change", [
    {}, {"gso_type": 0x61}, {"gso_type": 0x20}, {"gso_type": 0x23}, {"flags": 0},
    {"outer_th_offset": 33}, {"inner_nh_offset": 41}, {"csum_start": 83}, {"flags": 9},
    {"gso_type": 0x25, "csum_offset": 6, "hdr_len": 92, "csum_start": 84},
    {"gso_type": 0x25, "csum_offset": 6, "csum_start": 64},
])
@pytest.mark.parametrize(("negotiated", "csum"), [(True, True), (True, False), (False, False)])
def test_tunnel_decides_the_same_without_words(change: dict[str, int], negotiated: bool,
                                               csum: bool) -> None:
    """virtio_net_hdr_tnl_to_skb with ``narrate=False`` (a replay's decision): the same skb,
    inner headers and refusal-or-not as the narrated run, without the checks' words."""
    from vnetrx.model import Skb
    from vnetrx.paths.virtio_net_hdr import hdr_rules, virtio_net_hdr_to_skb

    k = lookup("6.18")
    h = GOOD._replace(**change)
    frame = build_tunnel_frame(3000, parse_tunnel("ipv4"), "tcp4")
    skb = Skb("test", 4096, 64, 64 + 3000, 4096 - 320, 3000, 0, 5120)
    told, quiet = (virtio_net_hdr_to_skb(k, hdr_rules(k), skb, h, owned=False, tunnel=negotiated,
                                         tunnel_csum=csum, frame=frame, narrate=narrate)
                   for narrate in (True, False))
    assert (quiet.skb, quiet.encap, quiet.pulled) == (told.skb, told.encap, told.pulled)
    assert quiet.checks == () and quiet.failed is None
    assert told.checks and (told.failed is None) == (told.skb is not None)
