"""``vnetrx observe --dev DEV --gro``: what GRO really made of a device's skbs, against the model.

The recording (root; :func:`record`) attaches vnetrx's own raw-tracepoint BPF programs
(vnetrx.live.grobpf, read-only, filtered on the device name): every skb napi_gro_receive gets
(the whole sk_buff and skb_shared_info, 80 bytes at skb->data, the Ethernet header at
head + mac_header) with its gro_result, every skb that leaves GRO (netif_receive_skb and its
frag_list members) and every NAPI poll of the device (napi:napi_poll: work, budget). Nothing is
configured and nothing is sent.

The analysis (:func:`analyse`, pure) groups the inputs into the polls that received them (per
CPU: a poll's skbs all enter GRO on its CPU before its napi_poll event), finds which inputs each
output carries (the HELD or NORMAL input whose skb address it has; a MERGED input joins the
newest aggregate of its flow in its poll), then feeds each poll's inputs (their recorded skb
fields and headers) into :func:`vnetrx.paths.gro.gro_receive` and compares every predicted
output with the observed one. A poll is predicted only when GRO starts it empty and ends it
empty, as the device's NAPI settings say (gro_flush_timeout and napi_defer_hard_irqs 0, HZ <
1000 or a poll short of its budget, no busy polling), and when it lies whole inside the window;
the others are listed with the reason.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import gzip
import os
import socket
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vnetrx.errors import InputError, VnetrxError
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Frag, Skb
from vnetrx.paths.gro import (
    GroLimits,
    Segment,
    gro_receive,
    network_pull,
    parse_tcp_headers,
)
from vnetrx.paths.virtio_net_hdr import gso_type_names

SCHEMA = "vnetrx.observe-gro/1"
VERDICTS = {0: "MERGED", 1: "MERGED_FREE", 2: "HELD", 3: "NORMAL", 4: "CONSUMED"}
GRO_HASH_BUCKETS = 8  # include/net/gro.h
COMPARED = ("len", "data_len", "headlen", "truesize", "nr_frags", "frag_list", "gso_size",
            "gso_segs", "gso_type", "ip_summed")
SKB_KEYS = ("len", "data_len", "headlen", "truesize", "data", "tail", "end", "head_frag",
            "ip_summed", "csum_start", "csum_offset", "mac_header", "nr_frags", "frags",
            "gso_size", "gso_segs", "gso_type", "hash")
ETHTOOL_GGRO = 0x0000002B
SIOCETHTOOL = 0x8946


# --- the device's NAPI facts (read-only) ---------------------------------------------------


@dataclass(frozen=True)
class NapiFacts:
    """What decides how GRO's held skbs outlive a poll, read from the machine (None: unread)."""

    device: str
    gro_flush_timeout: int | None = 0
    napi_defer_hard_irqs: int | None = 0
    threaded: int | None = 0
    hz: int | None = 250
    busy_read: int | None = 0
    busy_poll: int | None = 0
    gro: bool | None = True  # NETIF_F_GRO (ETHTOOL_GGRO)
    rps: bool | None = False  # an rx queue with rps_cpus set

    def not_modelled(self) -> str | None:
        """Why no poll can be predicted on this device, or None."""
        if self.gro_flush_timeout or self.napi_defer_hard_irqs:
            return (f"gro_flush_timeout {self.gro_flush_timeout} / napi_defer_hard_irqs "
                    f"{self.napi_defer_hard_irqs}: napi_complete_done keeps skbs held past the "
                    "poll (flush_old by jiffies, the timer's poll): not modelled here")
        if self.gro_flush_timeout is None or self.napi_defer_hard_irqs is None:
            return "gro_flush_timeout / napi_defer_hard_irqs unreadable: the NAPI mode is unknown"
        return None


