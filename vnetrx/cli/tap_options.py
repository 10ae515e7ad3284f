"""Options shared by ``vnetrx trace --path tap`` and ``vnetrx verify tap``: how the tap fd is set up."""

from __future__ import annotations

import re
from typing import Any

import click

from vnetrx.cli.options import Count
from vnetrx.kernel.constants import INT_MAX


class HexBytes(click.ParamType):  # type: ignore[type-arg]
    """Bytes given as hex digits; spaces, colons and a 0x prefix are allowed."""

    name = "HEX"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> bytes:
        if isinstance(value, bytes):
            return value
        text = re.sub(r"[\s:]", "", str(value))
        text = text[2:] if text.lower().startswith("0x") else text
        try:
            return bytes.fromhex(text)
        except ValueError:
            self.fail(f"{value!r} is not an even number of hex digits", param, ctx)


def tap_options(f: Any) -> Any:
    """--blocking, --sndbuf, --vnet-hdr-sz, --no-vnet-hdr (applied bottom-up)."""
    for option in reversed(
        (
            click.option(
                "--blocking",
                is_flag=True,
                help="tap: the fd is blocking (no O_NONBLOCK). Default: non-blocking.",
            ),
            click.option(
                "--sndbuf",
                type=Count(1, INT_MAX),
                default=None,
                help="tap, vhost-tx: TUNSETSNDBUF value. Default: INT_MAX (unlimited, "
                "tun_chr_open); vhost-net batches only with INT_MAX.",
            ),
            click.option(
                "--vnet-hdr-sz",
                type=Count(0, 65535),
                default=None,
                help="tap: TUNSETVNETHDRSZ (the kernel accepts >= 10). Default: 10. "
                "vhost-tx: the header the tap socket carries (sock_hlen), 10 or 12 "
                "(default 12: MRG_RXBUF or VERSION_1).",
            ),
            click.option(
                "--no-vnet-hdr",
                is_flag=True,
                help="tap: the device has no IFF_VNET_HDR (no header before the frame).",
            ),
        )
    ):
        f = option(f)
    return f
