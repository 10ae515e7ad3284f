"""``vnetrx replay --path vhost-tx``: a guest's transmit stream, queued before one kick,
through vhost-net's handle_tx into the tap (paths/vhost/tx_stream.py): one JSON line per frame
(vnetrx.vhost-tx-row/1) with --jsonl, else a table and the totals."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from vnetrx.kernel.choice import options_profile

# replay's options a vhost-tx replay reads; every other one given is refused
_READS = frozenset({
    "path", "sndbuf", "xdp", "vnet_hdr_sz", "kernel", "config", "arch", "page_size",
    "cache_line", "max_skb_frags", "as_jsonl", "summary", "zcopy", "zcopy_offset", "in_order",
})


def replay_vhost_tx(ctx: click.Context, lengths: str | None, from_file: str | None,
                    o: dict[str, Any]) -> None:
    from vnetrx.paths.vhost import VhostTxSetup
    from vnetrx.paths.vhost.tx_stream import IN_ORDER_NOTE, NOTES, handle_tx_stream
    from vnetrx.render.vhost_tx import TxTotals, text_rows, tx_row_to_dict
    from vnetrx.replay.frames import parse_list
    from vnetrx.replay.vhost import read_guest_frames

    spelled = {p.name: p.opts[0] for p in ctx.command.params}
    wrong = [spelled.get(name, name) for name in spelled
             if name not in _READS and name not in ("lengths", "from_file")
             and ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)]
    if wrong:
        raise click.UsageError(f"{', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not "
                               "apply to --path vhost-tx", ctx)
    if (lengths is None) == (from_file is None):
        raise click.UsageError("give the frames with exactly one of --len LIST and --from FILE",
                               ctx)
    if o["summary"] and o["as_jsonl"]:
        raise click.UsageError("--summary prints the totals only: not with --jsonl", ctx)
    frames = (tuple((n, None) for n in parse_list(lengths)) if lengths is not None
              else read_guest_frames(str(from_file)))
    profile = options_profile(o)
    setup = VhostTxSetup(sndbuf=o["sndbuf"], xdp=o["xdp"], vnet_hdr_sz=o["vnet_hdr_sz"],
                         zcopy=o["zcopy"], zcopy_offset=o["zcopy_offset"])
    in_order = bool(o.get("in_order"))
    rows = handle_tx_stream(profile, setup, frames, in_order)
    totals = TxTotals()
    out = sys.stdout
    if o["as_jsonl"]:
        for row in rows:
            totals.add(row)
            out.write(json.dumps(tx_row_to_dict(row, in_order)) + "\n")
    else:
        if not o["summary"]:
            click.echo(f"vnetrx replay --path vhost-tx: {len(frames)} frame(s) a guest queued "
                       f"before one kick, through vhost-net into the tap, Linux {profile.name}")
        for line in text_rows(rows, totals, header=not o["summary"], show=not o["summary"]):
            click.echo(line)
        click.echo(totals.line())
        if not o["summary"]:
            for note in (*profile.notes, *NOTES, *((IN_ORDER_NOTE,) if in_order else ())):
                click.echo(f"note: {note}")
    if totals.stalled is not None and totals.frames < len(frames):
        out.flush()
        sys.stderr.write(f"vnetrx: note: frame {totals.stalled} stalls the guest's TX queue "
                         "(vhost_net_build_xdp: -EINVAL; the chain is put back and fails "
                         f"again): the {len(frames) - totals.frames} frame(s) after it are "
                         "never sent\n")
