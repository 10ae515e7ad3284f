"""The GRO oracle: write TCP bursts into a tap opened with IFF_NAPI (optionally IFF_NAPI_FRAGS,
IFF_VNET_HDR) and record, from the running kernel, every skb that leaves GRO (root only).

What it creates, and removes again on success, on error and on SIGINT/SIGTERM:

* a child process (``PR_SET_PDEATHSIG``: it dies with its parent) that moves itself into a new
  network and mount namespace (``unshare(CLONE_NEWNET | CLONE_NEWNS)``, mounts made private,
  then a sysfs of that network namespace mounted on its own /sys, so that
  ``/sys/class/net/TAP/gro_flush_timeout`` names its tap); the namespaces die with the child;
* in it, for each burst, a non-persistent tap ``vnx<10 hex digits>`` (closed after the burst):
  link up, no address, IPv6 off, MTU raised only when a frame needs it;
* BPF raw tracepoint programs of its own (vnetrx.live.grobpf), held by the child's file
  descriptors: they go when it exits, however it exits.

Nothing is sent to any address: frames go straight into the tap fd with a foreign destination
MAC, and the namespace's stack drops what GRO delivers (PACKET_OTHERHOST).

**Timing.** Each ``write()`` on an IFF_NAPI tap schedules the tap's NAPI and runs its poll in
the same system call (``local_bh_enable``), one skb per poll; ``napi_complete_done(napi, 1)``
then flushes everything GRO holds, unless ``gro_flush_timeout`` is set: then it completes only
skbs held in an earlier jiffy (``flush_old``) and arms a timer for the rest. So with a timeout,
writes made within one jiffy (HZ=250: 4 ms) form one GRO run, and the timer delivers what is
still held ``gro_flush_timeout`` ns after the last poll. A burst crossing a jiffy tick is split
by the kernel, not by the frames: :func:`split_reason` detects it from the jiffies each record
carries, and :func:`run_case` writes the burst again (a fresh tap) instead of guessing. A
*timed* case (tap option ``timed``: a burst written with a pause) is split on purpose: each
input's ktime and jiffies are recorded with it, and the model is given them (GroClock).
"""

from __future__ import annotations

import contextlib
import errno as errno_mod
import fcntl
import json
import os
import secrets
import select
import signal
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from vnetrx import owner as owners
from vnetrx.errors import VnetrxError
from vnetrx.live import gro_frames
from vnetrx.live.gro_cases import tap_options
from vnetrx.live.tap import (
    CLONE_NEWNET,
    IFF_NO_PI,
    IFF_TAP,
    IFF_UP,
    IFF_VNET_HDR,
    PR_SET_PDEATHSIG,
    SIOCGIFFLAGS,
    SIOCSIFFLAGS,
    TUNSETIFF,
    TUNSETVNETHDRSZ,
    missing_requirements,
)
from vnetrx.live.tracefs import check, libc

__all__ = ["GroTap", "analyse", "missing_requirements", "run_case", "run_cases", "split_reason"]

# include/uapi/linux/if_tun.h, sockios.h, sched.h, mount.h
IFF_NAPI = 0x0010
IFF_NAPI_FRAGS = 0x0020
SIOCSIFMTU = 0x8922
CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
# include/uapi/linux/rtnetlink.h, if_link.h
RTM_NEWLINK = 16
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
IFLA_GRO_MAX_SIZE, IFLA_GRO_IPV4_MAX_SIZE = 58, 64
REPLY_TIMEOUT = 30.0
VERDICTS = {0: "MERGED", 1: "MERGED_FREE", 2: "HELD", 3: "NORMAL", 4: "CONSUMED"}
SKB_FIELDS = ("len", "data_len", "headlen", "truesize", "nr_frags", "gso_size", "gso_segs",
              "gso_type", "ip_summed", "csum_start", "csum_offset", "head_frag", "data",
              "network_header")


