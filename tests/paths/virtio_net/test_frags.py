"""receive_mergeable's loop over buffers (vnetrx/paths/virtio_net/frags.py): coalescing and
frame_list skbs, docs/kernel/virtio-net-rx.md §9."""

from __future__ import annotations

from tests.paths.virtio_net.helpers import run
from vnetrx.kernel.registry import lookup


def test_frag_list_past_max_skb_frags() -> None:
    """receive_mergeable checks nr_frags == MAX_SKB_FRAGS *before* trying to coalesce: once the
    head has 17 frags, even a buffer contiguous with the 17th goes to a new alloc_skb(0) skb on
    the head's frag_list, whose truesize the head adds (docs/kernel/virtio-net-rx.md §9 step 6.4).
    On 7.3 (2 page_pool buffers per 4 KiB page), a 65535-byte frame starting at the second
    buffer of a page spans 33 buffers in 17 pages; the 17th page's pair splits."""
    from vnetrx.paths.virtio_net import RxFrame, VirtioRxSetup
    from vnetrx.sweep import virtio_rows

    t = run("7.3", frame_len=65535, mergeable=True, buffer_index=1, ewma=1000)
    assert t.skb is not None and len(t.buffers) == 33
    assert t.skb.nr_frags == 17
    [chained] = t.skb.frag_list
    assert (chained.len, chained.truesize, len(chained.frags)) == (11, 960 + 2560, 1)
    buffers_truesize = sum(b.size for b in t.buffers)  # the frame's 33 buffers
    assert t.skb.truesize == 960 + buffers_truesize + 960  # napi head + buffers + alloc_skb(0)
    assert t.skb.data_len == 65535 - 14  # the head's data_len counts the frag_list bytes
    # the sweep's fast path agrees
    [row] = virtio_rows(lookup("7.3"), VirtioRxSetup(mergeable=True, ewma=1000), [65535],
                        RxFrame(0, buffer_index=1))
    assert (row.nr_frags, row.truesize) == (17, t.skb.truesize)
