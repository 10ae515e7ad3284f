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
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from vnetrx.engine import trace_virtio
from vnetrx.errors import InputError, VnetrxError
from vnetrx.kernel.profile import KernelProfile
from vnetrx.lab.guest import (
    GUEST_GSO,
    GroEvent,
    GuestLog,
    decode_features,
    hdr_len_for,
    mode_for,
    parse_log,
)
from vnetrx.lab.run import guest_version
from vnetrx.live import verify as live_verify
from vnetrx.live.device import DeviceInfo
from vnetrx.live.tap import WriteCase
from vnetrx.model import Trace
from vnetrx.paths import virtio_net_buffers as bufs
from vnetrx.paths.virtio_rx_plan import MAX_FRAME_LEN, VirtioRxSetup

SCHEMA = "vnetrx.observe/1"
ETH_HLEN = 14
RING_SIZE = 256  # the model's ring for min_buf_len (QEMU's default rx_queue_size)
VIRTIO_EVENT = "napi_gro_receive_entry"
TAP_EVENT = "netif_receive_skb_entry"
EVENT_FOR_DRIVER = {"virtio_net": VIRTIO_EVENT, "tun": TAP_EVENT}
FIELDS = ("len", "data_len", "truesize", "nr_frags")
KPROBE_FIELDS = ("data", "tail", "end", "mac_header")
LAB_BEGIN = "VNETRX trace-begin"
Fields = dict[str, int | str | None]

_LINE = re.compile(r"\b(?P<event>napi_gro_receive_entry|netif_receive_skb_entry): (?P<f>dev=.*)$")
_PAIR = re.compile(r"(\w+)=(\S+)")


@dataclass(frozen=True)
class Seen:
    """One skb as a tracepoint reported it."""

    event: str
    dev: str | None
    skb: GroEvent


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


@dataclass(frozen=True)
class Verdict:
    """One observed skb against the model."""

    frame_len: int
    path: str  # e.g. "mergeable/build_skb", "tap/alloc_skb"
    agreement: str  # "exact" | "consistent" | "mismatch" | "unmodelled"
    predicted: Fields  # the prediction the verdict rests on (the plain one on a mismatch)
    observed: Fields
    note: str | None = None

    @property
    def match(self) -> bool | None:
        if self.agreement == "unmodelled":
            return None
        return self.agreement != "mismatch"


