"""Option types and shared options: every bad value fails with the valid range in the message."""

from __future__ import annotations

from typing import Any

import click

from vnetrx.kernel.build import MAX_HEADER_BY_CONFIG, BuildConfig
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import newest, resolve, supported_names


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
            try:
                number = int(text, 0) if text.lower().startswith("0x") else int(text)
            except ValueError:
                self.fail(
                    f"{value!r} is not a whole number (valid: {self.low}..{self.high})", param, ctx
                )
        if not self.low <= number <= self.high:
            self.fail(
                f"{number} is out of range (valid: {self.low}..{self.high} {self.what})", param, ctx
            )
        return number


def kernel_option(f: Any) -> Any:
    f = click.option(
        "--config",
        "config",
        type=click.Choice(sorted(MAX_HEADER_BY_CONFIG)),
        default="debian",
        show_default=True,
        help="Kernel .config preset for config-dependent sizes (MAX_HEADER → the "
        "skbuff_small_head cache).",
    )(f)
    return click.option(
        "--kernel",
        "kernel",
        metavar="V",
        default=None,
        help=f"Kernel to model: a version (5.13, 6.1.192), a release string (6.1.0-57-amd64) "
        f"or 'running'. Series: {supported_names()}. Default: the newest.",
    )(f)


def load_profile(kernel: str | None, config: str) -> KernelProfile:
    build = BuildConfig(config=config, max_header=MAX_HEADER_BY_CONFIG[config])
    if kernel is None:
        return newest(build)
    if kernel == "running":
        from vnetrx.kernel.running import running_profile

        return running_profile()
    return resolve(kernel, build)