class GroTap:
    """Context manager: the child process in its namespaces, ready to write bursts."""

    def __init__(self) -> None:
        from vnetrx.live.grobpf import btf_offsets

        self.offsets = btf_offsets()
        self.ifname = f"vnx{secrets.token_hex(5)}"
        self.child: int | None = None
        self._to: TextIO | None = None
        self._from: TextIO | None = None

    def __enter__(self) -> GroTap:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(down_w)
            os.close(up_r)
            _child_main(down_r, up_w, self.ifname, parent, self.offsets)
        self.child = pid
        os.close(down_r)
        os.close(up_w)
        self._to = os.fdopen(down_w, "w", buffering=1)
        self._from = os.fdopen(up_r, "r", buffering=1)
        self._reply()

    def burst(self, case: dict[str, Any]) -> dict[str, Any]:
        """Write one burst on a fresh tap; the raw records and the writes' results."""
        assert self._to is not None
        self._to.write(json.dumps({"burst": case["burst"], "tap": tap_options(case)}) + "\n")
        return self._reply()

    def _reply(self) -> dict[str, Any]:
        assert self._from is not None
        ready, _, _ = select.select([self._from], [], [], REPLY_TIMEOUT)
        line = self._from.readline() if ready else ""
        if not line:
            raise VnetrxError("the GRO tap helper process did not answer (it may have died)")
        reply: dict[str, Any] = json.loads(line)
        if "fatal" in reply:
            raise VnetrxError(f"live GRO check failed: {reply['fatal']}")
        return reply

    def close(self) -> None:
        """Stop the child (its namespaces, tap and BPF programs go with it). Never raises."""
        with owners.shielded():
            for stream in (self._to, self._from):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._to = self._from = None
            if self.child is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.child, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(self.child, 0)
                self.child = None


# --- analysis (pure) -------------------------------------------------------------------------


def _network(packet_hex: str, mac_hex: str = "") -> bytes:
    """The bytes at the network header: past a VLAN tag at skb->data when the Ethernet
    header's type is a VLAN TPID (the tap has no hardware tag stripping: the tag is in the
    frame)."""
    raw = bytes.fromhex(packet_hex)
    mac = bytes.fromhex(mac_hex)
    if len(mac) >= 14 and int.from_bytes(mac[12:14], "big") in (0x8100, 0x88A8):
        return raw[4:]
    return raw


def _transport(raw: bytes) -> tuple[int, int]:
    """The protocol and offset of the transport header in the packet ``raw`` (IPv4, or IPv6
    past the extension headers GRO walks); (-1, 0) when it is neither."""
    if raw[:1] and raw[0] >> 4 == 4 and len(raw) >= 20:
        return raw[9], (raw[0] & 0xF) * 4
    if raw[:1] and raw[0] >> 4 == 6 and len(raw) >= 40:
        proto, at = raw[6], 40
        while proto in (0, 43, 60) and at + 8 <= len(raw):
            proto, at = raw[at], at + (raw[at + 1] + 1) * 8
        return proto, at
    return -1, 0


def _flow_key(packet_hex: str, mac_hex: str = "") -> str:
    """Addresses, IPv6 extension headers and ports from the bytes at the network header (IPv4
    or IPv6 + TCP), and a VLAN tag."""
    full = bytes.fromhex(packet_hex)
    raw = _network(packet_hex, mac_hex)
    tag = full[:len(full) - len(raw)]
    _, at = _transport(raw)
    if raw[:1] and raw[0] >> 4 == 4:
        return (tag + raw[12:20] + raw[at:at + 4]).hex()
    return (tag + raw[8:at + 4]).hex()


def _seq(packet_hex: str, mac_hex: str = "") -> int | None:
    """The TCP sequence number at the network header (None: not IPv4/IPv6 + TCP)."""
    raw = _network(packet_hex, mac_hex)
    if len(raw) < 40:
        return None
    proto, at = _transport(raw)
    if proto != 6:
        return None
    return int.from_bytes(raw[at + 4:at + 8], "big") if len(raw) >= at + 8 else None


def _skb_row(rec: dict[str, Any]) -> dict[str, Any]:
    row = {name: rec[name] for name in SKB_FIELDS}
    row["frags"] = [f["len"] for f in rec["frags"]]
    return row


def _check_order(row: dict[str, Any], writes: list[gro_frames.Write]) -> None:
    """The input's TCP sequence number (when its headers are linear) is the one its write
    carried: the inputs are numbered right."""
    index = row["write"]
    if index is None or row["seq"] is None or row["headlen"] < 60:
        return
    if row["seq"] != writes[index].seq:
        raise VnetrxError(f"GRO input {index} has seq {row['seq']}, its write "
                          f"{writes[index].seq}: the records are out of order")


