"""``vnetrx verify``: check the model against the running kernel (root, tracefs, /dev/net/tun)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, cast

import click

from vnetrx.cli import cli
from vnetrx.cli.frame_options import frame_options
from vnetrx.cli.options import Count
from vnetrx.cli.tap_options import tap_options
from vnetrx.errors import Interrupted, VnetrxError
from vnetrx.live.parse import parse_lengths
from vnetrx.live.verify import DEFAULT_LENGTHS, XDP_LENGTHS, FrameCheck
from vnetrx.observed.tap_write import WriteCase
from vnetrx.trace_input import frame_input

PROGRESS_FROM = 20  # a progress bar for lists at least this long (on a terminal)


@cli.group()
def verify() -> None:
    """Check vnetrx's predictions against the running kernel."""


@verify.command("tap")
@click.option(
    "--len",
    "lengths",
    metavar="LIST",
    default=DEFAULT_LENGTHS,
    help="Frame lengths: comma-separated N, A-B or A-B:STEP (e.g. 60,1000,3400-3500:8). "
    "Default: 48 lengths from 13 to 65535 around every boundary.",
)
@frame_options
@tap_options
@click.option(
    "--offloads",
    is_flag=True,
    help="Write the offload matrix instead of --len: TCP/UDP over IPv4/IPv6 with NEEDS_CSUM, "
    "DATA_VALID or nothing, GSO with gso_size below and above the payload, TCP options, "
    "hdr_len 0/exact/larger, blocking or not, and every class of header the kernel refuses.",
)
@click.option(
    "--tunnels",
    is_flag=True,
    help="Write the UDP-tunnel matrix instead of --len (6.17+): TUNSETOFFLOAD with the "
    "TUN_F_UDP_TUNNEL_GSO flags, then VXLAN-wrapped TCP/USO frames behind 24-byte tunnel "
    "headers (vnet_hdr_sz 24, 12 and 32) and every class of tunnel header the kernel refuses.",
)
@click.option(
    "--variants",
    is_flag=True,
    help="Also write every length blocking, with sndbuf 65536, with vnet_hdr_sz 12 and "
    "without IFF_VNET_HDR.",
)
@click.option(
    "--xdp",
    "xdp",
    metavar="ACTIONS",
    default=None,
    help="Attach a program of vnetrx's own (native mode, loaded with bpf(2)) returning each "
    "ACTION in turn (comma-separated pass, drop, tx, redirect, aborted, or all; redirect: "
    "bpf_redirect() back to the tap) and also compare what read() on the fd returns and the "
    "device's counters. Default lengths then: " + XDP_LENGTHS + ".",
)
@click.option("--gro", is_flag=True,
              help="Instead: write TCP bursts into IFF_NAPI taps and compare every skb that "
              "leaves GRO (the same as `vnetrx verify gro`).")
@click.option("--xdp-adjust-head", type=int, default=0, metavar="N",
              help="With --xdp: the program first calls bpf_xdp_adjust_head(ctx, N).")
