"""What a virtio-net or tun/tap device negotiated: its facts as read from a live device or a lab
guest (``DeviceInfo``), the virtio feature bits by name, and what they select in the driver
(vi->hdr_len, the receive mode). Pure: no I/O (``vnetrx.live.device`` reads a live device)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceInfo:
    """A network device's driver, MTU and (virtio) negotiated features."""

    name: str
    driver: str  # "virtio_net", "tun", …
    mtu: int
    feature_bits: str | None = None  # virtio: the sysfs '0'/'1' string, bit 0 first
    mergeable_rx_buffer_size: int | None = None  # queues/rx-0/virtio_net/…: MRG_RXBUF only
    ifindex: int | None = None


# include/uapi/linux/virtio_net.h and virtio_config.h: bit → name.
FEATURE_NAMES: dict[int, str] = {
    0: "CSUM",
    1: "GUEST_CSUM",
    2: "CTRL_GUEST_OFFLOADS",
    3: "MTU",
    5: "MAC",
    6: "GSO",
    7: "GUEST_TSO4",
    8: "GUEST_TSO6",
    9: "GUEST_ECN",
    10: "GUEST_UFO",
    11: "HOST_TSO4",
    12: "HOST_TSO6",
    13: "HOST_ECN",
    14: "HOST_UFO",
    15: "MRG_RXBUF",
    16: "STATUS",
    17: "CTRL_VQ",
    18: "CTRL_RX",
    19: "CTRL_VLAN",
    20: "CTRL_RX_EXTRA",
    21: "GUEST_ANNOUNCE",
    22: "MQ",
    23: "CTRL_MAC_ADDR",
    24: "NOTIFY_ON_EMPTY",
    27: "ANY_LAYOUT",
    28: "RING_INDIRECT_DESC",
    29: "RING_EVENT_IDX",
    32: "VERSION_1",
    33: "ACCESS_PLATFORM",
    34: "RING_PACKED",
    35: "IN_ORDER",
    36: "ORDER_PLATFORM",
    37: "SR_IOV",
    38: "NOTIFICATION_DATA",
    40: "RING_RESET",
    52: "VQ_NOTF_COAL",
    53: "NOTF_COAL",
    54: "GUEST_USO4",
    55: "GUEST_USO6",
    56: "HOST_USO",
    57: "HASH_REPORT",
    59: "GUEST_HDRLEN",
    60: "RSS",
    61: "RSC_EXT",
    62: "STANDBY",
    63: "SPEED_DUPLEX",
}
GUEST_GSO = frozenset({"GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO"})


def decode_features(bits: str) -> tuple[str, ...]:
    """``/sys/bus/virtio/devices/*/features``: one '0'/'1' per bit, bit 0 first → names
    (unknown bits as ``BIT_<n>``)."""
    text = bits.strip()
    if not text or set(text) - {"0", "1"}:
        raise ValueError(f"not a virtio feature bit string: {bits!r}")
    return tuple(
        FEATURE_NAMES.get(bit, f"BIT_{bit}") for bit, char in enumerate(text) if char == "1"
    )


def hdr_len_for(features: tuple[str, ...]) -> int:
    """vi->hdr_len (virtnet_probe, 5.18 – 6.16): 20 with HASH_REPORT, 12 with MRG_RXBUF or
    VERSION_1, else 10."""
    if "HASH_REPORT" in features:
        return 20
    if "MRG_RXBUF" in features or "VERSION_1" in features:
        return 12
    return 10


def mode_for(features: tuple[str, ...], mtu: int) -> str:
    """virtnet_probe's choice (6.1): mergeable, big (guest GSO or MTU > 1500), small."""
    if "MRG_RXBUF" in features:
        return "mergeable"
    if GUEST_GSO & set(features) or mtu > 1500:
        return "big"
    return "small"


def lab_mode_for(features: tuple[str, ...], mtu: int) -> str:
    """The lab's name for the negotiated mode: :func:`mode_for`, with ``-gso`` appended when any
    guest GSO feature is negotiated ("big-gso": big mode because of guest GSO, page chains of
    MAX_SKB_FRAGS + 1 pages; "mergeable-gso": MRG_RXBUF with guest GSO)."""
    mode = mode_for(features, mtu)
    return f"{mode}-gso" if GUEST_GSO & set(features) else mode
