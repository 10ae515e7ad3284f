"""Prediction for ``vnetrx observe``: each observed skb against the model's candidates, the plain
assumption first, then the facts an observer cannot see varied one at a time (see
``vnetrx.live.observe``). Pure."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from vnetrx.decode.header import gso_name
from vnetrx.engine import trace_virtio
from vnetrx.errors import VnetrxError
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.kernel.profile import KernelProfile
from vnetrx.live import verify as live_verify
from vnetrx.live.observe_parse import Seen, Setup
from vnetrx.model import KPROBE_FIELDS, TRACEPOINT_FIELDS, Trace
from vnetrx.observed.rx_event import RxEvent, as_traced
from vnetrx.observed.tap_write import WriteCase
from vnetrx.packet import ETH_P_IPV6
from vnetrx.paths import virtio_net
from vnetrx.paths.virtio_net import MAX_FRAME_LEN, RxFrame, VirtioRxSetup
from vnetrx.paths.virtio_net.buffers import get_mergeable_buf_len
from vnetrx.paths.virtio_net.setup import vnet_hdr_len
from vnetrx.paths.virtio_net_hdr import (
    DATA_VALID,
    GSO_ECN,
    GSO_TCPV4,
    GSO_TCPV6,
    GSO_UDP,
    GSO_UDP_L4,
    NEEDS_CSUM,
    VnetHdr,
)

FIELDS = TRACEPOINT_FIELDS
Fields = dict[str, int | str | None]


@dataclass(frozen=True)
class Verdict:
    """One observed skb against the model."""

    frame_len: int
    path: str  # e.g. "mergeable/build_skb", "tap/alloc_skb"
    agreement: str  # "exact" | "consistent" | "mismatch" | "unmodelled" | "unchecked"
    predicted: Fields  # the prediction the verdict rests on (the plain one on a mismatch)
    observed: Fields
    note: str | None = None
    not_in_capture: tuple[str, ...] = ()  # tracepoint fields the capture does not record
    not_compared: tuple[str, ...] = ()  # recorded, but changed between the driver and the probe

    @property
    def match(self) -> bool | None:
        if self.agreement in ("unmodelled", "unchecked"):
            return None
        return self.agreement != "mismatch"


@dataclass(frozen=True)
class _Candidate:
    note: str | None  # None: the plain assumption
    predicted: Fields
    path: str


def _fields(trace: Trace) -> Fields:
    skb = trace.skb
    if skb is None:
        return {"outcome": "drop", "reason": trace.reason or trace.outcome}
    fields: Fields = {"outcome": trace.outcome}
    fields.update(
        (name, as_traced(name, getattr(skb, name))) for name in (*TRACEPOINT_FIELDS, *KPROBE_FIELDS)
    )
    return fields


def observed_fields(skb: RxEvent) -> Fields:
    out: Fields = {name: as_traced(name, getattr(skb, name)) for name in FIELDS}
    for name in KPROBE_FIELDS:
        value = getattr(skb, name)
        if value is not None:
            out[name] = value
    return out


class Observer:
    """Predicts and judges skbs for one device setup on one kernel profile (memoised)."""

    def __init__(self, profile: KernelProfile, setup: Setup) -> None:
        self.k = profile
        self.setup = setup
        self._memo: dict[tuple[int, tuple[tuple[str, object], ...], int | None], Verdict] = {}
        self._hdr: VnetHdr | None = None

    def _base(self) -> VirtioRxSetup:
        assert self.setup.rx is not None  # a virtio_net device
        return self.setup.rx

    def _virtio(self, frame_len: int, buffer_index: int = 0, **device: object) -> Trace:
        """The trace of a frame landing in posted buffer ``buffer_index``, on the device with
        ``device``'s fields changed."""
        setup = self._base()._replace(**device)  # type: ignore[arg-type]
        return trace_virtio(self.k, setup, RxFrame(frame_len, self._hdr, buffer_index))

    def candidates(self, frame_len: int, hdr: VnetHdr | None = None) -> Iterator[_Candidate]:
        """The plain prediction first, then the alternatives (see vnetrx.live.observe);
        ``hdr``: the virtio_net_hdr the device is taken to have written."""
        if self.setup.mode == "tap":
            yield from self._tap_candidates(frame_len)
            return
        self._hdr = hdr
        mode = self.setup.mode
        first = self._virtio(frame_len)
        yield _Candidate(None, _fields(first), f"{mode}/{first.outcome}")
        if mode != "mergeable":
            return
        buf_len = first.buffers[0].size if first.buffers else 0
        c = virtio_net.config(self.k, virtio_net.check_virtio_setup(self.k, self._base()))
        per_page = c.alloc.page_bytes // max(buf_len, 1) + 1
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
        # every length get_mergeable_buf_len can give: from the EWMA at 0 to the page's worth
        low, high = (
            get_mergeable_buf_len(c.mrg_hdr_len, ewma, c.min_buf_len, c.page_size,
                                  c.l1_cache_bytes)
            for ewma in (0, MAX_FRAME_LEN)
        )
        high = min(high, c.page_frag_bytes)
        for size in range(low, high + 1, c.l1_cache_bytes):
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

    def judge(self, skb: RxEvent) -> Verdict:
        observed = observed_fields(skb)
        key = (skb.len, tuple(sorted(observed.items())), skb.protocol)
        if key not in self._memo:
            self._memo[key] = self._judge(skb.len + ETH_HLEN, observed, skb.protocol)
        return self._memo[key]

    def judge_seen(self, seen: Seen) -> Verdict:
        """An skb of any capture: compared on the fields it records that still show what the
        driver built at its probe point; the rest listed, never counted as agreement."""
        if seen.carried is None and seen.stage != "post-gro":
            return self.judge(seen.skb)
        observed = observed_fields(seen.skb)
        if seen.carried is not None:
            observed = {n: v for n, v in observed.items() if n in seen.carried}
        missing = tuple(n for n in FIELDS if n not in observed)
        skipped, refusal = _after_gro(self.setup, seen, observed)
        compared = {n: v for n, v in observed.items() if n not in skipped}
        frame_len = seen.skb.len + ETH_HLEN
        if refusal is None and "gso_size" not in compared and frame_len > self._mtu_frame():
            refusal = (f"a {frame_len}-byte frame is over the MTU: a GSO frame, and the capture "
                       "has no gso_size/gso_type to infer its virtio_net_hdr from (pwru: add "
                       "--output-skb-shared-info)")
        if refusal is None:
            verdict = self._judge(frame_len, observed, seen.skb.protocol, frozenset(compared))
        else:
            verdict = Verdict(frame_len, _stage_path(seen), "unchecked", {}, observed, refusal)
        return replace(verdict, observed=observed, not_in_capture=missing,
                       not_compared=tuple(n for n in (*FIELDS, *KPROBE_FIELDS)
                                          if n in skipped and n in observed))

    def _mtu_frame(self) -> int:
        s = self.setup
        return (s.mtu if s.rx is None else s.rx.mtu) + ETH_HLEN

    def _judge(self, frame_len: int, observed: Fields, protocol: int | None = None,
               only: frozenset[str] | None = None) -> Verdict:
        """``observed`` infers the virtio_net_hdr; ``only``: the fields to compare (all)."""
        names = [n for n in (*FIELDS, *KPROBE_FIELDS)
                 if n in observed and (only is None or n in only)]
        headers = (
            [(None, None)] if self.setup.mode == "tap"
            else list(inferred_headers(observed, protocol))
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
        first_header: str | None = None
        inputs = {"len"} if self.setup.mode == "tap" else set(_INPUTS)
        if not set(names) - inputs:
            try:
                plain = next(iter(self.candidates(frame_len, headers[0][1])))
            except VnetrxError as exc:
                return Verdict(frame_len, self._guess_path(observed), "unmodelled", {}, observed,
                               exc.message)
            what = ("no field but len, the length the prediction starts from"
                    if set(names) <= {"len"} else
                    f"only {', '.join(names)}: what the prediction starts from (the frame's "
                    "length, the virtio_net_hdr inferred from them)")
            return Verdict(frame_len, plain.path, "unchecked", plain.predicted, observed,
                           f"the capture records {what}: nothing to compare")
        try:
            for header_note, hdr in headers:
                for candidate in self.candidates(frame_len, hdr):
                    if first is None:
                        first, first_header = candidate, header_note
                    if all(candidate.predicted.get(n) == observed[n] for n in names):
                        exact = candidate.note is None
                        note = "; ".join(x for x in (header_note, candidate.note) if x) or None
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
            "; ".join(x for x in (first_header, note) if x),
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
            and buffer >= length + ETH_HLEN + vnet_hdr_len(self._base())
        ):
            return f"{mode}/build_skb?"
        return f"{mode}/linear"


