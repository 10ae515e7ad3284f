"""Other tools' records of received skbs, read as vnetrx needs them: which format a file is,
where each skb was caught (the probe point), and the skb fields that format really records.
Pure: text in, records out.

Formats read (``FORMATS``):

* tracefs text (``trace``/``trace_pipe``) and ``perf script`` text of the
  ``net_dev_rx_verbose_template`` events (napi_gro_receive_entry, netif_receive_skb_entry) and
  of the post-GRO ``net:netif_receive_skb`` (``dev=%s skbaddr=%p len=%u``);
* ``perf data convert --to-json`` (one JSON document; a sample names no event, so the event is
  told from its fields and its call site; perf writes the tracepoint's fields only when built
  with libtraceevent support for it, perf 6.1 writes none);
* pwru text and ``--output-json`` (``len`` from ``--output-meta``; ``--output-skb`` and
  ``--output-skb-shared-info`` add bpf_snprintf_btf dumps, flags 0: zero members omitted,
  pointers hashed; the JSON puts the skb dump under ``skb_metadata``);
* retis events files (``retis collect -o``: NDJSON, a startup event first; ``skb.meta`` has
  len, data_len, hash, ip_summed; ``skb.gso`` appears only when gso_size != 0; no truesize);
* ``bpftrace -f json`` (NDJSON ``{"type": …, "data": …}``) or plain output of the program
  ``bpftrace_script`` prints.

A field the format does not record is absent from ``Captured.fields``: never a zero.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

ETH_HLEN = 14  # include/uapi/linux/if_ether.h: what eth_type_trans pulls

# format keys → the words an error or a report uses for them
FORMATS = {
    "tracefs": "tracefs text (trace, trace_pipe)",
    "perf-script": "`perf script` text",
    "perf-json": "`perf data convert --to-json`",
    "pwru": "pwru text",
    "pwru-json": "pwru --output-json",
    "retis": "retis events (retis collect -o, NDJSON)",
    "bpftrace": "bpftrace output of `vnetrx observe --bpftrace-script` (-f json or text)",
    "lab": "a `vnetrx lab virtio --serial-log` file",
}


def formats_read() -> str:
    """The formats, for a one-line error."""
    return "; ".join(FORMATS.values())


# Where an skb can be caught, and what that point sees:
#   "pre-gro": the skb the driver built, before GRO (virtio_net hands it to napi_gro_receive);
#   "no-gro": the skb a driver hands to netif_receive_skb() (tun_get_user without IFF_NAPI):
#             nothing merged it;
#   "post-gro": __netif_receive_skb_core: after GRO, so possibly an aggregate of several.
# Functions in priority order: a capture that caught one skb at several points is read at the
# first of them it has.
PROBES = {
    "napi_gro_receive_entry": "pre-gro",
    "napi_gro_receive": "pre-gro",
    "gro_receive_skb": "pre-gro",  # 6.18: napi_gro_receive is an inline wrapper of it
    "dev_gro_receive": "pre-gro",
    "netif_receive_skb_entry": "no-gro",
    "netif_receive_skb": "no-gro",  # the function (pwru, bpftrace kprobes): not GRO's output
    "net:netif_receive_skb": "post-gro",  # the tracepoint in __netif_receive_skb_core
    "__netif_receive_skb": "post-gro",
    "__netif_receive_skb_one_core": "post-gro",
    "__netif_receive_skb_core": "post-gro",
}
STAGE_WORDS = {
    "pre-gro": "before GRO",
    "no-gro": "as the driver handed it to netif_receive_skb (no GRO)",
    "post-gro": "after GRO",
}


@dataclass(frozen=True)
class Captured:
    """One skb as a tool recorded it at one probe point."""

    probe: str  # a key of PROBES, or another function/event the tool caught it in
    dev: str | None
    fields: dict[str, int]  # only what the format records (RxEvent's names), never a stand-in
    gso_segs: int | None = None  # shinfo->gso_segs, when recorded (tells a GRO aggregate)
    gso_type_full: int | None = None  # all 32 bits of shinfo->gso_type, when recorded
    notes: tuple[str, ...] = ()  # about this record (a dump cut short, …)

    @property
    def stage(self) -> str | None:
        return PROBES.get(self.probe)


@dataclass(frozen=True)
class Capture:
    """What a file holds: its format and every skb record in it (at any probe point)."""

    format: str  # a key of FORMATS
    skbs: tuple[Captured, ...]
    notes: tuple[str, ...] = field(default=())


class CaptureError(ValueError):
    """The file is not (or no longer) in the format it looked like; ``usage``: not a capture
    at all (a bad request) rather than a capture with nothing usable."""

    def __init__(self, message: str, usage: bool = True) -> None:
        super().__init__(message)
        self.usage = usage


# --- detection ------------------------------------------------------------------------------

_VERBOSE = re.compile(
    r"(?P<net>net:)?\b(?P<event>napi_gro_receive_entry|netif_receive_skb_entry|"
    r"napi_gro_frags_entry|netif_rx_entry|netif_receive_skb)"
    r": +(?P<fields>dev=.*)$"
)
_PWRU_MAIN = re.compile(r"^0x[0-9a-f]+\s+\d+\s+\S")
_PWRU_HEADER = re.compile(r"^(?:TIME\s+)?SKB\s+CPU\s+PROCESS\b")
BPFTRACE_TAG = "vnetrx-skb"
LAB_BEGIN = "VNETRX trace-begin"


def _first_json(text: str) -> object:
    """The first non-empty line as JSON, or None when it is not."""
    for line in text.splitlines():
        if line.strip():
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def detect(text: str) -> str | None:
    """The format key of ``text``, or None when it is none vnetrx reads."""
    if LAB_BEGIN in text:
        return "lab"
    head = text.lstrip()[:4096]
    if head.startswith("{"):
        if '"linux-perf-json-version"' in head:
            return "perf-json"
        first = _first_json(text)
        if isinstance(first, dict):
            if "type" in first and "data" in first:
                return "bpftrace"
            if "startup" in first or "common" in first or "kernel" in first:
                return "retis"
            if "skb" in first and ("func" in first or "len" in first):
                return "pwru-json"
        return None
    lines = text.splitlines()
    for line in lines:
        match = _VERBOSE.search(line)
        if match is not None:
            return "perf-script" if match.group("net") else "tracefs"
    for line in lines:
        if line.startswith(BPFTRACE_TAG + " "):
            return "bpftrace"
        if _PWRU_HEADER.match(line) or _PWRU_MAIN.match(line):
            return "pwru"
    if any(line.startswith("# tracer:") for line in lines[:20]):
        return "tracefs"
    return None


def parse(text: str, fmt: str | None = None) -> Capture:
    """Every skb record of a capture in any format but the lab's (vnetrx.observed.guest_log)
    and tracefs/perf script text (parsed line by line with vnetrx.observed.rx_event; their
    post-GRO ``netif_receive_skb`` lines are read here)."""
    fmt = fmt or detect(text)
    if fmt is None or fmt == "lab":
        raise CaptureError("not a capture this reads")
    if fmt in ("tracefs", "perf-script"):
        return Capture(fmt, tuple(_short_events(text)))
    if fmt == "perf-json":
        return _perf_json(text)
    if fmt == "pwru":
        return Capture(fmt, tuple(_pwru_text(text)))
    if fmt == "pwru-json":
        return Capture(fmt, tuple(_pwru_json(_ndjson(text, fmt))))
    if fmt == "retis":
        return Capture(fmt, tuple(_retis(_ndjson(text, fmt))))
    if fmt == "bpftrace":
        return Capture(fmt, tuple(_bpftrace(text)))
    raise CaptureError(f"unknown format {fmt}")


def _ndjson(text: str, fmt: str) -> Iterator[dict[str, object]]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise CaptureError(f"{FORMATS[fmt]}: line {number} is not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise CaptureError(f"{FORMATS[fmt]}: line {number} is not a JSON object")
        yield obj


# --- tracefs / perf script: the short post-GRO event ---------------------------------------

_SHORT = re.compile(r"\bnetif_receive_skb: +dev=(?P<dev>\S+) skbaddr=\S+ len=(?P<len>\d+)")


def _short_events(text: str) -> Iterator[Captured]:
    """net:netif_receive_skb lines (``dev=%s skbaddr=%p len=%u``): len only."""
    for line in text.splitlines():
        match = _SHORT.search(line)
        if match is not None:
            yield Captured("net:netif_receive_skb", match.group("dev"),
                           {"len": int(match.group("len"))})


# --- perf data convert --to-json ------------------------------------------------------------

# the verbose template's fields and the width the event stores them in (libtraceevent prints a
# 2-byte field as a signed short and a 4-byte one as an int: masked back to unsigned here)
_VERBOSE_WIDTH = {
    "napi_id": 32, "queue_mapping": 16, "vlan_tagged": 8, "vlan_proto": 16, "vlan_tci": 16,
    "protocol": 16, "ip_summed": 8, "hash": 32, "l4_hash": 8, "len": 32, "data_len": 32,
    "truesize": 32, "mac_header_valid": 8, "mac_header": 32, "nr_frags": 8, "gso_size": 16,
    "gso_type": 16,
}
_RX_FIELDS = ("len", "data_len", "truesize", "nr_frags", "ip_summed", "gso_size", "gso_type",
              "hash", "l4_hash", "protocol", "queue_mapping")


def _perf_int(value: object, bits: int) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        number = int(value.strip(), 0)
    else:
        raise ValueError(f"{value!r} is not a number")
    return number & ((1 << bits) - 1)


def _perf_json(text: str) -> Capture:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise CaptureError(f"{FORMATS['perf-json']}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("samples"), list):
        raise CaptureError(f"{FORMATS['perf-json']}: no \"samples\" list")
    headers = doc.get("headers")
    cmdline = headers.get("cmdline") if isinstance(headers, dict) else None
    recorded = [a.split(":", 1)[-1] for a in cmdline if isinstance(a, str)] if isinstance(
        cmdline, list) else []
    verbose_events = [e for e in ("napi_gro_receive_entry", "netif_receive_skb_entry")
                      if e in recorded]
    version = headers.get("perf-version") if isinstance(headers, dict) else None
    skbs: list[Captured] = []
    bare = 0
    for sample in doc["samples"]:
        if not isinstance(sample, dict):
            continue
        site = _call_site(sample.get("callchain"))
        if "len" not in sample:
            bare += 1
            continue
        dev = sample.get("name")
        try:
            if "truesize" in sample:
                fields = {n: _perf_int(sample[n], _VERBOSE_WIDTH[n])
                          for n in _RX_FIELDS if n in sample}
                probe = _verbose_probe(site, verbose_events)
            else:  # net:netif_receive_skb: dev, skbaddr, len
                fields = {"len": _perf_int(sample["len"], 32)}
                probe = "net:netif_receive_skb"
        except ValueError as exc:
            raise CaptureError(f"{FORMATS['perf-json']}: a sample's field is unreadable ({exc})"
                               ) from None
        skbs.append(Captured(probe, dev if isinstance(dev, str) else None, fields))
    if bare and not skbs:
        raise CaptureError(
            f"{FORMATS['perf-json']}: its {bare} samples carry no tracepoint fields (this perf"
            + (f", {version}," if isinstance(version, str) else "")
            + " writes only the call site): run `perf script` on the same perf.data",
            usage=False,
        )
    return Capture("perf-json", tuple(skbs))


def _call_site(callchain: object) -> str | None:
    """The first symbol of a sample's call chain ("gro_receive_skb", "__netif_receive_skb_core
    .constprop.0" → "__netif_receive_skb_core")."""
    if isinstance(callchain, list):
        for frame in callchain:
            if isinstance(frame, dict) and isinstance(frame.get("symbol"), str):
                symbol: str = frame["symbol"]
                if not symbol.startswith("perf_trace_") and not symbol.startswith("trace_"):
                    return symbol.split(".", 1)[0]
    return None


