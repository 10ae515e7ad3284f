"""Reading what the guest printed on its serial console: the ``VNETRX`` status lines, the
``net:napi_gro_receive_entry`` trace lines and the ``vnetrx/gro`` kprobe lines; and decoding
the negotiated virtio feature bits. Pure: text in, records out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from vnetrx.live.rx_event import RxEvent, parse_rx_event

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


@dataclass(frozen=True)
class GuestLog:
    """Everything the host needs from one boot."""

    status: dict[str, str]  # "release" → "6.1.0-57-amd64", "features" → "0101…", ...
    errors: tuple[str, ...]
    events: tuple[RxEvent, ...]  # in arrival order, the sentinel included
    kprobe: bool
    complete: bool  # the guest reached "trace-end"
    raw_lines: tuple[str, ...] = field(default=(), repr=False)

    @property
    def features(self) -> tuple[str, ...]:
        return decode_features(self.status.get("features", ""))

    @property
    def mtu(self) -> int:
        return int(self.status.get("mtu", "1500"))

    @property
    def release(self) -> str:
        return self.status.get("release", "")


_STATUS = re.compile(r"VNETRX (?P<key>[\w-]+)(?: (?P<value>.*?))?\s*$")
# The probe address is napi_gro_receive+0x0, or +0x4 past an IBT endbr64 (6.12 kernels).
_KPROBE = re.compile(r"\bgro: \(napi_gro_receive\+0x[0-9a-f]+/0x[0-9a-f]+\)(?P<fields>.*)$")
_PAIR = re.compile(r"(\w+)=(\S+)")


def _int(text: str) -> int:
    return int(text, 0)


def parse_tracepoint(line: str) -> RxEvent | None:
    """A net:napi_gro_receive_entry line, or None."""
    event = parse_rx_event(line)
    return event if event is not None and event.event == "napi_gro_receive_entry" else None


def parse_kprobe(line: str) -> dict[str, int] | None:
    """A ``vnetrx/gro`` kprobe line → head, data, tail, end, mac_header, len (integers)."""
    match = _KPROBE.search(line)
    if match is None:
        return None
    try:
        return {key: _int(value) for key, value in _PAIR.findall(match.group("fields"))}
    except ValueError:
        return None


def _with_kprobe(event: RxEvent, probe: dict[str, int] | None) -> RxEvent:
    if probe is None or not {"head", "data", "tail", "end", "mac_header"} <= probe.keys():
        return event
    if probe.get("len", event.len) != event.len:
        return event  # not the same skb
    return replace(
        event,
        data=probe["data"] - probe["head"],
        tail=probe["tail"],
        end=probe["end"],
        mac_header=probe["mac_header"],
    )


def parse_log(text: str) -> GuestLog:
    """Read a whole serial log. A kprobe line is paired with the tracepoint line that follows
    it (the kprobe fires on entry to napi_gro_receive, the tracepoint inside it; one vCPU)."""
    status: dict[str, str] = {}
    errors: list[str] = []
    events: list[RxEvent] = []
    lines = text.replace("\r", "").split("\n")
    pending: dict[str, int] | None = None
    in_trace = complete = False
    for line in lines:
        match = _STATUS.search(line)
        if match is not None:
            key, value = match.group("key"), match.group("value") or ""
            if key == "error":
                errors.append(value)
            elif key == "trace-begin":
                in_trace = True
            elif key == "trace-end":
                in_trace, complete = False, True
            else:
                status[key] = value
            continue
        if not in_trace:
            continue
        probe = parse_kprobe(line)
        if probe is not None:
            pending = probe
            continue
        event = parse_tracepoint(line)
        if event is not None:
            events.append(_with_kprobe(event, pending))
            pending = None
    return GuestLog(
        status=status,
        errors=tuple(errors),
        events=tuple(events),
        kprobe=status.get("kprobe", "").startswith("on"),
        complete=complete,
        raw_lines=tuple(lines),
    )
