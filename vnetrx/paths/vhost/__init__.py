"""drivers/vhost/net.c: the host side of virtio-net, one module per direction (rx.py: handle_rx,
the tap's frames into the guest's rx ring)."""

from __future__ import annotations
