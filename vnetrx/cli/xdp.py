"""``vnetrx xdp check``: would attaching an XDP program succeed, and what it changes."""

from __future__ import annotations

import sys

import click
from click.core import ParameterSource

from vnetrx.cli import cli
from vnetrx.cli.device_options import device_options
from vnetrx.cli.options import Count, kernel_option
from vnetrx.kernel.choice import load_profile
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.paths.virtio_net.xdp_set import MAX_QUEUE_PAIRS, XdpAttachSetup, virtnet_xdp_set
from vnetrx.render import xdp_json


@cli.group()
def xdp() -> None:
    """XDP on virtio-net and tun/tap: can a program be attached, and what changes."""


@xdp.command("check")
@click.option("--path", type=click.Choice(["virtio", "tap"]), default="virtio",
              show_default=True, help="virtio: a virtio-net device; tap: a tun/tap device.")
@click.option("--guest-csum/--no-guest-csum", default=True, show_default=True,
              help="VIRTIO_NET_F_GUEST_CSUM negotiated.")
@click.option("--ctrl-guest-offloads/--no-ctrl-guest-offloads", default=True,
              show_default=True,
              help="VIRTIO_NET_F_CTRL_GUEST_OFFLOADS: the driver can turn guest offloads off.")
@click.option("--legacy", is_flag=True,
              help="A legacy device without VERSION_1 and ANY_LAYOUT (any_header_sg false).")
@device_options(
    "mergeable", "guest_gso", "mtu", "hdr_len",
    where={"mtu": "The MTU when the program is attached.",
           "hdr_len": "Default: 12, with --legacy 10."},
    refuse={"ring_size": "does not apply to xdp check: virtnet_xdp_set does not look at the "
            "ring size",
            "buf_len": "does not apply to xdp check: attaching a program resizes the "
            "mergeable buffers itself (see the output)"},
)
@click.option("--xdp-frags", is_flag=True,
              help="The program is loaded with BPF_F_XDP_HAS_FRAGS (multi-buffer XDP, 6.3+).")
@click.option("--queues", type=Count(1, MAX_QUEUE_PAIRS, "queue pairs"), default=1, show_default=True,
              help="max_queue_pairs (VIRTIO_NET_F_MQ).")
@click.option("--cpus", type=Count(1, 8192, "CPUs"), default=2, show_default=True,
              help="nr_cpu_ids of the guest.")
@kernel_option
@click.option("--json", "as_json", is_flag=True, help=f"Print JSON (schema {xdp_json.SCHEMA}).")
def check(path: str, mergeable: bool, guest_gso: bool, guest_csum: bool,
          ctrl_guest_offloads: bool, legacy: bool, mtu: int, hdr_len: str | None,
          xdp_frags: bool, queues: int, cpus: int, kernel: str | None, config: str | None,
          as_json: bool) -> None:
    """Would attaching an XDP program succeed on this kernel, and if not, the kernel's own
    message and errno; if so, what changes.

    \b
    virtio-net (virtnet_xdp_set, in the kernel's order): guest offloads the driver cannot
    turn off (no CTRL_GUEST_OFFLOADS) → EOPNOTSUPP; mergeable without any_header_sg → EINVAL;
    the MTU (≤ 6.2: 4064 for any program; 6.3+: 3506 unless --xdp-frags) → EINVAL; fewer
    free queue pairs than CPUs (≤ 5.12: ENOMEM; later: XDP_TX shares the stack's queues).
    Then: guest offloads cleared, rx buffer sizes, XDP_TX queues, and big mode, where the
    program is accepted but never runs. tap: attaching never fails; where native XDP stops.

    \b
    Examples:
      vnetrx xdp check --mergeable --mtu 9000 --kernel 6.12        # MTU too large ... frags
      vnetrx xdp check --mergeable --mtu 9000 --xdp-frags --kernel 6.12
      vnetrx xdp check --no-ctrl-guest-offloads --kernel 6.1       # EOPNOTSUPP
      vnetrx xdp check --queues 1 --cpus 4 --kernel 5.12           # Too few free TX rings
      vnetrx xdp check --guest-gso --kernel 6.6 --json | jq .runs  # false
      vnetrx xdp check --path tap
    """
    ctx = click.get_current_context()
    if path == "tap":
        given = [p.opts[0] for p in ctx.command.params
                 if p.name not in ("path", "kernel", "config", "as_json") and p.expose_value
                 and ctx.get_parameter_source(p.name or "") is not ParameterSource.DEFAULT]
        if given:
            raise click.UsageError(f"{', '.join(given)} describe{'s' if len(given) == 1 else ''} "
                                   "a virtio-net device, not --path tap (tun_xdp_set has no "
                                   "such setting)")
    if legacy and hdr_len not in (None, "10"):
        raise click.UsageError(f"--hdr-len {hdr_len} does not go with --legacy (a legacy "
                               "device's virtio_net_hdr is 10 bytes)")
    if not legacy and hdr_len == "10":
        raise click.UsageError("--hdr-len 10 is the legacy header: give --legacy (a VERSION_1 "
                               "device's header is at least 12 bytes)")
    k = load_profile(kernel, config)
    if path == "tap":
        from vnetrx.paths.tun.xdp import tun_xdp_set

        doc = xdp_json.tap_to_dict(k, *tun_xdp_set(k))
    else:
        device = VirtioRxSetup(mergeable=mergeable, guest_gso=guest_gso, mtu=mtu,
                               hdr_len=10 if legacy else int(hdr_len or 12), xdp_frags=xdp_frags)
        setup = XdpAttachSetup(device, guest_csum=guest_csum,
                               ctrl_guest_offloads=ctrl_guest_offloads, any_header_sg=not legacy,
                               queues=queues, cpus=cpus)
        doc = xdp_json.virtio_to_dict(k, setup, virtnet_xdp_set(k, setup))
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps(doc))
    else:
        from vnetrx.render.tables import report_console
        from vnetrx.render.xdp_text import xdp_check_renderable

        report_console().print(xdp_check_renderable(doc))
    sys.exit(0)