def _verbose_probe(site: str | None, recorded: Sequence[str]) -> str:
    """napi_gro_receive_entry or netif_receive_skb_entry: the samples of both look alike."""
    if site in ("napi_gro_receive", "gro_receive_skb", "dev_gro_receive"):
        return "napi_gro_receive_entry"
    if site in ("netif_receive_skb", "netif_receive_skb_internal"):
        return "netif_receive_skb_entry"
    if len(recorded) == 1:
        return recorded[0]
    raise CaptureError(
        f"{FORMATS['perf-json']}: its samples do not say whether they are "
        "napi_gro_receive_entry or netif_receive_skb_entry (record one of them, or with -g)"
    )


# --- pwru -----------------------------------------------------------------------------------

# ``.name = (type)value`` of an integer member; a pointer's type ends in "*" (its value is hashed)
_MEMBER = re.compile(r"\.(\w+) = \((?:[\w ]+)\)(-?0x[0-9a-fA-F]+|-?\d+)")
_SKB_DUMP = "(struct sk_buff){"
_SHINFO_DUMP = "(struct skb_shared_info){"


def btf_members(dump: str) -> dict[str, int]:
    """The integer members of a bpf_snprintf_btf dump, first occurrence of each name (a
    struct_group shows its members twice, with the same values)."""
    found: dict[str, int] = {}
    for name, value in _MEMBER.findall(dump):
        found.setdefault(name, int(value, 0))
    return found


