"""JSON for ``vnetrx xdp check`` (schema vnetrx.xdp-check/1). Stdlib only: does not import rich.

One document shape for both paths: virtio-net (virtnet_xdp_set's checks, in the kernel's order)
and tun/tap (tun_xdp_set: attaching never fails). The text view (vnetrx.render.xdp_text) reads
the same document.
"""

from __future__ import annotations

from typing import Any

from vnetrx.codec import kernel_to_dict
from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths.virtio_net.xdp_set import XdpAttach, XdpAttachSetup

SCHEMA = "vnetrx.xdp-check/1"


def virtio_to_dict(k: KernelProfile, setup: XdpAttachSetup, r: XdpAttach) -> dict[str, Any]:
    """``r``: virtnet_xdp_set(k, setup)."""
    return {
        "schema": SCHEMA,
        "kernel": kernel_to_dict(k),
        "path": "virtio",
        "device": {"mode": r.mode, "mergeable": setup.device.mergeable,
                   "guest_gso": setup.device.guest_gso,
                   "guest_csum": setup.guest_csum,
                   "ctrl_guest_offloads": setup.ctrl_guest_offloads,
                   "any_header_sg": setup.any_header_sg, "mtu": setup.device.mtu,
                   "xdp_frags": setup.device.xdp_frags, "queues": setup.queues,
                   "cpus": setup.cpus},
        "attach": r.attach,
        "errno": r.errno,
        "message": r.message,
        "warnings": list(r.warnings),
        "checks": [{"check": c.name, "source": c.source, "passed": c.passed,
                    "detail": c.detail, "because": list(c.because)} for c in r.checks],
        "runs": r.runs,
        "mtu_limit": r.mtu_limit,
        "xdp_queue_pairs": r.xdp_queue_pairs,
        "effects": [{"what": what, "how": how} for what, how in r.effects],
        "notes": list(r.notes),
    }


def tap_to_dict(k: KernelProfile, detail: str,
                effects: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """``detail``, ``effects``: tun_xdp_set(k)."""
    return {
        "schema": SCHEMA,
        "kernel": kernel_to_dict(k),
        "path": "tap",
        "device": {},
        "attach": True,
        "errno": None,
        "message": None,
        "warnings": [],
        "checks": [{"check": "tun_xdp_set", "source": f"drivers/net/tun.c:tun_xdp_set @ {k.name}",
                    "passed": True, "detail": detail, "because": []}],
        "runs": True,
        "mtu_limit": None,
        "xdp_queue_pairs": 0,
        "effects": [{"what": what, "how": how} for what, how in effects],
        "notes": ["see `vnetrx trace --path tap --xdp ACTION` for one write, and "
                  "`vnetrx verify tap --xdp all` to check it on this kernel"],
    }
