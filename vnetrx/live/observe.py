"""``vnetrx observe``: set the model's prediction beside each skb a device really received.

Pure: trace text and device facts in, verdicts out (the tracing itself is vnetrx.live.tracefs,
the device reading vnetrx.live.device).

An observer sees only the skb (the tracepoint's len, data_len, truesize, nr_frags; a lab log's
kprobe adds data, tail, end, mac_header), never the frame as sent nor the rx buffer it landed in.
So each skb is predicted for frame length ``len + 14`` (eth_type_trans pulled the Ethernet
header) under the negotiated features, first with the plain assumption (mergeable: a buffer of
``mergeable_rx_buffer_size`` bytes, the first of a page_frag page; tap: a non-blocking write
with IFF_VNET_HDR and the default sndbuf). When that disagrees, the facts the model cannot know
are varied one at a time: which posted buffer the frame started in (the last buffer of each
page absorbs the page's leftover), buffers posted while the packet-length average was different,
or the tap writer's fd settings. A match there is reported as "consistent" with that
assumption, not as a mismatch.

Reading the facts and the skbs is ``observe_parse``, the predictions and verdicts
``observe_predict``; this module assembles the report and its JSON, and re-exports both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.kernel.profile import KernelProfile
from vnetrx.live.observe_parse import (
    EVENT_FOR_DRIVER,
    LAB_BEGIN,
    TAP_EVENT,
    VIRTIO_EVENT,
    Seen,
    Setup,
    TraceFile,
    parse_features,
    parse_line,
    parse_trace,
    setup_from_device,
    setup_from_log,
    virtio_rx,
)
from vnetrx.live.observe_predict import (
    FIELDS,
    Fields,
    Observer,
    Verdict,
    observed_fields,
)
from vnetrx.model import KPROBE_FIELDS
from vnetrx.observed.captures import PROBES

FIELDS_ALL = (*FIELDS, *KPROBE_FIELDS)

__all__ = [
    "ETH_HLEN",
    "EVENT_FOR_DRIVER",
    "FIELDS",
    "KPROBE_FIELDS",
    "LAB_BEGIN",
    "SCHEMA",
    "TAP_EVENT",
    "VIRTIO_EVENT",
    "Fields",
    "ObserveReport",
    "Observer",
    "Seen",
    "Setup",
    "TraceFile",
    "Verdict",
    "observe",
    "observed_fields",
    "parse_features",
    "parse_line",
    "parse_trace",
    "report_to_dict",
    "setup_from_device",
    "setup_from_log",
    "virtio_rx",
]

SCHEMA = "vnetrx.observe/1"


@dataclass(frozen=True)
class ObserveReport:
    setup: Setup
    kernel: str  # the profile's name
    kernel_source: str
    frames: tuple[Verdict, ...]
    notes: tuple[str, ...] = field(default=())
    interrupted: bool = False  # Ctrl-C/SIGTERM ended the run: the frames seen until then
    capture: tuple[str, str | None] | None = None  # a saved trace's (format, probe point)

    @property
    def match(self) -> bool:
        """No skb contradicts the model, and at least one was compared."""
        return (any(v.agreement != "unchecked" for v in self.frames)
                and all(v.match is not False for v in self.frames))


def observe(profile: KernelProfile, setup: Setup, seen: Sequence[Seen],
            trace: TraceFile | None = None) -> ObserveReport:
    observer = Observer(profile, setup)
    frames = tuple(observer.judge_seen(s) for s in seen)
    notes: list[str] = list(trace.notes) if trace is not None else []
    missing = sorted({n for v in frames for n in v.not_in_capture}, key=FIELDS.index)
    if missing:
        notes.append(f"not in the capture (never counted as agreement): {', '.join(missing)}")
        if trace is not None and trace.format in ("pwru", "pwru-json"):
            notes.append("pwru records the skb's fields with --output-skb (sk_buff) and "
                         "--output-skb-shared-info (nr_frags, gso_size, gso_type)")
    skipped = sorted({n for v in frames for n in v.not_compared}, key=FIELDS_ALL.index)
    if skipped and trace is not None and trace.probe is not None:
        notes.append(f"recorded but not compared at {trace.probe}: {', '.join(skipped)} (GRO's "
                     "header pull, checksum validation or RPS may change them before it)")
    if setup.rx is not None and setup.rx.mergeable and setup.rx.buf_len is None:
        notes.append(
            "mergeable_rx_buffer_size unknown: predicted with the buffers the driver posts at "
            "start (EWMA 0)"
        )
    if setup.driver == "virtio_net" and setup.source == "device" and "MTU" in setup.features:
        notes.append(
            "big mode and big-packet sizes follow the device's MTU at probe time; the current "
            f"MTU ({setup.mtu}) is used"
        )
    if setup.mode == "tap":
        notes.append(
            "tap skbs are predicted as a write(2) into the tap fd (tun_get_user); vhost-net "
            "and other senders (tun_sendmsg) are not modelled"
        )
    notes.append("dropped frames leave no event and are not shown")
    if setup.source == "options" and setup.driver == "virtio_net" and not (
            set(setup.features) - {"VERSION_1"}):
        notes.append("no virtio features given: modelled as a device that negotiated none "
                     "(small mode); describe it with --features BITS (its /sys/bus/virtio/"
                     "devices/*/features) or --mergeable/--guest-gso/--mtu/--buf-len")
    if setup.driver == "tun" and trace is not None and trace.stage == "post-gro":
        notes.append(f"{trace.probe} is after GRO: the tap's skbs are taken as written without "
                     "IFF_NAPI (tun_get_user hands them to netif_receive_skb, no GRO); an skb "
                     "whose gso_segs shows several segments is a GRO aggregate, not compared")
    capture = (trace.format, trace.probe) if trace is not None else None
    return ObserveReport(setup, profile.name, profile.source, frames, tuple(notes),
                         capture=capture)


# --- the --json document --------------------------------------------------------------------


def report_to_dict(report: ObserveReport) -> dict[str, object]:
    s = report.setup
    count = {
        kind: sum(v.agreement == kind for v in report.frames)
        for kind in ("exact", "consistent", "mismatch", "unmodelled", "unchecked")
    }
    return {
        "schema": SCHEMA,
        "device": s.device,
        "driver": s.driver,
        "mode": s.mode,
        "features": list(s.features),
        "mtu": s.mtu,
        "hdr_len": None if s.rx is None else s.rx.hdr_len,
        "mergeable_rx_buffer_size": None if s.rx is None else s.rx.buf_len,
        "source": s.source,
        "release": s.release,
        "kernel": report.kernel,
        "capture": None if report.capture is None else {
            "format": report.capture[0],
            "probe": report.capture[1],
            "stage": PROBES.get(report.capture[1] or ""),
        },
        "match": report.match,
        "counts": count,
        "frames": [
            {
                "frame_len": v.frame_len,
                "path": v.path,
                "match": v.match,
                "agreement": v.agreement,
                "predicted": v.predicted,
                "observed": v.observed,
                "note": v.note,
                "not_in_capture": list(v.not_in_capture),
                "not_compared": list(v.not_compared),
            }
            for v in report.frames
        ],
        "notes": list(report.notes),
        **({"interrupted": True} if report.interrupted else {}),
    }
