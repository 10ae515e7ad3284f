"""``vnetrx lab``: check the virtio-net model against a real guest kernel booted under QEMU."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from vnetrx.cli import cli
from vnetrx.cli.device_options import device_options, xdp_program_options
from vnetrx.cli.options import Count, FilePath


@cli.group()
def lab() -> None:
    """Boot a guest kernel under QEMU and check vnetrx against what its driver builds."""


@lab.command("virtio")
@click.option(
    "--image",
    type=FilePath(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Guest kernel (x86 bzImage), e.g. from `vnetrx lab fetch-kernel`.",
)
@click.option(
    "--from-log",
    type=FilePath(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Do not boot: compare a log saved with --serial-log against the model again.",
)
@click.option(
    "--modules",
    type=FilePath(file_okay=False, path_type=Path),
    default=None,
    help="The guest's /lib/modules/<release> (default: next to the image, then /lib/modules).",
)
@click.option(
    "--mode",
    type=click.Choice(["small", "big", "mergeable", "big-gso", "mergeable-gso"]),
    default="mergeable",
    show_default=True,
    help="small, big (host_mtu > 1500), mergeable: on -netdev dgram, which carries no "
    "virtio-net header, so QEMU clears the guest offloads. big-gso, mergeable-gso: guest "
    "TSO4/TSO6/ECN/UFO negotiated, on vnetrx's own vhost-user backend (Python, part of "
    "vnetrx), which puts a virtio-net header before each frame. See 'What each mode proves'.",
)
@device_options(
    "mtu",
    defaults={"mtu": None},
    where={"mtu": "Offered to the guest as host_mtu. Default: not offered; 9000 in big mode. "
           "Not with the -gso modes."},
    refuse={name: f"does not apply to lab virtio: {why}" for name, why in (
        ("mergeable", "--mode mergeable or mergeable-gso negotiates MRG_RXBUF"),
        ("guest_gso", "--mode big-gso or mergeable-gso negotiates guest GSO"),
        ("hdr_len", "the guest's driver picks vi->hdr_len from what --mode negotiates"),
        ("ring_size", "QEMU's default rx_queue_size (256) is used"),
        ("buf_len", "the guest's driver sizes its buffers (read back from sysfs)"))},
)
@click.option(
    "--len",
    "lengths",
    metavar="LIST",
    default=None,
    help="Frame lengths (1..65535, distinct; under 14 is a short packet): N, A-B or A-B:STEP, comma-separated. "
    "Default: 20+ lengths around the mode's boundaries.",
)
@click.option(
    "--kvm", is_flag=True, help="Use KVM instead of TCG (only where /dev/kvm really works)."
)
@click.option("--no-kprobe", is_flag=True, help="Only the tracepoint: no data/tail/end/mac_header.")
@click.option(
    "--timeout",
    type=Count(10, 3600, "seconds"),
    default=90,
    show_default=True,
    help="Seconds to wait for the guest to get ready, and again to finish.",
)
@click.option(
    "--serial-log",
    type=FilePath(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the guest's serial console output to this file.",
)
@click.option(
    "--offloads",
    is_flag=True,
    help="Send real TCP/UDP frames behind offload headers instead of --len (NEEDS_CSUM, "
    "DATA_VALID, TSO/UFO/USO, and headers the guest refuses, counted in rx_frame_errors). "
    "Needs --mode big-gso or mergeable-gso.",
)
@click.option(
    "--xdp-check",
    is_flag=True,
    help="Also try to attach an XDP program in the guest (a small static probe, built with gcc) "
    "and compare the kernel's answer, errno and message, with `vnetrx xdp check` for the "
    "features it negotiated; the program is detached before the frames are sent.",
)
@xdp_program_options(
    "is attached in the guest before the device starts (the static probe of --xdp-check) for "
    "every test frame (the sentinel passes) and kept for the frames; the skbs and the driver's "
    "XDP counters (ethtool -S) are compared with `vnetrx trace --xdp`, on a vhost-user mode "
    "also the bytes XDP_TX puts on the tx queue. Not in big modes.")
@click.option("--xdp-late", is_flag=True,
              help="With --xdp: attach the program after the device is up, so the frames meet "
              "the ring virtnet_open posted (no XDP headroom) and are copied into fresh pages "
              "(xdp_linearize_page): the first ring after an attach.")
@click.option("--gro", is_flag=True,
              help="Check GRO instead: bursts of TCP flows (IPv4 and IPv6; counts around "
              "MAX_SKB_FRAGS and 64 KiB, flush triggers, other frames in between), each put in "
              "the rx ring with one used-ring update and one interrupt by vnetrx's vhost-user "
              "backend; BPF in the guest records every skb that leaves GRO and the polls; each "
              "is compared with `vnetrx replay --gro` of the same frames and observed polls "
              "(big-gso: each frame's page chain, `vnetrx trace`'s, then GRO per observed "
              "poll). --mode mergeable, mergeable-gso, small or big-gso (all on the vhost-user "
              "backend).")
@click.option("--save-input", type=FilePath(dir_okay=False, path_type=Path), default=None,
              help="With --gro: write the frames the backend wrote, as a JSON array of "
              "{\"frame\": HEX, \"hdr\": HEX} for `vnetrx replay --from`.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object (vnetrx.lab/1; with --gro vnetrx.lab-gro/1).")
def lab_virtio(
    image: Path | None,
    from_log: Path | None,
    modules: Path | None,
    mode: str,
    mtu: int | None,
    lengths: str | None,
    kvm: bool,
    no_kprobe: bool,
    timeout: int,
    serial_log: Path | None,
    offloads: bool,
    xdp_check: bool,
    xdp: str | None,
    xdp_frags: bool,
    xdp_late: bool,
    gro: bool,
    save_input: Path | None,
    as_json: bool,
) -> None:
    """Send frames to a virtio-net guest and compare its skbs with vnetrx's predictions.

    \b
    Builds an initramfs (busybox-static + the image's virtio_pci/virtio_net modules and their
    dependencies), boots the image under QEMU (TCG, 1 vCPU, 256 MiB, -nodefaults) with one
    virtio-net-pci on a `-netdev dgram` unix socket in a private temporary directory, or, in
    the -gso modes, on `-netdev vhost-user` served by vnetrx's own backend on a unix socket
    there (guest RAM a shared memfd, no MSI-X): no IP networking, no tap in either case. The
    guest traces net:napi_gro_receive_entry on the NIC, and a kprobe on napi_gro_receive
    reads skb->head/data/tail/end/mac_header at offsets from the image's BTF. The host writes
    raw frames (dst 52:54:00:12:34:56, EtherType 0x88B5). The model runs for the guest's
    version and negotiated features; frame i of a mergeable run is predicted in the ring
    buffer it lands in. Exit 0 when every frame matches, 1 otherwise.
    The temporary directory, the backend and QEMU are removed on success, error, Ctrl-C and
    SIGTERM; after SIGKILL QEMU dies with vnetrx and the next run removes the directory.

    \b
    What each mode proves, for the lengths sent (default: 20+ around the mode's edges):
      small          small buffers, GOOD_COPY_LEN copy vs build_skb, drops past one buffer
      big            big mode from host_mtu alone: MTU-sized page chains (6.1+)
      mergeable      mergeable buffers carved from 32 KiB page frags, frags, num_buffers
      big-gso        big mode from guest GSO: 18-page chains, frames up to 65535, 17 frags
      mergeable-gso  mergeable mode with guest GSO negotiated: the same buffers as mergeable
      --offloads     (with a -gso mode) virtio_net_hdr_to_skb: NEEDS_CSUM, DATA_VALID, TSO,
                     UFO, USO frames (IPv4/IPv6, documentation addresses, to a foreign MAC)
                     and refused headers; ip_summed, gso_size, gso_type and rx_frame_errors

    \b
    Examples:
      vnetrx lab fetch-kernel
      vnetrx lab virtio --image ~/.cache/vnetrx/lab/linux-image-6.1.0-57-amd64/boot/vmlinuz-6.1.0-57-amd64
      vnetrx lab virtio --image IMG --mode big --len 1000,3744,3745,16353
      vnetrx lab virtio --image IMG --mode big-gso --len 4065,65505,65535
      vnetrx lab virtio --image IMG --mode small --json | jq '.frames[] | select(.match | not)'
      vnetrx lab virtio --image IMG --mode mergeable-gso --offloads
      vnetrx lab virtio --image IMG --mode mergeable --xdp drop --len 60,1000,3508,3509
      vnetrx lab virtio --image IMG --mode mergeable --xdp pass --xdp-frags    # 6.12: 17 frags
      vnetrx lab virtio --image IMG --gro --mode mergeable-gso --save-input boot.json
    """
    from vnetrx.files import MiB, read_bounded
    from vnetrx.lab import run as lab_run
    from vnetrx.lab.compare import report_to_dict
    from vnetrx.live.parse import parse_lengths

    if (image is None) == (from_log is None):
        raise click.UsageError("give exactly one of --image (boot a guest) and --from-log")
    if save_input is not None and not gro:
        raise click.UsageError("--save-input writes the frames of a --gro run: give --gro")
    if gro:
        given = [name for name, on in (("--from-log", from_log is not None),
                                       ("--len", lengths is not None), ("--mtu", mtu is not None),
                                       ("--offloads", offloads), ("--xdp-check", xdp_check),
                                       ("--xdp", xdp is not None), ("--no-kprobe", no_kprobe))
                 if on]
        if given:
            raise click.UsageError(f"--gro sends its own bursts and records with BPF: drop "
                                   f"{', '.join(given)}")
        assert image is not None
        _lab_gro(image, mode, modules, kvm, timeout, serial_log, save_input, as_json)
        return
    if from_log is not None:
        report = lab_run.recheck_log(
            read_bounded(str(from_log), 256 * MiB, "--from-log").decode(errors="replace"),
            None if lengths is None else parse_lengths(lengths, 0, lab_run.MAX_FRAME),
        )
        if as_json:
            from vnetrx.render.json_out import dumps

            sys.stdout.write(dumps(report_to_dict(report)))
        else:
            from vnetrx.render.lab_text import WIDTH, lab_renderable
            from vnetrx.render.tables import report_console

            report_console(WIDTH).print(lab_renderable(report))
        sys.exit(0 if report.match else 1)
    assert image is not None
    if offloads and lengths is not None:
        raise click.UsageError("--offloads sends its own frames: drop --len")
    frames = (
        lab_run.default_lengths(mode, xdp is not None)
        if lengths is None
        else parse_lengths(lengths, 0, lab_run.MAX_FRAME)
    )
    from vnetrx.owner import interrupt_once
    from vnetrx.stop import Deferred

    held = Deferred()  # entered once the result is in: printing is never cut short
    try:
        with interrupt_once(), stage_line() as on_stage:  # SIGTERM cleans up as Ctrl-C does
            result = _run_virtio(lab_run, image, mode, frames, modules, mtu, kvm, no_kprobe,
                                 timeout, offloads, on_stage, xdp_check, xdp, xdp_frags,
                                 xdp_late)
            held.__enter__()
    except KeyboardInterrupt:
        # the guest's frames are compared only once it has finished: nothing was checked
        with Deferred():
            _interrupted(as_json)
    with held:
        _print_run(result, serial_log, as_json)
    if held.signal is not None:
        click.echo("vnetrx: interrupted", err=True)
        sys.exit(130)
    sys.exit(0 if result.report.match else 1)


def _lab_gro(image: Path, mode: str, modules: Path | None, kvm: bool, timeout: int,
             serial_log: Path | None, save_input: Path | None, as_json: bool) -> None:
    """``lab virtio --gro``: one boot, every burst, every skb that left GRO compared."""
    from vnetrx.errors import InputError
    from vnetrx.lab import gro as lab_gro
    from vnetrx.owner import interrupt_once
    from vnetrx.stop import Deferred

    if mode not in lab_gro.MODES:
        raise InputError(f"--gro: mode {mode} is not checked (valid: "
                         f"{', '.join(lab_gro.MODES)}): big mode without guest GSO needs "
                         "host_mtu > 1500, which vnetrx's vhost-user backend does not offer")
    held = Deferred()
    try:
        with interrupt_once(), stage_line() as on_stage:
            result = lab_gro.run_gro(image, mode, modules=modules,
                                     accel="kvm" if kvm else "tcg", timeout_s=float(timeout),
                                     on_stage=on_stage)
            held.__enter__()
    except KeyboardInterrupt:
        with Deferred():
            _interrupted(as_json)
    with held:
        if serial_log is not None:
            serial_log.write_text(result.serial)
        if save_input is not None:
            import json

            save_input.write_text(json.dumps(lab_gro.input_objects(result.frames)) + "\n")
        report = result.report
        if as_json:
            from vnetrx.render.json_out import dumps

            sys.stdout.write(dumps({**lab_gro.report_to_dict(report),
                                    "boot_s": round(result.boot_s, 2),
                                    "total_s": round(result.total_s, 2)}))
            sys.stdout.flush()
        else:
            from vnetrx.render.lab_gro_text import lab_gro_lines

            for line in lab_gro_lines(report, result.boot_s, result.total_s,
                                      None if save_input is None else str(save_input)):
                click.echo(line)
    if held.signal is not None:
        click.echo("vnetrx: interrupted", err=True)
        sys.exit(130)
    sys.exit(0 if report.match and report.bursts else 1)


def _interrupted(as_json: bool) -> None:
    """Ctrl-C or SIGTERM before the guest's frames were compared (everything the run created
    is removed by then): with --json a whole error document saying so; exit 130."""
    message = "interrupted before the guest's frames were compared"
    if as_json:
        from vnetrx.codec import error_to_dict
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps({**error_to_dict(message, 130), "interrupted": True}))
        sys.stdout.flush()
    click.echo(f"vnetrx: {message}", err=True)
    sys.exit(130)


def _run_virtio(lab_run: Any, image: Path, mode: str, frames: tuple[int, ...],
                modules: Path | None, mtu: int | None, kvm: bool, no_kprobe: bool,
                timeout: int, offloads: bool, on_stage: Callable[[str], None],
                xdp_check: bool, xdp: str | None, xdp_frags: bool, xdp_late: bool) -> Any:
    return lab_run.run_virtio(
        image,
        mode,
        frames,
        modules=modules,
        mtu=mtu,
        accel="kvm" if kvm else "tcg",
        kprobe=not no_kprobe,
        timeout_s=float(timeout),
        offloads=offloads,
        on_stage=on_stage,
        xdp_check=xdp_check,
        xdp=xdp,
        xdp_frags=xdp_frags,
        xdp_late=xdp_late,
    )


def _print_run(result: Any, serial_log: Path | None, as_json: bool) -> None:
    from vnetrx.lab.compare import report_to_dict

    if serial_log is not None:
        serial_log.write_text(result.serial)
    report = result.report
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps(report_to_dict(report, result.boot_s, result.total_s)))
        sys.stdout.flush()
    else:
        from vnetrx.render.lab_text import WIDTH, lab_renderable
        from vnetrx.render.tables import report_console

        report_console(WIDTH).print(lab_renderable(report, result.boot_s, result.total_s))


@lab.command("vhost")
@click.option("--series", type=click.Choice(["6.1", "6.12", "both"]), default="both",
              show_default=True,
              help="Which cached Debian kernels to boot (`vnetrx lab fetch-kernel --series S`).")
@click.option("--image", "images", multiple=True,
              type=FilePath(exists=True, dir_okay=False, path_type=Path),
              help="A guest kernel (x86 bzImage) instead of --series; repeatable.")
@click.option("--modules", type=FilePath(file_okay=False, path_type=Path), default=None,
              help="The guest's /lib/modules/<release> (default: next to the image).")
@click.option("--from-log", "logs", multiple=True,
              type=FilePath(exists=True, dir_okay=False, path_type=Path),
              help="Do not boot: read a serial log saved with --save-dir again; repeatable.")
@click.option("--save-dir", type=FilePath(file_okay=False, path_type=Path), default=None,
              help="Write linux-<release>.json (the observed records) and linux-<release>.log "
              "(the serial console) of each kernel here.")
@click.option("--no-predict", is_flag=True, help="Print what the kernels did, compare nothing.")
@click.option("--kvm", is_flag=True, help="Use KVM instead of TCG (only where /dev/kvm works).")
@click.option("--timeout", type=Count(10, 3600, "seconds"), default=120, show_default=True,
              help="Seconds to wait for each guest to get ready, and again to finish.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (vnetrx.lab-vhost-run/1).")
def lab_vhost(series: str, images: tuple[Path, ...], modules: Path | None,
              logs: tuple[Path, ...], save_dir: Path | None, no_predict: bool, kvm: bool,
              timeout: int, as_json: bool) -> None:
    """Drive each guest kernel's own /dev/vhost-net and record what it builds.

    \b
    vhost needs no KVM: a static probe (vnetrx's own, built with gcc -static) runs in the
    guest, loads tun and vhost_net, gives vhost one memory region (guest-physical = its own
    addresses) with an rx and a tx split ring, and attaches a tap of its own (IFF_VNET_HDR,
    12-byte header, as QEMU sets it up). One boot per kernel (QEMU, TCG, no NIC: the guest
    talks only to its tap) runs every case:
      TX  frames of 0 … 3636/3637 … 9000 bytes behind chosen virtio_net_hdrs (none,
          NEEDS_CSUM, DATA_VALID, TCPv4 GSO, refused ones), with the tap's default sndbuf
          (INT_MAX: vhost batches them, tun_xdp_one), a finite TUNSETSNDBUF (tun_get_user)
          and an XDP_PASS program on the tap (more headroom: 3380/3381 is the edge):
          the road (kprobes on tun_sendmsg/tun_get_user; tun_xdp_one is inlined), build_skb's
          buflen, netif_receive_skb_entry's len/data_len/truesize/frags, refusals, stalls
      RX  frames and GSO skbs sent on the tap (AF_PACKET, PACKET_VNET_HDR) into buffers the
          probe posted (mergeable or not): used lengths, num_buffers, the header vhost wrote,
          "Discarded rx packet"
    Each kernel's records are compared with `vnetrx trace --path vhost-tx` and `vnetrx replay
    --path vhost-rx` when this vnetrx has them; otherwise only what was observed is printed.
    Exit 1 when a prediction differs.

    \b
    Examples:
      vnetrx lab fetch-kernel --series 6.1 && vnetrx lab fetch-kernel --series 6.12
      vnetrx lab vhost
      vnetrx lab vhost --series 6.12 --json | jq '.kernels[0].tx[] | select(.len == 1000)'
      vnetrx lab vhost --save-dir tests/data/vhost --no-predict
      vnetrx lab vhost --from-log tests/data/vhost/linux-6.1.0-57-amd64.log
    """
    from vnetrx.lab import vhost_run
    from vnetrx.lab.vhost_compare import compare, comparison_to_dict
    from vnetrx.lab.vhost_predict import CliPredictions

    if logs and images:
        raise click.UsageError("give --from-log or --image, not both")
    runs: list[tuple[dict[str, Any], str | None, float | None, float | None]] = []
    if logs:
        from vnetrx.files import MiB, read_bounded

        for log in logs:
            text = read_bounded(str(log), 64 * MiB, "--from-log").decode(errors="replace")
            runs.append((vhost_run.recheck(text), None, None, None))
    else:
        chosen = list(images) or vhost_run.images(
            vhost_run.SERIES if series == "both" else (series,))
        from vnetrx.owner import interrupt_once

        try:
            with interrupt_once(), stage_line() as on_stage:
                for image in chosen:
                    result = vhost_run.run_vhost(image, modules=modules,
                                                 accel="kvm" if kvm else "tcg",
                                                 timeout_s=float(timeout), on_stage=on_stage)
                    runs.append((result.document, result.serial, result.boot_s,
                                 result.total_s))
        except KeyboardInterrupt:
            _interrupted(as_json)
    predictions = None if no_predict else CliPredictions()
    kernels = []
    for document, serial, boot_s, total_s in runs:
        comparison = None
        if predictions is not None:
            comparison = compare(document, predictions.tx, predictions.rx)
            if comparison.compared == 0:
                comparison = None
        if save_dir is not None:
            _save(save_dir, document, serial)
        kernels.append((document, comparison, boot_s, total_s))
    notes = list(predictions.notes) if predictions is not None else ["--no-predict given"]
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps({
            "schema": "vnetrx.lab-vhost-run/1",
            "predictions": any(c is not None for _, c, _, _ in kernels),
            "notes": notes,
            "kernels": [{**document, "boot_s": boot_s, "total_s": total_s,
                         "comparison": None if c is None else comparison_to_dict(c)}
                        for document, c, boot_s, total_s in kernels],
        }))
    else:
        from vnetrx.render.lab_vhost_text import WIDTH, vhost_renderable
        from vnetrx.render.tables import report_console

        console = report_console(WIDTH)
        for document, c, boot_s, total_s in kernels:
            console.print(vhost_renderable(document, c, notes, boot_s, total_s))
    differ = any(c is not None and c.mismatches for _, c, _, _ in kernels)
    sys.exit(1 if differ else 0)


def _save(save_dir: Path, document: dict[str, Any], serial: str | None) -> None:
    from vnetrx.render.json_out import dumps

    save_dir.mkdir(parents=True, exist_ok=True)
    stem = f"linux-{document['kernel']['release']}"
    (save_dir / f"{stem}.json").write_text(dumps(document))
    if serial is not None:
        (save_dir / f"{stem}.log").write_text(serial)


@lab.command("fetch-kernel")
@click.option(
    "--series",
    default="6.1",
    show_default=True,
    help="Kernel series: the newest linux-image-<series>*-amd64 apt knows.",
)
@click.option("--package", default=None, help="An exact package name instead.")
@click.option(
    "--dest",
    type=FilePath(file_okay=False, path_type=Path),
    default=None,
    help="Where to unpack (default: $VNETRX_LAB_DIR or ~/.cache/vnetrx/lab).",
)
def lab_fetch_kernel(series: str, package: str | None, dest: Path | None) -> None:
    """Download a Debian kernel with apt-get download and unpack it with dpkg-deb -x.

    \b
    Nothing is installed: the package is unpacked into the cache, and the command prints the
    image path to pass to `vnetrx lab virtio --image` (its modules are found next to it).
    Needs apt (a Debian or Ubuntu host, after apt-get update); no root needed.
    """
    from vnetrx.lab.fetch import fetch
    from vnetrx.lab.run import cache_dir

    with stage_line() as on_stage:
        fetched = fetch(series, dest or cache_dir(), package, on_stage)
    click.echo(str(fetched.image))


@contextlib.contextmanager
def stage_line() -> Iterator[Callable[[str], None]]:
    """A spinner with the current stage and the time it has taken, on stderr when it is a
    terminal (lab boots take tens of seconds); a no-op otherwise."""
    if not sys.stderr.isatty():
        yield lambda _text: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("starting", total=None)
        yield lambda text: progress.update(task, description=text)