def _complete(dump: str) -> bool:
    """Whether a dump ends where its outer struct does (pwru cuts it at --set-percpu-buf)."""
    depth = 0
    for char in dump:
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return True
    return False


def _dump_fields(skb_dump: str | None, shinfo_dump: str | None
                 ) -> tuple[dict[str, int], int | None, int | None, tuple[str, ...]]:
    """skb fields from pwru's dumps: a member a complete dump omits is 0 (flags 0 leaves zeroes
    out); one past the cut of a cut dump is unknown. The pointers are hashed, so the headroom
    comes from the offsets: data = tail - (len - data_len)."""
    fields: dict[str, int] = {}
    notes: list[str] = []
    segs: int | None = None
    full_type: int | None = None
    if skb_dump is not None:
        members = btf_members(skb_dump)
        complete = _complete(skb_dump)
        if not complete:
            notes.append("pwru's sk_buff dump is cut short (--set-percpu-buf): members past "
                         "the cut are not in the capture")
        for name in ("len", "data_len", "truesize", "ip_summed", "hash", "l4_hash",
                     "queue_mapping", "tail", "end", "mac_header"):
            if name in members:
                fields[name] = members[name]
            elif complete:
                fields[name] = 0
        if "protocol" in members or complete:
            raw = members.get("protocol", 0) & 0xFFFF  # __be16, shown as a host integer
            fields["protocol"] = ((raw & 0xFF) << 8) | (raw >> 8)
        if fields.get("mac_header") == 0xFFFF:  # (u16)~0U: not set
            del fields["mac_header"]
        if all(n in fields for n in ("tail", "len", "data_len")):
            fields["data"] = fields["tail"] - (fields["len"] - fields["data_len"])
    if shinfo_dump is not None:
        members = btf_members(shinfo_dump)
        complete = _complete(shinfo_dump)
        for name in ("nr_frags", "gso_size"):
            if name in members or complete:
                fields[name] = members.get(name, 0)
        if "gso_type" in members or complete:
            full_type = members.get("gso_type", 0)
            fields["gso_type"] = full_type & 0xFFFF
        if "gso_segs" in members or complete:
            segs = members.get("gso_segs", 0)
    return fields, segs, full_type, tuple(notes)


