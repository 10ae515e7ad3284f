"""Predict every frame of one boot with vnetrx's model and set the guest's observations beside
the predictions. Pure: no I/O.

Ring assumption (mergeable mode): the driver fills the whole rx ring when the device starts,
with the EWMA still 0, so every posted buffer is sized ``get_mergeable_buf_len(ewma 0)`` (1536
bytes for a 1500 MTU) and carved one after another from 32 KiB page_frag pages, the 21st of each
page absorbing the leftover. Frames arrive in order and frame *i* starts in the buffer after the
ones the earlier frames used (``buffer_index``). Refills (after more than 32 buffers were used)
go to the end of the ring, so they only matter past the ring size: a boot may use at most
``ring_size`` buffers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vnetrx.engine import trace_virtio
from vnetrx.errors import InputError, VnetrxError
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.kernel.profile import KernelProfile
from vnetrx.lab.guest import GuestLog, hdr_len_for, lab_mode_for
from vnetrx.lab.initramfs import TEST_ETHERTYPE
from vnetrx.live.rx_event import RxEvent, as_traced

if TYPE_CHECKING:
    from vnetrx.lab.xdp_probe import XdpCheck
from vnetrx.model import KPROBE_FIELDS, TRACEPOINT_FIELDS, Trace
from vnetrx.packet import ETH_P_IP, ETH_P_IPV6
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.paths.virtio_net_hdr import VnetHdr

RING_SIZE = 256  # QEMU virtio-net-pci rx_queue_size default
Observed = dict[str, int | str]


@dataclass(frozen=True)
class FieldCheck:
    name: str
    predicted: int | str | None
    observed: int | str | None

    @property
    def ok(self) -> bool:
        return self.predicted == self.observed


@dataclass(frozen=True)
class FrameResult:
    frame_len: int
    buffer_index: int  # mergeable: the posted buffer the frame starts in
    predicted: Observed  # {"outcome": "build_skb"|"copy"|"drop", "len": …} or with "reason"
    observed: Observed  # {"outcome": "skb", …} or {"outcome": "drop"} (no event)
    checks: tuple[FieldCheck, ...]

    @property
    def match(self) -> bool:
        return all(check.ok for check in self.checks)


@dataclass(frozen=True)
class LabReport:
    kernel: str  # the profile vnetrx used
    release: str  # uname -r of the guest
    mode: str
    features: tuple[str, ...]
    mtu: int
    hdr_len: int
    mergeable_rx_buffer_size: int | None
    kprobe: bool
    frames: tuple[FrameResult, ...]
    notes: tuple[str, ...] = ()
    # (predicted, observed) dev->stats counters: receive_buf's "short packet" drops
    # (rx_length_errors) and virtio_net_hdr_to_skb's refusals (rx_frame_errors)
    rx_length_errors: tuple[int, int | None] = (0, None)
    rx_frame_errors: tuple[int, int | None] = (0, None)
    xdp: XdpCheck | None = None  # --xdp-check: the guest's XDP attach against the model

    @property
    def counters_match(self) -> bool:
        return all(observed is None or predicted == observed
                   for predicted, observed in (self.rx_length_errors, self.rx_frame_errors))

    @property
    def match(self) -> bool:
        return (self.counters_match and all(frame.match for frame in self.frames)
                and (self.xdp is None or self.xdp.match))


def base_mode(mode: str) -> str:
    """small, big or mergeable: the driver's receive path ("big-gso" → "big")."""
    return mode.removesuffix("-gso")


def setup_for(
    mode: str, frame_len: int, mtu: int, hdr_len: int, buffer_index: int,
    hdr: VnetHdr | None = None,
) -> VirtioRxSetup:
    """The model's input for one frame of the boot (see the module docstring). Guest GSO is
    negotiated only on the vhost-user backend ("big-gso", "mergeable-gso"): a dgram backend
    carries no vnet header, so QEMU clears the guest offloads. Without MRG_RXBUF guest GSO
    selects big mode; with it the driver stays in mergeable mode and GSO only sizes
    rq->min_buf_len for IP_MAX_MTU (vi->big_packets in mergeable_min_buf_len)."""
    mergeable = base_mode(mode) == "mergeable"
    return VirtioRxSetup(
        frame_len=frame_len,
        mergeable=mergeable,
        guest_gso=mode in ("big-gso", "mergeable-gso"),
        mtu=mtu,
        hdr_len=hdr_len,
        ewma=0 if mergeable else None,
        ring_size=RING_SIZE,
        buffer_index=buffer_index,
        hdr=hdr,
    )


