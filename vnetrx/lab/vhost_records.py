"""What a real kernel's vhost-net did with each ``lab vhost`` case, as plain records (the JSON
``lab vhost --json`` prints and tests/data/vhost/ keeps): per TX frame the road it took into
the tap, the skb netif_receive_skb_entry saw, or how it was refused; per RX case the used
ring read back as the packets vhost handed over. Pure: the parsed log and the case definitions
in, dicts out.

TX outcome words: ``skb`` (the tap's netif_receive_skb_entry fired), ``dropped`` (tun took the
frame and freed it without telling vhost: tun_sendmsg returned 0), ``error`` (tun_get_user
returned -errno to vhost, which used the descriptor anyway), ``stall`` (vhost refused the chain
itself: the descriptor was never used, the tx queue stops on it)."""

from __future__ import annotations

import struct
from typing import Any

from vnetrx.lab.vhost_cases import REPLAY_MODE, RxCase, TxCase
from vnetrx.observed.guest_log import guest_version
from vnetrx.observed.vhost import CaseLog, TunCall, VhostLog

SCHEMA = "vnetrx.lab-vhost/1"
UNTOUCHED = "aaaa"  # the probe fills its rx buffers with 0xaa: bytes vhost never wrote
PAGE_FRAG = 32768  # vhost's page frag: an order-3 page (SKB_FRAG_PAGE_ORDER)
SKB_FIELDS = ("len", "data_len", "truesize", "nr_frags", "ip_summed", "gso_size", "gso_type",
              "protocol")


def document(log: VhostLog, txs: tuple[TxCase, ...], rxs: tuple[RxCase, ...]) -> dict[str, Any]:
    """The whole run: the guest, then one record per TX frame and one per RX case."""
    zcopy = {"experimental_zcopytx": 1, "thp": log.status.get("thp", "")} if log.zcopy else {}
    return {
        "schema": SCHEMA,
        "kernel": {"release": log.release, "version": guest_version(log.status, log.release)},
        **zcopy,
        "kvm": log.status.get("kvm") == "yes",
        "vhost_net_loaded": log.vhost_net_loaded,
        "vhost_net_dev": log.status.get("vhost-net-dev", ""),
        "features_offered": log.status.get("vhost-features", ""),
        "kprobes": dict(sorted(log.kprobes.items())),
        "errors": list(log.errors),
        "complete": log.complete,
        "tx": [record for case in txs
               for record in tx_records(case, log.cases.get(case.name), log.zcopy)],
        "rx": [rx_record(case, log.cases.get(case.name)) for case in rxs],
    }


def _assign(case: TxCase, calls: list[TunCall]) -> list[TunCall | None]:
    """The tun_sendmsg call each frame went through: one frame, every call is its own; several,
    a batch call covers as many frames as it built skbs, a fallback call one frame. None when
    the calls do not add up (a frame refused before build_skb inside a burst)."""
    if len(case.frames) == 1:
        return [calls[0] if calls else None]
    out: list[TunCall | None] = []
    for call in calls:
        out += [call] * (len(call.build_skb) if call.road == "batch" else 1)
    return out if len(out) == len(case.frames) else [None] * len(case.frames)