def read_napi_facts(device: str, root: str = "") -> NapiFacts:
    """sysfs (/sys/class/net/DEV/{gro_flush_timeout,napi_defer_hard_irqs,threaded}, rps_cpus),
    /proc/sys/net/core/busy_{read,poll}, CONFIG_HZ (/proc/config.gz or /boot/config-<release>)
    and ETHTOOL_GGRO. Reads only."""
    sys_dir = f"{root}/sys/class/net/{device}"

    def number(path: str) -> int | None:
        try:
            return int(Path(path).read_text().strip())
        except (OSError, ValueError):
            return None

    rps: bool | None = None
    with contextlib.suppress(OSError):
        masks = [p.read_text().strip() for p in Path(sys_dir, "queues").glob("rx-*/rps_cpus")]
        rps = any(m.replace(",", "").strip("0") for m in masks)
    return NapiFacts(
        device,
        number(f"{sys_dir}/gro_flush_timeout"),
        number(f"{sys_dir}/napi_defer_hard_irqs"),
        number(f"{sys_dir}/threaded"),
        config_hz(root),
        number(f"{root}/proc/sys/net/core/busy_read"),
        number(f"{root}/proc/sys/net/core/busy_poll"),
        _ethtool_gro(device) if not root else True,
        rps,
    )


def config_hz(root: str = "") -> int | None:
    """CONFIG_HZ of the running kernel (None when no config is readable)."""
    text = None
    with contextlib.suppress(OSError, EOFError, gzip.BadGzipFile):
        text = gzip.decompress(Path(f"{root}/proc/config.gz").read_bytes()).decode()
    if text is None:
        with contextlib.suppress(OSError):
            text = Path(f"{root}/boot/config-{os.uname().release}").read_text()
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("CONFIG_HZ="):
            with contextlib.suppress(ValueError):
                return int(line.split("=", 1)[1])
    return None


def _ethtool_gro(device: str) -> bool | None:
    """ETHTOOL_GGRO (a read): NETIF_F_GRO on the device."""
    value = array.array("B", struct.pack("II", ETHTOOL_GGRO, 0))
    address, _ = value.buffer_info()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            fcntl.ioctl(sock, SIOCETHTOOL, struct.pack("16sP", device.encode(), address)
                        + bytes(24))
    except OSError:
        return None
    return bool(struct.unpack("II", value.tobytes())[1])


# --- records into polls, inputs and outputs ------------------------------------------------


@dataclass
class Input:
    index: int
    cpu: int
    seq: int  # position in the record stream
    rec: dict[str, Any]
    verdict: str | None = None
    poll: int | None = None
    owner: Input | None = None  # MERGED*: the held input it joined
    output: Output | None = None  # HELD/NORMAL: the skb that left GRO with it at its head


@dataclass
class Output:
    rec: dict[str, Any]
    head: Input | None
    members: list[dict[str, Any]] = field(default_factory=list)
    frames: list[int] = field(default_factory=list)


@dataclass
class Poll:
    index: int
    cpu: int
    work: int | None
    budget: int | None
    inputs: list[Input]
    whole: bool  # it began inside the window (a napi_poll of this CPU was seen before it)


@dataclass(frozen=True)
class Recording:
    records: tuple[dict[str, Any], ...]
    lost: int = 0


def _flow(rec: dict[str, Any]) -> str:
    """The MAC header, addresses and ports (what dev_gro_receive's flow match compares)."""
    raw = bytes.fromhex(rec["packet"])
    mac = str(rec["mac"])
    if raw[:1] and raw[0] >> 4 == 4 and len(raw) >= 24:
        ihl = (raw[0] & 0xF) * 4
        return mac + (raw[12:20] + raw[9:10] + raw[ihl:ihl + 4]).hex()
    if raw[:1] and raw[0] >> 4 == 6 and len(raw) >= 44:
        return mac + (raw[8:40] + raw[6:7] + raw[40:44]).hex()
    return mac + raw[:1].hex()