def _dumps(text: str) -> tuple[str | None, str | None]:
    skb_at, shinfo_at = text.find(_SKB_DUMP), text.find(_SHINFO_DUMP)
    skb = shinfo = None
    if skb_at >= 0:
        skb = text[skb_at: shinfo_at if shinfo_at > skb_at else len(text)]
    if shinfo_at >= 0:
        shinfo = text[shinfo_at: skb_at if skb_at > shinfo_at else len(text)]
    return skb, shinfo


def _iface(value: str) -> str | None:
    """pwru's IFACE: ``name:ifindex``, or the ifindex alone when the name is unknown."""
    if ":" in value:
        return value.rsplit(":", 1)[0]
    return None


def _pwru_record(func: str, iface: str | None, length: int | None, dumps: str,
                 proto: int | None = None) -> Captured:
    skb_dump, shinfo_dump = _dumps(dumps)
    fields, segs, full_type, notes = _dump_fields(skb_dump, shinfo_dump)
    if length is not None:
        fields.setdefault("len", length)
    if proto is not None:
        fields.setdefault("protocol", proto)
    func = func.split("(", 1)[0]  # kfree_skb_reason(SKB_DROP_REASON_…), …(tc), …(xdp)
    return Captured(func, _iface(iface) if iface else None, fields, segs, full_type, notes)