# what a virtio skb's prediction is built from: len gives the frame, ip_summed and gso_* the
# virtio_net_hdr (inferred_headers); agreeing on these alone checks nothing
_INPUTS = ("len", "ip_summed", "gso_size", "gso_type")

# What still shows the driver's skb after GRO, for an skb that GRO did not merge: GRO's header
# pull (gro_try_pull_from_frag0, also on GRO_NORMAL) moves bytes from frags[0] into the linear
# area (data_len, nr_frags, tail change), checksum validation may turn CHECKSUM_NONE into
# CHECKSUM_UNNECESSARY, and RPS may compute the hash before __netif_receive_skb_core
# (gro-vhost-captures.md §1.3).
_CHANGED_BY_GRO = ("data_len", "nr_frags", "tail", "ip_summed", "hash", "l4_hash")
_CHANGED_BEFORE_CORE = ("hash", "l4_hash")  # a tap's skb: netif_receive_skb's RPS step


def _after_gro(setup: Setup, seen: Seen, observed: Fields
               ) -> tuple[tuple[str, ...], str | None]:
    """For an skb caught after GRO: the fields not to compare, and the reason not to compare
    the skb at all (it may be an aggregate of several driver skbs)."""
    if seen.stage != "post-gro":
        return (), None
    where = f"caught after GRO ({seen.event})"
    if seen.gso_segs is not None and seen.gso_segs >= 2 and observed.get("gso_size"):
        return _CHANGED_BY_GRO, (f"{where}: a GRO aggregate of {seen.gso_segs} segments "
                                 "(gso_segs), not an skb the driver built; not compared")
    if setup.driver == "tun":  # a write without IFF_NAPI: tun_get_user → netif_receive_skb
        return _CHANGED_BEFORE_CORE, None
    gso_size = observed.get("gso_size")
    if gso_size is None:
        return _CHANGED_BY_GRO, (f"{where}, without gso_size: it may be a GRO aggregate of "
                                 "several driver skbs; not compared as a driver skb")
    if gso_size == 0:  # a lone skb: gro_complete zeroes the gso_size GRO gave it
        return _CHANGED_BY_GRO, None
    if seen.gso_segs is None:
        return _CHANGED_BY_GRO, (f"{where}, a GSO skb whose gso_segs the capture lacks: it may "
                                 "be a GRO aggregate; not compared as a driver skb")
    return _CHANGED_BY_GRO, None  # virtio's own GSO skb (gso_segs 0, DODGY): GRO passed it on