@dataclass(frozen=True)
class ObserveReport:
    setup: Setup
    kernel: str  # the profile's name
    kernel_source: str
    frames: tuple[Verdict, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def match(self) -> bool:
        return bool(self.frames) and all(v.match is not False for v in self.frames)


# --- reading ---------------------------------------------------------------------------------


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
    match = _LINE.search(line)
    if match is None:
        return None
    pairs = dict(_PAIR.findall(match.group("f")))
    try:
        skb = GroEvent(
            len=int(pairs["len"], 0),
            data_len=int(pairs["data_len"], 0),
            truesize=int(pairs["truesize"], 0),
            nr_frags=int(pairs["nr_frags"], 0),
            protocol=int(pairs.get("protocol", "0"), 0),
            gso_size=int(pairs.get("gso_size", "0"), 0),
            gso_type=int(pairs.get("gso_type", "0"), 0),
        )
    except (KeyError, ValueError):
        return None
    return Seen(match.group("event"), pairs.get("dev"), skb)


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


# --- predicting --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    note: str | None  # None: the plain assumption
    predicted: Fields
    path: str


def _fields(trace: Trace) -> Fields:
    skb = trace.skb
    if skb is None:
        return {"outcome": "drop", "reason": trace.reason or trace.outcome}
    return {
        "outcome": trace.outcome,
        "len": skb.len,
        "data_len": skb.data_len,
        "truesize": skb.truesize,
        "nr_frags": skb.nr_frags,
        "data": skb.data,
        "tail": skb.tail,
        "end": skb.end,
        "mac_header": skb.mac_header,
    }


def observed_fields(skb: GroEvent) -> Fields:
    out: Fields = {name: getattr(skb, name) for name in FIELDS}
    for name in KPROBE_FIELDS:
        value = getattr(skb, name)
        if value is not None:
            out[name] = value
    if skb.gso_size or skb.gso_type:
        out["gso_size"], out["gso_type"] = skb.gso_size, skb.gso_type
    return out


class Observer:
    """Predicts and judges skbs for one device setup on one kernel profile (memoised)."""

    def __init__(self, profile: KernelProfile, setup: Setup) -> None:
        self.k = profile
        self.setup = setup
        self._memo: dict[tuple[int, tuple[tuple[str, object], ...]], Verdict] = {}
        self.buf_len = setup.mergeable_rx_buffer_size if setup.mode == "mergeable" else None

    def _virtio(self, frame_len: int, **change: object) -> Trace:
        s = self.setup
        setup = VirtioRxSetup(
            frame_len=frame_len,
            mergeable=s.mode == "mergeable",
            guest_gso=bool(GUEST_GSO & set(s.features)) and s.mode != "mergeable",
            mtu=s.mtu if "MTU" in s.features else 1500,
            hdr_len=s.hdr_len,
            buf_len=self.buf_len,
            ewma=0 if s.mode == "mergeable" and self.buf_len is None else None,
            ring_size=RING_SIZE,
        )
        return trace_virtio(self.k, replace(setup, **change))  # type: ignore[arg-type]

    def candidates(self, frame_len: int) -> Iterator[_Candidate]:
        """The plain prediction first, then the alternatives (see the module docstring)."""
        if self.setup.mode == "tap":
            yield from self._tap_candidates(frame_len)
            return
        mode = self.setup.mode
        first = self._virtio(frame_len)
        yield _Candidate(None, _fields(first), f"{mode}/{first.outcome}")
        if mode != "mergeable":
            return
        buf_len = first.buffers[0].size if first.buffers else 0
        per_page = bufs.page_frag_size(self.k) // max(buf_len, 1) + 1
        for index in range(1, per_page + 1):
            trace = self._virtio(frame_len, buffer_index=index)
            sizes = _runs([b.size for b in trace.buffers])
            yield _Candidate(
                f"consistent with the frame starting in posted buffer {index} of a page_frag "
                f"page (buffers of {sizes} bytes; the last buffer of a page absorbs its leftover); "
                "which buffer a frame lands in is not visible to vnetrx",
                _fields(trace),
                f"{mode}/{trace.outcome}",
            )
        hdr = self.setup.hdr_len or 12
        min_len = bufs.mergeable_min_buf_len(self.k, hdr, False, self.setup.mtu, RING_SIZE)
        low = bufs.get_mergeable_buf_len(self.k, hdr, 0, min_len)
        high = min(
            bufs.get_mergeable_buf_len(self.k, hdr, MAX_FRAME_LEN, min_len),
            bufs.page_frag_size(self.k),
        )
        for size in range(low, high + 1, self.k.build.l1_cache_bytes):
            if size == buf_len:
                continue
            trace = self._virtio(frame_len, buf_len=size, ewma=None)
            yield _Candidate(
                f"consistent with buffers of {size} bytes (posted while the packet-length "
                f"average differed; the plain prediction uses {buf_len})",
                _fields(trace),
                f"{mode}/{trace.outcome}",
            )

    def _tap_candidates(self, frame_len: int) -> Iterator[_Candidate]:
        """The default fd (non-blocking, IFF_VNET_HDR, sndbuf INT_MAX), then the settings that
        change what tun_get_user builds; settings with the same prediction share a note."""
        labels = (
            None,
            "a blocking write",
            "a writer's sndbuf below INT_MAX",
            "vnet_hdr_sz 12",
            "a tap without IFF_VNET_HDR",
        )
        merged: dict[tuple[object, ...], tuple[list[str], _Candidate]] = {}
        for label, case in zip(labels, live_verify.variants(WriteCase(frame_len)), strict=False):
            predicted = live_verify.predict(self.k, case)
            fields: Fields = {"outcome": str(predicted["outcome"])}
            fields.update({n: predicted[n] for n in FIELDS})
            if predicted.get("errno"):
                fields["reason"] = str(predicted["errno"])
            key = tuple(sorted(fields.items()))
            if key in merged:
                if label is not None and merged[key][0]:
                    merged[key][0].append(label)
                continue
            merged[key] = (
                [] if label is None else [label],
                _Candidate(label, fields, f"tap/{predicted['outcome']}"),
            )
        for names, candidate in merged.values():
            note = None if not names else "consistent with " + " or ".join(names)
            yield replace(candidate, note=note)

    def judge(self, skb: GroEvent) -> Verdict:
        observed = observed_fields(skb)
        key = (skb.len, tuple(sorted(observed.items())))
        if key not in self._memo:
            self._memo[key] = self._judge(skb.len + ETH_HLEN, observed)
        return self._memo[key]

    def _judge(self, frame_len: int, observed: Fields) -> Verdict:
        names = [n for n in (*FIELDS, *KPROBE_FIELDS) if n in observed]
        gso = (
            f"a GSO skb (gso_size {observed['gso_size']}): predicted as the same bytes without "
            "a GSO header"
            if "gso_size" in observed
            else None
        )
        if frame_len > MAX_FRAME_LEN:
            return Verdict(
                frame_len,
                self._guess_path(observed),
                "unmodelled",
                {},
                observed,
                f"frames over {MAX_FRAME_LEN} bytes are outside the model",
            )
        first: _Candidate | None = None
        try:
            for candidate in self.candidates(frame_len):
                if first is None:
                    first = candidate
                if all(candidate.predicted.get(n) == observed[n] for n in names):
                    exact = candidate.note is None
                    note = "; ".join(x for x in (candidate.note, gso) if x) or None
                    return Verdict(
                        frame_len,
                        candidate.path,
                        "exact" if exact else "consistent",
                        candidate.predicted,
                        observed,
                        note,
                    )
        except VnetrxError as exc:
            if first is None:
                return Verdict(
                    frame_len,
                    self._guess_path(observed),
                    "unmodelled",
                    {},
                    observed,
                    exc.message,
                )
        assert first is not None
        differ = [n for n in names if first.predicted.get(n) != observed[n]]
        note = "differs in " + ", ".join(differ) + " under every assumption tried"
        return Verdict(
            frame_len,
            self._guess_path(observed),
            "mismatch",
            first.predicted,
            observed,
            "; ".join(x for x in (note, gso) if x),
        )

    def _guess_path(self, observed: Fields) -> str:
        """When no prediction fits: what the fields alone tell. Mergeable build_skb leaves
        everything linear and costs the whole buffer plus the sk_buff (truesize = buffer +
        SKB_DATA_ALIGN(sizeof(struct sk_buff)), the buffer a multiple of L1_CACHE_BYTES)."""
        mode = self.setup.mode
        length, data_len, truesize = (observed.get(n) for n in ("len", "data_len", "truesize"))
        if not (isinstance(length, int) and isinstance(truesize, int)) or data_len != 0:
            return f"{mode}/paged"
        buffer = truesize - self.k.sk_buff_aligned
        if (
            mode == "mergeable"
            and buffer % self.k.build.l1_cache_bytes == 0
            and buffer >= length + ETH_HLEN + (self.setup.hdr_len or 12)
        ):
            return f"{mode}/build_skb?"
        return f"{mode}/linear"


def _runs(sizes: Sequence[int]) -> str:
    """1536, 1536, 2048 → "2×1536 + 2048"."""
    parts: list[tuple[int, int]] = []
    for size in sizes:
        if parts and parts[-1][0] == size:
            parts[-1] = (size, parts[-1][1] + 1)
        else:
            parts.append((size, 1))
    return " + ".join(f"{n}×{size}" if n > 1 else str(size) for size, n in parts)


def observe(profile: KernelProfile, setup: Setup, seen: Sequence[Seen]) -> ObserveReport:
    observer = Observer(profile, setup)
    frames = tuple(observer.judge(s.skb) for s in seen)
    notes: list[str] = []
    if setup.mode == "mergeable" and setup.mergeable_rx_buffer_size is None:
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
    return ObserveReport(setup, profile.name, profile.source, frames, tuple(notes))


# --- the --json document --------------------------------------------------------------------


def report_to_dict(report: ObserveReport) -> dict[str, object]:
    s = report.setup
    count = {
        kind: sum(v.agreement == kind for v in report.frames)
        for kind in ("exact", "consistent", "mismatch", "unmodelled")
    }
    return {
        "schema": SCHEMA,
        "device": s.device,
        "driver": s.driver,
        "mode": s.mode,
        "features": list(s.features),
        "mtu": s.mtu,
        "hdr_len": s.hdr_len,
        "mergeable_rx_buffer_size": s.mergeable_rx_buffer_size,
        "source": s.source,
        "release": s.release,
        "kernel": report.kernel,
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
            }
            for v in report.frames
        ],
        "notes": list(report.notes),
    }