def _pwru_main(line: str) -> tuple[str, str | None, int | None, int | None] | None:
    """(func, iface, len) of a pwru event line: ``SKB CPU PROCESS [TS] NETNS MARK IFACE PROTO
    MTU LEN [TUPLE] FUNC [CALLER] …``; without --output-meta only the function."""
    tokens = line.split()
    if len(tokens) < 4 or not re.fullmatch(r"0x[0-9a-f]+", tokens[0]):
        return None
    pairs = dict(t.split("=", 1) for t in tokens if "=" in t and "->" not in t)
    if "len" in pairs and "netns" in pairs:  # pwru before 1.0: FUNC netns=… proto=dd86 len=80
        at = next(i for i, t in enumerate(tokens) if t.startswith("netns="))
        try:
            raw = int(pairs.get("proto", "0"), 16) & 0xFFFF  # __be16 shown as a host integer
            return (tokens[at - 1], None, int(pairs["len"]),
                    ((raw & 0xFF) << 8) | (raw >> 8))
        except ValueError:
            return None
    for i in range(4, len(tokens) - 2):  # PROTO is Go's %#04x of skb->protocol
        if (re.fullmatch(r"0x[0-9a-f]{2,4}", tokens[i]) and tokens[i + 1].isdigit()
                and tokens[i + 2].isdigit() and re.fullmatch(r"[0-9a-f]+", tokens[i - 2])
                and tokens[i - 3].isdigit()):
            rest = tokens[i + 3:]
            if not rest:
                return None
            at = next((j + 1 for j, t in enumerate(rest) if "->" in t), 0)
            func = rest[at] if at < len(rest) else rest[-1]
            return func, tokens[i - 1], int(tokens[i + 2]), int(tokens[i], 16)
    # no meta columns: SKB CPU PROCESS [TS] [TUPLE] FUNC
    rest = tokens[3:]
    at = next((j + 1 for j, t in enumerate(rest) if "->" in t), 0)
    if rest and rest[0].isdigit() and at == 0:
        at = 1
    return (rest[at], None, None, None) if at < len(rest) else None


def _pwru_text(text: str) -> Iterator[Captured]:
    current: tuple[str, str | None, int | None, int | None] | None = None
    extra: list[str] = []
    for line in text.splitlines():
        if _PWRU_HEADER.match(line):
            continue
        main = _pwru_main(line) if _PWRU_MAIN.match(line) else None
        if main is not None:
            if current is not None:
                yield _pwru_record(*current[:3], "\n".join(extra), current[3])
            current, extra = main, []
        elif current is not None:
            extra.append(line)
    if current is not None:
        yield _pwru_record(*current[:3], "\n".join(extra), current[3])


