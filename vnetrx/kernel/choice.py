"""The kernel profile a command's options ask for: ``--kernel`` and ``--config``, and the build
axis ``--arch``, ``--page-size``, ``--cache-line``, ``--max-skb-frags``.

No click here: the click commands and ``vnetrx.fast_trace`` (trace command lines served before
click is imported) both call it, so both refuse the same combinations with the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vnetrx.errors import InputError
from vnetrx.kernel.build import DEFAULT_ARCH, PAGE_SIZES, build_config
from vnetrx.kernel.changes import MAX_SKB_FRAGS_CONFIGURABLE
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import default_config, lookup, newest
from vnetrx.records import NamedTuple


class BuildChoice(NamedTuple):
    arch: str = DEFAULT_ARCH
    page_size: str = "4k"
    cache_line: str | None = None
    max_skb_frags: int | None = None


def load_profile(
    kernel: str | None, config: str | None, choice: BuildChoice | None = None
) -> KernelProfile:
    """The profile ``--kernel`` (and the build options) ask for; ``config`` None: the release
    string's own preset (vnetrx.kernel.registry.default_config)."""
    choice = choice or BuildChoice()
    custom = choice != BuildChoice()
    if kernel == "running":
        if custom:
            raise InputError(
                "--kernel running reads the build from this machine: drop --arch, "
                "--page-size, --cache-line and --max-skb-frags"
            )
        from vnetrx.live.running import running_profile

        return running_profile() if config is None else running_profile(config=config)
    page_size = PAGE_SIZES[choice.page_size]
    if choice.arch == "x86_64" and page_size != 4096:
        raise InputError(f"x86_64 has 4 KiB pages only (asked for {choice.page_size})")
    if choice.arch == "arm64" and choice.cache_line == "128":
        raise InputError("arm64's L1_CACHE_SHIFT is 6 (64-byte lines) in every profiled kernel")
    build = build_config(
        choice.arch,
        page_size,
        int(choice.cache_line or 0) or None,
        choice.max_skb_frags or 0,
        config or default_config(kernel),
    )
    profile = newest(build) if kernel is None else lookup(kernel, build)
    if choice.max_skb_frags and not profile.has(MAX_SKB_FRAGS_CONFIGURABLE):
        raise InputError(
            f"CONFIG_MAX_SKB_FRAGS exists from 6.4; {profile.name} has "
            f"MAX_SKB_FRAGS = {profile.default_max_skb_frags()} for this page size"
        )
    return profile


def options_profile(o: Mapping[str, Any]) -> KernelProfile:
    """The profile the options ``o`` (a command's parameters by name: kernel, config, arch,
    page_size, cache_line, max_skb_frags) ask for."""
    choice = BuildChoice(o["arch"], o["page_size"], o["cache_line"], o["max_skb_frags"])
    return load_profile(o["kernel"], o["config"], choice)
