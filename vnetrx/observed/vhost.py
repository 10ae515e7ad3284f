"""Reading what ``vnetrx lab vhost``'s guest printed: the probe's ``VNETRX vhost-*`` lines (used
rings, sendto results, the tap's counters), and the trace between ``trace-begin`` and
``trace-end`` cut into cases by the probe's trace_marker lines (``vnetrx-case KIND NAME`` …
``vnetrx-case-end``): each ``tun_sendmsg`` call vhost made with what happened inside it (the
``tun_get_user`` fallback and its return, ``build_skb`` sizes, the ``netif_receive_skb_entry``
skbs, ``kfree_skb`` drops), and the kernel's messages of each case (vhost's "Discarded rx
packet" pr_debug lines). Pure: text in, records out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vnetrx.observed.console import TraceWindow, console_lines
from vnetrx.observed.rx_event import RxEvent, parse_rx_event

_STAMP = re.compile(r"\s\d+\.\d+: (?P<event>\w+): (?P<rest>.*)$")
_MARK = re.compile(r"vnetrx-case (?P<kind>tx|rx) (?P<name>\S+)")
_RET = re.compile(r"\bret=(-?\d+)")
_SIZE = re.compile(r"\bsize=(\d+)")
_DATA = re.compile(r"\bdata=(0x[0-9a-f]+)")
# the probe's own lines (data/vhostprobe.c); every other "VNETRX key value" is /init's status
_PROBE_KEYS = frozenset({"vhost-case", "vhost-sent", "vhost-used", "vhost-stats", "vhost-kmsg",
                         "vhost-done", "vhost-xdp", "vhost-calls"})
_LOCATION = re.compile(r"\blocation=(\S+)")
_REASON = re.compile(r"\breason: (\S+)")


@dataclass
class TunCall:
    """One ``tun_sendmsg`` vhost made. ``road``: "batch" (msg_control TUN_MSG_PTR, the frames
    went through tun_xdp_one) or "tun_get_user" (the fallback: a plain sendmsg)."""

    road: str = "batch"
    ret: int | None = None  # tun_sendmsg's return
    get_user_ret: int | None = None
    build_skb: list[int] = field(default_factory=list)  # build_skb's size argument, in order
    buffers: list[int] = field(default_factory=list)  # build_skb's data argument (an address)
    skbs: list[RxEvent] = field(default_factory=list)  # netif_receive_skb_entry on the tap
    freed: list[str] = field(default_factory=list)  # kfree_skb: "location reason"


@dataclass
class CaseLog:
    kind: str  # "tx" | "rx"
    name: str
    sent: list[int] = field(default_factory=list)  # rx: sendto's return per frame (bytes/-errno)
    used: list[tuple[int, int, str]] = field(default_factory=list)  # (id, len, first bytes hex)
    stats: dict[str, int] = field(default_factory=dict)  # the tap's counters after the case
    done: tuple[int, int] | None = None  # (used elements seen, chains made available)
    calls: list[TunCall] = field(default_factory=list)  # tx: the trace of the case
    traced: bool = False  # the case's trace_marker was found
    kmsg: list[str] = field(default_factory=list)  # the kernel's vhost/tun messages meanwhile
    xdp: str | None = None  # the XDP probe's answer ("rc 0"), when the case attached one
    signals: int | None = None  # how often vhost signalled the queue's call eventfd

    @property
    def discarded(self) -> list[str]:
        """vhost's pr_debug "Discarded rx packet: len N" lines of this case."""
        return [line for line in self.kmsg if "Discarded rx packet" in line]


@dataclass
class VhostLog:
    status: dict[str, str]
    errors: list[str]
    kprobes: dict[str, bool]
    cases: dict[str, CaseLog]
    dmesg: list[str]
    complete: bool  # the guest reached trace-end and the probe finished

    @property
    def release(self) -> str:
        return self.status.get("release", "")

    @property
    def vhost_net_loaded(self) -> bool:
        return "vhost_net" in self.status.get("modules", "").split()