def predict(
    profile: KernelProfile, mode: str, lengths: Sequence[int], mtu: int, hdr_len: int,
    hdrs: Sequence[VnetHdr | None] | None = None,
) -> list[tuple[int, Trace]]:
    """(buffer index, trace) per frame, in arrival order; ``hdrs``: each frame's header."""
    out: list[tuple[int, Trace]] = []
    index = 0
    for position, frame_len in enumerate(lengths):
        if index >= RING_SIZE:
            break
        hdr = None if hdrs is None else hdrs[position]
        trace = trace_virtio(profile, setup_for(mode, frame_len, mtu, hdr_len, index, hdr))
        out.append((index, trace))
        if base_mode(mode) == "mergeable":
            index += max(1, len(trace.buffers))
    if base_mode(mode) == "mergeable" and (index > RING_SIZE or len(out) < len(lengths)):
        raise InputError(
            f"these frames need more than the {RING_SIZE} mergeable buffers one boot posts "
            "(later ones are sized by the EWMA at refill time)",
            hint="use fewer or shorter frames per run",
        )
    return out


def predicted_fields(trace: Trace) -> Observed:
    if trace.skb is None:
        return {"outcome": "drop", "reason": trace.reason or trace.outcome}
    skb = trace.skb
    fields: Observed = {"outcome": trace.outcome}
    for name in (*TRACEPOINT_FIELDS, *KPROBE_FIELDS):
        value = as_traced(name, getattr(skb, name))  # gso_type: the tracepoint's 16 bits
        if value is not None:
            fields[name] = value
    return fields


def observed_fields(event: RxEvent | None) -> Observed:
    if event is None:
        return {"outcome": "drop"}
    fields: Observed = {"outcome": "skb"}
    for name in TRACEPOINT_FIELDS:
        value = as_traced(name, getattr(event, name))
        if value is not None:
            fields[name] = value
    for name in KPROBE_FIELDS:
        value = getattr(event, name)
        if value is not None:
            fields[name] = value
    return fields


def _checks(predicted: Observed, observed: Observed, kprobe: bool) -> tuple[FieldCheck, ...]:
    dropped = (predicted["outcome"] == "drop", observed["outcome"] == "drop")
    outcome = FieldCheck(
        "outcome",
        "drop" if dropped[0] else "skb",
        "drop" if dropped[1] else "skb",
    )
    if any(dropped):
        return (outcome,)
    names = TRACEPOINT_FIELDS + (KPROBE_FIELDS if kprobe else ())
    return (outcome, *(FieldCheck(n, predicted.get(n), observed.get(n)) for n in names))


def match_events(lengths: Sequence[int], events: Sequence[RxEvent],
                 ethertypes: frozenset[int] = frozenset({TEST_ETHERTYPE})
                 ) -> list[RxEvent | None]:
    """The event of each frame (None: never reached napi_gro_receive). Frames are told apart
    by length (``len`` after eth_type_trans = frame length - 14; the lengths are distinct),
    in order; the sentinel and anything not of the frames' EtherTypes are ignored."""
    pending = [event for event in events if event.protocol in ethertypes]
    out: list[RxEvent | None] = []
    pos = 0
    for frame_len in lengths:
        found = None
        for j in range(pos, len(pending)):
            if pending[j].len == frame_len - ETH_HLEN:
                found, pos = pending[j], j + 1
                break
        out.append(found)
    return out


