"""Options that describe the frame and its virtio_net_hdr, shared by ``trace`` (both paths),
``sweep`` and ``verify tap``: a real frame (``--l4``, ``--tcp-options``, ``--frame``) and the
offload header, given as bytes (``--hdr``) or built from ``--csum`` / ``--gso``."""

from __future__ import annotations

from typing import Any

import click

from vnetrx.cli.options import Count, FilePath
from vnetrx.cli.tap_options import HexBytes
from vnetrx.packet import (
    CSUM_CHOICES,
    L4_CHOICES,
    MAX_TCP_OPTIONS,
)

HDR_HELP = (
    "The virtio_net_hdr before the frame, as hex (flags u8, gso_type u8, hdr_len le16, gso_size "
    "le16, csum_start le16, csum_offset le16; then num_buffers le16 and the hash report "
    "le32 hash_value + le16 hash_report where the header is that long), zero-padded. virtio: "
    "what the device wrote; tap: what write(2) carries. Default: all zero."
)


def frame_options(f: Any) -> Any:
    """--hdr, --l4, --tcp-options, --frame, --csum, --gso, --tunnel (applied bottom-up)."""
    for option in reversed(
        (
            click.option("--hdr", type=HexBytes(), default=None, help=HDR_HELP),
            click.option(
                "--l4",
                type=click.Choice(L4_CHOICES),
                default=None,
                help="Build a real frame of --len bytes: Ethernet + IPv4 (20 B) / IPv6 (40 B) "
                "+ TCP (20 B) / UDP (8 B), the rest payload.",
            ),
            click.option(
                "--tcp-options",
                type=Count(0, MAX_TCP_OPTIONS, "bytes"),
                default=0,
                help="With --l4 tcp4/tcp6: TCP option bytes (a multiple of 4; 12 for the "
                "timestamps option as Linux sends it).",
            ),
            click.option(
                "--frame",
                "frame_file",
                type=FilePath(dir_okay=False),
                default=None,
                help="The frame's bytes from FILE: raw, or the first packet of a pcap/pcapng "
                "capture (its length is the frame length).",
            ),
            click.option(
                "--csum",
                type=click.Choice(CSUM_CHOICES),
                default=None,
                help="Build the header's checksum part: partial = NEEDS_CSUM with csum_start "
                "at the TCP/UDP header and csum_offset at its check field; valid = "
                "DATA_VALID; none. Default with --gso: partial.",
            ),
            click.option(
                "--gso",
                metavar="TYPE:SIZE[+ecn]",
                default=None,
                help="Build the header's GSO part: tcpv4:1448, tcpv6:1428, udp:1472 (UFO), "
                "udp_l4:1472 (USO); +ecn adds VIRTIO_NET_HDR_GSO_ECN. hdr_len becomes the "
                "headers' length.",
            ),
            click.option(
                "--tunnel",
                metavar="ipv4|ipv6[+csum]",
                default=None,
                help="Wrap the --l4 frame in VXLAN over UDP (outer Ethernet + IPv4/IPv6 + UDP "
                "to 4789 + VXLAN 8 bytes; --len counts it all) and build the 24-byte "
                "virtio_net_hdr_v1_hash_tunnel (6.17+): gso_type |= UDP_TUNNEL_IPV4/IPV6, "
                "outer_th_offset, inner_nh_offset, csum_start at the inner TCP/UDP header; "
                "+csum adds VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM. A tap takes it with "
                "--vnet-hdr-sz 24.",
            ),
        )
    ):
        f = option(f)
    return f
