"""The base of every decision's reason: a ``str`` enum that prints (and serialises) as its
value. Each stage declares its own (virtio_net.plan.Drop, page_to_skb.Build, tun's CantBuild,
...)."""

from __future__ import annotations

from enum import Enum


class Reason(str, Enum):
    """A decision's reason; prints (and serialises) as its value."""

    def __str__(self) -> str:
        return str(self.value)
