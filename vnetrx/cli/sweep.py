"""``vnetrx sweep``: one trace per frame length (and per kernel), collapsed into ranges."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import click

from vnetrx.cli import cli
from vnetrx.cli import trace as trace_cli
from vnetrx.cli.export_options import export_options, export_pictures
from vnetrx.errors import InputError
from vnetrx.kernel.choice import BuildChoice, load_profile
from vnetrx.live.parse import parse_lengths
from vnetrx.sweep import (
    CSV_FIELDS,
    SWEEP_SCHEMA,
    Row,
    Span,
    collapse,
    row_line,
    row_values,
    span_to_dict,
    tap_rows,
    vhost_tx_rows,
    virtio_rows,
    weighted_totals,
)
from vnetrx.trace_input import (
    frame_input,
    rx_frame,
    tap_frame,
    tap_setup,
    vhost_tx_setup,
    virtio_setup,
)

# Every trace option except the ones sweep owns (the length, the kernel, the output format) and
# those of a single trace (--frag-source; --load, a saved one).
_OWN = {"frame_len", "kernel", "as_json", "svg", "html", "frag_source", "load"}


@cli.command()
@click.option("--len", "length_list", default=None, metavar="LIST",
              help="Frame lengths: A-B[:STEP] and/or N, comma-separated (1..65535), e.g. "
              "60-1514 or 1-65535:7.")
@click.option("--weights", "weights_file", default=None, metavar="FILE",
              help="Instead of --len: a length distribution (a pcap/pcapng capture's frames, a "
              "JSON array or a LIST, - for standard input), each length weighted by how often "
              "it occurs; prints the totals of that traffic per kernel (JSON: "
              "vnetrx.sweep-summary/1).")
@click.option("--kernel", "kernels", multiple=True, metavar="V",
              help="Kernel(s) to sweep; give several to compare (default: the newest).")
@click.option("--jsonl", is_flag=True, help="One JSON summary per line, streamed "
              "(schema vnetrx.sweep-row/1).")
@click.option("--csv", "as_csv", is_flag=True, help="CSV: one row per length.")
@click.option("--json", "as_json", is_flag=True, help="The ranges as one JSON object "
              "(schema vnetrx.sweep/1).")
@export_options
@click.pass_context
def sweep(ctx: click.Context, /, length_list: str | None, weights_file: str | None,
          kernels: tuple[str, ...], jsonl: bool, as_csv: bool, as_json: bool,
          **opts: Any) -> None:
    """Trace every frame length in a range and show where the outcome or the cost changes.

    Takes every `vnetrx trace` option (--mergeable, --guest-gso, --mtu, --hdr-len, --path tap, build
    options, ...). Text: the ranges where nothing changes and a chart of truesize and bytes
    copied against length; --jsonl / --csv: one line per length; --json: the ranges.

    \b
    Examples:
      vnetrx sweep --len 60-1514 --mergeable --kernel 6.1
      vnetrx sweep --len 60-1514 --mergeable --kernel 5.12 --kernel 5.13
      vnetrx sweep --len 1-65535 --guest-gso --kernel 6.1 --jsonl | head
      vnetrx sweep --len 14-9000 --path tap --csv > tap.csv
      vnetrx sweep --len 54-65535 --mergeable --l4 tcp4 --gso tcpv4:1448 --kernel 6.6.44 --csv
      vnetrx sweep --weights capture.pcap --mergeable --mtu 9000 --kernel 6.1 --kernel 6.12
      vnetrx sweep --len 1000-9000:500 --l4 tcp4 --mergeable --mtu 9000 --gro --segments 45

    With --gro (and --segments N, --napi, the GRO limits of `vnetrx trace --gro`): a TCP flow
    of N segments of each length through the path and GRO, one row per length: the skbs the
    stack receives, the first one's segments, layout and why GRO completed it, and what the
    socket is charged per payload byte (--jsonl: vnetrx.sweep-gro-row/1; --csv).
    """
    if sum((jsonl, as_csv, as_json)) > 1:
        raise InputError("choose one of --jsonl, --csv and --json")
    if (length_list is None) == (weights_file is None):
        raise click.UsageError("give the lengths with exactly one of --len LIST and "
                               "--weights FILE")
    weights: dict[int, int] | None = None
    if weights_file is not None:
        if jsonl or as_csv:
            raise click.UsageError("--weights prints totals: not with --jsonl or --csv")
        weights = _weights(weights_file)
        lengths: Any = sorted(weights)
    else:
        assert length_list is not None
        lengths = parse_lengths(length_list, low=0)  # 0: a header-only write
    if opts["frame_file"] is not None:
        raise InputError("--frame gives one frame of one length: sweep lengths with --l4 (and "
                         "--csum/--gso or --hdr) instead")
    path = opts["path"]
    wrong = trace_cli._given(ctx, trace_cli.not_for(path))
    if wrong:
        raise click.UsageError(f"{', '.join(wrong)} do not apply to --path {path}")
    choice = BuildChoice(opts["arch"], opts["page_size"], opts["cache_line"], opts["max_skb_frags"])
    profiles = [load_profile(k, opts["config"], choice) for k in (kernels or (None,))]
    opts["frag_source"] = None

    from vnetrx.stop import StopOnSignal

    if opts["gro"]:
        if weights is not None or as_json or opts["svg"] or opts["html"]:
            raise click.UsageError("--gro sweeps print a row per length: as text, --jsonl or "
                                   "--csv (not --weights, --json, --svg or --html)")
        with StopOnSignal() as stop:
            _gro(ctx, profiles, lengths, path, opts, stop, jsonl, as_csv)
        if stop.stopped:
            click.echo("vnetrx: interrupted (the output covers the lengths before it)", err=True)
            sys.exit(130)
        return
    if trace_cli._given(ctx, trace_cli.GRO_ONLY):
        raise click.UsageError("--segments, --napi and the GRO limits describe a flow: add --gro")
    with StopOnSignal() as stop:
        _run(profiles, lengths, weights, path, opts, stop, (jsonl, as_csv, as_json),
             length_list)
    if stop.stopped:  # Ctrl-C/SIGTERM: what was printed covers the lengths before it
        click.echo("vnetrx: interrupted (the output covers the lengths before it)", err=True)
        sys.exit(130)


def _run(profiles: list[Any], lengths: Any, weights: dict[int, int] | None, path: str,
         opts: dict[str, Any], stop: Any, formats: tuple[bool, bool, bool],
         length_list: str | None) -> None:
    jsonl, as_csv, as_json = formats
    interrupted = {"interrupted": True}
    if (opts["svg"] or opts["html"]) and (jsonl or as_csv or weights is not None):
        raise click.UsageError("--svg/--html draw the ranges table: they do not combine with "
                               "--jsonl, --csv or --weights (use them with the text or --json)")

    # the header the options build for the shortest frame (frame_input checks that the headers
    # --l4/--gso ask for fit it); the rows take their lengths from the list
    frame = frame_input(min(lengths), opts)

    def rows_for(index: int) -> Iterator[Row]:
        profile = profiles[index]
        todo = stop.items(_progress(lengths, profile.name))
        if path == "tap":
            return tap_rows(profile, tap_setup(opts, frame), todo, tap_frame(frame))
        if path == "vhost-tx":
            return vhost_tx_rows(profile, vhost_tx_setup(opts), todo,
                                 tap_frame(frame))
        return virtio_rows(profile, virtio_setup(opts), todo,
                           rx_frame(frame, opts))

    if weights is not None:
        totals = {profiles[i].name: weighted_totals(rows_for(i), weights)
                  for i in range(len(profiles))}
        if as_json:
            from vnetrx.render.json_out import dumps

            sys.stdout.write(dumps({"schema": SUMMARY_SCHEMA, "path": path,
                                    "lengths": len(lengths), "kernels": {
                                        name: t.to_dict() for name, t in totals.items()},
                                    **(interrupted if stop.stopped else {})}))
        else:
            for name, t in totals.items():
                click.echo(f"Linux {name}: {t.line(pages=False)}")
            click.echo("note: each length is costed as in a steady stream of it (buffers sized "
                       "for it, from a fresh page); `vnetrx replay --from FILE --summary` follows "
                       "the ring frame by frame instead")
        return
    if jsonl or as_csv:
        _stream(rows_for, len(profiles), jsonl)
        return
    rows = {profiles[i].name: list(rows_for(i)) for i in range(len(profiles))}
    spans = {name: collapse(group) for name, group in rows.items()}
    if as_json:
        from vnetrx.render.json_out import dumps
        from vnetrx.render.sweep_text import sweep_renderable

        export_pictures(lambda: sweep_renderable(spans, rows), opts["svg"], opts["html"],
                        f"vnetrx sweep --len {length_list or ''}")

        sys.stdout.write(dumps({"schema": SWEEP_SCHEMA, "path": path, "lengths": len(lengths),
                                "kernels": list(rows), "ranges": [
                                    span_to_dict(s) for group in spans.values() for s in group],
                                **(interrupted if stop.stopped else {})}))
        return
    _text(rows, spans, opts, length_list or "")


SUMMARY_SCHEMA = "vnetrx.sweep-summary/1"


def _gro(ctx: click.Context, profiles: list[Any], lengths: Any, path: str,
         opts: dict[str, Any], stop: Any, jsonl: bool, as_csv: bool) -> None:
    """``--gro``: a flow of --segments frames per length (and kernel), one row each."""
    from vnetrx.flow import FlowRun
    from vnetrx.sweep_gro import gro_row_to_dict, gro_rows

    if path not in ("virtio", "tap"):
        raise click.UsageError(f"--gro: a flow through GRO is modelled for --path virtio and "
                               f"tap, not {path}")
    tap_only = trace_cli._given(ctx, ("napi", "gro_flush_timeout"))
    if path == "virtio" and tap_only:
        raise click.UsageError(f"{' and '.join(tap_only)} "
                               f"{'applies' if len(tap_only) == 1 else 'apply'} to --path tap (a "
                               "virtio-net device is polled after its interrupt)")
    from vnetrx.cli.gro_options import resolve_napi

    opts["napi"] = resolve_napi(ctx, opts)
    writer = csv.writer(sys.stdout, lineterminator="\n") if as_csv else None
    table: list[Any] = []
    for profile in profiles:
        def flow_of(frame_len: int, k: Any = profile) -> FlowRun:
            return trace_cli.flow_for(k, path, frame_len, opts)

        rows = gro_rows(stop.items(_progress(lengths, profile.name)), flow_of)
        for row in rows:
            record = gro_row_to_dict(row)
            if jsonl:
                sys.stdout.write(json.dumps(record) + "\n")
            elif writer is not None:
                if not table:
                    writer.writerow(k for k in record if k != "schema")
                    table.append(None)
                writer.writerow(v for k, v in record.items() if k != "schema")
            else:
                table.append(row)
    if not (jsonl or as_csv):
        from vnetrx.render.sweep_text import gro_sweep_table
        from vnetrx.render.text import stdout_console

        stdout_console().print(gro_sweep_table(table, opts["segments"], path))


def _weights(path: str) -> dict[int, int]:
    """How often each length occurs in a capture, a JSON array or a LIST."""
    from collections import Counter

    from vnetrx.replay.frames import open_frames

    frames = open_frames(path)
    if frames.has_headers:
        raise InputError(f"{path} gives each frame a header; --weights takes lengths (the "
                         "sweep's header is --hdr/--csum/--gso)")
    counts = Counter(x if isinstance(x, int) else x[0] for x in frames.items)
    if not counts:
        raise InputError(f"{path}: no frames")
    bad = [n for n in counts if not 0 <= n <= 65535]
    if bad:
        raise InputError(f"{path}: length {bad[0]} out of range (valid: 0..65535)")
    return dict(counts)


def _stream(rows_for: Any, count: int, jsonl: bool) -> None:
    out = sys.stdout
    writer = None if jsonl else csv.writer(out, lineterminator="\n")
    if writer is not None:
        writer.writerow(CSV_FIELDS)
    for index in range(count):
        if writer is None:
            lines: list[str] = []
            for row in rows_for(index):
                lines.append(row_line(row))
                if len(lines) == 1024:  # a few large writes, whole lines only
                    out.write("\n".join(lines) + "\n")
                    lines = []
            if lines:
                out.write("\n".join(lines) + "\n")
            continue
        for row in rows_for(index):
            writer.writerow(["" if v is None else v for v in row_values(row)])


def _text(rows: dict[str, list[Row]], spans: dict[str, list[Span]], opts: dict[str, Any],
          length_list: str) -> None:
    from vnetrx.render.sweep_text import sweep_renderable
    from vnetrx.render.text import stdout_console

    export_pictures(lambda: sweep_renderable(spans, rows), opts["svg"], opts["html"],
                    f"vnetrx sweep --len {length_list}")
    stdout_console().print(sweep_renderable(spans, rows))


def _progress(lengths: Iterable[int], label: str) -> Iterable[int]:
    """A progress bar on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return lengths
    from rich.console import Console
    from rich.progress import track

    return track(list(lengths), description=f"Linux {label}", console=Console(stderr=True),
                 transient=True)


for _param in trace_cli.trace.params:
    if _param.name not in _OWN:
        sweep.params.append(_param)
