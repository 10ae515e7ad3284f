"""``vnetrx trace``: one frame through one receive path."""

from __future__ import annotations

import sys

import click

from vnetrx.cli import cli
from vnetrx.cli.options import Count, kernel_option, load_profile
from vnetrx.engine import trace_virtio
from vnetrx.errors import InputError
from vnetrx.paths.virtio_net import MAX_FRAME_LEN, VirtioRxSetup


@cli.command()
@click.option(
    "--len",
    "frame_len",
    type=Count(1, MAX_FRAME_LEN),
    required=True,
    help="Frame length in bytes after the virtio-net header (Ethernet header included).",
)
@click.option(
    "--mergeable", is_flag=True, help="VIRTIO_NET_F_MRG_RXBUF negotiated: mergeable rx buffers."
)
@click.option(
    "--big",
    is_flag=True,
    help="Guest GSO (TSO4/TSO6/ECN/UFO) without MRG_RXBUF: big mode, page chains.",
)
@click.option(
    "--mtu",
    type=Count(68, MAX_FRAME_LEN),
    default=1500,
    show_default=True,
    help="Device MTU (VIRTIO_NET_F_MTU). Above 1500 without MRG_RXBUF → big mode.",
)
@click.option(
    "--hdr-len",
    type=click.Choice(["10", "12", "20", "24"]),
    default=None,
    help="vi->hdr_len: 10 legacy, 12 VERSION_1 or MRG_RXBUF (default), 20 hash "
    "report (5.18+), 24 UDP tunnel GSO (6.18+).",
)
@click.option(
    "--buf-len",
    type=Count(1, 65536),
    default=None,
    help="Mergeable buffer length (default: get_mergeable_buf_len for the EWMA).",
)
@click.option(
    "--ewma",
    type=Count(0, MAX_FRAME_LEN),
    default=None,
    help="Average packet length the driver has seen (default: the frame length, i.e. "
    "a steady stream of such frames). Sizes mergeable buffers.",
)
@kernel_option
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object (schema vnetrx.trace/1)."
)
def trace(
    frame_len: int,
    mergeable: bool,
    big: bool,
    mtu: int,
    hdr_len: str | None,
    buf_len: int | None,
    ewma: int | None,
    kernel: str | None,
    config: str,
    as_json: bool,
) -> None:
    """Trace one received frame through virtio-net: buffer, path, skb, truesize.

    \b
    Mode: --mergeable (MRG_RXBUF), --big (guest GSO, no MRG_RXBUF), or small (neither; an
    MTU above 1500 also selects big mode). Shown: each kernel step with its source, a map of
    the receive buffer, the skb after eth_type_trans (what napi_gro_receive sees), and the
    per-packet cost.

    \b
    Examples:
      vnetrx trace --len 1000 --mergeable              # build_skb, truesize 1792
      vnetrx trace --len 1000 --mergeable --kernel 5.12  # copy 14 B + 1 frag, truesize 2304
      vnetrx trace --len 1000 --mtu 9000 --kernel 6.1  # big mode
      vnetrx trace --len 1400 --mergeable --json | jq '.skb.truesize'
    """
    if mergeable and big:
        raise InputError(
            "--mergeable and --big exclude each other (MRG_RXBUF selects mergeable "
            "mode; --big means guest GSO without it)"
        )
    profile = load_profile(kernel, config)
    setup = VirtioRxSetup(
        frame_len=frame_len,
        mergeable=mergeable,
        guest_gso=big,
        mtu=mtu,
        hdr_len=None if hdr_len is None else int(hdr_len),
        buf_len=buf_len,
        ewma=ewma,
    )
    result = trace_virtio(profile, setup)
    if as_json:
        from vnetrx.render.json_out import render_trace

        sys.stdout.write(render_trace(result))
        return
    from vnetrx.render.text import print_trace, stdout_console

    print_trace(result, stdout_console())