@click.option("--xdp-adjust-tail", type=int, default=0, metavar="N",
              help="With --xdp: then bpf_xdp_adjust_tail(ctx, N).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def verify_tap(ctx: click.Context, /, lengths: str, as_json: bool, variants: bool,
               offloads: bool, tunnels: bool, xdp: str | None, xdp_adjust_head: int, xdp_adjust_tail: int,
               gro: bool, **opts: Any) -> None:
    """Write frames into a private tap device and compare what the kernel built with the model.

    \b
    As root it creates, and removes again on success, error and Ctrl-C:
      - a network namespace (a child process calls unshare(CLONE_NEWNET)) with IPv6 disabled,
      - a tap device in it (IFF_TAP|IFF_NO_PI[|IFF_VNET_HDR]), brought up, no address,
      - a tracefs instance instances/vnetrx-<pid> with net:netif_receive_skb_entry filtered on
        that device (tracefs is mounted in a temporary directory if it is not mounted).
    Each frame (dst 02:00:00:00:00:01, EtherType 0x88B5; with --l4 or --offloads a TCP/UDP
    frame with documentation addresses to that same foreign MAC) is written straight into the
    tap fd: nothing is routed, no other interface is touched. Compared per frame: write()'s
    return value or errno, and the tracepoint's len, data_len, truesize, nr_frags, ip_summed,
    gso_size, gso_type (its low 16 bits), hash and l4_hash. The model runs with --kernel
    running. Exit 0 when every frame matches, 1 otherwise.

    \b
    Examples:
      vnetrx verify tap
      vnetrx verify tap --len 60,1000,3400-3500:8 --blocking
      vnetrx verify tap --variants --json | jq '.frames[] | select(.match | not)'
      vnetrx verify tap --len 100,3000,9014 --l4 tcp4 --gso tcpv4:1448
      vnetrx verify tap --offloads
      vnetrx verify tap --tunnels                     # UDP-tunnel GSO, 6.17+
      vnetrx verify tap --xdp all --variants
    """
    if gro:
        given = [p.opts[0] for p in ctx.command.params if p.name not in ("gro", "as_json")
                 and ctx.get_parameter_source(p.name or "") is click.core.ParameterSource.COMMANDLINE]
        if given:
            raise click.UsageError(f"--gro writes its own bursts: drop {', '.join(given)} (or "
                                   "see `vnetrx verify gro --help`)")
        ctx.invoke(verify_gro, names=None, repeats=1, list_cases=False, as_json=as_json)
        return
    from vnetrx.live import verify as live_verify
    from vnetrx.live.running import running_profile
    from vnetrx.live.tap import missing_requirements

    actions = _xdp_actions(xdp)
    if actions and ctx.get_parameter_source("lengths") is not click.core.ParameterSource.COMMANDLINE:
        lengths = XDP_LENGTHS
    if sum((bool(actions), offloads, tunnels)) > 1:
        raise click.UsageError("--xdp, --offloads and --tunnels are separate matrices: give one")
    if (xdp_adjust_head or xdp_adjust_tail) and not actions:
        raise click.UsageError("--xdp-adjust-head/--xdp-adjust-tail change the program: give "
                               "--xdp ACTIONS too")
    frames = parse_lengths(lengths)
    if opts["frame_file"] is not None:
        raise click.UsageError("verify writes frames it builds: use --l4, not --frame")
    given = [name for name in ("hdr", "csum", "gso", "l4", "tunnel")
             if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)]
    if (offloads or tunnels) and (given or ctx.get_parameter_source("lengths")
                                  is click.core.ParameterSource.COMMANDLINE):
        raise click.UsageError(f"--{'offloads' if offloads else 'tunnels'} writes its own "
                               "frames and headers: drop --len and "
                               + ", ".join("--" + n for n in given or ["the header options"]))
    # the header and the frame kind, the same for every length (each length is written as
    # built: one shorter than the --l4 headers is cut, and the kernel's answer to it measured)
    frame = frame_input(max(frames), opts)
    if opts["no_vnet_hdr"] and (opts["vnet_hdr_sz"] is not None or frame.hdr_bytes is not None):
        raise click.UsageError(
            "--vnet-hdr-sz and a header (--hdr, --csum, --gso) need IFF_VNET_HDR "
            "(drop --no-vnet-hdr)"
        )
    base = WriteCase(
        frame_len=0,
        blocking=opts["blocking"],
        sndbuf=opts["sndbuf"],
        vnet_hdr=not opts["no_vnet_hdr"],
        vnet_hdr_sz=opts["vnet_hdr_sz"],
        hdr=frame.hdr_bytes,
        l4=frame.headers.l4 if frame.headers is not None else None,
        tcp_options=opts["tcp_options"],
        tunnel=opts["tunnel"],
    )
    from vnetrx.owner import interrupt_once
    from vnetrx.stop import Deferred

    profile = running_profile()
    cases = (live_verify.offload_cases(base) if offloads
             else live_verify.tunnel_cases(base) if tunnels
             else [case for action in (actions or [None])
                   for case in live_verify.build_cases(
                       frames, replace(base, xdp=action, xdp_adjust_head=xdp_adjust_head,
                                       xdp_adjust_tail=xdp_adjust_tail), variants)])
    # A request the model rejects is an error whoever runs it: one case of each shape is
    # predicted first. Then the privileges, before predicting every case (65535 lengths take
    # seconds: a normal user must not wait that long to be told to run as root).
    live_verify.plan(profile, list({replace(c, frame_len=0): c for c in cases}.values()))
    missing = missing_requirements()
    if missing:
        raise VnetrxError("verify tap needs " + "; ".join(missing))
    with interrupt_once():  # Ctrl-C or SIGTERM, predicting or writing: print what was checked
        interrupted = False
        checks: list[FrameCheck] = []
        held = Deferred()  # entered as soon as the checks are in: printing is never cut short
        try:
            with _progress(len(cases)) as progress:
                # a request the model rejects fails before setup
                planned = live_verify.plan(profile, cases, progress.predicted)
                checks = live_verify.run(profile, cases, progress.written, planned)
            held.__enter__()
        except KeyboardInterrupt as exc:  # keep what was seen: print it, then exit 130
            if isinstance(exc, Interrupted):
                checks = cast("list[FrameCheck]", exc.partial)
            interrupted = True
        with held:
            if as_json:
                from vnetrx.render.json_out import dumps

                sys.stdout.write(dumps(live_verify.report(
                    profile, checks, len(cases) if interrupted else None)))
                sys.stdout.flush()
            else:
                from vnetrx.render.tables import report_console
                from vnetrx.render.verify_text import WIDTH, verify_renderable

                report_console(WIDTH).print(verify_renderable(profile.name, profile.source,
                                                              checks))
    if interrupted or held.signal is not None:
        if interrupted:
            click.echo(f"vnetrx: interrupted after {len(checks)} of {len(cases)} writes",
                       err=True)
        else:
            click.echo("vnetrx: interrupted", err=True)
        sys.exit(130)
    sys.exit(0 if all(c.match for c in checks) else 1)