def split(records: Sequence[dict[str, Any]]) -> tuple[list[Poll], list[Input], list[Output]]:
    """The polls (in the order their napi_poll events came), every input, every output."""
    inputs: list[Input] = []
    outputs: list[Output] = []
    polls: list[Poll] = []
    open_: dict[int, list[Input]] = {}
    seen_poll: set[int] = set()
    last_entry: dict[int, Input] = {}
    pending: dict[int, Input] = {}  # skb address → HELD/NORMAL input not yet delivered
    for seq, rec in enumerate(records):
        kind = rec["kind"]
        if kind in ("entry", "frags_entry"):
            cpu = int(rec["cpu"])
            item = Input(len(inputs), cpu, seq, rec)
            inputs.append(item)
            open_.setdefault(cpu, []).append(item)
            last_entry[cpu] = item
        elif kind == "exit":
            cpu = int(rec.get("cpu", 0))
            item_or_none = last_entry.pop(cpu, None)
            if item_or_none is None:
                continue
            item = item_or_none
            item.verdict = VERDICTS.get(int(rec["ret"]), str(rec["ret"]))
            if item.verdict in ("HELD", "NORMAL") and item.output is None:
                pending[int(item.rec["skb"])] = item
            elif item.verdict in ("MERGED", "MERGED_FREE"):
                flow = _flow(item.rec)
                # the newest held skb of its flow in this poll, delivered no earlier than this
                # input's entry (a merge that completes it can be delivered before the exit)
                item.owner = next(
                    (p for p in reversed(open_.get(cpu, [])[:-1])
                     if p.verdict == "HELD" and _flow(p.rec) == flow
                     and (p.output is None or p.output.rec["_seq"] > item.seq)),
                    None)
        elif kind == "delivered":
            head = pending.pop(int(rec["skb"]), None)
            current = last_entry.get(int(rec["cpu"]))
            if head is None and current is not None and current.rec["skb"] == rec["skb"]:
                # GRO_NORMAL reaching gro_normal_batch: delivered inside gro_receive_skb,
                # before its exit
                head = current
            out = Output({**rec, "_seq": seq}, head)
            if head is not None:
                head.output = out
            outputs.append(out)
        elif kind == "member" and outputs:
            outputs[-1].members.append(rec)
        elif kind == "poll":
            cpu = int(rec["cpu"])
            polls.append(Poll(len(polls), cpu, int(rec["work"]), int(rec["budget"]),
                              open_.pop(cpu, []), cpu in seen_poll))
            seen_poll.add(cpu)
    for cpu, rest in open_.items():  # the window ended inside these polls
        if rest:
            polls.append(Poll(len(polls), cpu, None, None, rest, cpu in seen_poll))
    for poll in polls:
        for item in poll.inputs:
            item.poll = poll.index
    for item in inputs:
        if item.owner is not None and item.owner.output is not None:
            item.owner.output.frames.append(item.index)
    for out in outputs:
        if out.head is not None:
            out.frames.insert(0, out.head.index)
    return polls, inputs, outputs


def cut(records: Sequence[dict[str, Any]], count: int) -> tuple[dict[str, Any], ...]:
    """The window of ``count`` inputs, ended at poll boundaries: once ``count`` skbs entered
    GRO, each CPU keeps its records up to its next napi_poll event (the poll under way ends
    whole) and none of its later inputs or polls; after that only the deliveries of kept
    inputs (and their frag_list members) are kept."""
    kept: list[dict[str, Any]] = []
    seen = 0
    closing: set[int] | None = None  # CPUs whose poll under way has ended
    pending: set[int] = set()  # skb addresses of kept inputs not delivered yet
    keep_members = False
    for rec in records:
        kind = rec["kind"]
        cpu = rec.get("cpu")
        if kind == "member":
            if keep_members:
                kept.append(rec)
            continue
        keep_members = False
        if closing is not None and (
            (kind in ("entry", "frags_entry", "exit", "poll") and cpu in closing)
            or (kind == "delivered" and int(rec["skb"]) not in pending)
        ):
            continue
        kept.append(rec)
        if kind in ("entry", "frags_entry"):
            pending.add(int(rec["skb"]))
            seen += 1
            if seen == count:
                closing = set()
        elif kind == "delivered":
            pending.discard(int(rec["skb"]))
            keep_members = True
        elif kind == "poll" and closing is not None:
            closing.add(int(rec["cpu"]))
    return tuple(kept)


