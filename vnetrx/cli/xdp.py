"""``vnetrx xdp check``: would attaching an XDP program succeed, and what it changes."""

from __future__ import annotations

import sys

import click

from vnetrx.cli import cli
from vnetrx.cli.options import Count, kernel_option, load_profile
from vnetrx.paths.virtio_net.xdp_set import MAX_QUEUE_PAIRS, XdpAttachSetup, virtnet_xdp_set
from vnetrx.render import xdp_json


@cli.group()
def xdp() -> None:
    """XDP on virtio-net and tun/tap: can a program be attached, and what changes."""


@xdp.command("check")
@click.option("--path", type=click.Choice(["virtio", "tap"]), default="virtio",
              show_default=True, help="virtio: a virtio-net device; tap: a tun/tap device.")
@click.option("--mergeable", is_flag=True, help="VIRTIO_NET_F_MRG_RXBUF negotiated.")
@click.option("--big", is_flag=True,
              help="The non-mergeable big-packet mode (guest GSO without MRG_RXBUF).")
@click.option("--guest-gso", is_flag=True,
              help="GUEST_TSO4/TSO6/ECN/UFO negotiated (without --mergeable: big mode).")
@click.option("--guest-csum/--no-guest-csum", default=True, show_default=True,
              help="VIRTIO_NET_F_GUEST_CSUM negotiated.")
@click.option("--ctrl-guest-offloads/--no-ctrl-guest-offloads", default=True,
              show_default=True,
              help="VIRTIO_NET_F_CTRL_GUEST_OFFLOADS: the driver can turn guest offloads off.")
@click.option("--legacy", is_flag=True,
              help="A legacy device without VERSION_1 and ANY_LAYOUT (any_header_sg false).")
@click.option("--mtu", type=Count(68, 65535), default=1500, show_default=True,
              help="The device's MTU when attaching.")
@click.option("--xdp-frags", is_flag=True,
              help="The program is loaded with BPF_F_XDP_HAS_FRAGS (multi-buffer, 6.3+).")
@click.option("--queues", type=Count(1, MAX_QUEUE_PAIRS, "queue pairs"), default=1, show_default=True,
              help="max_queue_pairs (VIRTIO_NET_F_MQ).")
@click.option("--cpus", type=Count(1, 8192, "CPUs"), default=2, show_default=True,
              help="nr_cpu_ids of the guest.")
@kernel_option
@click.option("--json", "as_json", is_flag=True, help=f"Print JSON (schema {xdp_json.SCHEMA}).")
def check(path: str, mergeable: bool, big: bool, guest_gso: bool, guest_csum: bool,
          ctrl_guest_offloads: bool, legacy: bool, mtu: int, xdp_frags: bool, queues: int,
          cpus: int, kernel: str | None, config: str, as_json: bool) -> None:
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
      vnetrx xdp check --big --kernel 6.6 --json | jq .runs        # false
      vnetrx xdp check --path tap
    """
    if big and mergeable:
        raise click.UsageError("--big is the non-mergeable mode: drop --mergeable or --big")
    k = load_profile(kernel, config)
    if path == "tap":
        from vnetrx.paths.tun.xdp import tun_xdp_set

        doc = xdp_json.tap_to_dict(k, *tun_xdp_set(k))
    else:
        setup = XdpAttachSetup(mergeable=mergeable, guest_gso=guest_gso or big,
                               guest_csum=guest_csum, ctrl_guest_offloads=ctrl_guest_offloads,
                               any_header_sg=not legacy, mtu=mtu, frags=xdp_frags,
                               queues=queues, cpus=cpus, hdr_len=10 if legacy else 12)
        doc = xdp_json.virtio_to_dict(k, setup, virtnet_xdp_set(k, setup))
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps(doc))
    else:
        from vnetrx.render.tables import report_console
        from vnetrx.render.xdp_text import xdp_check_renderable

        report_console().print(xdp_check_renderable(doc))
    sys.exit(0)