@verify.command("gro")
@click.option("--cases", "names", metavar="NAMES", default=None,
              help="Comma-separated case names (default: all; --list shows them).")
@click.option("--repeats", type=Count(1, 20, "runs"), default=1, show_default=True,
              help="Write each burst this many times (the observations must repeat).")
@click.option("--list", "list_cases", is_flag=True, help="List the cases and exit.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object (vnetrx.verify-gro/1).")
def verify_gro(names: str | None, repeats: int, list_cases: bool, as_json: bool) -> None:
    """Write TCP bursts into IFF_NAPI taps and compare every skb that leaves GRO with the model.

    \b
    The oracle's matrix (vnetrx/live/gro_cases.py): segment counts around MAX_SKB_FRAGS and
    64 KiB, payload sizes, every flush trigger (PSH, FIN, URG, RST, SYN, CWR, a sequence gap,
    a window, ACK, TTL, TOS or timestamp change, a short or longer segment), IP ID rules, IPv6,
    gro_max_size and BIG TCP, bad checksums, 2/8/9 interleaved flows, vnet headers with
    DATA_VALID, NEEDS_CSUM and a DODGY GSO frame, IFF_NAPI_FRAGS, no flush timeout, GRO off,
    pinned threaded NAPI. As root it creates, and removes again on success, error and Ctrl-C:
    a child process in its own network and mount namespaces, a tap per burst in them, and BPF
    raw-tracepoint programs of vnetrx's own that record each skb entering and leaving GRO (the
    child holds them: they go with it). A burst a jiffy tick or a poll split is written again,
    never guessed. Compared per skb delivered: len, data_len, headlen, truesize, nr_frags,
    gso_size, gso_segs, gso_type, ip_summed, csum_start, csum_offset, the inputs it carries and
    the order; per input its gro_result. The model runs with --kernel running. Exit 0 when
    every case matches, 1 otherwise. (Also `vnetrx verify tap --gro`.)

    \b
    Examples:
      vnetrx verify gro
      vnetrx verify gro --cases seg8,seg46,psh3,flows9 --repeats 3
      vnetrx verify gro --json | jq '.cases[] | select(.match | not)'
    """
    from vnetrx.live import gro_cases

    every = gro_cases.cases()
    if list_cases:
        for case in every:
            click.echo(case["name"])
        return
    chosen = every
    if names is not None:
        wanted = [n for n in names.split(",") if n]
        known = {c["name"] for c in every}
        unknown = [n for n in wanted if n not in known]
        if unknown or not wanted:
            raise click.UsageError(f"--cases: {', '.join(unknown) or 'no name given'}: not a "
                                   "case (vnetrx verify gro --list shows them)")
        chosen = [c for c in every if c["name"] in wanted]
    from vnetrx.live import gro as live_gro
    from vnetrx.live import verify_gro as check
    from vnetrx.live.running import running_profile

    profile = running_profile()
    missing = live_gro.missing_requirements()
    if missing:
        raise VnetrxError("verify gro needs " + "; ".join(missing))
    checks: list[check.GroCheck] = []

    def on_result(case: dict[str, Any], result: dict[str, Any]) -> None:
        checks.append(check.compare(profile, {**case, "tap": gro_cases.tap_options(case)},
                                    result))

    interrupted = False
    try:
        live_gro.run_cases(chosen, repeats, on_result)
    except KeyboardInterrupt:  # the set-up is gone: print what was checked, exit 130
        interrupted = True
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps(check.report(profile, checks,
                                            len(chosen) if interrupted else None)))
    else:
        from vnetrx.render.tables import report_console
        from vnetrx.render.verify_gro_text import WIDTH, verify_gro_renderable

        report_console(WIDTH).print(verify_gro_renderable(profile.name, profile.source, checks))
    if interrupted:
        click.echo(f"vnetrx: interrupted after {len(checks)} of {len(chosen)} cases", err=True)
        sys.exit(130)
    sys.exit(0 if all(c.match for c in checks) else 1)