# --- recorded skbs into the model's Segments ---------------------------------------------------


def recorded_skb(rec: dict[str, Any]) -> Skb:
    """The Skb a record describes (offsets from head, frags with their len and offset; what
    each frag adds to truesize is not recorded, only the sum)."""
    frags = tuple(Frag(f"frag{i}", int(f["offset"]), int(f["len"]), 0)
                  for i, f in enumerate(rec["frags"]))
    gso_type = int(rec["gso_type"])
    return Skb(
        head="recorded", head_size=int(rec["end"]), data=int(rec["data"]),
        tail=int(rec["tail"]), end=int(rec["end"]), len=int(rec["len"]),
        data_len=int(rec["data_len"]), truesize=int(rec["truesize"]),
        nr_frags=int(rec["nr_frags"]), mac_header=int(rec["mac_header"]), frags=frags,
        ip_summed=int(rec["ip_summed"]), csum_start=int(rec["csum_start"]),
        csum_offset=int(rec["csum_offset"]), gso_size=int(rec["gso_size"]), gso_type=gso_type,
        gso_type_names=gso_type_names(gso_type), gso_segs=int(rec["gso_segs"]),
        hash=int(rec.get("hash", 0)),
    )


def segment(item: Input) -> Segment:
    """An input as gro_receive takes it: its skb, head_frag and the headers GRO reads. Header
    bytes past the linear area were not in the recorded 80 at skb->data; when the same skb left
    GRO (HELD or NORMAL: pulled by then) its bytes fill them in (the TCP options: GRO rewrites
    only the IP length and checksum of an aggregate)."""
    rec = item.rec
    skb = recorded_skb(rec)
    raw = bytes.fromhex(rec["packet"])
    network = raw[:min(len(raw), skb.headlen)]
    if item.output is not None and len(network) < len(raw):
        after = bytes.fromhex(item.output.rec["packet"])
        network += after[len(network):min(len(after), item.output.rec["headlen"])]
    tcp = parse_tcp_headers(bytes.fromhex(rec["mac"]), network, skb.len)
    mac = bytes.fromhex(rec["mac"])
    udp = tcp is None and _udp_checksummed(mac, network)
    pull = network_pull(mac, network, skb.len) if tcp is None else 0
    return Segment(item.index, skb, bool(rec["head_frag"]), tcp, f"input {item.index}", 0, udp,
                   pull)


def _udp_checksummed(mac: bytes, net: bytes) -> bool:
    """A UDP datagram with a nonzero checksum: udp4/6_gro_receive validates a CHECKSUM_NONE one
    (assumed right: the payload is not recorded)."""
    if len(mac) < 14:
        return False
    ethertype = struct.unpack_from("!H", mac, 12)[0]
    if ethertype == 0x0800 and len(net) >= 20 and net[9] == 17:
        at = (net[0] & 0xF) * 4
    elif ethertype == 0x86DD and len(net) >= 48 and net[6] == 17:
        at = 40
    else:
        return False
    return len(net) >= at + 8 and net[at + 6:at + 8] != b"\0\0"


# --- the comparison ------------------------------------------------------------------------


@dataclass(frozen=True)
class Compared:
    """One skb that left GRO: predicted against observed."""

    poll: int
    frames: tuple[int, ...]  # the inputs it carries (observed; predicted when not observed)
    predicted: dict[str, Any] | None
    observed: dict[str, Any] | None
    flush: str | None  # why the model completed it
    differ: tuple[str, ...]

    @property
    def match(self) -> bool:
        return self.predicted is not None and self.observed is not None and not self.differ


