"""vnetrx/values.py: equality and hash by value, within one class."""

from __future__ import annotations

from vnetrx.paths.virtio_net.buffers import PostedBuffer
from vnetrx.replay.capture import Frame
from vnetrx.replay.state import Posted


def test_values_are_equal_by_class_and_fields() -> None:
    buf = PostedBuffer(0, 0, 1536)
    assert buf == PostedBuffer(0, 0, 1536) and hash(buf) == hash(PostedBuffer(0, 0, 1536))
    assert buf != PostedBuffer(0, 0, 2048)
    # the same field values in another class, or as a tuple, are not equal
    assert Frame(1536, b"") != Posted(1536, buf) and buf != (0, 0, 1536)
    assert Posted(1, buf) == Posted(1, PostedBuffer(0, 0, 1536), 0)
    assert len({Posted(1, buf), Posted(1, buf, 0), Posted(2, buf)}) == 2


def test_a_value_repr_names_every_field_in_order() -> None:
    """Value's repr reads ``_names`` (a compiled class has no __slots__ to read): each field
    named once, in the constructor's order, for every class that relies on it."""
    from vnetrx.paths.virtio_net.page_to_skb import Build, SkbHead
    from vnetrx.paths.virtio_net.plan import Drop, dropped

    head = SkbHead("build_skb", Build.BUILD, 524, 0, 1536, 1216, 12, 1012, 1792)
    assert repr(head) == (
        "SkbHead(outcome='build_skb', why=<Build.BUILD: 'build'>, tailroom=524, copy=0, "
        "head_size=1536, end=1216, data=12, tail=1012, truesize=1792)")
    plan = repr(dropped(Drop.SHORT_PACKET, 1536))
    assert plan.startswith("Plan(outcome='drop', reason=<Drop.SHORT_PACKET: 'short_packet'>, "
                           "why=None, buf_len=1536,")
    assert plan.endswith("frag_list=(), frag_list_skbs=0)") and plan.count("=") == 22
