"""Option types and shared options: every bad value fails with the valid range in the message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from vnetrx.kernel.build import ARCHES, DEFAULT_ARCH, MAX_HEADER_BY_CONFIG, PAGE_SIZES
from vnetrx.kernel.registry import supported_names
from vnetrx.model import EXIT_CHECK


class FilePath(click.Path):
    """click.Path that refuses a NUL byte in one line (click's own check would stat the name and
    raise ValueError: a traceback)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> Any:
        if isinstance(value, str) and "\x00" in value:
            shown = value.replace("\x00", "\\x00")[:60]
            self.fail(f"'{shown}' holds a NUL byte, which no path can (valid: a file name)",
                      param, ctx)
        return super().convert(value, param, ctx)


class Count(click.ParamType):  # type: ignore[type-arg]
    """A whole number of bytes (or items) in [low, high]."""

    name = "N"

    def __init__(self, low: int, high: int, what: str = "bytes") -> None:
        self.low, self.high, self.what = low, high, what

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            number = value
        else:
            text = str(value).strip()
            shown = text if len(text) <= 40 else text[:37] + "..."
            if len(text) > 20 and text.isascii() and text.lstrip("+-").isdigit():
                self.fail(f"{shown} is out of range (valid: {self.low}..{self.high} {self.what})",
                          param, ctx)
            try:
                if len(text) > 20:
                    raise ValueError(text)
                number = int(text, 0) if text.lower().startswith("0x") else int(text)
            except ValueError:
                self.fail(
                    f"{shown!r} is not a whole number (valid: {self.low}..{self.high})", param, ctx
                )
        if not self.low <= number <= self.high:
            self.fail(
                f"{number} is out of range (valid: {self.low}..{self.high} {self.what})", param, ctx
            )
        return number


class PowerOfTwo(Count):
    """A Count that must be a power of two (a split virtqueue's size: virtio 1.2, 2.7 "Queue
    Size ... must be a power of 2")."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        number = super().convert(value, param, ctx)
        if number & (number - 1):
            self.fail(
                f"{number} is not a power of two (valid: 1, 2, 4, ... {self.high} {self.what}; "
                "a split virtqueue's size is a power of two)", param, ctx
            )
        return number


def check_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--check: exit status EXIT_CHECK when ``what`` (the output is printed as usual)."""
    return click.option(
        "--check",
        is_flag=True,
        help=f"Exit with status {EXIT_CHECK} when {what} (for scripts; the output is the same). "
        "Without it the status is 0 whatever the kernel does with the frame.",
    )


def kernel_option(f: Any) -> Any:
    f = click.option(
        "--config",
        "config",
        type=click.Choice(sorted(MAX_HEADER_BY_CONFIG)),
        default=None,
        help="Kernel .config preset for config-dependent sizes (MAX_HEADER → the "
        "skbuff_small_head cache, MAX_TCP_HEADER). Default: a distribution kernel's own preset "
        "(from --kernel's release string), else debian; with --kernel running, the machine's "
        "own .config where readable.",
    )(f)
    return click.option(
        "--kernel",
        "kernel",
        metavar="V",
        default=None,
        help=f"Kernel to model: a version (5.13, 6.1.192), a release string (6.1.0-57-amd64, "
        f"6.8.0-45-generic) or 'running'. Read release by release: {supported_names()}; other "
        "3.15-7.x versions come from the change table, with notes. Default: the newest.",
    )(f)


def build_options(f: Any) -> Any:
    """--arch, --page-size, --cache-line, --max-skb-frags: the build axis of a profile."""
    for option in reversed(
        [
            click.option(
                "--arch",
                type=click.Choice(sorted(ARCHES)),
                default=DEFAULT_ARCH,
                show_default=True,
                help="Architecture (its NET_IP_ALIGN, cache line, DMA alignment).",
            ),
            click.option(
                "--page-size",
                type=click.Choice(sorted(PAGE_SIZES)),
                default="4k",
                show_default=True,
                help="PAGE_SIZE (16k and 64k: arm64).",
            ),
            click.option(
                "--cache-line",
                type=click.Choice(["64", "128"]),
                default=None,
                help="L1_CACHE_BYTES (default: the arch's; 128 = x86 built for MPENTIUM4/MPSC).",
            ),
            click.option(
                "--max-skb-frags",
                type=Count(17, 45, "frags"),
                default=None,
                help="CONFIG_MAX_SKB_FRAGS (6.4+; default 17).",
            ),
        ]
    ):
        f = option(f)
    return f