@dataclass(frozen=True)
class Skipped:
    poll: int
    inputs: int
    reason: str


@dataclass(frozen=True)
class GroReport:
    facts: NapiFacts
    kernel: str
    inputs: int
    outputs: int
    polls: int
    compared: tuple[Compared, ...]
    skipped: tuple[Skipped, ...]
    lost: int
    notes: tuple[str, ...]
    interrupted: bool = False

    @property
    def matches(self) -> int:
        return sum(c.match for c in self.compared)

    @property
    def mismatches(self) -> int:
        return len(self.compared) - self.matches

    @property
    def match(self) -> bool:
        """No predicted skb differs (nothing to compare is not a failure)."""
        return self.mismatches == 0 and not self.lost


def observed_row(rec: dict[str, Any], members: Sequence[dict[str, Any]]) -> dict[str, Any]:
    row = {name: int(rec[name]) for name in COMPARED if name != "frag_list"}
    row["frag_list"] = len(members)
    return row


def predicted_row(skb: Skb) -> dict[str, Any]:
    return {"len": skb.len, "data_len": skb.data_len, "headlen": skb.headlen,
            "truesize": skb.truesize, "nr_frags": skb.nr_frags, "frag_list": len(skb.frag_list),
            "gso_size": skb.gso_size, "gso_segs": skb.gso_segs, "gso_type": skb.gso_type,
            "ip_summed": skb.ip_summed}


def _why_not(poll: Poll, facts: NapiFacts) -> str | None:
    if not poll.whole:
        return "the poll began before the window (its first skbs were not recorded)"
    if poll.work is None:
        return "the window ended inside the poll"
    if facts.hz is not None and facts.hz >= 1000 and poll.budget is not None \
            and poll.work >= poll.budget:
        return (f"a poll that used its whole budget with HZ {facts.hz}: __napi_poll flushes "
                "only skbs held in an earlier jiffy (not modelled)")
    if facts.hz is None and poll.budget is not None and poll.work >= poll.budget:
        return "a poll that used its whole budget with CONFIG_HZ unknown"
    for item in poll.inputs:
        if item.verdict is None:
            return f"input {item.index} has no recorded gro_result"
        if item.verdict == "CONSUMED":
            return f"input {item.index} was GRO_CONSUMED (a tunnel or fraglist path)"
        if item.verdict in ("MERGED", "MERGED_FREE") and item.owner is None:
            return f"input {item.index} merged into an skb held before this poll"
        if item.verdict in ("HELD", "NORMAL") and item.output is None:
            return f"input {item.index} did not leave GRO within the window"
        if item.rec["kind"] == "frags_entry":
            return "napi_gro_frags inputs are not modelled"
    buckets = {int(i.rec.get("hash", 0)) & (GRO_HASH_BUCKETS - 1) for i in poll.inputs}
    if len(buckets) > 1:
        return (f"inputs in {len(buckets)} GRO hash buckets (skb->hash set): the model holds "
                "one bucket")
    return None


