"""``vnetrx headroom``: TX headroom at ndo_start_xmit, and whether virtio-net's header goes inline."""

from __future__ import annotations

import sys
from typing import Any

import click

from vnetrx.cli import cli
from vnetrx.cli.export_options import export_options, export_pictures
from vnetrx.cli.options import Count, kernel_option
from vnetrx.errors import InputError
from vnetrx.kernel.choice import load_profile
from vnetrx.paths.tx.headroom import (
    DEFAULT_PAYLOADS,
    MAX_MTU,
    HeadroomReport,
    TxSetup,
    run_headroom,
)


class PayloadList(click.ParamType):  # type: ignore[type-arg]
    """Comma-separated whole numbers; the range check needs --tcp/--ipv6, so the core does it."""

    name = "N[,N…]"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        items = [item.strip() for item in str(value).split(",")]
        try:
            return tuple(int(item) for item in items)
        except ValueError:
            self.fail(
                f"{value!r} is not a comma-separated list of whole numbers (e.g. 64,1460)",
                param,
                ctx,
            )


@cli.command()
@click.option("--udp/--tcp", "udp", default=True, help="Send UDP datagrams (default) or TCP.")
@click.option("--ipv6", is_flag=True, help="IPv6 instead of IPv4.")
@click.option(
    "--payload",
    "payloads",
    type=PayloadList(),
    default=",".join(map(str, DEFAULT_PAYLOADS)),
    show_default=True,
    help="Bytes per send(), one table row each (IPv4 UDP: 1..65507).",
)
@click.option("--mtu", type=Count(68, MAX_MTU), default=1500, show_default=True, help="Device MTU.")
@click.option(
    "--mergeable/--no-mergeable",
    default=None,
    help="VIRTIO_NET_F_MRG_RXBUF (default on): hdr_len 12; off: a legacy device, hdr_len 10.",
)
@click.option(
    "--hdr-len",
    type=click.Choice(["10", "12", "20", "24"]),
    default=None,
    help="vi->hdr_len instead of --mergeable: 10 legacy, 12 MRG_RXBUF or VERSION_1, "
    "20 hash report (5.18+), 24 UDP tunnel GSO (6.17+).",
)
@click.option(
    "--indirect/--no-indirect",
    default=True,
    show_default=True,
    help="VIRTIO_RING_F_INDIRECT_DESC: a multi-entry request takes one ring slot.",
)
@click.option(
    "--ufo", is_flag=True, help="Device offers HOST_UFO: UDP above the MTU is one GSO skb (≤ 4.13)."
)
@kernel_option
@click.option("--compare", metavar="V2", default=None, help="A second kernel, side by side.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema vnetrx.headroom/1).")
@export_options
def headroom(
    udp: bool,
    ipv6: bool,
    payloads: tuple[int, ...],
    mtu: int,
    mergeable: bool | None,
    hdr_len: str | None,
    indirect: bool,
    ufo: bool,
    kernel: str | None,
    config: str | None,
    compare: str | None,
    as_json: bool,
    svg: str | None = None,
    html: str | None = None,
) -> None:
    """How much headroom a sent packet has at virtio-net's ndo_start_xmit, and whether the
    virtio-net header can be pushed in front of it (one sg entry) or needs its own.

    \b
    Walks LL_RESERVED_SPACE (hard_header_len + needed_headroom), __ip_append_data /
    __ip6_append_data (or tcp_sendmsg), IP fragmentation, the 14-byte Ethernet push and
    xmit_skb's can_push test, then counts sg entries and ring slots per skb. 3.16 added
    needed_headroom (6ebbc1a6383f): compare it with 3.15.

    \b
    Examples:
      vnetrx headroom --kernel 3.16 --compare 3.15   # 2 → 18 bytes: header goes inline
      vnetrx headroom --payload 4096 --kernel 3.15 --ufo
      vnetrx headroom --ipv6 --no-mergeable --kernel 3.15   # hdr 10 fits in 10 bytes
      vnetrx headroom --tcp --config debian-cloud
      vnetrx headroom --json | jq '.results[].skbs[].headroom'
    """
    setup = _setup(udp, ipv6, payloads, mtu, mergeable, hdr_len, indirect, ufo)
    report = run_headroom(load_profile(kernel, config), setup)
    other = None if compare is None else run_headroom(load_profile(compare, config), setup)
    export_pictures(lambda: _picture(report, other), svg, html, "vnetrx headroom")
    if as_json:
        from vnetrx.render.headroom_json import render_headroom

        sys.stdout.write(render_headroom(report, other))
        return
    from vnetrx.render.headroom_text import headroom_renderable
    from vnetrx.render.text import stdout_console

    stdout_console().print(headroom_renderable(report, other))


def _setup(
    udp: bool,
    ipv6: bool,
    payloads: tuple[int, ...],
    mtu: int,
    mergeable: bool | None,
    hdr_len: str | None,
    indirect: bool,
    ufo: bool,
) -> TxSetup:
    if hdr_len is not None and mergeable is not None:
        raise InputError(
            "--hdr-len and --mergeable/--no-mergeable exclude each other "
            "(hdr_len 10 means no MRG_RXBUF; 12, 20 and 24 imply MRG_RXBUF or VERSION_1)"
        )
    return TxSetup(
        tcp=not udp,
        ipv6=ipv6,
        payloads=payloads,
        mtu=mtu,
        mergeable=mergeable is not False if hdr_len is None else hdr_len != "10",
        hdr_len=None if hdr_len is None else int(hdr_len),
        indirect=indirect,
        ufo=ufo,
    )


def _picture(report: HeadroomReport, other: HeadroomReport | None) -> Any:
    from vnetrx.render.headroom_text import headroom_renderable

    return headroom_renderable(report, other)