def split_reason(records: list[dict[str, Any]], timeout_ns: int) -> str | None:
    """Why this burst is not one GRO run, or None. A run is clean when every input's entry and
    exit carry the first entry's jiffies, and every skb delivered before the flush timer could
    fire (half the timeout after the last exit) was delivered in that jiffy too: then no
    ``flush_old`` in ``napi_complete_done`` and no timer completed anything early."""
    entries = [r for r in records if r["kind"] in ("entry", "frags_entry", "exit")]
    if not entries:
        return "no input reached GRO"
    first = entries[0]["jiffies"]
    for rec in entries:
        if rec["jiffies"] != first:
            return f"a jiffy tick inside the burst ({first} -> {rec['jiffies']})"
    last_exit = max(r["ktime"] for r in entries)
    for rec in records:
        if rec["kind"] == "delivered" and rec["ktime"] < last_exit + timeout_ns // 2 \
                and rec["jiffies"] != first:
            return f"an skb delivered at jiffy {rec['jiffies']} during the burst"
    return None


def analyse(records: list[dict[str, Any]], writes: list[gro_frames.Write],
            results: list[Any], times: bool = False) -> dict[str, Any]:
    """The inputs (pre-GRO skb, verdict, which write), and the skbs that left GRO with the
    frames each carries, from the records in time order.

    Inputs are numbered in the order they entered GRO (= the order of successful writes).
    Which inputs an output carries: the HELD input whose skb address the delivered skb has; an
    input MERGED/MERGED_FREE goes into the newest pending aggregate of its flow (addresses and
    ports at its network header), as dev_gro_receive's flow match does for one device with
    every flow in hash bucket 0; a frag_list member is the MERGED input of its address,
    followed by the MERGED_FREE inputs up to the next member (they fill the last member's frags,
    ``NAPI_GRO_CB(p)->last``). ``times``: each input also says when it entered GRO (``ktime``,
    CLOCK_MONOTONIC ns, and ``jiffies``)."""
    written = [i for i, r in enumerate(results) if isinstance(r, int)]
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []  # aggregates held, not delivered yet
    delivered_now: list[dict[str, Any]] = []  # delivered while the current input was in GRO
    current: dict[str, Any] | None = None
    for rec in records:
        kind = rec["kind"]
        if kind in ("entry", "frags_entry"):
            index = len(inputs)
            current = {"write": written[index] if index < len(written) else None,
                       "event": kind, "skb_addr": rec["skb"],
                       "flow": _flow_key(rec["packet"], rec.get("mac", "")),
                       "seq": _seq(rec["packet"], rec.get("mac", "")), "verdict": None, **_skb_row(rec)}
            if times:
                current["ktime"], current["jiffies"] = rec["ktime"], rec["jiffies"]
            inputs.append(current)
            delivered_now = []
            _check_order(current, writes)
        elif kind == "exit" and current is not None:
            current["verdict"] = VERDICTS.get(rec["ret"], str(rec["ret"]))
            index = len(inputs) - 1
            if current["verdict"] in ("HELD", "NORMAL"):
                pending.append({"addr": current["skb_addr"], "flow": current["flow"],
                                "frames": [index], "merged": [], "held": current["verdict"]})
            elif current["verdict"] in ("MERGED", "MERGED_FREE"):
                # the aggregate it merged into may already be out: a merge that flushes
                # (PSH, a short segment) reaching gro_normal_batch is delivered inside
                # gro_receive_skb, before the exit tracepoint
                owner = next((p for p in [*reversed(pending), *delivered_now]
                              if p["flow"] == current["flow"] and p["held"] == "HELD"), None)
                if owner is not None:
                    owner["frames"].append(index)
                    owner["merged"].append((index, current["verdict"], current["skb_addr"]))
            current = None
        elif kind == "delivered":
            owner = next((p for p in pending if p["addr"] == rec["skb"]), None)
            if owner is not None:
                pending.remove(owner)
                delivered_now.append(owner)
            row = _skb_row(rec)
            row["frames"] = owner["frames"] if owner else None  # the same list: see above
            row["frag_list"] = {"count": 0, "bytes": 0, "members": []}
            row["_merged"] = owner["merged"] if owner else []
            row["seq"] = _seq(rec["packet"], rec.get("mac", ""))
            outputs.append(row)
        elif kind == "member" and outputs:
            member = _skb_row(rec)
            member["addr"] = rec["skb"]
            outputs[-1]["frag_list"]["members"].append(member)
    for row in outputs:
        row["writes"] = None if row["frames"] is None else \
            [inputs[i]["write"] for i in row["frames"]]
        members = row["frag_list"]["members"]
        row["frag_list"]["count"] = len(members)
        row["frag_list"]["bytes"] = sum(m["len"] for m in members)
        merged = row.pop("_merged")
        owner_of: dict[int, int] = {}  # member position of each merged input
        position = -1
        for index, verdict, addr in merged:
            if verdict == "MERGED":
                position = next((j for j, m in enumerate(members) if m["addr"] == addr
                                 and j > position), position)
            owner_of[index] = position
        for j, member in enumerate(members):
            member["frames"] = [i for i, p in owner_of.items() if p == j]
            del member["addr"]
    return {"inputs": [{k: v for k, v in i.items() if k not in ("skb_addr", "flow")}
                       for i in inputs],
            "skbs": outputs, "writes": results}