def parse_vhost_log(text: str) -> VhostLog:
    status: dict[str, str] = {}
    kprobes: dict[str, bool] = {}
    cases: dict[str, CaseLog] = {}
    dmesg: list[str] = []
    current: CaseLog | None = None
    traced: CaseLog | None = None
    call: TunCall | None = None
    window = TraceWindow()
    finished = False
    for key, value, line in console_lines(text):
        if key is not None:
            if window.take(key, value):
                pass
            elif key == "kprobe":
                name, _, state = value.partition(" ")
                kprobes[name] = state.startswith("on")
            elif key == "dmesg":
                dmesg.append(value)
            elif key == "vhost-finished":
                finished = True
            elif key in _PROBE_KEYS:
                current = _probe_line(key, value, current, cases)
            elif key not in ("dmesg-begin", "dmesg-end"):
                status[key] = value
            continue
        if not window.open:
            continue
        event = _STAMP.search(line)
        if event is None:
            continue
        name, rest = event.group("event"), event.group("rest")
        if name == "tracing_mark_write":
            mark = _MARK.search(rest)
            traced, call = None, None
            if mark is not None:
                traced = cases.setdefault(mark.group("name"),
                                          CaseLog(mark.group("kind"), mark.group("name")))
                traced.traced = True
            continue
        if traced is None:
            continue
        if name == "tun_sendmsg":
            call = TunCall()
            traced.calls.append(call)
        elif call is None:
            continue
        elif name == "tun_get_user":
            call.road = "tun_get_user"
        elif name == "tun_get_user_ret":
            call.get_user_ret = _number(_RET, rest)
        elif name == "tun_sendmsg_ret":
            call.ret = _number(_RET, rest)
        elif name == "build_skb":
            size = _number(_SIZE, rest)
            if size is not None:
                call.build_skb.append(size)
            data = _DATA.search(rest)
            if data is not None:
                call.buffers.append(int(data.group(1), 16))
        elif name == "netif_receive_skb_entry":
            skb = parse_rx_event(line)
            if skb is not None:
                call.skbs.append(skb)
        elif name == "kfree_skb":
            where = _LOCATION.search(rest)
            reason = _REASON.search(rest)
            call.freed.append(" ".join(m.group(1) for m in (where, reason) if m is not None))
    return VhostLog(status, window.errors, kprobes, cases, dmesg, finished and window.ended)


_WHOLE = re.compile(r"-?[0-9]+")  # a number as the probe prints it (ASCII digits)


def _number(pattern: re.Pattern[str], text: str) -> int | None:
    match = pattern.search(text)
    return None if match is None else int(match.group(1))


def _probe_line(key: str, value: str, current: CaseLog | None,
                cases: dict[str, CaseLog]) -> CaseLog | None:
    """One of the probe's own lines. A line whose numbers do not read (the kernel's console
    output can cut into it) is left out, as a line of no known key is: what it would have
    said is then missing from the comparison, which says so."""
    parts = value.split()
    if key == "vhost-case" and len(parts) == 2:
        return cases.setdefault(parts[1], CaseLog(parts[0], parts[1]))
    if current is None:
        return None
    numbers = [int(p) for p in parts if _WHOLE.fullmatch(p)]
    if key == "vhost-sent" and len(parts) == 2 and len(numbers) == 2:
        current.sent.append(numbers[1])
    elif key == "vhost-used" and len(parts) >= 3 and _WHOLE.fullmatch(parts[1]) \
            and _WHOLE.fullmatch(parts[2]):
        current.used.append((int(parts[1]), int(parts[2]), parts[3] if len(parts) > 3 else ""))
    elif key == "vhost-stats":
        for pair in parts:
            name, _, number = pair.partition("=")
            if _WHOLE.fullmatch(number):
                current.stats[name] = int(number)
    elif key == "vhost-calls" and len(parts) == 1 and parts[0].isdigit():
        current.signals = int(parts[0])
    elif key == "vhost-xdp":
        current.xdp = value
    elif key == "vhost-kmsg":
        current.kmsg.append(value)
    elif key == "vhost-done" and len(parts) == 3 and _WHOLE.fullmatch(parts[1]) \
            and _WHOLE.fullmatch(parts[2]):
        current.done = (int(parts[1]), int(parts[2]))
    return current
