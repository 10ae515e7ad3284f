"""Prediction for ``vnetrx observe``: each observed skb against the model's candidates, the plain
assumption first, then the facts an observer cannot see varied one at a time (see
``vnetrx.live.observe``). Pure."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from vnetrx.engine import trace_virtio
from vnetrx.errors import VnetrxError
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.kernel.profile import KernelProfile
from vnetrx.lab.guest import GUEST_GSO, GroEvent
from vnetrx.live import verify as live_verify
from vnetrx.live.observe_parse import Setup
from vnetrx.live.tap import WriteCase
from vnetrx.model import KPROBE_FIELDS, TRACEPOINT_FIELDS, Trace
from vnetrx.paths import virtio_net
from vnetrx.paths.virtio_net import MAX_FRAME_LEN, VirtioRxSetup
from vnetrx.paths.virtio_net.buffers import get_mergeable_buf_len

RING_SIZE = 256  # the model's ring for min_buf_len (QEMU's default rx_queue_size)
FIELDS = TRACEPOINT_FIELDS
Fields = dict[str, int | str | None]


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
class _Candidate:
    note: str | None  # None: the plain assumption
    predicted: Fields
    path: str


def _fields(trace: Trace) -> Fields:
    skb = trace.skb
    if skb is None:
        return {"outcome": "drop", "reason": trace.reason or trace.outcome}
    fields: Fields = {"outcome": trace.outcome}
    fields.update((name, getattr(skb, name)) for name in (*TRACEPOINT_FIELDS, *KPROBE_FIELDS))
    return fields


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

    def _base(self) -> VirtioRxSetup:
        s = self.setup
        return VirtioRxSetup(
            frame_len=1,
            mergeable=s.mode == "mergeable",
            # guest GSO sets big_packets: big mode without MRG_RXBUF, min_buf_len sizing with it
            guest_gso=bool(GUEST_GSO & set(s.features)),
            mtu=s.mtu if "MTU" in s.features else 1500,
            hdr_len=s.hdr_len,
            buf_len=self.buf_len,
            ewma=0 if s.mode == "mergeable" and self.buf_len is None else None,
            ring_size=RING_SIZE,
        )

    def _virtio(self, frame_len: int, **change: object) -> Trace:
        setup = replace(self._base(), frame_len=frame_len, **change)  # type: ignore[arg-type]
        return trace_virtio(self.k, setup)

    def candidates(self, frame_len: int) -> Iterator[_Candidate]:
        """The plain prediction first, then the alternatives (see vnetrx.live.observe)."""
        if self.setup.mode == "tap":
            yield from self._tap_candidates(frame_len)
            return
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