def run_case(tap: GroTap, case: dict[str, Any], repeats: int = 3, max_tries: int = 10,
             on_retry: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run a case ``repeats`` times, each a clean GRO run (a split burst is written again, at
    most ``max_tries`` times per repeat). The observation of the first run, whether all runs
    agreed, and the retries with their reasons."""
    writes = gro_frames.build(case["burst"])
    timeout = tap_options(case)["gro_flush_timeout"]
    timed = tap_options(case)["timed"]
    runs: list[dict[str, Any]] = []
    retries: list[str] = []
    for _ in range(repeats):
        for _attempt in range(max_tries):
            reply = tap.burst(case)
            reason = incomplete_reason(reply) or (None if timed
                                                  else _why_split(case, reply, timeout))
            if reason is None:
                runs.append(analyse(reply["records"], writes, reply["writes"], times=timed))
                break
            retries.append(reason)
            if on_retry is not None:
                on_retry(reason)
        else:
            raise VnetrxError(f"case {case['name']}: no clean GRO run in {max_tries} tries")
    stable = [_comparable(r) for r in runs]
    return {"observed": runs[0], "repeats": len(runs),
            "deterministic": all(s == stable[0] for s in stable), "retries": retries}


def run_cases(cases: list[dict[str, Any]], repeats: int = 3,
              on_result: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
              ) -> list[dict[str, Any]]:
    """Set up, run every case (:func:`run_case`), tear down; SIGINT and SIGTERM clean up
    too (KeyboardInterrupt). ``on_result(case, result)`` sees each result as it comes."""
    results = []
    with owners.interrupt_once(), GroTap() as tap:
        for case in cases:
            result = run_case(tap, case, repeats=repeats)
            results.append(result)
            if on_result is not None:
                on_result(case, result)
    return results


def incomplete_reason(reply: dict[str, Any]) -> str | None:
    """Why a burst's records are not the whole story, or None. Every skb GRO kept or passed on
    leaves it through netif_receive_skb in every case on record; on a busy 6.18.44 machine a
    few bursts in a thousand lack that record although tracefs shows the event (the timer's
    flush, run from a softirq on another task's interrupt; the programs counted no recursion
    miss and the queue refused nothing; why the record is missing is not known): such a burst
    is written again rather than taken for what GRO did."""
    if reply.get("lost"):
        return f"the record queue refused {reply['lost']} record(s)"
    held = still_held(reply["records"])
    if held:
        return (f"{held} skb(s) GRO kept were not seen leaving it within {DELIVERY_WAIT_S:g} s "
                "of the flush timeout")
    return None


def _why_split(case: dict[str, Any], reply: dict[str, Any], timeout: int) -> str | None:
    """split_reason for a flush timeout; for pinned threaded NAPI, a poll that began before
    the last write returned (the burst is then more than one poll)."""
    if tap_options(case)["threaded"] == "pinned":
        first = min((r["ktime"] for r in reply["records"] if r["kind"] == "entry"), default=0)
        return "the NAPI thread polled during the burst" if first < reply["written_ns"] \
            else None
    if timeout and not case.get("napi_frags"):
        return split_reason(reply["records"], timeout)
    return None


def _comparable(run: dict[str, Any]) -> str:
    """What must repeat exactly (addresses and times never; everything else yes)."""
    inputs = [{k: v for k, v in i.items() if k not in ("ktime", "jiffies")}
              for i in run["inputs"]]
    return json.dumps({**run, "inputs": inputs}, sort_keys=True)


# --- the child ---------------------------------------------------------------------------------


def _child_main(requests: int, replies: int, ifname: str, parent: int, offsets: Any) -> None:
    code = 1
    out = os.fdopen(replies, "w", buffering=1)
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        c_lib = libc()
        c_lib.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)
        from vnetrx.live.grobpf import GroProbe

        try:
            check(c_lib.unshare(CLONE_NEWNET | CLONE_NEWNS), "unshare(CLONE_NEWNET|CLONE_NEWNS)")
            check(c_lib.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
            check(c_lib.mount(b"sysfs", b"/sys", b"sysfs", 0, None), "mount sysfs")
            with contextlib.suppress(OSError):
                Path("/proc/sys/net/ipv6/conf/default/disable_ipv6").write_text("1\n")
            probe = GroProbe(ifname, offsets).__enter__()
        except OSError as exc:
            out.write(json.dumps({"fatal": str(exc)}) + "\n")
            os._exit(1)
        out.write(json.dumps({"ready": True}) + "\n")
        for line in os.fdopen(requests, "r", buffering=1):
            request = json.loads(line)
            try:
                reply = _one_burst(ifname, probe, request)
            except OSError as exc:
                reply = {"fatal": f"{exc.strerror or exc} while setting up the tap"}
            out.write(json.dumps(reply) + "\n")
        code = 0
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _ifreq_flags(ifname: str, sock: socket.socket, set_up: bool) -> None:
    ifr = fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack("16sH22x", ifname.encode(), 0))
    current = struct.unpack("16sH22x", ifr)[1]
    fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH22x", ifname.encode(),
                                                 (current | IFF_UP) if set_up else current))


@contextlib.contextmanager
def _tap(ifname: str, opts: dict[str, Any]) -> Iterator[int]:
    """A fresh tap with the options, up; closed (and so removed) afterwards."""
    flags = IFF_TAP | IFF_NO_PI | IFF_NAPI
    if opts["napi_frags"]:
        flags |= IFF_NAPI_FRAGS
    if opts["vnet_hdr"]:
        flags |= IFF_VNET_HDR
    fd = os.open("/dev/net/tun", os.O_RDWR | (0 if opts["blocking"] else os.O_NONBLOCK))
    try:
        for attempt in range(50):  # the previous tap of this name may still be unregistering
            try:
                fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", ifname.encode(), flags))
                break
            except OSError as exc:
                if exc.errno not in (errno_mod.EBUSY, errno_mod.EEXIST) or attempt == 49:
                    raise
                time.sleep(0.02)
        if opts["vnet_hdr"]:
            fcntl.ioctl(fd, TUNSETVNETHDRSZ, struct.pack("i", gro_frames.VNET_HDR_LEN))
        with contextlib.suppress(OSError):
            Path(f"/proc/sys/net/ipv6/conf/{ifname}/disable_ipv6").write_text("1\n")
        sys_dir = Path(f"/sys/class/net/{ifname}")
        Path(sys_dir / "gro_flush_timeout").write_text(f"{opts['gro_flush_timeout']}\n")
        if opts["threaded"]:
            Path(sys_dir / "threaded").write_text("1\n")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            if opts["mtu"]:
                fcntl.ioctl(sock, SIOCSIFMTU, struct.pack("16si20x", ifname.encode(),
                                                          int(opts["mtu"])))
            _ifreq_flags(ifname, sock, True)
        if not opts["gro"]:
            _set_gro(ifname, False)
        for key, feature in (("udp_gro_forwarding", "rx-udp-gro-forwarding"),
                             ("gro_list", "rx-gro-list")):
            if opts.get(key):
                _set_feature(ifname, feature)
        for attr, key in ((IFLA_GRO_MAX_SIZE, "gro_max_size"),
                          (IFLA_GRO_IPV4_MAX_SIZE, "gro_ipv4_max_size")):
            if opts.get(key) is not None:
                _set_link_u32(ifname, attr, int(opts[key]))
        yield fd
    finally:
        os.close(fd)


def _set_link_u32(ifname: str, attr: int, value: int) -> None:
    """RTM_NEWLINK with one u32 attribute (``ip link set dev IFNAME gro_max_size N``)."""
    body = struct.pack("<BxHiII", socket.AF_UNSPEC, 0, socket.if_nametoindex(ifname), 0, 0)
    body += struct.pack("<HHI", 8, attr, value)
    header = struct.pack("<IHHII", 16 + len(body), RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 1,
                         0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.bind((0, 0))
        sock.sendall(header + body)
        reply = sock.recv(65536)
    (error,) = struct.unpack_from("<i", reply, 16)
    if error:
        raise OSError(-error, f"setting link attribute {attr} to {value}: {os.strerror(-error)}")


# include/uapi/linux/ethtool.h
ETHTOOL_GSTRINGS, ETHTOOL_GSSET_INFO, ETHTOOL_SFEATURES = 0x1B, 0x37, 0x3B
ETH_SS_FEATURES = 4
ETH_GSTRING_LEN = 32
SIOCETHTOOL = 0x8946


def _ethtool(ifname: str, request: bytearray) -> bytearray:
    """SIOCETHTOOL with ``request`` as the command buffer (filled in by the kernel)."""
    import array

    buf = array.array("B", bytes(request))
    address, _ = buf.buffer_info()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, SIOCETHTOOL, struct.pack("16sP", ifname.encode(), address) + bytes(24))
    return bytearray(buf.tobytes())


def _set_feature(ifname: str, name: str) -> None:
    """``ethtool -K IFNAME NAME on``: the feature's bit from the kernel's own ETH_SS_FEATURES
    strings (ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS), then ETHTOOL_SFEATURES."""
    info = _ethtool(ifname, bytearray(struct.pack("IIQI", ETHTOOL_GSSET_INFO, 0,
                                                  1 << ETH_SS_FEATURES, 0)))
    (count,) = struct.unpack_from("I", info, 16)
    strings = _ethtool(ifname, bytearray(struct.pack("III", ETHTOOL_GSTRINGS, ETH_SS_FEATURES,
                                                     count) + bytes(count * ETH_GSTRING_LEN)))
    names = [strings[12 + i * ETH_GSTRING_LEN:12 + (i + 1) * ETH_GSTRING_LEN].split(b"\0")[0]
             .decode() for i in range(count)]
    if name not in names:
        raise OSError(0, f"no ethtool feature {name} on this kernel")
    bit = names.index(name)
    blocks = (count + 31) // 32
    body = bytearray(struct.pack("II", ETHTOOL_SFEATURES, blocks) + bytes(8 * blocks))
    struct.pack_into("II", body, 8 + 8 * (bit // 32), 1 << (bit % 32), 1 << (bit % 32))
    _ethtool(ifname, body)


def _set_gro(ifname: str, on: bool) -> None:
    """ETHTOOL_SGRO (the legacy flag ioctl) on the tap."""
    ethtool_sgro = 0x0000002C
    import array

    value = array.array("B", struct.pack("II", ethtool_sgro, 1 if on else 0))
    address, _ = value.buffer_info()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, 0x8946, struct.pack("16sP", ifname.encode(), address) + bytes(24))


def _one_burst(ifname: str, probe: Any, request: dict[str, Any]) -> dict[str, Any]:
    from vnetrx.live.grobpf import decode

    opts = request["tap"]
    writes = gro_frames.build(request["burst"])
    payloads = [w.iovecs() if opts["napi_frags"] and w.split else [w.hdr + w.frame]
                for w in writes]
    with _tap(ifname, opts) as fd, _udp_gro_socket(opts.get("udp_gro_socket"),
                                                   request["burst"].get("family", 4)):
        probe.drain()  # nothing from an earlier tap
        lost_before = probe.lost()
        with _pinned(ifname, opts["threaded"] == "pinned"):
            results = []
            for index, iov in enumerate(payloads):
                results.append(_write(fd, iov))
                if opts["pause"] and opts["pause"]["after"] == index:
                    time.sleep(opts["pause"]["ms"] / 1000)
            written_ns = time.monotonic_ns()  # CLOCK_MONOTONIC: the clock of bpf_ktime_get_ns
        # the flush timer delivers what is still held; then the record queue is complete
        time.sleep(opts["gro_flush_timeout"] / 1e9 + 0.03)
        records = [decode(r, probe.offsets) for r in probe.drain()]
        # On a busy machine the timer's softirq can run later than that (ksoftirqd waits for
        # a CPU): wait for every skb GRO held or passed on to be delivered, up to a deadline.
        deadline = time.monotonic() + DELIVERY_WAIT_S
        while still_held(records) and time.monotonic() < deadline:
            time.sleep(0.01)
            records += [decode(r, probe.offsets) for r in probe.drain()]
    return {"records": records, "writes": results, "tid": os.getpid(),
            "written_ns": written_ns, "lost": probe.lost() - lost_before}


DELIVERY_WAIT_S = 2.0  # beyond the flush timeout: a held skb later than this is reported as is


def still_held(records: list[dict[str, Any]]) -> int:
    """How many skbs GRO kept (HELD) or passed on (NORMAL) have not been delivered yet
    (``netif_receive_skb``), in record order: an exit follows its entry, and an address
    delivered may be reused by a later input."""
    held: set[int] = set()
    entered: int | None = None
    for rec in records:
        kind = rec["kind"]
        if kind in ("entry", "frags_entry"):
            entered = rec["skb"]
        elif kind == "exit":
            if entered is not None and VERDICTS.get(rec["ret"]) in ("HELD", "NORMAL"):
                held.add(entered)
            entered = None
        elif kind == "delivered":
            held.discard(rec["skb"])
    return len(held)


SOL_UDP, UDP_GRO = 17, 104  # include/uapi/linux/udp.h


@contextlib.contextmanager
def _udp_gro_socket(port: int | None, family: int) -> Iterator[None]:
    """A UDP socket with UDP_GRO bound to the wildcard address on ``port`` in this (the
    child's private) network namespace, for the burst: udp4/6_gro_receive finds it and merges.
    Nothing is sent to it from anywhere: the frames only go into the tap's fd (and their
    foreign destination MAC makes the stack drop them after GRO)."""
    if port is None:
        yield
        return
    sock = socket.socket(socket.AF_INET if family == 4 else socket.AF_INET6, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(SOL_UDP, UDP_GRO, 1)
        sock.bind(("0.0.0.0" if family == 4 else "::", int(port)))
        yield
    finally:
        sock.close()


def _write(fd: int, iov: list[bytes]) -> int | str:
    """write(2), or writev(2) for several iovecs: the byte count or the errno's name."""
    try:
        return os.writev(fd, iov) if len(iov) > 1 else os.write(fd, iov[0])
    except OSError as exc:
        return errno_mod.errorcode.get(exc.errno or 0, str(exc.errno))


def _napi_thread(ifname: str) -> int:
    """The pid of the tap's NAPI kthread, ``napi/<dev>-<napi id>`` (a kthread's comm in
    /proc is its full name)."""
    want = f"napi/{ifname}-"
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().startswith(want):
                    return int(entry.name)
    raise OSError(0, f"no NAPI thread {want} (threaded NAPI not enabled?)")


@contextlib.contextmanager
def _pinned(ifname: str, on: bool) -> Iterator[None]:
    """Design 1 of the reference: the writer (SCHED_FIFO 1) and the tap's NAPI kthread on one
    CPU, so the kthread cannot poll before the writer sleeps: the whole burst is one poll (up
    to the NAPI weight, 64). Restored afterwards (the kthread goes with the tap)."""
    if not on:
        yield
        return
    cpus = os.sched_getaffinity(0)
    cpu = min(cpus)
    kthread = _napi_thread(ifname)
    os.sched_setaffinity(kthread, {cpu})
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    try:
        yield
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        os.sched_setaffinity(0, cpus)
