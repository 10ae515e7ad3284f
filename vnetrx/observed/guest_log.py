"""Reading what a ``vnetrx lab`` guest printed on its serial console: the ``VNETRX`` status
lines, the ``net:napi_gro_receive_entry`` trace lines and the ``vnetrx/gro`` kprobe lines, and
the guest's upstream version. Pure: text in, records out (the lab that boots the guest and
``vnetrx observe --from-trace`` both read it)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from vnetrx.observed.console import TraceWindow, console_lines
from vnetrx.observed.negotiated import decode_features
from vnetrx.observed.rx_event import RxEvent, parse_rx_event


@dataclass(frozen=True)
class GuestLog:
    """Everything the host needs from one boot."""

    status: dict[str, str]  # "release" → "6.1.0-57-amd64", "features" → "0101…", ...
    errors: tuple[str, ...]
    events: tuple[RxEvent, ...]  # in arrival order, the sentinel included
    kprobe: bool
    complete: bool  # the guest reached "trace-end"
    raw_lines: tuple[str, ...] = field(default=(), repr=False)

    @property
    def features(self) -> tuple[str, ...]:
        return decode_features(self.status.get("features", ""))

    @property
    def mtu(self) -> int:
        return int(self.status.get("mtu", "1500"))

    @property
    def release(self) -> str:
        return self.status.get("release", "")


# The probe address is napi_gro_receive+0x0, or +0x4 past an IBT endbr64 (6.12 kernels).
_KPROBE = re.compile(r"\bgro: \(napi_gro_receive\+0x[0-9a-f]+/0x[0-9a-f]+\)(?P<fields>.*)$")
_PAIR = re.compile(r"(\w+)=(\S+)")


def _int(text: str) -> int:
    return int(text, 0)


def parse_tracepoint(line: str) -> RxEvent | None:
    """A net:napi_gro_receive_entry line, or None."""
    event = parse_rx_event(line)
    return event if event is not None and event.event == "napi_gro_receive_entry" else None


def parse_kprobe(line: str) -> dict[str, int] | None:
    """A ``vnetrx/gro`` kprobe line → head, data, tail, end, mac_header, len (integers)."""
    match = _KPROBE.search(line)
    if match is None:
        return None
    try:
        return {key: _int(value) for key, value in _PAIR.findall(match.group("fields"))}
    except ValueError:
        return None


def _with_kprobe(event: RxEvent, probe: dict[str, int] | None) -> RxEvent:
    if probe is None or not {"head", "data", "tail", "end", "mac_header"} <= probe.keys():
        return event
    if probe.get("len", event.len) != event.len:
        return event  # not the same skb
    return replace(
        event,
        data=probe["data"] - probe["head"],
        tail=probe["tail"],
        end=probe["end"],
        mac_header=probe["mac_header"],
    )


def parse_log(text: str) -> GuestLog:
    """Read a whole serial log. A kprobe line is paired with the tracepoint line that follows
    it (the kprobe fires on entry to napi_gro_receive, the tracepoint inside it; one vCPU)."""
    status: dict[str, str] = {}
    events: list[RxEvent] = []
    lines = text.replace("\r", "").split("\n")
    pending: dict[str, int] | None = None
    window = TraceWindow()
    for key, value, line in console_lines(text):
        if key is not None:
            if not window.take(key, value):
                status[key] = value
            continue
        if not window.open:
            continue
        probe = parse_kprobe(line)
        if probe is not None:
            pending = probe
            continue
        event = parse_tracepoint(line)
        if event is not None:
            events.append(_with_kprobe(event, pending))
            pending = None
    return GuestLog(
        status=status,
        errors=tuple(window.errors),
        events=tuple(events),
        kprobe=status.get("kprobe", "").startswith("on"),
        complete=window.ended,
        raw_lines=tuple(lines),
    )


def guest_version(status: dict[str, str], release: str) -> str:
    """The upstream version: ``uname -v`` of a Debian kernel says "Debian 6.1.192-3"."""
    match = re.search(r"Debian (\d+\.\d+\.\d+)", status.get("version", ""))
    return match.group(1) if match else release