def analyse(k: KernelProfile, facts: NapiFacts, recording: Recording,
            limits: GroLimits | None = None, interrupted: bool = False) -> GroReport:
    """Every whole poll predicted and compared (see the module docstring)."""
    polls, inputs, outputs = split(recording.records)
    compared: list[Compared] = []
    skipped: list[Skipped] = []
    blocked = facts.not_modelled()
    by_head = {o.head.index: o for o in outputs if o.head is not None}
    for poll in polls:
        if not poll.inputs:
            continue
        reason = blocked or _why_not(poll, facts)
        if reason is None:
            try:
                segments = [segment(i) for i in poll.inputs]
                run = gro_receive(k, [[segments]], budget=poll.budget or 64,
                                  gro=facts.gro is not False, limits=limits)
            except InputError as exc:
                reason = exc.message
        if reason is not None:
            skipped.append(Skipped(poll.index, len(poll.inputs), reason))
            continue
        observed = [o for o in (by_head.get(i.index) for i in poll.inputs) if o is not None]
        observed.sort(key=lambda o: int(o.rec["_seq"]))
        for position, delivered in enumerate(run.delivered):
            out = by_head.get(delivered.frames[0])
            pred = predicted_row(delivered.skb)
            pred["frames"] = list(delivered.frames)
            if out is None:
                compared.append(Compared(poll.index, delivered.frames, pred, None,
                                         delivered.flush.value, ("observed",)))
                continue
            obs = observed_row(out.rec, out.members)
            obs["frames"] = list(out.frames)
            differ = [n for n in (*COMPARED, "frames") if pred[n] != obs[n]]
            if position >= len(observed) or observed[position] is not out:
                differ.append("order")
            compared.append(Compared(poll.index, tuple(out.frames), pred, obs,
                                     delivered.flush.value, tuple(differ)))
        predicted_heads = {d.frames[0] for d in run.delivered}
        compared.extend(
            Compared(poll.index, tuple(out.frames), None, observed_row(out.rec, out.members),
                     None, ("predicted",))
            for out in observed if out.head is not None and out.head.index not in predicted_heads)
    notes = _notes(facts, inputs, recording.lost)
    return GroReport(facts, k.name, len(inputs), len(outputs), len(polls), tuple(compared),
                     tuple(skipped), recording.lost, tuple(notes), interrupted)


def _notes(facts: NapiFacts, inputs: Sequence[Input], lost: int) -> list[str]:
    notes = []
    if lost:
        notes.append(f"{lost} records were lost (the BPF queue was full): the match is void")
    if any(int(i.rec.get("hash", 0)) for i in inputs):
        notes.append("some inputs carry skb->hash: polls spanning several GRO buckets are "
                     "skipped")
    else:
        notes.append("skb->hash is 0 on every input (no HASH_REPORT): one GRO bucket")
    if any(i.rec["ip_summed"] == 0 and segment_is_tcp(i) for i in inputs):
        notes.append("CHECKSUM_NONE TCP inputs: their checksum is assumed right (GRO sums the "
                     "payload, which is not recorded)")
    if facts.busy_read or facts.busy_poll:
        notes.append(f"busy polling is on (busy_read {facts.busy_read}, busy_poll "
                     f"{facts.busy_poll}): napi_complete_done does nothing while a socket "
                     "busy-polls; such polls may mismatch")
    if facts.rps:
        notes.append("RPS is on: skbs are delivered from other CPUs' backlogs; the order of "
                     "outputs across polls is the backlog's")
    notes.append(f"HZ {facts.hz}: a poll that uses its whole budget flushes everything"
                 if facts.hz is not None and facts.hz < 1000 else f"HZ {facts.hz}")
    notes.append("gro_max_size and gro_ipv4_max_size are assumed at their default (65536)")
    notes.append("outputs are compared in len, data_len, headlen, truesize, nr_frags, "
                 "frag_list skbs, gso_size, gso_segs, gso_type, ip_summed, the inputs they "
                 "carry and their order in the poll")
    return notes


def segment_is_tcp(item: Input) -> bool:
    raw = bytes.fromhex(item.rec["packet"])
    return bool(raw) and ((raw[0] >> 4 == 4 and len(raw) > 9 and raw[9] == 6)
                          or (raw[0] >> 4 == 6 and len(raw) > 6 and raw[6] == 6))


# --- the --json document ----------------------------------------------------------------------


