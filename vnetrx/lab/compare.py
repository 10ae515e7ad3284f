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
from vnetrx.lab.initramfs import TEST_ETHERTYPE
from vnetrx.model import KPROBE_FIELDS, TRACEPOINT_FIELDS, Trace
from vnetrx.observed.guest_log import GuestLog
from vnetrx.observed.negotiated import hdr_len_for, lab_mode_for
from vnetrx.observed.rx_event import RxEvent, as_traced
from vnetrx.packet import ETH_P_IP, ETH_P_IPV6
from vnetrx.paths.virtio_net import RxFrame, VirtioRxSetup
from vnetrx.paths.virtio_net_hdr import VnetHdr

if TYPE_CHECKING:
    from vnetrx.lab.xdp_probe import XdpCheck

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
    xdp: XdpCheck | None = None  # --xdp-check / --xdp: the guest's XDP attach against the model
    xdp_action: str | None = None  # --xdp ACTION: the program that stayed attached
    # --xdp: (counter, predicted, observed) for the driver's queue counters (xdp_probe.COUNTERS)
    # and sysfs rx_dropped; observed None: not read
    xdp_counters: tuple[tuple[str, int, int | None], ...] = ()
    # --xdp on a vhost-user backend: the bytes of each chain the guest transmitted, predicted
    # (XDP_TX / redirect: hdr_len + frame) and observed (None: not recorded)
    transmitted: tuple[tuple[int, ...], tuple[int, ...] | None] = ((), None)

    @property
    def counters_match(self) -> bool:
        return (all(observed is None or predicted == observed
                    for predicted, observed in (self.rx_length_errors, self.rx_frame_errors))
                and all(observed is not None and predicted == observed
                        for _, predicted, observed in self.xdp_counters)
                and (self.transmitted[1] is None or self.transmitted[0] == self.transmitted[1]))

    @property
    def match(self) -> bool:
        return (self.counters_match and all(frame.match for frame in self.frames)
                and (self.xdp is None or self.xdp.match))


def base_mode(mode: str) -> str:
    """small, big or mergeable: the driver's receive path ("big-gso" → "big")."""
    return mode.removesuffix("-gso")


def setup_for(
    mode: str, mtu: int, hdr_len: int, xdp: str | None = None, xdp_frags: bool = False,
    xdp_late: bool = False,
) -> VirtioRxSetup:
    """The device the model receives one frame of the boot with (see the module docstring). Guest GSO is
    negotiated only on the vhost-user backend ("big-gso", "mergeable-gso"): a dgram backend
    carries no vnet header, so QEMU clears the guest offloads. Without MRG_RXBUF guest GSO
    selects big mode; with it the driver stays in mergeable mode and GSO only sizes
    rq->min_buf_len for IP_MAX_MTU (vi->big_packets in mergeable_min_buf_len)."""
    mergeable = base_mode(mode) == "mergeable"
    return VirtioRxSetup(
        mergeable=mergeable,
        guest_gso=mode in ("big-gso", "mergeable-gso"),
        mtu=mtu,
        hdr_len=hdr_len,
        ewma=0 if mergeable else None,
        ring_size=RING_SIZE,
        xdp=xdp,
        xdp_frags=xdp_frags,
        xdp_posted_before=xdp_late,
    )


def predict(
    profile: KernelProfile, mode: str, lengths: Sequence[int], mtu: int, hdr_len: int,
    hdrs: Sequence[VnetHdr | None] | None = None, xdp: str | None = None,
    xdp_frags: bool = False, xdp_late: bool = False,
) -> list[tuple[int, Trace]]:
    """(buffer index, trace) per frame, in arrival order; ``hdrs``: each frame's header;
    ``xdp``: the action of a program attached before the device started (every buffer posted
    with the XDP geometry; ``xdp_late``: attached after it, so the frames meet the ring
    virtnet_open posted, without XDP headroom)."""
    out: list[tuple[int, Trace]] = []
    index = 0
    setup = setup_for(mode, mtu, hdr_len, xdp, xdp_frags, xdp_late)
    for position, frame_len in enumerate(lengths):
        if index >= RING_SIZE:
            break
        hdr = None if hdrs is None else hdrs[position]
        trace = trace_virtio(profile, setup, RxFrame(frame_len, hdr, index))
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
            hdrs: Sequence[VnetHdr | None] | None = None, xdp: str | None = None,
            xdp_frags: bool = False, transmitted: Sequence[int] | None = None,
            xdp_late: bool = False) -> LabReport:
    """Predictions for the negotiated features against the guest's events; ``hdrs``: the
    virtio_net_hdr each frame was sent behind (--offloads: IPv4/IPv6 frames); ``xdp``: the
    action of the program the guest kept attached (--xdp), whose counters are compared too;
    ``transmitted``: the chain lengths the vhost-user backend took from the guest's tx queue."""
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
    predictions = predict(profile, negotiated_mode, lengths, mtu_for_model, hdr_len, hdrs, xdp,
                          xdp_frags, xdp_late)
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
    if base_mode(negotiated_mode) == "mergeable" and xdp is not None and xdp_late:
        notes.append(
            "mergeable, XDP attached after the device started: each frame predicted in the "
            "buffer of the ring virtnet_open posted (EWMA 0, no XDP headroom) it lands in, "
            "copied into a fresh page by xdp_linearize_page")
    elif base_mode(negotiated_mode) == "mergeable" and xdp is not None:
        notes.append(
            "mergeable with XDP: each frame predicted in the ring buffer it lands in (all "
            "buffers posted at device start with the XDP geometry: 3520 bytes at +256 of a "
            "4096-byte slot, whatever the EWMA)"
        )
    elif base_mode(negotiated_mode) == "mergeable":
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
                                              or trace.reason in ("short_packet",
                                                                  "xdp_len_check"))
                for _, trace in predictions),
            int(raw) if (raw := log.status.get(counter, "")).isdigit() else None,
        )
        for counter in ("rx_length_errors", "rx_frame_errors")
    }
    for counter, (predicted_count, observed_count) in counted.items():
        if observed_count is not None and observed_count != predicted_count:
            notes.append(f"{counter}: predicted {predicted_count}, the guest counted "
                         f"{observed_count}")
    xdp_counters: tuple[tuple[str, int, int | None], ...] = ()
    sent: tuple[tuple[int, ...], tuple[int, ...] | None] = ((), None)
    if xdp is not None:
        if any(trace.reason == "xdp_attach_refused" for _, trace in predictions):
            # the guest refused it too (--xdp-check's comparison says whether it agrees):
            # the frames take the usual path
            notes.append("the model refuses the XDP attach: frames predicted without a program")
            predictions = predict(profile, negotiated_mode, lengths, mtu_for_model, hdr_len,
                                  hdrs)
            frames = [FrameResult(n, i, predicted_fields(t), f.observed,
                                  _checks(predicted_fields(t), f.observed, log.kprobe))
                      for n, (i, t), f in zip(lengths, predictions, frames, strict=True)]
        xdp_counters, sent, xdp_notes = _xdp_totals(predictions, log, transmitted,
                                                    unknown_ethertype=hdrs is None)
        notes.extend(xdp_notes)
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
        xdp_action=xdp,
        xdp_counters=xdp_counters,
        transmitted=sent,
    )


