"""vhost-net receive (paths/vhost/rx.py) as JSON and as text: the rows ``replay --path vhost-rx
--jsonl`` streams (schema vnetrx.vhost-rx-row/1, one per packet vhost takes off the tap's ring)
and the document ``trace --path vhost-rx --json`` prints (vnetrx.vhost-rx/1: the rows, the
steps, the notes).

A row's keys are stable (the lab's guest probe compares them with a real kernel): ``used`` (the
used length of each buffer vhost took, [] when discarded), ``hdr`` (hex of the header bytes vhost
and tun wrote, num_buffers included; null when discarded), ``discarded``."""

from __future__ import annotations

from typing import Any

from vnetrx.codec import kernel_to_dict
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Step
from vnetrx.paths.vhost.rx import GuestRx, Packet, VhostRx, VhostRxConfig, Xmit

ROW_SCHEMA = "vnetrx.vhost-rx-row/1"
DOC_SCHEMA = "vnetrx.vhost-rx/1"


def guest_to_dict(g: GuestRx | None) -> dict[str, Any] | None:
    """What the guest's receive_buf made of the packet."""
    if g is None:
        return None
    d, p = g.delivery, g.plan
    skb = d.skb
    return {
        "frame_len": g.frame,
        "outcome": "drop" if skb is None else p.outcome,
        "reason": None if d.reason is None else str(d.reason),
        "buffers": [{"page": g.config.alloc.label(b.frag_index), "offset": b.offset,
                     "len": b.len} for b in p.buffers],
        "skb": None if skb is None else {
            "len": skb.len,
            "data_len": skb.data_len,
            "truesize": skb.truesize,
            "nr_frags": skb.nr_frags,
            "frag_list": len(skb.frag_list),
            "ip_summed": skb.ip_summed,
            "csum_start": skb.csum_start,
            "csum_offset": skb.csum_offset,
            "gso_size": skb.gso_size,
            "gso_type": skb.gso_type,
        },
    }


def row_to_dict(x: Xmit, p: Packet, g: GuestRx | None, in_order: bool = False
                ) -> dict[str, Any]:
    """One packet handle_rx took off the tap's ring (``x``: what the host stack did with its
    frame); with ``in_order`` (VIRTIO_F_IN_ORDER) also ``used_elems``, the used elements
    written."""
    discarded = p.discard is not None
    return {
        "schema": ROW_SCHEMA,
        "index": p.seq,
        "frame": p.skb.frame,
        "segment": p.skb.segment,
        "segmented": None if x.segmented is None else str(x.segmented),
        "len": p.skb.len,
        "vlan": p.skb.vlan,
        "batch": p.batch,
        "run": p.run,
        "sock_len": p.sock_len,
        "headcount": p.headcount,
        "chains": list(p.chains),
        "used": list(p.used),
        **({"used_elems": list(p.used_elems)} if in_order else {}),
        "discarded": discarded,
        "reason": None if p.discard is None else str(p.discard),
        "hdr": None if discarded else p.hdr.hex(),
        "hdr_untouched": p.hdr_untouched,
        "num_buffers": p.num_buffers,
        "done_idx": p.done_idx,
        "signal": None if p.signal is None else str(p.signal),
        "guest": guest_to_dict(g),
    }


def rows(r: VhostRx) -> list[dict[str, Any]]:
    return [row_to_dict(r.xmits[p.skb.frame], p, g, r.config.in_order)
            for p, g in zip(r.packets, r.guest, strict=True)]


def config_to_dict(c: VhostRxConfig) -> dict[str, Any]:
    s = c.setup
    return {
        "mode": s.mode,
        "hdr_len": s.hdr_len,
        "mtu": s.mtu,
        "buf_len": c.buf_len if c.mergeable else None,
        "uniform_buffers": s.uniform,
        "tap_offload": s.tap_offload,
        "sock_hlen": c.sock_hlen,
        "quota": c.quota,
        "chain_len": None if c.mergeable else c.chain_len,
        "set_num_buffers": c.set_num_buffers,
        "tap": {"csum": c.tap_csum, "tso": c.tap_tso, "uso": c.tap_uso},
    }


def document(k: KernelProfile, r: VhostRx, inputs: dict[str, Any], steps: list[Step],
             notes: list[str]) -> dict[str, Any]:
    """``trace --path vhost-rx --json``."""
    delivered = [g for g in r.guest if g is not None]
    return {
        "schema": DOC_SCHEMA,
        "kernel": kernel_to_dict(k),
        "input": inputs,
        "vhost": config_to_dict(r.config),
        "packets": rows(r),
        "delivered": len(delivered),
        "discarded": sum(p.discard is not None for p in r.packets),
        "signals": sum(p.signal is not None for p in r.packets),
        "steps": [{"function": s.function, "source": s.source, "summary": s.summary,
                   "values": dict(s.values), "because": list(s.because)} for s in steps],
        "notes": notes,
    }


def text_lines(r: VhostRx, steps: list[Step], notes: list[str], title: str) -> list[str]:
    """The text view: the steps, a table of the packets, the notes."""
    out = [title, ""] if steps else [title]
    for s in steps:
        out.append(f"  {s.source}")
        out.append(f"      {s.summary}")
        if s.because:
            out.append(f"      because: {', '.join(s.because)}")
    out += ["", "  pkt  frame  len    batch run  used                      hdr                  "
            "signal      guest skb"]
    for p, g in zip(r.packets, r.guest, strict=True):
        frame = str(p.skb.frame) + ("" if p.skb.segment is None else f".{p.skb.segment}")
        used = ("discarded" if p.discard is not None else ",".join(map(str, p.used)))
        if len(used) > 25:
            used = f"{p.headcount}x: {p.used[0]}..{p.used[-1]}"
        if r.config.in_order and p.discard is None and len(p.used) > 1:
            # vhost_add_used_n_in_order: one element, the last chain's used length
            used = f"{used} (1 elem)" if len(used) <= 17 else f"{p.headcount}x: elem {p.used[-1]}"
        skb = "-"
        if g is not None:
            d = g.delivery
            skb = (f"drop ({d.reason})" if d.skb is None else
                   f"len {d.skb.len} truesize {d.skb.truesize}"
                   + (f" gso {d.skb.gso_size}" if d.skb.gso_size else ""))
        out.append(f"  {p.seq:<4} {frame:<6} {p.skb.len:<6} {p.batch:<5} {p.run:<4} "
                   f"{used:<25} {p.hdr.hex() if p.discard is None else '-':<20} "
                   f"{p.signal or '-'!s:<11} {skb}")
    if notes:
        out += ["", "  notes:"] + [f"    - {n}" for n in notes]
    return out
