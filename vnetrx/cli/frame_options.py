"""Options that describe the frame and its virtio_net_hdr, shared by ``trace`` (both paths),
``sweep`` and ``verify tap``: a real frame (``--l4``, ``--tcp-options``, ``--frame``) and the
offload header, given as bytes (``--hdr``) or built from ``--csum`` / ``--gso``."""

from __future__ import annotations

from typing import Any

import click

from vnetrx.cli.options import Count, FilePath
from vnetrx.cli.tap_options import HexBytes
from vnetrx.errors import InputError
from vnetrx.packet import (
    CSUM_CHOICES,
    L4_CHOICES,
    MAX_TCP_OPTIONS,
    Headers,
    build_frame,
    check_fits,
    find_headers,
    gso_l4,
    offload_header,
    parse_gso,
    read_frame,
)
from vnetrx.paths.virtio_net_hdr import VnetHdr
from vnetrx.records import NamedTuple

HDR_HELP = (
    "The virtio_net_hdr before the frame, as hex (flags u8, gso_type u8, hdr_len le16, gso_size "
    "le16, csum_start le16, csum_offset le16; then num_buffers le16 and the hash report "
    "le32 hash_value + le16 hash_report where the header is that long), zero-padded. virtio: "
    "what the device wrote; tap: what write(2) carries. Default: all zero."
)


def frame_options(f: Any) -> Any:
    """--hdr, --l4, --tcp-options, --frame, --csum, --gso (applied bottom-up)."""
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
        )
    ):
        f = option(f)
    return f


class FrameInput(NamedTuple):
    """The frame and header the options describe."""

    frame_len: int
    frame: bytes | None  # the frame's bytes, when --l4 or --frame gave them
    headers: Headers | None
    hdr: VnetHdr | None  # None: no header given (all zero)
    hdr_bytes: bytes | None  # the header as given or built (tap writes these)


def frame_input(frame_len: int | None, o: dict[str, Any]) -> FrameInput:
    """Resolve --len, --l4, --tcp-options, --frame, --hdr, --csum and --gso together."""
    if o["frame_file"] is not None and o["l4"] is not None:
        raise InputError("--frame and --l4 exclude each other (the file is the frame)")
    if o["hdr"] is not None and (o["csum"] is not None or o["gso"] is not None):
        raise InputError("--hdr gives the header's bytes; --csum and --gso build one: use one way")
    if o["tcp_options"] and o["l4"] is None:
        raise InputError("--tcp-options needs --l4 tcp4 or tcp6")
    frame: bytes | None = None
    headers: Headers | None = None
    gso = parse_gso(o["gso"]) if o["gso"] is not None else None
    if o["frame_file"] is not None:
        frame = read_frame(o["frame_file"])
        if frame_len is not None and frame_len != len(frame):
            raise InputError(
                f"--len {frame_len} disagrees with the {len(frame)}-byte --frame "
                f"{o['frame_file']}: give one of them"
            )
        frame_len = len(frame)
        headers = find_headers(frame)
    if frame_len is None:
        raise InputError("give the frame length (--len N) or the frame itself (--frame FILE)")
    l4 = o["l4"]
    if l4 is None and frame is None and (o["csum"] == "partial" or gso is not None):
        l4 = gso_l4(gso[0]) if gso is not None else None
        if l4 is None:
            raise InputError(
                "--csum partial needs to know where the transport header is: add --l4 "
                "tcp4|tcp6|udp4|udp6 or --frame FILE"
            )
    if l4 is not None:
        headers = check_fits(frame_len, l4, o["tcp_options"])
        frame = build_frame(frame_len, l4, o["tcp_options"])
    hdr: VnetHdr | None = None
    hdr_bytes: bytes | None = o["hdr"]
    if hdr_bytes is not None:
        hdr = VnetHdr.from_bytes(hdr_bytes)
    elif o["csum"] is not None or gso is not None:
        hdr = offload_header(headers, o["csum"], gso)
        hdr_bytes = hdr.to_bytes(10)
    return FrameInput(frame_len, frame, headers, hdr, hdr_bytes)