def tx_records(case: TxCase, seen: CaseLog | None, zcopy: bool = False
               ) -> list[dict[str, Any]]:
    """One record per frame of the case; ``zcopy`` (vhost_net's experimental_zcopytx=1): each
    also says whether its sendmsg pinned the guest's pages, the ubuf completions it got, and
    the order of the used ring (the descriptor ids as vhost added them)."""
    calls = seen.calls if seen is not None else []
    used_ids = {elem[0] for elem in seen.used} if seen is not None else set()
    owners = _assign(case, calls)
    records = []
    for index, frame in enumerate(case.frames):
        call = owners[index]
        # the skb of this frame: its position among the skbs of the calls it shares
        skb = None
        if call is not None and call.skbs:
            nth = sum(1 for earlier in owners[:index] if earlier is call)
            skb = call.skbs[nth] if nth < len(call.skbs) else None
        used = index in used_ids
        if not used:
            outcome = "stall"
        elif skb is not None:
            outcome = "skb"
        elif call is not None and call.road == "tun_get_user" and (call.get_user_ret or 0) < 0:
            outcome = "error"
        else:
            outcome = "dropped"
        records.append({
            "case": case.name,
            "index": index,
            "what": case.what,
            **frame.to_dict(),
            "sndbuf": case.sndbuf,
            "xdp": "pass" if case.xdp else None,
            "xdp_attach": seen.xdp if seen is not None else None,
            "path": None if call is None else call.road,
            # which of the case's tun_sendmsg calls took it, and how many frames that call had
            "call": None if call is None else next(i for i, c in enumerate(calls) if c is call),
            "batch": (len(call.build_skb) if call is not None and call.road == "batch"
                      else None),
            "buflen": (call.build_skb[_nth(owners, index)]
                       if call is not None and call.road == "batch"
                       and _nth(owners, index) < len(call.build_skb) else None),
            # where in its 32 KiB page frag vhost carved the buffer (build_skb's data)
            "buf_offset": (call.buffers[_nth(owners, index)] % PAGE_FRAG
                           if call is not None and call.road == "batch"
                           and _nth(owners, index) < len(call.buffers) else None),
            "ret": None if call is None else (call.get_user_ret if call.road == "tun_get_user"
                                              else call.ret),
            "outcome": outcome,
            "skb": None if skb is None else {name: getattr(skb, name) for name in SKB_FIELDS},
            "freed": list(call.freed) if call is not None and len(case.frames) == 1 else [],
            "stats": dict(seen.stats) if seen is not None else {},
            "traced": seen is not None and seen.traced,
            "signals": seen.signals if seen is not None else None,
        })
        if zcopy:
            records[-1].update({
                "offset": case.offset,
                "zerocopy": None if call is None else call.zerocopy,
                "completions": [] if call is None else list(call.completions),
                "used_order": [elem[0] for elem in seen.used] if seen is not None else [],
            })
    return records


def _nth(owners: list[TunCall | None], index: int) -> int:
    call = owners[index]
    return sum(1 for earlier in owners[:index] if earlier is call)


def packets(case: RxCase, used: list[tuple[int, int, str]]) -> list[dict[str, Any]]:
    """The used ring as packets: with MRG_RXBUF a packet spans num_buffers elements (read from
    the header in its first buffer), else one element each."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(used):
        head = used[i][2][: case.hdr_size * 2]
        count = 1
        num_buffers = None
        if case.features == "mrg" and len(head) >= 24:
            num_buffers = struct.unpack_from("<H", bytes.fromhex(head[20:24]))[0]
            count = max(num_buffers, 1)
        chunk = used[i:i + count]
        out.append({"used": [elem[1] for elem in chunk], "hdr": head,
                    "num_buffers": num_buffers, "ids": [elem[0] for elem in chunk]})
        i += count
    return out


def _segmented(case: RxCase, index: int) -> bool:
    """A GSO frame sent on a tap without offloads: the stack segments it before the tap."""
    return not case.tap_offload and case.frames[index].hdr.gso


def lines(case: RxCase, got: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The packets in the order of the frames sent, a missing one as ``{"discarded": true}``
    (what ``replay --path vhost-rx --jsonl`` prints): a packet belongs to the next frame when
    it carries that frame's length; a segmented frame takes every packet left."""
    out: list[dict[str, Any]] = []
    queue = list(got)
    for index, frame in enumerate(case.frames):
        if _segmented(case, index):
            out += [{"frame": index, "used": p["used"], "hdr": p["hdr"]} for p in queue]
            queue = []
            continue
        if queue and sum(queue[0]["used"]) - case.hdr_size == frame.length:
            packet = queue.pop(0)
            out.append({"frame": index, "used": packet["used"], "hdr": packet["hdr"]})
        else:
            out.append({"frame": index, "discarded": True})
    out += [{"frame": None, "used": p["used"], "hdr": p["hdr"], "unexpected": True}
            for p in queue]
    return out


def rx_record(case: RxCase, seen: CaseLog | None) -> dict[str, Any]:
    got = packets(case, seen.used) if seen is not None else []
    return {
        "case": case.name,
        "what": case.what,
        "features": case.features,
        "mode": REPLAY_MODE[case.features],
        "hdr_size": case.hdr_size,
        "buf_len": case.buf_len,
        "nbufs": case.nbufs,
        "tap_offload": case.tap_offload,
        "late": case.late,
        "frames": [frame.to_dict() for frame in case.frames],
        "sent": list(seen.sent) if seen is not None else [],
        "packets": got,
        "lines": lines(case, got),
        "discarded_kmsg": list(seen.discarded) if seen is not None else [],
        "signals": seen.signals if seen is not None else None,
        "stats": dict(seen.stats) if seen is not None else {},
    }
