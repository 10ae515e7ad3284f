"""``vnetrx sweep --gro``: for each frame length, a TCP flow of that length through a receive
path and GRO (``flow.virtio_flow`` / ``flow.tap_flow``), summed up in one row: how many skbs
the stack receives, how many segments the first one carries before GRO completes it and why,
its frags and frag_list, and what the socket is charged (truesize per payload byte). Pure: the
flows decide, this module only counts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from vnetrx.flow import FlowRun
from vnetrx.values import Value

GRO_ROW_SCHEMA: Final = "vnetrx.sweep-gro-row/1"


class GroRow(Value):
    """One length's flow, as the stack receives it."""

    __slots__ = ("aggregates", "first_flush", "first_frag_list", "first_len", "first_nr_frags",
                 "first_segs", "first_truesize", "frame_len", "kernel", "payload", "segments",
                 "skbs", "truesize_after", "truesize_before")
    _names = ("frame_len", "kernel", "segments", "skbs", "aggregates", "first_segs",
              "first_len", "first_nr_frags", "first_frag_list", "first_truesize", "first_flush",
              "payload", "truesize_before", "truesize_after")

    def __init__(self, frame_len: int, kernel: str, segments: int, skbs: int, aggregates: int,
                 first_segs: int, first_len: int, first_nr_frags: int, first_frag_list: int,
                 first_truesize: int, first_flush: str, payload: int, truesize_before: int,
                 truesize_after: int) -> None:
        self.frame_len: Final = frame_len
        self.kernel: Final = kernel
        self.segments: Final = segments  # the flow's segments (one frame each)
        self.skbs: Final = skbs  # skbs the stack receives
        self.aggregates: Final = aggregates  # of them, those carrying more than one input
        self.first_segs: Final = first_segs  # segments in the first skb delivered
        self.first_len: Final = first_len  # its len (from the IP header)
        self.first_nr_frags: Final = first_nr_frags
        self.first_frag_list: Final = first_frag_list  # skbs on its frag_list
        self.first_truesize: Final = first_truesize
        self.first_flush: Final = first_flush  # why GRO completed it
        self.payload: Final = payload  # TCP payload bytes of the whole flow
        self.truesize_before: Final = truesize_before  # the driver's skbs
        self.truesize_after: Final = truesize_after  # the skbs the stack receives

    def _values(self) -> tuple[object, ...]:
        return (self.frame_len, self.kernel, self.segments, self.skbs, self.aggregates,
                self.first_segs, self.first_len, self.first_nr_frags, self.first_frag_list,
                self.first_truesize, self.first_flush, self.payload, self.truesize_before,
                self.truesize_after)

    @property
    def per_payload_byte(self) -> float | None:
        """What the socket is charged per byte it reads (None: no payload)."""
        return round(self.truesize_after / self.payload, 4) if self.payload else None


def gro_row(frame_len: int, run: FlowRun) -> GroRow:
    delivered = run.gro.delivered
    first = delivered[0]
    return GroRow(frame_len, run.kernel.name, len(run.segments), len(delivered),
                  sum(len(d.frames) > 1 for d in delivered), first.segs, first.skb.len,
                  first.skb.nr_frags, len(first.skb.frag_list), first.skb.truesize,
                  str(first.flush), run.payload, run.truesize_before, run.truesize_after)


def gro_rows(lengths: Iterable[int], flow_of: Callable[[int], FlowRun]) -> Iterator[GroRow]:
    """A row per length: ``flow_of(length)`` is the flow of frames of that length."""
    for length in lengths:
        yield gro_row(length, flow_of(length))


def gro_row_to_dict(row: GroRow) -> dict[str, Any]:
    return {"schema": GRO_ROW_SCHEMA,
            **dict(zip(row._names, row._values(), strict=True)),
            "truesize_per_payload_byte": row.per_payload_byte}
