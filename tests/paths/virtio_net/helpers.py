"""What the virtio receive-path tests share: one trace, and its skb in one tuple."""

from __future__ import annotations

from vnetrx.engine import trace_virtio
from vnetrx.kernel.build import BuildConfig
from vnetrx.kernel.registry import lookup
from vnetrx.model import Trace
from vnetrx.paths.virtio_net import RxFrame, VirtioRxSetup

MINIMAL = BuildConfig(config="minimal", max_header=32)  # this machine's 6.18.44 config


def run(kernel: str, build: BuildConfig | None = None, *, frame_len: int,
        hdr: object = None, buffer_index: int = 0, **setup: object) -> Trace:
    """``vnetrx trace`` of one ``frame_len``-byte frame (behind ``hdr``, in posted buffer
    ``buffer_index``) on the virtio path."""
    return trace_virtio(lookup(kernel, build), VirtioRxSetup(**setup),  # type: ignore[arg-type]
                        RxFrame(frame_len, hdr, buffer_index))  # type: ignore[arg-type]


def summary(t: Trace) -> tuple[object, ...]:
    """(outcome, len, data_len, nr_frags, truesize, mac_header, end): the skb after
    eth_type_trans, as napi_gro_receive sees it."""
    assert t.skb is not None
    s = t.skb
    return (t.outcome, s.len, s.data_len, s.nr_frags, s.truesize, s.mac_header, s.end)


def sda(x: int, line: int = 64) -> int:
    """SKB_DATA_ALIGN with an L1_CACHE_BYTES of ``line``."""
    return -(-x // line) * line
