"""One skb event of include/trace/events/net.h's net_dev_rx_verbose_template class:
net:napi_gro_receive_entry (what virtio-net hands to GRO), net:netif_receive_skb_entry (a tap
write), napi_gro_frags_entry, netif_rx_entry. One parser for the lab's serial logs, `vnetrx
observe` and `vnetrx verify`.

The print format (identical 5.12 .. 6.18; 6.19 appends net_cookie) is ``dev=%s napi_id=%#x
queue_mapping=%u skbaddr=%p vlan_tagged=%d vlan_proto=0x%04x vlan_tci=0x%04x protocol=0x%04x
ip_summed=%d hash=0x%08x l4_hash=%d len=%u data_len=%u truesize=%u mac_header_valid=%d
mac_header=%d nr_frags=%d gso_size=%d gso_type=%#x``: gso_size and gso_type are stored as u16,
so gso_type shows only the low 16 bits of the SKB_GSO_* mask (SKB_GSO_UDP, 1 << 16, is lost).
docs/kernel/offloads.md §11.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

EVENTS = ("napi_gro_receive_entry", "netif_receive_skb_entry", "napi_gro_frags_entry",
          "netif_rx_entry")
_EVENT = re.compile(r"\b(?P<event>" + "|".join(EVENTS) + r"): (?P<fields>dev=.*)$")
_PAIR = re.compile(r"(\w+)=(\S+)")
TRACED_BITS = {"gso_type": 0xFFFF, "gso_size": 0xFFFF}  # u16 in the event's record


@dataclass(frozen=True)
class RxEvent:
    """The fields vnetrx compares; the kprobe's offsets (from skb->head) when the lab's kprobe on
    napi_gro_receive ran."""

    dev: str = ""
    len: int = 0
    data_len: int = 0
    truesize: int = 0
    nr_frags: int = 0
    gso_size: int = 0
    gso_type: int = 0  # the low 16 bits of shinfo->gso_type
    protocol: int = 0
    ip_summed: int = 0
    hash: int = 0
    l4_hash: bool = False
    queue_mapping: int = 0
    event: str = ""
    data: int | None = None  # skb->data - skb->head (kprobe)
    tail: int | None = None
    end: int | None = None
    mac_header: int | None = None  # from skb->head (kprobe); the event's own is data-relative


def parse_rx_event(line: str) -> RxEvent | None:
    """The event on one trace line, or None when the line is something else."""
    match = _EVENT.search(line)
    if match is None:
        return None
    pairs = dict(_PAIR.findall(match.group("fields")))
    try:
        return RxEvent(
            dev=pairs["dev"],
            len=int(pairs["len"], 0),
            data_len=int(pairs["data_len"], 0),
            truesize=int(pairs["truesize"], 0),
            nr_frags=int(pairs["nr_frags"], 0),
            gso_size=int(pairs.get("gso_size", "0"), 0),
            gso_type=int(pairs.get("gso_type", "0"), 0),
            protocol=int(pairs.get("protocol", "0"), 0),
            ip_summed=int(pairs.get("ip_summed", "0"), 0),
            hash=int(pairs.get("hash", "0"), 0),
            l4_hash=pairs.get("l4_hash", "0") == "1",
            queue_mapping=int(pairs.get("queue_mapping", "0"), 0),
            event=match.group("event"),
        )
    except (KeyError, ValueError):
        return None


Scalar = Union[int, str, None]  # noqa: UP007  (a runtime alias: py3.10 needs Union)


def as_traced(name: str, value: object) -> Scalar:
    """A predicted field as the tracepoint would print it (gso_type: its low 16 bits; a bool as
    0 or 1)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        mask = TRACED_BITS.get(name)
        return value & mask if mask is not None else value
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{name}: {value!r} is not a tracepoint value")
