"""The virtio-net device's options, declared once: what the device negotiated (``--mergeable``,
``--guest-gso``, ``--mtu``, ``--hdr-len``), how its ring and buffers are set up
(``--ring-size``, ``--buf-len``) and the XDP program attached to it (``--xdp``,
``--xdp-frags``). ``trace`` (and ``sweep``, which takes trace's options), ``replay``, ``xdp
check``, ``observe`` and ``lab virtio`` declare them from here, each with one help text and one
meaning; a command adds only where the value comes from or what it defaults to. An option a
command cannot honour is still accepted by the parser and refused in one line that says why
(``refuse``), instead of "no such option" or being ignored.

Guest GSO has one name, ``--guest-gso``; ``--big`` (trace's, sweep's, observe's and xdp
check's old spelling) is the same option under a second name, not shown in the help."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import click

from vnetrx.cli.options import Count, PowerOfTwo
from vnetrx.paths.virtio_net.setup import MAX_FRAME_LEN, MAX_RING_SIZE

Decorator = Callable[[Any], Any]

# the options in the order every command lists them (--help)
DEVICE_OPTIONS = ("mergeable", "guest_gso", "mtu", "hdr_len", "ring_size", "buf_len")


class _OldSpellings(click.Option):
    """An option whose names after the first are old spellings: they parse as the first one,
    and --help shows the first name only."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        names = self.opts
        self.opts = names[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = names


_BUF_LEN = (0, 1 << 31)


def _declare(name: str, default: Any, where: str, buf_len: tuple[int, int] = _BUF_LEN
             ) -> Decorator:
    """The click option ``name`` (one of DEVICE_OPTIONS), ``where`` appended to its help;
    ``buf_len``: the numbers --buf-len's parser accepts."""
    suffix = f" {where}" if where else ""
    if name == "mergeable":
        return click.option(
            "--mergeable", is_flag=True,
            help="VIRTIO_NET_F_MRG_RXBUF negotiated: mergeable rx buffers." + suffix)
    if name == "guest_gso":
        return click.option(
            "--guest-gso", "--big", "guest_gso", cls=_OldSpellings, is_flag=True,
            help="Guest GSO negotiated (VIRTIO_NET_F_GUEST_TSO4/TSO6/ECN/UFO, which set "
            "vi->big_packets): without --mergeable the driver posts big-mode page chains; with "
            "it, rq->min_buf_len is sized for IP_MAX_MTU." + suffix)
    if name == "mtu":
        return click.option(
            "--mtu", type=Count(68, MAX_FRAME_LEN), default=default,
            show_default=default is not None,
            help="Device MTU (VIRTIO_NET_F_MTU). Above 1500 without MRG_RXBUF: big mode."
            + suffix)
    if name == "hdr_len":
        return click.option(
            "--hdr-len", type=click.Choice(["10", "12", "20", "24"]), default=default,
            show_default=default is not None,
            help="vi->hdr_len: 10 legacy, 12 VERSION_1 or MRG_RXBUF, 20 hash report (5.18+), "
            "24 UDP tunnel GSO (6.17+)." + suffix)
    if name == "ring_size":
        return click.option(
            "--ring-size", type=PowerOfTwo(1, MAX_RING_SIZE, "entries"), default=default,
            show_default=default is not None,
            help="Entries in the rx virtqueue (QEMU's rx_queue_size): with --mergeable it sizes "
            "rq->min_buf_len." + suffix)
    if name == "buf_len":
        return click.option(
            "--buf-len",
            # the valid range depends on the kernel and the header (hdr_len + ETH_HLEN .. the
            # page_frag size): the core checks it and names it; click only bounds the number
            type=Count(*buf_len), default=None,
            help="Mergeable buffer length (mergeable_rx_buffer_size), hdr_len + 14 up to the "
            "page_frag size (32768 on 4 KiB pages)." + suffix)
    raise ValueError(f"no device option {name!r}")


_DEFAULTS: Mapping[str, Any] = {"mtu": 1500, "hdr_len": None, "ring_size": 256}


def device_options(
    *names: str,
    defaults: Mapping[str, Any] | None = None,
    where: Mapping[str, str] | None = None,
    refuse: Mapping[str, str] | None = None,
    buf_len: tuple[int, int] = _BUF_LEN,
) -> Decorator:
    """The device options ``names`` (in DEVICE_OPTIONS' order); ``defaults`` overrides a
    default (mtu 1500, hdr_len None, ring_size 256), ``where`` adds to an option's help what it
    means for this command, and each option in ``refuse`` is parsed but refused in one line
    with the reason given (its help hidden). ``buf_len``: the range --buf-len's parser accepts
    where no core check follows (observe)."""
    defaults, where, refuse = defaults or {}, where or {}, refuse or {}
    unknown = set(names) - set(DEVICE_OPTIONS) | set(refuse) - set(DEVICE_OPTIONS)
    if unknown or set(names) & set(refuse):
        raise ValueError(f"device options: {sorted(unknown or set(names) & set(refuse))}")

    def decorate(f: Any) -> Any:
        for name in reversed(DEVICE_OPTIONS):  # click applies decorators bottom-up
            if name in names:
                f = _declare(name, defaults.get(name, _DEFAULTS.get(name)), where.get(name, ""),
                             buf_len)(f)
            elif name in refuse:
                f = _refused(name, refuse[name])(f)
        return f

    return decorate


def _refused(name: str, why: str) -> Decorator:
    """``name`` parsed as everywhere else, hidden, and refused when given: one line, ``why``."""
    declared = _declare(name, None, "")

    def decorate(f: Any) -> Any:
        f = declared(f)
        option: click.Option = f.__click_params__[-1]
        option.hidden = True
        option.expose_value = False

        def refuse(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
            source = ctx.get_parameter_source(param.name or "")
            if source is not None and source is not click.core.ParameterSource.DEFAULT:
                raise click.UsageError(f"{param.opts[0]} {why}", ctx)
            return value

        option.callback = refuse
        return f

    return decorate


def xdp_program_options(what: str, bare: str | None = None,
                        frags: str = "") -> Decorator:
    """--xdp ACTION and --xdp-frags: the XDP program attached to the device. ``what``: where it
    is attached and what the command then does; ``bare``: the action a bare ``--xdp`` means
    (None: an action must be given); ``frags``: what BPF_F_XDP_HAS_FRAGS changes here."""
    from vnetrx.paths.xdp import ACTIONS

    def decorate(f: Any) -> Any:
        f = click.option(
            "--xdp-frags", is_flag=True,
            help="With --xdp: the program is loaded with BPF_F_XDP_HAS_FRAGS (multi-buffer XDP, "
            f"6.3+).{' ' + frags if frags else ''}")(f)
        shown = f"; bare --xdp: {bare}" if bare is not None else ""
        help_text = (f"An XDP program returning ACTION (pass, drop, aborted, tx, redirect: "
                     f"bpf_redirect to the device itself{shown}) {what}")
        if bare is None:
            return click.option("--xdp", type=click.Choice(list(ACTIONS)), default=None,
                                metavar="ACTION", help=help_text)(f)
        return click.option("--xdp", type=click.Choice(list(ACTIONS)), default=None,
                            metavar="[ACTION]", is_flag=False, flag_value=bare,
                            help=help_text)(f)

    return decorate