def _xdp_actions(text: str | None) -> list[str | None]:
    """--xdp's list: names from vnetrx.paths.tun.XDP_ACTIONS, or all of them."""
    from vnetrx.paths.tun import XDP_ACTIONS

    if text is None:
        return []
    names = list(XDP_ACTIONS) if text.strip() == "all" else \
        [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in XDP_ACTIONS]
    if unknown or not names:
        raise click.BadParameter(
            f"{', '.join(unknown) or 'nothing'} is not an XDP action (valid: "
            f"{', '.join(XDP_ACTIONS)}, all)", param_hint="'--xdp'")
    chosen: list[str | None] = list(dict.fromkeys(names))
    return chosen


PLAIN_EVERY = 10.0  # seconds: without a terminal, a progress line this often (long runs only)


class _Progress:
    """Predicting and writing, on stderr: a bar on a terminal (lists of PROGRESS_FROM frames
    or more), else one plain line every PLAIN_EVERY seconds once a run has taken that long
    (a 65535-frame run takes tens of seconds: it must not look hung). Never on stdout."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.bar: Any = None
        self.task: Any = None
        self.last = time.monotonic()

    def predicted(self, done: int, total: int) -> None:
        self._show("predicting frames", done, total)

    def written(self, done: int, total: int) -> None:
        self._show("writing frames", done, total)

    def _show(self, what: str, done: int, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, description=what, completed=done, total=total)
            return
        now = time.monotonic()
        if now - self.last >= PLAIN_EVERY:
            self.last = now
            click.echo(f"vnetrx: verify tap: {what}: {done} of {total}", err=True)


@contextlib.contextmanager
def _progress(total: int) -> Iterator[_Progress]:
    progress = _Progress(total)
    if total < PROGRESS_FROM or not sys.stderr.isatty():
        yield progress
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        progress.bar, progress.task = bar, bar.add_task("predicting frames", total=total)
        yield progress
