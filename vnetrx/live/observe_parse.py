"""Reading for ``vnetrx observe``: the device's negotiated facts (a live device or a lab log's
status lines) and the skbs a capture reported (trace_pipe/perf text, a lab serial log, or
another tool's trace: vnetrx.observed.captures). Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vnetrx.errors import InputError, VnetrxError
from vnetrx.observed import captures
from vnetrx.observed.captures import FORMATS, PROBES, STAGE_WORDS, Captured, CaptureError
from vnetrx.observed.guest_log import GuestLog, guest_version, parse_log
from vnetrx.observed.negotiated import (
    GUEST_GSO,
    DeviceInfo,
    decode_features,
    hdr_len_for,
    mode_for,
)
from vnetrx.observed.rx_event import RxEvent, parse_rx_event
from vnetrx.paths.virtio_net import VirtioRxSetup

VIRTIO_EVENT = "napi_gro_receive_entry"
TAP_EVENT = "netif_receive_skb_entry"
EVENT_FOR_DRIVER = {"virtio_net": VIRTIO_EVENT, "tun": TAP_EVENT}
LAB_BEGIN = "VNETRX trace-begin"
RING_SIZE = 256  # the model's ring for min_buf_len (QEMU's default rx_queue_size)

_LINE = re.compile(r"\b(?P<event>napi_gro_receive_entry|netif_receive_skb_entry): (?P<f>dev=.*)$")
_PAIR = re.compile(r"(\w+)=(\S+)")


@dataclass(frozen=True)
class Seen:
    """One skb as a tracepoint (or another tool) reported it. ``carried``: the fields the
    capture records (None: every field of the tracepoint; a kprobe's when set)."""

    event: str  # the probe point: a tracepoint or function (vnetrx.observed.captures.PROBES)
    dev: str | None
    skb: RxEvent
    carried: frozenset[str] | None = None
    gso_segs: int | None = None  # shinfo->gso_segs when the capture records it

    @property
    def stage(self) -> str:
        return PROBES.get(self.event, "pre-gro")


@dataclass(frozen=True)
class TraceFile:
    """A saved trace, read: its skbs at the one probe point vnetrx compares, and whence."""

    seen: list[Seen]
    log: GuestLog | None
    format: str  # a key of vnetrx.observed.captures.FORMATS
    probe: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def stage(self) -> str | None:
        return PROBES.get(self.probe) if self.probe else None


@dataclass(frozen=True)
class Setup:
    """What the device negotiated: everything the model needs besides the frame. A virtio_net
    device's, as its receive path sees it, is ``rx`` (``virtio_rx``)."""

    device: str
    driver: str  # "virtio_net" or "tun"
    features: tuple[str, ...] = ()
    mtu: int = 1500  # the interface's MTU now
    rx: VirtioRxSetup | None = None  # virtio_net: the device the model receives frames on
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


def virtio_rx(features: tuple[str, ...], mtu: int, hdr_len: int | None = None,
              mergeable_rx_buffer_size: int | None = None) -> VirtioRxSetup:
    """The virtio_net device these negotiated ``features`` make (the MTU counts only with
    VIRTIO_NET_F_MTU; ``hdr_len`` None: the features' own), its buffers
    ``mergeable_rx_buffer_size`` long (None: what the driver posts at start, EWMA 0)."""
    mergeable = "MRG_RXBUF" in features
    buf_len = mergeable_rx_buffer_size if mergeable else None
    return VirtioRxSetup(
        mergeable=mergeable,
        # guest GSO sets big_packets: big mode without MRG_RXBUF, min_buf_len sizing with it
        guest_gso=bool(GUEST_GSO & set(features)),
        mtu=mtu if "MTU" in features else 1500,
        hdr_len=hdr_len_for(features) if hdr_len is None else hdr_len,
        buf_len=buf_len,
        ewma=0 if mergeable and buf_len is None else None,
        ring_size=RING_SIZE,
    )


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
    return Setup(info.name, "virtio_net", features, info.mtu,
                 virtio_rx(features, info.mtu, None, info.mergeable_rx_buffer_size))


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
    driver = log.status.get("driver", "virtio_net")
    return Setup(
        log.status.get("dev", "eth0"),
        driver,
        features,
        mtu,
        virtio_rx(features, mtu, None, int(raw_buf) if raw_buf.isdigit() else None)
        if driver == "virtio_net" else None,
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


def parse_trace(text: str, dev: str | None) -> TraceFile:
    """A saved trace, its format detected: a ``vnetrx lab`` serial log (its status lines
    included), tracefs or ``perf script`` text, or another tool's capture
    (vnetrx.observed.captures). Keeps only ``dev``'s skbs when given, and the skbs of one
    probe point: the first of ``PROBES`` the capture has (napi_gro_receive_entry, a virtio
    device's skbs, before netif_receive_skb_entry, a tap's, before the post-GRO points)."""
    fmt = captures.detect(text)
    if fmt is None:
        raise InputError("not a trace vnetrx reads", hint="reads " + captures.formats_read())
    if fmt == "lab":
        log = parse_log(text)
        logged = log.status.get("dev")
        if dev is not None and logged is not None and dev != logged:
            raise InputError(f"the log traced {logged}, not {dev}")
        return TraceFile([Seen(VIRTIO_EVENT, logged, event) for event in log.events], log, fmt,
                         VIRTIO_EVENT)
    try:
        capture = captures.parse(text, fmt)
    except CaptureError as exc:
        raise (InputError(str(exc)) if exc.usage else VnetrxError(str(exc))) from None
    seen = [_seen(c) for c in capture.skbs]
    if fmt in ("tracefs", "perf-script"):
        seen = [s for line in text.splitlines() if (s := parse_line(line)) is not None] + seen
    if dev is not None:
        seen = [s for s in seen if s.dev in (dev, None)]
        seen = [s if s.dev else Seen(s.event, dev, s.skb, s.carried, s.gso_segs) for s in seen]
    probe = next((p for p in PROBES if any(s.event == p for s in seen)), None)
    if probe is None:
        raise VnetrxError(_nothing(fmt, dev, sorted({s.event for s in seen})))
    others = sorted({s.event for s in seen if s.event != probe})
    seen = [s for s in seen if s.event == probe]
    devices = sorted({s.dev or "?" for s in seen})
    if len(devices) > 1:
        raise InputError(
            f"the trace has skbs of several devices ({', '.join(devices)})", hint="pass --dev"
        )
    notes = [f"read from {FORMATS[fmt]}: {len(seen)} skbs at {_probe_words(probe)}, "
             f"{STAGE_WORDS[PROBES[probe]]}"]
    if others:
        shown = ", ".join(others[:6]) + (f" and {len(others) - 6} more" if len(others) > 6
                                         else "")
        notes.append(f"also in the capture, not compared: {shown}")
    notes += sorted({n for c in capture.skbs for n in c.notes})
    return TraceFile(seen, None, fmt, probe, tuple(notes))


def _probe_words(probe: str) -> str:
    if probe.startswith("net:") or probe.endswith("_entry"):
        return probe if probe.startswith("net:") else "net:" + probe
    return probe + "()"


def _nothing(fmt: str, dev: str | None, probes: list[str]) -> str:
    """The one line for a capture with no skb at a point vnetrx compares."""
    where = f" for {dev}" if dev else ""
    if fmt in ("tracefs", "perf-script"):
        return (f"{FORMATS[fmt]} with no napi_gro_receive_entry or netif_receive_skb_entry "
                f"lines{where}")
    has = f" (it has {', '.join(probes[:8])})" if probes else ""
    return (f"{FORMATS[fmt]} with no skb{where} at napi_gro_receive, netif_receive_skb or "
            f"__netif_receive_skb{has}: vnetrx compares the skb where the driver hands it on")


def _seen(c: Captured) -> Seen:
    """Another tool's record as an observed skb: the fields it lacks keep RxEvent's defaults
    but are left out of ``carried``, so that nothing compares them."""
    values = {k: v for k, v in c.fields.items() if k != "l4_hash"}
    event = RxEvent(dev=c.dev or "", event=c.probe, l4_hash=bool(c.fields.get("l4_hash", 0)),
                    **values)
    return Seen(c.probe, c.dev, event, frozenset(c.fields), c.gso_segs)
