"""Invariants over the whole input space: every profile × mode × length."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import VIRTIO_AND_LTS_AS_TAGGED as VIRTIO_KERNELS
from vnetrx.engine import trace_virtio
from vnetrx.invariants import buffer_problems, skb_problems
from vnetrx.kernel.registry import lookup
from vnetrx.paths.skbuff import shinfo_size
from vnetrx.paths.virtio_net import RxFrame, VirtioRxSetup

MODES = [
    {"mergeable": True},
    {"guest_gso": True},
    {"mtu": 9000},
    {},
]
lengths = st.one_of(
    st.integers(1, 65535),
    st.sampled_from([13, 14, 15, 127, 128, 129, 1204, 1205, 1514, 1518, 1519, 3744, 3745, 3760,
                     4096, 9000, 16352, 16353, 65535]),
)


@given(kernel=st.sampled_from(VIRTIO_KERNELS), mode=st.sampled_from(MODES), frame_len=lengths)
def test_every_trace_is_consistent(kernel: str, mode: dict[str, object], frame_len: int) -> None:
    k = lookup(kernel)
    t = trace_virtio(k, VirtioRxSetup(**mode), RxFrame(frame_len))  # type: ignore[arg-type]
    for buffer in (*t.buffers, t.buffer):
        assert buffer is not None
        assert buffer_problems(buffer) == []
        # regions tile [0, size) exactly
        if buffer.regions:
            assert buffer.regions[0].offset == 0
            assert sum(r.size for r in buffer.regions) == buffer.size
    if t.skb is None:
        assert t.outcome == "drop" and t.reason
        return
    assert skb_problems(t.skb, k.sk_buff_aligned) == []
    # truesize covers every byte the skb owns: its head and every buffer it references
    assert t.skb.truesize >= t.skb.head_size + sum(f.size for f in t.skb.frags)
    assert t.skb.len == frame_len - 14
    if t.outcome == "build_skb" and t.path != "virtio-small":
        page_to_skb = next(s for s in t.steps if s.function == "page_to_skb")
        values = dict(page_to_skb.values)
        assert isinstance(values["tailroom"], int) and isinstance(values["len"], int)
        assert values["tailroom"] >= shinfo_size(k) == 320
        assert values["len"] > 128


@pytest.mark.parametrize("kernel", VIRTIO_KERNELS)
@pytest.mark.parametrize("mode", MODES)
def test_completeness_every_length_every_profile(kernel: str, mode: dict[str, object]) -> None:
    """Every profile runs every path for lengths 1..65535 (stride 97 plus edges) without error."""
    k = lookup(kernel)
    for frame_len in [*range(1, 65536, 97), 65535]:
        trace_virtio(k, VirtioRxSetup(**mode), RxFrame(frame_len))  # type: ignore[arg-type]
