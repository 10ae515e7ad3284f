"""Construct layouts: sizes and offsets as the kernel's BTF shows them, and round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vnetrx.errors import LayoutError
from vnetrx.layouts.base import Layout
from vnetrx.layouts.skbuff import skb_frag, skb_shared_info
from vnetrx.layouts.virtio_net import (
    padded_vnet_hdr,
    virtio_net_hdr,
    virtio_net_hdr_mrg_rxbuf,
    virtio_net_hdr_v1,
    virtio_net_hdr_v1_hash,
    virtio_net_hdr_v1_hash_tunnel,
    virtnet_rq_dma,
)

# Sizes pahole reports for the running 6.18.44 kernel's BTF (docs/kernel/virtio-net-rx.md §3.1, Appendix B).
SIZES = [
    (virtio_net_hdr(), 10),
    (virtio_net_hdr_mrg_rxbuf(), 12),
    (virtio_net_hdr_v1(), 12),
    (virtio_net_hdr_v1_hash(), 20),
    (virtio_net_hdr_v1_hash(False), 20),
    (virtio_net_hdr_v1_hash_tunnel(), 24),
    (padded_vnet_hdr(False), 16),
    (padded_vnet_hdr(True), 32),
    (skb_frag(), 16),
    (skb_frag(False), 16),
    (skb_shared_info(), 320),
    (skb_shared_info(16), 304),  # MAX_SKB_FRAGS 16: 64 KiB pages before 6.4
    (skb_shared_info(45), 768),
    (virtnet_rq_dma(), 16),
]
ALL = [layout for layout, _ in SIZES]


@pytest.mark.parametrize(("layout", "size"), SIZES, ids=lambda x: getattr(x, "name", str(x)))
def test_sizes(layout: Layout, size: int) -> None:
    assert layout.size == size


def test_shinfo_offsets_match_btf() -> None:
    offsets = {f.name: f.offset for f in skb_shared_info().fields}
    assert offsets == {"flags": 0, "meta_len": 1, "nr_frags": 2, "tx_flags": 3, "gso_size": 4,
                       "gso_segs": 6, "frag_list": 8, "hwtstamps": 16, "gso_type": 24,
                       "tskey": 28, "dataref": 32, "xdp_frags_size": 36, "destructor_arg": 40,
                       "frags": 48}


def test_num_buffers_at_byte_10() -> None:
    assert virtio_net_hdr_mrg_rxbuf().field("num_buffers").offset == 10
    raw = bytes([1, 0x80, 54, 0, 0xB4, 5, 34, 0, 16, 0, 3, 0])
    parsed = virtio_net_hdr_mrg_rxbuf().parse(raw)
    assert parsed == {"hdr": {"flags": 1, "gso_type": 0x80, "hdr_len": 54, "gso_size": 1460,
                              "csum_start": 34, "csum_offset": 16}, "num_buffers": 3}


@pytest.mark.parametrize("layout", ALL, ids=lambda x: x.name)
def test_fields_tile_and_do_not_overlap(layout: Layout) -> None:
    end = 0
    for field in layout.fields:
        assert field.offset >= end
        end = field.offset + field.size
    assert end <= layout.size


@given(data=st.data(), layout=st.sampled_from(ALL[:6]))
def test_round_trip(data: st.DataObject, layout: Layout) -> None:
    raw = data.draw(st.binary(min_size=layout.size, max_size=layout.size))
    assert layout.build(layout.parse(raw)) == raw


@pytest.mark.parametrize("layout", ALL[:6], ids=lambda x: x.name)
def test_truncated_input_is_a_layout_error(layout: Layout) -> None:
    with pytest.raises(LayoutError, match="truncated"):
        layout.parse(bytes(layout.size - 1))


def test_unknown_member_is_a_layout_error() -> None:
    with pytest.raises(LayoutError, match="no member"):
        virtio_net_hdr().build({"num_buffers": 1})


@pytest.mark.parametrize("layout", ALL, ids=lambda x: x.name)
def test_construct_agrees_with_the_derived_geometry(layout: Layout) -> None:
    # The sizes come from the member list without Construct (so the receive path does not import
    # it); Construct's own sizeof() of the same members must say the same, member by member.
    struct = layout.struct()
    assert struct.sizeof() == layout.size
    offset, construct_fields = 0, {}
    for sub in struct.subcons:
        if not sub.name.startswith("_"):
            construct_fields[sub.name] = (offset, sub.sizeof())
        offset += sub.sizeof()
    assert construct_fields == {f.name: (f.offset, f.size) for f in layout.fields}


def test_leaves_expand_nested_structs_but_not_arrays() -> None:
    leaves = {f.name: (f.offset, f.size) for f in virtio_net_hdr_v1_hash_tunnel().leaves()}
    assert leaves["hash_hdr.hdr.num_buffers"] == (10, 2)
    assert leaves["hash_hdr.hash_report"] == (16, 2)
    assert leaves["inner_nh_offset"] == (22, 2)
    assert {f.name: (f.offset, f.size) for f in skb_shared_info().leaves()}["frags"] == (48, 272)

