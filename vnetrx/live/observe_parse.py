"""Reading for ``vnetrx observe``: the device's negotiated facts (a live device or a lab log's
status lines) and the skbs a tracepoint reported (trace_pipe text or a lab serial log). Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vnetrx.errors import InputError, VnetrxError
from vnetrx.observed.guest_log import GuestLog, guest_version, parse_log
from vnetrx.observed.negotiated import DeviceInfo, decode_features, hdr_len_for, mode_for
from vnetrx.observed.rx_event import RxEvent, parse_rx_event

VIRTIO_EVENT = "napi_gro_receive_entry"
TAP_EVENT = "netif_receive_skb_entry"
EVENT_FOR_DRIVER = {"virtio_net": VIRTIO_EVENT, "tun": TAP_EVENT}
LAB_BEGIN = "VNETRX trace-begin"

_LINE = re.compile(r"\b(?P<event>napi_gro_receive_entry|netif_receive_skb_entry): (?P<f>dev=.*)$")
_PAIR = re.compile(r"(\w+)=(\S+)")


@dataclass(frozen=True)
class Seen:
    """One skb as a tracepoint reported it."""

    event: str
    dev: str | None
    skb: RxEvent


@dataclass(frozen=True)
class Setup:
    """What the device negotiated: everything the model needs besides the frame."""

    device: str
    driver: str  # "virtio_net" or "tun"
    features: tuple[str, ...] = ()
    mtu: int = 1500
    hdr_len: int | None = None  # virtio: vi->hdr_len
    mergeable_rx_buffer_size: int | None = None
    source: str = "device"  # where the facts came from: the device, a lab log, options
    release: str | None = None  # the guest's uname -r (lab logs)
    version: str | None = None  # its upstream version ("Debian 6.1.192-3" → 6.1.192)

    @property
    def mode(self) -> str:
        if self.driver == "tun":
            return "tap"
        return mode_for(self.features, self.mtu if "MTU" in self.features else 1500)

    @property
    def event(self) -> str:
        return EVENT_FOR_DRIVER[self.driver]


def setup_from_device(info: DeviceInfo) -> Setup:
    """The facts of a live device (vnetrx.live.device.read_device)."""
    if info.driver not in EVENT_FOR_DRIVER:
        raise VnetrxError(
            f"{info.name} is driven by {info.driver}: observe models virtio_net and tun/tap "
            "devices only"
        )
    if info.driver == "tun":
        return Setup(info.name, "tun", mtu=info.mtu)
    if info.feature_bits is None:
        raise VnetrxError(
            f"cannot read {info.name}'s negotiated virtio features "
            f"(/sys/class/net/{info.name}/device/features)"
        )
    features = parse_features(info.feature_bits)
    return Setup(
        info.name,
        "virtio_net",
        features,
        info.mtu,
        hdr_len_for(features),
        info.mergeable_rx_buffer_size,
    )


def parse_features(bits: str) -> tuple[str, ...]:
    try:
        return decode_features(bits)
    except ValueError as exc:
        raise VnetrxError(str(exc)) from None


def setup_from_log(log: GuestLog) -> Setup:
    """The facts a lab guest printed (``VNETRX features …``)."""
    features = parse_features(log.status.get("features", ""))
    raw_buf = log.status.get("mergeable_rx_buffer_size", "")
    try:
        mtu = log.mtu
    except ValueError:
        raise VnetrxError("the log's MTU line is unreadable") from None
    return Setup(
        log.status.get("dev", "eth0"),
        log.status.get("driver", "virtio_net"),
        features,
        mtu,
        hdr_len_for(features),
        int(raw_buf) if raw_buf.isdigit() else None,
        source="lab log",
        release=log.release or None,
        version=guest_version(log.status, log.release) or None,
    )


def parse_line(line: str) -> Seen | None:
    """A trace_pipe line of net:napi_gro_receive_entry or net:netif_receive_skb_entry."""
    event = parse_rx_event(line)
    if event is None or event.event not in ("napi_gro_receive_entry", "netif_receive_skb_entry"):
        return None
    return Seen(event.event, event.dev or None, event)


def parse_trace(text: str, dev: str | None) -> tuple[list[Seen], GuestLog | None]:
    """A saved trace: a ``vnetrx lab`` serial log (its status lines included) or plain
    ``trace``/``trace_pipe`` text. Plain text keeps only ``dev``'s lines when given, and only
    napi_gro_receive_entry lines when it has any (a virtio device's skbs)."""
    if LAB_BEGIN in text:
        log = parse_log(text)
        logged = log.status.get("dev")
        if dev is not None and logged is not None and dev != logged:
            raise InputError(f"the log traced {logged}, not {dev}")
        return [Seen(VIRTIO_EVENT, logged, event) for event in log.events], log
    seen = [s for line in text.splitlines() if (s := parse_line(line)) is not None]
    if dev is not None:
        seen = [s for s in seen if s.dev == dev]
    if any(s.event == VIRTIO_EVENT for s in seen):
        seen = [s for s in seen if s.event == VIRTIO_EVENT]
    devices = sorted({s.dev or "?" for s in seen})
    if len(devices) > 1:
        raise InputError(
            f"the trace has skbs of several devices ({', '.join(devices)})", hint="pass --dev"
        )
    return seen, None
