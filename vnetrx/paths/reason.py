"""The base of every decision's reason: ``model.Label``, the ``str`` enum whose members print
(and serialise) as their values, under the name the stages use. Each stage declares its own
(virtio_net.plan.Drop, page_to_skb.Build, tun's CantBuild, ...)."""

from __future__ import annotations

from vnetrx.model import Label

Reason = Label

__all__ = ["Reason"]