def _pwru_json(objects: Iterable[dict[str, object]]) -> Iterator[Captured]:
    for obj in objects:
        func = obj.get("func")
        if not isinstance(func, str):
            continue
        length = obj.get("len", 0 if "iface" in obj or "mtu" in obj else None)  # omitempty
        iface = obj.get("iface")
        skb_dump = obj.get("skb_metadata")  # pwru's name for the --output-skb dump
        shinfo_dump = obj.get("skb_shared_info")
        dumps = "\n".join(d for d in (skb_dump, shinfo_dump) if isinstance(d, str))
        proto = obj.get("proto")
        yield _pwru_record(func, iface if isinstance(iface, str) else None,
                           length if isinstance(length, int) else None, dumps,
                           proto if isinstance(proto, int) else None)


# --- retis ----------------------------------------------------------------------------------

_CSUM = {"none": 0, "unnecessary": 1, "complete": 2, "partial": 3}


def _retis(objects: Iterable[dict[str, object]]) -> Iterator[Captured]:
    events = list(objects)
    # the gso section is emitted exactly when gso_size != 0, once it is collected at all
    # (--skb-sections): without one in the whole file, gso_size is unknown, not 0
    gso_seen = any("gso" in skb for e in events if isinstance(skb := e.get("skb"), dict))
    for obj in events:
        kernel, skb = obj.get("kernel"), obj.get("skb")
        if not isinstance(kernel, dict) or not isinstance(kernel.get("symbol"), str):
            continue
        symbol: str = kernel["symbol"]
        probe = symbol[4:] if symbol in ("net:napi_gro_receive_entry",
                                         "net:netif_receive_skb_entry") else symbol
        dev = obj.get("dev")
        name = dev.get("name") if isinstance(dev, dict) else None
        fields: dict[str, int] = {}
        notes: tuple[str, ...] = ()
        meta = skb.get("meta") if isinstance(skb, dict) else None
        gso = skb.get("gso") if isinstance(skb, dict) else None
        segs = full_type = None
        if isinstance(meta, dict):
            for key in ("len", "data_len", "hash"):
                if isinstance(meta.get(key), int):
                    fields[key] = meta[key]
            summed = meta.get("ip_summed")
            if isinstance(summed, int):
                fields["ip_summed"] = summed
            elif isinstance(summed, str) and summed.lower() in _CSUM:
                fields["ip_summed"] = _CSUM[summed.lower()]
            if gso_seen:
                fields["gso_size"] = 0
        else:
            packet = obj.get("packet")
            if isinstance(packet, dict) and isinstance(packet.get("len"), int):
                fields["len"] = packet["len"] - ETH_HLEN
                notes = ("retis recorded no skb meta section: len is the packet's, less the "
                         "14-byte Ethernet header",)
        if isinstance(gso, dict):
            for key, name_in in (("size", "gso_size"), ("frags", "nr_frags")):
                if isinstance(gso.get(key), int):
                    fields[name_in] = gso[key]
            if isinstance(gso.get("type"), int):
                full_type = gso["type"]
                fields["gso_type"] = full_type & 0xFFFF
            if isinstance(gso.get("segs"), int):
                segs = gso["segs"]
        if "len" not in fields:
            continue
        ethertype = _ethertype(obj.get("packet"))
        if ethertype is not None:
            fields["protocol"] = ethertype
        yield Captured(probe, name if isinstance(name, str) else None, fields, segs, full_type,
                       notes)


def _ethertype(packet: object) -> int | None:
    """The Ethernet type of retis's packet section (the frame from its MAC header, base64)."""
    if not isinstance(packet, dict) or not isinstance(packet.get("data"), str):
        return None
    try:
        text = str(packet["data"])[:20]
        head = base64.b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        return None
    return int.from_bytes(head[12:14], "big") if len(head) >= 14 else None