def report_to_dict(report: GroReport) -> dict[str, Any]:
    f = report.facts
    return {
        "schema": SCHEMA,
        "device": f.device,
        "kernel": report.kernel,
        "napi": {"gro_flush_timeout": f.gro_flush_timeout,
                 "napi_defer_hard_irqs": f.napi_defer_hard_irqs, "threaded": f.threaded,
                 "hz": f.hz, "busy_read": f.busy_read, "busy_poll": f.busy_poll, "gro": f.gro,
                 "rps": f.rps},
        "match": report.match,
        "counts": {"inputs": report.inputs, "outputs": report.outputs, "polls": report.polls,
                   "compared": len(report.compared), "matches": report.matches,
                   "mismatches": report.mismatches,
                   "skipped_polls": len(report.skipped),
                   "skipped_inputs": sum(s.inputs for s in report.skipped),
                   "lost_records": report.lost},
        "skbs": [{"poll": c.poll, "frames": list(c.frames), "match": c.match,
                  "flush": c.flush, "predicted": c.predicted, "observed": c.observed,
                  "differ": list(c.differ)} for c in report.compared],
        "skipped": [{"poll": s.poll, "inputs": s.inputs, "reason": s.reason}
                    for s in report.skipped],
        "notes": list(report.notes),
        **({"interrupted": True} if report.interrupted else {}),
    }


# --- a recording saved and read back (tests, --from-recording) --------------------------------

RECORDING_SCHEMA = "vnetrx.gro-recording/1"
KEPT = ("kind", "cpu", "index", "skb", "ret", "work", "budget", "jiffies", "len", "data_len",
        "headlen", "truesize", "data", "tail", "end", "head_frag", "ip_summed", "csum_start",
        "csum_offset", "mac_header", "nr_frags", "frags", "gso_size", "gso_segs", "gso_type",
        "frag_list", "hash", "packet", "mac")


def recording_to_dict(recording: Recording, facts: NapiFacts, kernel: str) -> dict[str, Any]:
    """What a recording keeps: each record's skb fields and its headers only (the bytes at
    skb->data cut after the TCP or UDP header; no timestamps), skb addresses renumbered in the
    order they first appear (what matters is which records share one), the device's NAPI
    facts and the kernel."""
    ids: dict[int, int] = {}
    records = []
    for r in recording.records:
        kept = {k: r[k] for k in KEPT if k in r}
        if "skb" in kept:
            kept["skb"] = ids.setdefault(int(kept["skb"]), len(ids) + 1)
        if "packet" in kept:
            kept["packet"] = headers_only(bytes.fromhex(kept["packet"])).hex()
        records.append(kept)
    return {"schema": RECORDING_SCHEMA, "kernel": kernel,
            "facts": {k: getattr(facts, k) for k in NapiFacts.__dataclass_fields__},
            "lost": recording.lost, "records": records}


def headers_only(net: bytes) -> bytes:
    """The bytes from the IP header up to the end of the TCP (or UDP) header: no payload."""
    if net[:1] and net[0] >> 4 == 4 and len(net) >= 20:
        at, proto = (net[0] & 0xF) * 4, net[9]
    elif net[:1] and net[0] >> 4 == 6 and len(net) >= 40:
        at, proto = 40, net[6]
    else:
        return b""
    if proto == 6 and len(net) >= at + 13:
        return net[:at + (net[at + 12] >> 4) * 4]
    return net[:at + 8] if proto == 17 else net[:at]


def recording_text(doc: dict[str, Any]) -> str:
    """The recording as JSON text, one record a line."""
    import json

    head = {k: v for k, v in doc.items() if k != "records"}
    lines = [json.dumps(r, separators=(",", ":")) for r in doc["records"]]
    return (json.dumps(head, indent=1)[:-2] + ',\n "records": [\n' + ",\n".join(lines)
            + "\n ]\n}\n")


def recording_from_dict(doc: Any) -> tuple[Recording, NapiFacts, str]:
    """A saved recording back (InputError when it is not one)."""
    if not isinstance(doc, dict) or doc.get("schema") != RECORDING_SCHEMA:
        raise InputError(f"not a GRO recording (no \"schema\": \"{RECORDING_SCHEMA}\")")
    try:
        facts = NapiFacts(**doc["facts"])
        records = tuple(dict(r) for r in doc["records"])
        for n, r in enumerate(records):
            _check_record(n, r)
        return Recording(records, int(doc.get("lost", 0))), facts, str(doc.get("kernel", ""))
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"a malformed GRO recording ({type(exc).__name__}: {exc})") from None


