"""vnetrx: walk one packet through Linux virtio-net / tun receive paths, byte for byte."""

from __future__ import annotations

__version__ = "0.1.0"