# --- bpftrace -------------------------------------------------------------------------------

_BPFTRACE_FIELDS = ("len", "data_len", "truesize", "nr_frags", "gso_size", "gso_segs",
                    "gso_type", "ip_summed", "hash", "l4_hash", "protocol", "queue_mapping",
                    "data", "tail", "end", "mac_header")


def bpftrace_script(dev: str | None) -> str:
    """The bpftrace program whose output ``observe --from-trace`` reads: every skb virtio_net
    hands to GRO (napi_gro_receive_entry) and every skb a tap write hands to
    netif_receive_skb (netif_receive_skb_entry), with the tracepoint's fields and, from the
    skb itself (BTF), its offsets from head and all of shinfo's gso_type and gso_segs."""
    where = f'/ str(args->name) == "{dev}" /\n' if dev else ""
    names = " ".join(f"{n}=%u" for n in _BPFTRACE_FIELDS)
    return (
        "#!/usr/bin/env bpftrace\n"
        "// The skbs a device receives, for `vnetrx observe --from-trace` (printed by\n"
        f"// `vnetrx observe --bpftrace-script{' --dev ' + dev if dev else ''}`). Run as root"
        " on a kernel with BTF:\n"
        "//   bpftrace -f json skbs.bt > skbs.json     (Ctrl-C to stop)\n"
        "// then, anywhere: vnetrx observe --from-trace skbs.json [the device's options]\n"
        "// bpftrace >= 0.21 also accepts args.NAME for args->NAME.\n"
        "tracepoint:net:napi_gro_receive_entry,\n"
        "tracepoint:net:netif_receive_skb_entry\n"
        f"{where}"
        "{\n"
        "  $skb = (struct sk_buff *)args->skbaddr;\n"
        "  $sh = (struct skb_shared_info *)($skb->head + $skb->end);\n"
        f'  printf("{BPFTRACE_TAG} %s dev=%s {names}\\n",\n'
        "    probe, str(args->name), args->len, args->data_len, args->truesize,"
        " args->nr_frags,\n"
        "    $sh->gso_size, $sh->gso_segs, $sh->gso_type, args->ip_summed, args->hash,"
        " args->l4_hash,\n"
        "    args->protocol, args->queue_mapping, (uint64)$skb->data - (uint64)$skb->head,\n"
        "    $skb->tail, $skb->end, $skb->mac_header);\n"
        "}\n"
    )


_BPF_LINE = re.compile(BPFTRACE_TAG + r" (?P<probe>\S+) (?P<pairs>dev=.*)$")


def _bpftrace_lines(text: str) -> Iterator[str]:
    first = _first_json(text)
    if isinstance(first, dict):
        for obj in _ndjson(text, "bpftrace"):
            if obj.get("type") == "printf" and isinstance(obj.get("data"), str):
                yield from str(obj["data"]).splitlines()
    else:
        yield from text.splitlines()


def _bpftrace(text: str) -> Iterator[Captured]:
    for line in _bpftrace_lines(text):
        match = _BPF_LINE.match(line.strip())
        if match is None:
            continue
        pairs = dict(p.split("=", 1) for p in match.group("pairs").split() if "=" in p)
        try:
            values = {n: int(pairs[n]) for n in _BPFTRACE_FIELDS if n in pairs}
        except ValueError:
            raise CaptureError(f"bpftrace: an unreadable line: {line.strip()[:80]}") from None
        segs = values.pop("gso_segs", None)
        full_type = values.get("gso_type")
        if full_type is not None:
            values["gso_type"] = full_type & 0xFFFF
        if values.get("mac_header") == 0xFFFF:
            del values["mac_header"]
        probe = match.group("probe").rsplit(":", 1)[-1]  # tracepoint:net:napi_gro_receive_entry
        yield Captured(probe, pairs.get("dev"), values, segs, full_type)
