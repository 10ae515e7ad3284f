"""``vnetrx observe``: what this machine's device really received, against the model."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from vnetrx.cli import cli
from vnetrx.cli.device_options import device_options
from vnetrx.cli.options import Count, FilePath
from vnetrx.errors import Interrupted, VnetrxError

if TYPE_CHECKING:
    from vnetrx.kernel.profile import KernelProfile
    from vnetrx.live.observe import ObserveReport, Seen, Setup, TraceFile
    from vnetrx.live.observe_gro import NapiFacts, Recording

DEFAULT_COUNT = 20
GRO_COUNT = 1000
_OFFLINE = ("features", "mergeable", "guest_gso", "mtu", "hdr_len", "buf_len")
# the device options observe takes from the user only for trace text: live, and in a lab log,
# the device says them
_FROM_TEXT = ("With --from-trace text only (live observe and a lab log read them from the "
              "device).")


@cli.command("observe")
@click.option("--dev", "dev", metavar="NAME", default=None, help="The network device to watch.")
@click.option(
    "--count",
    type=Count(1, 100_000, "skbs"),
    default=None,
    help=f"Stop after this many skbs (live default {DEFAULT_COUNT}; a trace file: all).",
)
@click.option(
    "--timeout",
    type=Count(1, 86_400, "seconds"),
    default=30,
    show_default=True,
    help="Live: stop waiting after this many seconds.",
)
@click.option(
    "--from-trace",
    "trace_file",
    type=FilePath(dir_okay=False, path_type=Path),
    default=None,
    help="Read a saved trace instead, its format detected: tracefs trace/trace_pipe text, "
    "`perf script` or `perf data convert --to-json` of net:napi_gro_receive_entry / "
    "net:netif_receive_skb_entry / net:netif_receive_skb, pwru text or --output-json (with "
    "--output-skb --output-skb-shared-info for more than len), a retis events file (retis "
    "collect -o), the bpftrace output of --bpftrace-script, or a `vnetrx lab virtio "
    "--serial-log` file.",
)
@click.option(
    "--bpftrace-script",
    "bpftrace_script",
    is_flag=True,
    help="Print the bpftrace program that records what --from-trace compares (on a machine "
    "without vnetrx: bpftrace -f json skbs.bt > skbs.json), for --dev's skbs when given.",
)
@click.option(
    "--tap",
    is_flag=True,
    help="The traced device is a tun/tap device (for --from-trace captures that do not say: "
    "a probe after GRO, such as retis's default net:netif_receive_skb).",
)
@click.option(
    "--kernel",
    metavar="V",
    default=None,
    help="Kernel to model (a version, a release string or 'running'). Default: the running "
    "kernel; for a lab log, the guest's.",
)
@click.option(
    "--features",
    metavar="BITS",
    default=None,
    help="The device's /sys/bus/virtio/devices/*/features bit string. " + _FROM_TEXT,
)
@device_options(
    "mergeable", "guest_gso", "mtu", "hdr_len", "buf_len",
    defaults={"mtu": None},
    where={"mergeable": _FROM_TEXT, "guest_gso": _FROM_TEXT,
           "mtu": _FROM_TEXT + " Default: 1500, no VIRTIO_NET_F_MTU.",
           "hdr_len": _FROM_TEXT + " Default: from the features.", "buf_len": _FROM_TEXT},
    refuse={"ring_size": "does not apply to observe: the buffer a frame landed in is unseen, "
            "so each candidate buffer is tried (a ring of 256, virtio_net's default)"},
    buf_len=(1, 65536),
)
@click.option(
    "--gro",
    is_flag=True,
    help="Live: record what enters and leaves GRO (and the NAPI polls) and check every skb "
    f"that leaves it against the model (--count: skbs entering GRO, default {GRO_COUNT}).",
)
@click.option(
    "--save-recording",
    "save_to",
    type=FilePath(dir_okay=False, path_type=Path),
    default=None,
    help="With --gro: also write what was recorded (skb fields and header bytes, no payload "
    "past 80 bytes) to this file, for --from-recording.",
)
@click.option(
    "--from-recording",
    "recording_file",
    type=FilePath(dir_okay=False, path_type=Path),
    default=None,
    help="Check a recording saved by --gro --save-recording instead of a live device "
    "(implies --gro).",
)
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object (vnetrx.observe/1; with --gro vnetrx.observe-gro/1).")
def observe_command(
    dev: str | None,
    count: int | None,
    timeout: int,
    trace_file: Path | None,
    bpftrace_script: bool,
    tap: bool,
    kernel: str | None,
    gro: bool,
    save_to: Path | None,
    recording_file: Path | None,
    as_json: bool,
    **offline: object,
) -> None:
    """Watch the skbs a virtio_net or tap device receives and check each against the model.

    \b
    Live (root, tracefs): reads the device's driver and MTU (ioctls), its negotiated virtio
    features and mergeable_rx_buffer_size (sysfs), then records net:napi_gro_receive_entry
    (virtio_net) or net:netif_receive_skb_entry (tun/tap) filtered on the device, in a
    tracefs instance of its own (instances/vnetrx-<pid>, removed on exit, error and Ctrl-C).
    Nothing is configured and nothing is sent. Each skb is predicted for frame length
    len + 14 and labelled with the path that built it (small/big/mergeable/tap, build_skb or
    copy). What vnetrx cannot see (the posted buffer a frame landed in, the tap writer's fd
    settings) is varied: a fit there shows as "consistent", not as a mismatch.
    Exit 0 when no skb contradicts the model, 1 otherwise.

    \b
    --gro (live, root): BPF raw-tracepoint programs of vnetrx's own, filtered on the device,
    record every skb napi_gro_receive gets (fields, Ethernet header, 80 bytes at skb->data),
    every skb netif_receive_skb delivers and every NAPI poll (napi:napi_poll); each whole poll's
    inputs then go through the model's GRO and every output is compared (len, data_len,
    headlen, truesize, nr_frags, frag_list, gso_size, gso_segs, gso_type, ip_summed, the inputs
    it carries, its order). gro_flush_timeout, napi_defer_hard_irqs and CONFIG_HZ are read;
    polls the model cannot start empty are listed, not guessed. Exit 0 when no output differs
    (also when there was nothing to compare), 1 otherwise.

    \b
    --from-trace: each skb of the capture is compared on the fields its tool records (pwru
    without --output-skb records only len; retis has no truesize); a field not recorded is
    listed as "not in the capture", never counted as agreement. The skbs are read at one probe
    point: net:napi_gro_receive_entry / napi_gro_receive (before GRO: what virtio_net built),
    else net:netif_receive_skb_entry / netif_receive_skb() (a tap's write), else after GRO
    (net:netif_receive_skb, retis's default), where an skb may be an aggregate of several:
    such skbs are not compared as driver skbs ("not compared", with the reason). Exit 0 when no
    skb contradicts the model and at least one could be compared.

    \b
    Examples:
      sudo vnetrx observe --dev eth0 --count 50
      sudo vnetrx observe --dev eth0 --gro --count 2000 --timeout 10
      vnetrx observe --from-trace guest-serial.log
      vnetrx observe --from-trace trace.txt --dev eth1 --mergeable --buf-len 1536 --kernel 6.1
      vnetrx observe --from-trace retis.data --tap --kernel 6.12
      vnetrx observe --bpftrace-script --dev eth0 > skbs.bt
    """
    from vnetrx.live import observe as core

    if bpftrace_script:
        if trace_file is not None or gro or recording_file is not None or save_to is not None:
            raise click.UsageError("--bpftrace-script prints a program: it takes --dev only")
        from vnetrx.observed.captures import bpftrace_script as script

        if dev is not None:
            from vnetrx.live.device import check_name

            check_name(dev)
            if '"' in dev or "\\" in dev or not dev.isprintable():
                raise click.UsageError(f"--dev {dev!r}: not a name a bpftrace string can hold")
        click.echo(script(dev), nl=False)
        return
    if tap and trace_file is None:
        raise click.UsageError("--tap describes the device of a --from-trace capture")

    if save_to is not None and (not gro or recording_file is not None):
        raise click.UsageError("--save-recording goes with a live --gro run")
    if gro or recording_file is not None:
        used = [f"--{n.replace('_', '-')}" for n in _OFFLINE if offline.get(n)]
        if used:
            raise click.UsageError(f"{', '.join(used)} apply to --from-trace text only")
        if trace_file is not None:
            raise click.UsageError("--gro reads a live device or --from-recording, not "
                                   "--from-trace")
        if recording_file is None and dev is None:
            raise click.UsageError("give --dev NAME (or --from-recording FILE)")
        _gro(dev, GRO_COUNT if count is None else count, timeout, kernel, as_json, save_to,
             recording_file)
        return
    if count is None and trace_file is None:
        count = DEFAULT_COUNT
    if trace_file is None:
        if dev is None:
            raise click.UsageError("give --dev NAME (or --from-trace FILE)")
        used = [f"--{n.replace('_', '-')}" for n in _OFFLINE if offline.get(n)]
        if used:
            raise click.UsageError(f"{', '.join(used)} apply to --from-trace text only")
        assert count is not None
        report = _live(dev, count, timeout, kernel)
    else:
        text = _read(trace_file)
        try:
            trace = core.parse_trace(text, dev)
        except VnetrxError as exc:
            raise type(exc)(f"{trace_file}: {exc.message}", hint=exc.hint) from None
        seen, log = trace.seen, trace.log
        if log is not None:
            used = [f"--{n.replace('_', '-')}" for n in _OFFLINE if offline.get(n)]
            if used:
                raise click.UsageError(
                    f"the lab log states the device's features: drop {', '.join(used)}"
                )
            if not log.complete:
                raise VnetrxError(f"{trace_file}: the log has no complete trace (no trace-end)")
            setup = core.setup_from_log(log)
        else:
            setup = _setup_from_options(seen, offline, tap, trace, trace_file)
        if count is not None:
            seen = seen[:count]
        profile = _profile(kernel, setup, log is not None)
        report = core.observe(profile, setup, seen, trace)
    from vnetrx.stop import Deferred

    with Deferred() as held:  # a signal now cannot cut the document short
        if as_json:
            from vnetrx.render.json_out import dumps

            sys.stdout.write(dumps(core.report_to_dict(report)))
            sys.stdout.flush()
        else:
            from vnetrx.render.observe_text import WIDTH, observe_renderable
            from vnetrx.render.tables import report_console

            report_console(WIDTH).print(observe_renderable(report))
    if report.interrupted:
        click.echo(f"vnetrx: interrupted after {len(report.frames)} skbs", err=True)
        sys.exit(130)
    if held.signal is not None:
        click.echo("vnetrx: interrupted", err=True)
        sys.exit(130)
    sys.exit(0 if report.match else 1)


def _gro(dev: str | None, count: int, timeout: int, kernel: str | None, as_json: bool,
         save_to: Path | None, recording_file: Path | None) -> None:
    """observe --gro: record (or read a recording), analyse, print; exit 0 when no output
    differs."""
    from vnetrx.live import observe_gro as core

    interrupted = False
    if recording_file is not None:
        import json

        try:
            doc = json.loads(_read(recording_file))
        except ValueError as exc:
            raise VnetrxError(f"{recording_file}: not JSON ({exc})") from None
        recording, facts, recorded_on = core.recording_from_dict(doc)
        if dev is not None and dev != facts.device:
            raise VnetrxError(f"{recording_file} recorded {facts.device}, not {dev}")
        from vnetrx.kernel.choice import load_profile

        if kernel is None and not recorded_on:
            raise click.UsageError(f"{recording_file} names no kernel: give --kernel")
        profile = load_profile(kernel or recorded_on, None)
        count = len(recording.records)
    else:
        assert dev is not None
        profile, facts, recording, interrupted = _gro_live(dev, count, timeout, kernel)
        if save_to is not None:
            try:
                save_to.write_text(core.recording_text(
                    core.recording_to_dict(recording, facts, profile.name)))
            except OSError as exc:
                raise VnetrxError(f"cannot write {save_to}: {exc.strerror}") from None
    report = core.analyse(profile, facts, recording, interrupted=interrupted)
    from vnetrx.stop import Deferred

    with Deferred() as held:
        if as_json:
            from vnetrx.render.json_out import dumps

            sys.stdout.write(dumps(core.report_to_dict(report)))
            sys.stdout.flush()
        else:
            from vnetrx.render.observe_gro_text import observe_gro_renderable
            from vnetrx.render.observe_text import WIDTH
            from vnetrx.render.tables import report_console

            report_console(WIDTH).print(observe_gro_renderable(report))
    if interrupted or held.signal is not None:
        click.echo(f"vnetrx: interrupted after {report.inputs} skbs", err=True)
        sys.exit(130)
    sys.exit(0 if report.match else 1)


def _gro_live(dev: str, count: int, timeout: int, kernel: str | None
              ) -> tuple[KernelProfile, NapiFacts, Recording, bool]:
    from vnetrx.live import observe_gro as core
    from vnetrx.live.device import read_device
    from vnetrx.owner import interrupt_once

    info = read_device(dev)
    if info.driver not in ("virtio_net", "tun"):
        core_setup(dev)  # the one-line refusal of a driver observe does not model
    if info.driver != "virtio_net":
        raise VnetrxError(
            f"{dev} is driven by {info.driver}: observe --gro models virtio_net devices (a "
            "tap's GRO is checked by tools/gro_oracle.py)"
        )
    profile = _profile(kernel, core_setup(dev), False)
    from vnetrx.live.grobpf import missing_for_bpf

    missing = missing_for_bpf()
    if missing:
        raise VnetrxError("observe --gro needs " + "; ".join(missing))
    facts = core.read_napi_facts(dev)
    interrupted = False
    try:
        with interrupt_once(), _progress(count, dev) as advance:
            recording = core.record(dev, count, float(timeout), lambda _n: advance())
    except KeyboardInterrupt as exc:
        partial = exc.partial if isinstance(exc, Interrupted) else None
        recording = partial if isinstance(partial, core.Recording) else core.Recording(())
        interrupted = True
    return profile, facts, recording, interrupted


def core_setup(dev: str) -> Setup:
    from vnetrx.live import observe as core
    from vnetrx.live.device import read_device

    return core.setup_from_device(read_device(dev))


def _read(path: Path) -> str:
    from vnetrx.files import MiB, read_bounded

    return read_bounded(str(path), 1024 * MiB, "--from-trace").decode(errors="replace")


def _profile(kernel: str | None, setup: Setup, from_lab: bool) -> KernelProfile:
    from vnetrx.kernel.choice import load_profile

    if kernel is None and from_lab and setup.version:
        from vnetrx.kernel.registry import lookup

        return lookup(setup.version)
    return load_profile(kernel or "running", None)


def _setup_from_options(seen: list[Seen], o: dict[str, object], tap: bool, trace: TraceFile,
                        trace_file: Path) -> Setup:
    """The device: a tap when --tap says so or the probe is a tap's (netif_receive_skb, which
    virtio_net never calls), a virtio_net device described by the options when the probe is
    GRO's; after GRO the capture does not say which, so it is asked for."""
    from vnetrx.live import observe as core

    first = seen[0]
    device = first.dev or "?"
    described = [f"--{n.replace('_', '-')}" for n in _OFFLINE if o.get(n) and n != "mtu"]
    if tap and described:
        raise click.UsageError(f"--tap and {', '.join(described)}: a tap has no virtio features")
    if trace.stage == "post-gro" and not tap and not described and not o.get("mtu"):
        raise click.UsageError(
            f"{trace_file}: its skbs were caught at {trace.probe}, which every driver reaches: "
            f"say what {device} is (--tap, or the virtio_net device's --features BITS or "
            "--mergeable/--guest-gso/--mtu/--buf-len)"
        )
    if tap or trace.stage == "no-gro":
        used = [f"--{n.replace('_', '-')}" for n in _OFFLINE if o.get(n) and n != "mtu"]
        if used:
            raise click.UsageError(f"{', '.join(used)} describe a virtio device, not a tap")
        return core.Setup(device, "tun", mtu=int(str(o.get("mtu") or 1500)), source="options")
    if o.get("features"):
        if o.get("mergeable") or o.get("guest_gso"):
            raise click.UsageError("--features already says whether MRG_RXBUF and GSO are on")
        from vnetrx.observed.negotiated import decode_features

        try:
            features = decode_features(str(o["features"]))
        except ValueError as exc:
            raise click.UsageError(f"--features: {exc}") from None
    else:
        names = ["VERSION_1"]
        if o.get("mergeable"):
            names.append("MRG_RXBUF")
        if o.get("guest_gso"):
            names += ["GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN"]
        if o.get("mtu"):
            names.append("MTU")
        features = tuple(names)
    if o.get("buf_len") and "MRG_RXBUF" not in features:
        raise click.UsageError("--buf-len is the mergeable buffer size: it needs MRG_RXBUF")
    hdr, mtu = o.get("hdr_len"), int(str(o.get("mtu") or 1500))
    return core.Setup(
        device,
        "virtio_net",
        features,
        mtu,
        core.virtio_rx(features, mtu, int(str(hdr)) if hdr else None,
                       int(str(o["buf_len"])) if o.get("buf_len") else None),
        source="options",
    )


def _live(dev: str, count: int, timeout: int, kernel: str | None) -> ObserveReport:
    from vnetrx.live import observe as core
    from vnetrx.live.device import read_device
    from vnetrx.live.tracefs import collect, missing_for_tracing

    setup = core.setup_from_device(read_device(dev))
    profile = _profile(kernel, setup, False)
    next(core.Observer(profile, setup).candidates(60))  # a bad setup fails before tracing
    missing = missing_for_tracing()
    if missing:
        raise VnetrxError("observe needs " + "; ".join(missing))
    from vnetrx.owner import interrupt_once

    interrupted = False
    try:
        with interrupt_once(), _progress(count, dev) as advance:
            def keep(line: str) -> bool:
                ours = _ours(line, dev, setup.event)
                if ours:
                    advance()
                return ours

            lines = collect(dev, setup.event, count, float(timeout), keep)
    except KeyboardInterrupt as exc:  # keep what was seen (the tracing is already removed),
        # even nothing: README's Ctrl-C "prints what was seen so far"
        lines = cast("list[str]", exc.partial) if isinstance(exc, Interrupted) else []
        interrupted = True
    seen = [s for line in lines if (s := core.parse_line(line)) is not None]
    if not seen and not interrupted:
        raise VnetrxError(f"no skb arrived on {dev} within {timeout} s")
    report = core.observe(profile, setup, seen)
    return replace(report, interrupted=True) if interrupted else report


@contextlib.contextmanager
def _progress(count: int, dev: str) -> Iterator[Callable[[], None]]:
    """skbs recorded so far against --count, on stderr when it is a terminal (else nothing)."""
    if not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn(f"recording skbs on {dev}"), BarColumn(), MofNCompleteColumn(),
                  console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("skbs", total=count)
        yield lambda: progress.advance(task)


def _ours(line: str, dev: str, event: str) -> bool:
    from vnetrx.live.observe import parse_line

    seen = parse_line(line)
    return seen is not None and seen.event == event and seen.dev == dev


