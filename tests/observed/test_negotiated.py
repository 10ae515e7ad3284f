"""vnetrx/observed/negotiated.py: the negotiated virtio features, decoded, and what virtnet_probe
makes of them (the receive mode, vi->hdr_len)."""

from __future__ import annotations

import pytest

from vnetrx.observed.negotiated import decode_features, hdr_len_for, mode_for

# a mergeable 6.1 guest's /sys/bus/virtio/devices/*/features (tests/data/lab)
MERGEABLE_FEATURES = "0010010000000001111101010000110010000000100000000000000000000000"


def test_decode_features() -> None:
    names = decode_features(MERGEABLE_FEATURES)
    assert {"MRG_RXBUF", "VERSION_1", "MAC", "CTRL_VQ", "RING_EVENT_IDX"} <= set(names)
    assert not {"GUEST_TSO4", "GUEST_CSUM", "MTU"} & set(names)
    assert decode_features("1" + "0" * 41 + "1") == ("CSUM", "BIT_42")
    with pytest.raises(ValueError, match="not a virtio feature"):
        decode_features("0102")
    with pytest.raises(ValueError, match="not a virtio feature"):
        decode_features("")


@pytest.mark.parametrize(
    ("features", "mtu", "mode", "hdr_len"),
    [
        (("MRG_RXBUF", "VERSION_1"), 1500, "mergeable", 12),
        (("VERSION_1",), 1500, "small", 12),
        (("VERSION_1", "MTU"), 9000, "big", 12),
        (("GUEST_TSO4",), 1500, "big", 10),
        (("MRG_RXBUF", "HASH_REPORT"), 1500, "mergeable", 20),
    ],
)
def test_mode_and_hdr_len(features: tuple[str, ...], mtu: int, mode: str, hdr_len: int) -> None:
    assert mode_for(features, mtu) == mode
    assert hdr_len_for(features) == hdr_len