def compare(profile: KernelProfile, mode: str, lengths: Sequence[int], log: GuestLog,
            hdrs: Sequence[VnetHdr | None] | None = None) -> LabReport:
    """Predictions for the negotiated features against the guest's events; ``hdrs``: the
    virtio_net_hdr each frame was sent behind (--offloads: IPv4/IPv6 frames)."""
    if len(set(lengths)) != len(lengths):
        raise InputError("frame lengths must be distinct (frames are matched by length)")
    try:
        features, mtu = log.features, log.mtu
    except ValueError as exc:
        raise VnetrxError(f"the guest's feature bits or MTU are unreadable: {exc}") from None
    negotiated_mode = lab_mode_for(features, mtu)
    notes: list[str] = []
    if negotiated_mode != mode:
        notes.append(f"requested {mode} mode but the guest negotiated {negotiated_mode} mode")
    hdr_len = hdr_len_for(features)
    mtu_for_model = mtu if "MTU" in features else 1500
    predictions = predict(profile, negotiated_mode, lengths, mtu_for_model, hdr_len, hdrs)
    ethertypes = frozenset({TEST_ETHERTYPE} if hdrs is None else {ETH_P_IP, ETH_P_IPV6})
    events = match_events(lengths, log.events, ethertypes)
    frames = []
    for frame_len, (index, trace), event in zip(lengths, predictions, events, strict=True):
        predicted, observed = predicted_fields(trace), observed_fields(event)
        frames.append(
            FrameResult(
                frame_len, index, predicted, observed, _checks(predicted, observed, log.kprobe)
            )
        )
    if not log.kprobe:
        why = log.status.get("kprobe", "")
        notes.append(
            "no kprobe on napi_gro_receive: data, tail, end, mac_header not observed"
            + (f" (guest: {why})" if why else "")
        )
    if base_mode(negotiated_mode) == "mergeable":
        notes.append(
            "mergeable: each frame predicted in the ring buffer it lands in (all buffers posted "
            "at device start with EWMA 0; buffer 20 of each 32 KiB page absorbs the leftover)"
        )
    if base_mode(negotiated_mode) != "mergeable" and any(
        f.observed["outcome"] == "drop" and f.frame_len >= ETH_HLEN for f in frames
    ):
        notes.append(
            "without MRG_RXBUF, the device (QEMU, or vnetrx's vhost-user backend, which does "
            "as QEMU does) drops a frame larger than the posted buffer, so such a drop shows "
            "as a missing event"
        )
    raw_buf = log.status.get("mergeable_rx_buffer_size", "")
    # The device (QEMU, or vnetrx's backend) drops a frame that does not fit the posted buffer
    # before the driver sees it, so of the length drops only "short packet" reaches the counter.
    counted = {
        counter: (
            sum(trace.counter == counter and (counter != "rx_length_errors"
                                              or trace.reason == "short_packet")
                for _, trace in predictions),
            int(raw) if (raw := log.status.get(counter, "")).isdigit() else None,
        )
        for counter in ("rx_length_errors", "rx_frame_errors")
    }
    for counter, (predicted_count, observed_count) in counted.items():
        if observed_count is not None and observed_count != predicted_count:
            notes.append(f"{counter}: predicted {predicted_count}, the guest counted "
                         f"{observed_count}")
    return LabReport(
        kernel=profile.name,
        release=log.release,
        mode=negotiated_mode,
        features=features,
        mtu=mtu,
        hdr_len=hdr_len,
        mergeable_rx_buffer_size=int(raw_buf) if raw_buf.isdigit() else None,
        kprobe=log.kprobe,
        frames=tuple(frames),
        notes=tuple(notes),
        rx_length_errors=counted["rx_length_errors"],
        rx_frame_errors=counted["rx_frame_errors"],
    )


def report_to_dict(
    report: LabReport, boot_s: float | None = None, total_s: float | None = None
) -> dict[str, object]:
    """The ``--json`` object (schema vnetrx.lab/1): kernel, mode, features, frames, …"""
    return {
        "schema": "vnetrx.lab/1",
        "kernel": report.kernel,
        "release": report.release,
        "mode": report.mode,
        "features": list(report.features),
        "mtu": report.mtu,
        "hdr_len": report.hdr_len,
        "mergeable_rx_buffer_size": report.mergeable_rx_buffer_size,
        "kprobe": report.kprobe,
        "match": report.match,
        "rx_length_errors": {
            "predicted": report.rx_length_errors[0],
            "observed": report.rx_length_errors[1],
        },
        "rx_frame_errors": {
            "predicted": report.rx_frame_errors[0],
            "observed": report.rx_frame_errors[1],
        },
        "boot_seconds": None if boot_s is None else round(boot_s, 2),
        "total_seconds": None if total_s is None else round(total_s, 2),
        "frames": [
            {
                "frame_len": frame.frame_len,
                "buffer_index": frame.buffer_index,
                "match": frame.match,
                "predicted": frame.predicted,
                "observed": frame.observed,
                "mismatched": [check.name for check in frame.checks if not check.ok],
            }
            for frame in report.frames
        ],
        "notes": list(report.notes),
        **({} if report.xdp is None else {"xdp_attach": xdp_to_dict(report.xdp)}),
    }


def xdp_to_dict(x: XdpCheck) -> dict[str, object]:
    p = x.predicted
    return {
        "match": x.match,
        "observed": {"attach": x.observed_errno is None, "errno": x.observed_errno,
                     "message": x.observed_message or None, "dmesg": x.warnings or None},
        "predicted": {"attach": p.attach, "errno": p.errno, "message": p.message,
                      "warnings": list(p.warnings)},
        "device": {"mergeable": x.setup.mergeable, "guest_gso": x.setup.guest_gso,
                   "guest_csum": x.setup.guest_csum,
                   "ctrl_guest_offloads": x.setup.ctrl_guest_offloads, "mtu": x.setup.mtu,
                   "queues": x.setup.queues, "cpus": x.setup.cpus},
    }