def _xdp_totals(predictions: Sequence[tuple[int, Trace]], log: GuestLog,
                transmitted: Sequence[int] | None, unknown_ethertype: bool
                ) -> tuple[tuple[tuple[str, int, int | None], ...],
                           tuple[tuple[int, ...], tuple[int, ...] | None], list[str]]:
    """The queue counters the frames should move (each trace's ``driver_counters``) against
    the guest's ethtool totals. The program passes the sentinel: every sentinel frame the stack
    saw is one more xdp_packet. ``unknown_ethertype``: the frames carry the lab's EtherTypes,
    so sysfs rx_dropped is the queue's drops plus every skb the stack got
    (__netif_receive_skb_core: no handler → dev_core_stats_rx_dropped_inc)."""
    from vnetrx.lab.initramfs import SENTINEL_ETHERTYPE
    from vnetrx.lab.xdp_probe import COUNTERS, parse_stats

    notes: list[str] = []
    predicted = dict.fromkeys(COUNTERS, 0)
    attached = any(trace.xdp is not None for _, trace in predictions)
    for _, trace in predictions:
        if trace.xdp is not None:
            for name, value in trace.xdp.driver:
                predicted[name] += value
    sentinels = sum(event.protocol == SENTINEL_ETHERTYPE for event in log.events)
    if attached:
        predicted["rx_xdp_packets"] += sentinels
    observed = parse_stats(log.status.get("xdp-stats", ""))
    if observed is None:
        notes.append("the guest's ethtool counters could not be read: "
                     + (log.status.get("xdp-stats", "") or "no output"))
    rows: list[tuple[str, int, int | None]] = [
        (name, predicted[name], None if observed is None else observed.get(name))
        for name in COUNTERS]
    raw = log.status.get("rx_dropped", "")
    if unknown_ethertype:
        skbs = sum(trace.skb is not None for _, trace in predictions) + sentinels
        rows.append(("rx_dropped", predicted["rx_drops"] + skbs,
                     int(raw) if raw.isdigit() else None))
    sent = tuple(trace.xdp.read_len for _, trace in predictions
                 if trace.xdp is not None and trace.xdp.read_len is not None)
    if attached:
        notes.append(f"XDP: a program returning the action stayed attached; {sentinels} "
                     "sentinel frame(s) passed through it (counted in rx_xdp_packets)")
    return tuple(rows), (sent, None if transmitted is None else tuple(transmitted)), notes


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
        **({} if report.xdp_action is None else {"xdp": {
            "action": report.xdp_action,
            "counters": [{"name": name, "predicted": predicted, "observed": observed}
                         for name, predicted, observed in report.xdp_counters],
            "transmitted": {"predicted": list(report.transmitted[0]),
                            "observed": None if report.transmitted[1] is None
                            else list(report.transmitted[1])},
        }}),
    }


def xdp_to_dict(x: XdpCheck) -> dict[str, object]:
    p = x.predicted
    return {
        "match": x.match,
        "observed": {"attach": x.observed_errno is None, "errno": x.observed_errno,
                     "message": x.observed_message or None, "dmesg": x.warnings or None},
        "predicted": {"attach": p.attach, "errno": p.errno, "message": p.message,
                      "warnings": list(p.warnings)},
        "device": {"mergeable": x.setup.device.mergeable, "guest_gso": x.setup.device.guest_gso,
                   "guest_csum": x.setup.guest_csum,
                   "ctrl_guest_offloads": x.setup.ctrl_guest_offloads,
                   "mtu": x.setup.device.mtu, "queues": x.setup.queues, "cpus": x.setup.cpus},
    }