def _stage_path(seen: Seen) -> str:
    return "post-GRO" if seen.stage == "post-gro" else "?"


# ip_summed and the low 16 bits of gso_type, as the tracepoint shows them
_PARTIAL, _UNNECESSARY = 3, 1
_GSO_LOW16 = {  # SKB_GSO_* | DODGY, low 16 bits → (the virtio gso_types it can come from, TCP?)
    0x3: ((GSO_TCPV4,), True), 0x7: ((GSO_TCPV4 | GSO_ECN,), True),
    0x12: ((GSO_TCPV6,), True), 0x16: ((GSO_TCPV6 | GSO_ECN,), True),
    0x2: ((GSO_UDP, GSO_UDP_L4), False),  # SKB_GSO_UDP / UDP_L4 are above bit 15
}


def inferred_headers(observed: Fields, protocol: int | None
                     ) -> Iterator[tuple[str | None, VnetHdr | None]]:
    """The virtio_net_hdr the device must have written for what the tracepoint shows: flags from
    ip_summed (CHECKSUM_PARTIAL: NEEDS_CSUM; CHECKSUM_UNNECESSARY: DATA_VALID), the GSO type
    from gso_type's low 16 bits, csum_start at the transport header of an option-less IPv4 or
    IPv6 header (protocol), csum_offset 16 for TCP or 6 for UDP. Several when the fields leave
    a choice (a non-GSO NEEDS_CSUM frame may be TCP or UDP; UFO and USO look alike)."""
    ip_summed, gso_size, gso_low = (observed.get(n) or 0 for n in
                                    ("ip_summed", "gso_size", "gso_type"))
    if not ip_summed and not gso_size:
        yield None, None
        return
    ipv6 = protocol == ETH_P_IPV6
    start = ETH_HLEN + (40 if ipv6 else 20)
    flags = NEEDS_CSUM if ip_summed == _PARTIAL else DATA_VALID if ip_summed == _UNNECESSARY else 0
    if gso_size:
        types, tcp = _GSO_LOW16.get(int(gso_low), ((), True))
        if not types:
            yield (f"gso_type {gso_low:#x} is not one vnetrx infers a header for", None)
            return
        kinds = [(t, tcp) for t in types]
    else:
        kinds = [(0, True), (0, False)] if flags & NEEDS_CSUM else [(0, True)]
    for gso_type, tcp in kinds:
        csum = (start, 16 if tcp else 6) if flags & NEEDS_CSUM else (0, 0)
        hdr = VnetHdr(flags, gso_type, 0, int(gso_size), *csum)
        parts = ["NEEDS_CSUM at " + f"{csum[0]} + {csum[1]}" if flags & NEEDS_CSUM else
                 "DATA_VALID" if flags else "no csum flags"]
        if gso_type:
            parts.append(f"{gso_name(gso_type)} {gso_size}")
        yield ("virtio_net_hdr inferred from ip_summed/gso_type: " + ", ".join(parts)
               + f" ({'TCP' if tcp else 'UDP'} over IPv{'6' if ipv6 else '4'})"), hdr


def _runs(sizes: Sequence[int]) -> str:
    """1536, 1536, 2048 → "2×1536 + 2048"."""
    parts: list[tuple[int, int]] = []
    for size in sizes:
        if parts and parts[-1][0] == size:
            parts[-1] = (size, parts[-1][1] + 1)
        else:
            parts.append((size, 1))
    return " + ".join(f"{n}×{size}" if n > 1 else str(size) for size, n in parts)
