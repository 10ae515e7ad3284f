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