# what the check reads of each kind of record (grobpf.decode writes them): whole numbers, the
# header bytes as hex, the frags as (len, offset) pairs
_SKB_NUMBERS = ("skb", "len", "data_len", "headlen", "truesize", "data", "tail", "end",
                "head_frag", "ip_summed", "csum_start", "csum_offset", "mac_header", "nr_frags",
                "gso_size", "gso_segs", "gso_type")
_RECORD_NUMBERS = {
    "poll": ("cpu", "work", "budget"),
    "exit": ("cpu", "ret"),
    "entry": ("cpu", *_SKB_NUMBERS),
    "frags_entry": ("cpu", *_SKB_NUMBERS),
    "delivered": ("cpu", *_SKB_NUMBERS),
    "member": ("index", *_SKB_NUMBERS),
}
_OPTIONAL_NUMBERS = ("jiffies", "hash", "_seq")


def _check_record(n: int, r: dict[str, Any]) -> None:
    """InputError unless record ``n`` holds what the check reads of its kind, each of its
    type (a recording edited or cut by hand would otherwise fail deep in the comparison)."""
    kind = r.get("kind")
    if kind not in _RECORD_NUMBERS:
        raise InputError(f"record {n}: unknown kind {kind!r} (valid: "
                         f"{', '.join(_RECORD_NUMBERS)})")
    for name in _RECORD_NUMBERS[kind] + tuple(k for k in _OPTIONAL_NUMBERS if k in r):
        value = r.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise InputError(f"record {n} ({kind}): {name} is {value!r}, not a whole number")
    if kind in ("poll", "exit"):
        return
    for name in ("packet", "mac"):
        value = r.get(name)
        try:
            bytes.fromhex(value) if isinstance(value, str) else None
        except ValueError:
            value = None
        if not isinstance(value, str):
            raise InputError(f"record {n} ({kind}): {name} is not hex bytes")
    frags = r.get("frags")
    if not isinstance(frags, list) or not all(
            isinstance(f, dict) and all(isinstance(f.get(k), int) for k in ("len", "offset"))
            for f in frags):
        raise InputError(f"record {n} ({kind}): frags is not a list of {{len, offset}}")


# --- the recording (root) -----------------------------------------------------------------


def record(device: str, count: int, seconds: float,
           on_input: Callable[[int], None] | None = None,
           settle: float = 0.2) -> Recording:
    """Record ``device`` until ``count`` skbs entered GRO or ``seconds`` passed, then ``settle``
    seconds more (the last polls end and deliver). KeyboardInterrupt keeps what was recorded
    (``exc.partial``: a Recording)."""
    from vnetrx.errors import Interrupted
    from vnetrx.live.grobpf import GroProbe, decode

    records: list[dict[str, Any]] = []
    try:
        probe = GroProbe(device, polls=True)
        probe.__enter__()
    except OSError as exc:
        raise VnetrxError(f"cannot attach the GRO recording programs: {exc}") from None
    try:
        seen = 0
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end and seen < count:
                for raw in probe.drain():
                    rec = decode(raw, probe.offsets)
                    records.append(rec)
                    if rec["kind"] == "entry":
                        seen += 1
                        if on_input is not None:
                            on_input(seen)
                time.sleep(0.005)
            stop = time.monotonic() + settle
            while time.monotonic() < stop:
                records.extend(decode(r, probe.offsets) for r in probe.drain())
                time.sleep(0.005)
        except KeyboardInterrupt:
            raise Interrupted(Recording(cut(records, count), probe.lost())) from None
        return Recording(cut(records, count), probe.lost())
    finally:
        probe.close()


