"""Options shared by ``vnetrx trace --gro`` and ``vnetrx replay --gro``: how the device's NAPI
polls a tap, and the device's GRO limits."""

from __future__ import annotations

from typing import Any

import click

from vnetrx.cli.options import Count

NAPI_MODES = ("write", "timeout", "threaded", "frags")


def gro_options(f: Any) -> Any:
    """--napi, --gro-flush-timeout, --gro-max-size, --gro-ipv4-max-size (applied
    bottom-up)."""
    for option in reversed((
        click.option(
            "--napi",
            type=click.Choice(NAPI_MODES),
            default="write",
            show_default=True,
            help="With --gro --path tap: how the IFF_NAPI tap is polled. write: as the kernel "
            "sets it up, each write polled at once (nothing merges); timeout: gro_flush_timeout "
            "> 0 (writes within a jiffy merge); threaded: threaded NAPI with the writer pinned "
            "to the kthread's CPU; frags: IFF_NAPI_FRAGS (tun_napi_alloc_frags' skb, one iovec "
            "a write; nothing merges).",
        ),
        click.option(
            "--gro-flush-timeout",
            type=Count(0, (1 << 63) - 1, "ns"),
            default=None,
            metavar="NS",
            help="With --gro --path tap: the tap's /sys/class/net/DEV/gro_flush_timeout (the "
            "kernel's default 0). 0 is --napi write; more is --napi timeout, and a capture's "
            "record times age the held skbs: a write in a later jiffy (HZ 250: 4 ms; the first "
            "write taken at the start of its jiffy) completes the skbs held before it, and the "
            "timer flushes everything NS after the last poll that left one held. JSON frames "
            "have no times: they are assumed to come within one jiffy, so every held skb waits "
            "for the timer (so is --napi timeout without NS).",
        ),
        click.option(
            "--gro-max-size",
            type=Count(1, 8 * 65535, "bytes"),
            default=None,
            help="With --gro: the device's gro_max_size (5.18+; above 65536: IPv6 BIG TCP, "
            "5.19+). 65536 or less sets the IPv4 limit too, as ip link does.",
        ),
        click.option(
            "--gro-ipv4-max-size",
            type=Count(1, 8 * 65535, "bytes"),
            default=None,
            help="With --gro: the device's gro_ipv4_max_size (6.3+; above 65536: IPv4 BIG "
            "TCP).",
        ),
    )):
        f = option(f)
    return f


def resolve_napi(ctx: click.Context, o: dict[str, Any]) -> str:
    """--napi, with --gro-flush-timeout NS said the kernel's way (0: write, more: timeout)."""
    timeout = o.get("gro_flush_timeout")
    if timeout is None:
        return str(o["napi"])
    mode = "timeout" if timeout else "write"
    given = ctx.get_parameter_source("napi") is not click.core.ParameterSource.DEFAULT
    if given and o["napi"] != mode:
        raise click.UsageError(f"--gro-flush-timeout {timeout} is --napi {mode}, not --napi "
                               f"{o['napi']}: give one of them")
    return mode
