"""Write frames into a private tap device and read back what the kernel built (root only).

What this module creates, and removes again on success, on error and on SIGINT/SIGTERM:

* a tracefs instance (and, only when tracefs is not mounted, a private mount) with
  net:netif_receive_skb_entry enabled and filtered on the device name (vnetrx.live.tracefs);
* a child process (``prctl(PR_SET_PDEATHSIG, SIGKILL)``) that moves itself into a new network
  namespace (``unshare(CLONE_NEWNET)``), disables IPv6 there, and opens a non-persistent tap
  device ``vnx<10 random hex digits>`` (IFF_TAP | IFF_NO_PI [| IFF_VNET_HDR]) which it brings up. The device and the
  namespace die with the child. The name is random because the tracepoint filter matches names
  in every namespace: two runs (also in different PID namespaces) never see each other's frames.

Frames are written straight into the tap fd: destination 02:00:00:00:00:01, EtherType 0x88B5
(IEEE local experimental), zero payload; or, for offload checks, a TCP/UDP frame from
vnetrx.packet with documentation addresses (192.0.2.0/24, 2001:db8::/32) to that same foreign
MAC, which the namespace's stack drops as PACKET_OTHERHOST right after the tracepoint. No address
is configured, nothing is routed or sent anywhere.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from vnetrx import owner as owners
from vnetrx.errors import VnetrxError
from vnetrx.kernel.constants import INT_MAX
from vnetrx.live import bpf
from vnetrx.live.parse import parse_event
from vnetrx.live.tracefs import (
    DeviceWatch,
    check,
    libc,
    read_text,
    tracefs_mounts,
)
from vnetrx.observed.rx_event import RxEvent
from vnetrx.observed.tap_write import WriteCase, WriteResult
from vnetrx.packet import build_frame, build_tunnel_frame, parse_tunnel
from vnetrx.paths.tun import XDP_ACTIONS

# include/uapi/linux/if_tun.h (docs/kernel/tun-tap.md §3)
TUNSETIFF = 0x400454CA
TUNSETSNDBUF = 0x400454D4
TUNSETVNETHDRSZ = 0x400454D8
TUNSETOFFLOAD = 0x400454D0
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
IFF_VNET_HDR = 0x4000
# include/uapi/linux/sockios.h, if.h
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
ETHERTYPE = 0x88B5
DST_MAC = bytes.fromhex("020000000001")
SRC_MAC = bytes.fromhex("020000000002")
REPLY_TIMEOUT = 10.0


def missing_requirements() -> list[str]:
    """What this machine lacks for a live check (empty when it can run)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (run as uid 0: it creates a network namespace and a tap device)")
    if not os.path.exists("/dev/net/tun"):
        missing.append("/dev/net/tun (load the tun module)")
    filesystems = read_text("/proc/filesystems") or ""
    if "tracefs" not in filesystems.split():
        missing.append("tracefs (a kernel built with CONFIG_TRACING and tracepoints)")
    elif not os.path.exists("/sys/kernel/tracing") and not tracefs_mounts():
        missing.append("a place to mount tracefs (/sys/kernel/tracing is absent)")
    return missing


def frame_bytes(length: int) -> bytes:
    """A frame of ``length`` bytes: Ethernet header (when it fits), then zeros."""
    head = DST_MAC + SRC_MAC + struct.pack("!H", ETHERTYPE)
    return (head + bytes(max(0, length - len(head))))[:length]


class LiveTap:
    """Context manager: a private tap device and a tracefs instance watching it."""

    def __init__(self) -> None:
        self.ifname = f"vnx{secrets.token_hex(5)}"  # IFNAMSIZ 16: 13 characters and a NUL
        self.watch: DeviceWatch | None = None  # the tracefs instance watching the tap
        self.child: int | None = None
        self._to_child: TextIO | None = None
        self._from_child: TextIO | None = None

    # --- setup ---------------------------------------------------------------------------
    def __enter__(self) -> LiveTap:
        try:
            # Held before it is entered: a signal just after __enter__ returns still removes it.
            self.watch = DeviceWatch(self.ifname, "netif_receive_skb_entry")
            self.watch.__enter__()
            self._start_child()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start_child(self) -> None:
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        parent = os.getpid()
        # SIGINT/SIGTERM wait until the child's pid is recorded: a signal between fork() and
        # the assignment would leave a helper nobody kills, holding trace_pipe open (the
        # instance could not be removed). The child starts with them blocked too.
        with owners.shielded():
            pid = os.fork()
            if pid == 0:  # the child: never returns
                _child_start(down_r, up_w, self.ifname, parent)
            self.child = pid
        os.close(down_r)
        os.close(up_w)
        self._to_child = os.fdopen(down_w, "w", buffering=1)
        self._from_child = os.fdopen(up_r, "r", buffering=1)
        self._reply()  # the child's "ready" (or its fatal error)

    # --- one write -------------------------------------------------------------------------
    def write(self, case: WriteCase) -> WriteResult:
        assert self._to_child is not None
        request = {
            "frame_len": case.frame_len,
            "blocking": case.blocking,
            "sndbuf": INT_MAX if case.sndbuf is None else case.sndbuf,
            "vnet_hdr": case.vnet_hdr,
            "vnet_hdr_sz": case.vnet_hdr_sz,
            "hdr": None if case.hdr is None else case.hdr.hex(),
            "l4": case.l4,
            "tcp_options": case.tcp_options,
            "xdp": case.xdp,
            "xdp_adjust": [case.xdp_adjust_head, case.xdp_adjust_tail],
            "tunnel": case.tunnel,
            "offload": case.offload,
        }
        self._to_child.write(json.dumps(request) + "\n")
        reply = self._reply()
        events = self._events_until_marker()
        return WriteResult(reply.get("ret"), reply.get("errno"), events,
                           tuple(reply.get("reads", ())), reply.get("read_hdr"),
                           reply.get("read_same"), reply.get("counters"),
                           reply.get("offload_errno"))

    def _reply(self) -> dict[str, Any]:
        assert self._from_child is not None
        ready, _, _ = select.select([self._from_child], [], [], REPLY_TIMEOUT)
        line = self._from_child.readline() if ready else ""
        if not line:
            raise VnetrxError("the tap helper process did not answer (it may have died)")
        reply: dict[str, Any] = json.loads(line)
        if "fatal" in reply:
            raise VnetrxError(f"live tap setup failed: {reply['fatal']}")
        return reply

    def _events_until_marker(self) -> tuple[RxEvent, ...]:
        """Mark the ring buffer, then read trace_pipe up to that mark: the write's events."""
        assert self.watch is not None
        events = (parse_event(line) for line in self.watch.until_marker(REPLY_TIMEOUT))
        return tuple(e for e in events if e is not None and e.dev == self.ifname)

    # --- teardown --------------------------------------------------------------------------
    def close(self) -> None:
        """Remove everything this object created. Safe to call twice; never raises. SIGINT
        and SIGTERM wait until it is done."""
        with owners.shielded():
            self._stop_child()
            if self.watch is not None:
                self.watch.close()
                self.watch = None

    def _stop_child(self) -> None:
        for stream in (self._to_child, self._from_child):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._to_child = self._from_child = None
        if self.child is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.child, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.child, 0)
        self.child = None


def run_writes(
    cases: list[WriteCase], on_result: Callable[[int, WriteResult], None] | None = None
) -> list[WriteResult]:
    """Set up, write every case, tear down. ``on_result`` sees each result as it comes."""
    results: list[WriteResult] = []
    with owners.interrupt_once(), LiveTap() as live:
        for index, case in enumerate(cases):
            result = live.write(case)
            results.append(result)
            if on_result is not None:
                on_result(index, result)
    return results


# --- the child, inside its own network namespace ---------------------------------------------


def _child_start(requests: int, replies: int, ifname: str, parent: int) -> None:
    """Right after fork(), SIGINT and SIGTERM still blocked: keep only stdio and the two pipe
    ends (the parent's trace_pipe, lock file and the pipes' other ends are closed, so this
    process never keeps the parent's tracefs instance busy or its lock held), restore the
    default dispositions, then unblock. Never returns."""
    try:
        keep = sorted((requests, replies))
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, _max_fd())
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        _child_main(requests, replies, ifname, parent)
    finally:
        os._exit(1)


def _max_fd() -> int:
    try:
        return max(os.sysconf("SC_OPEN_MAX"), 1024)
    except (OSError, ValueError):
        return 65536


def _child_main(requests: int, replies: int, ifname: str, parent: int) -> None:
    code = 1
    out = os.fdopen(replies, "w", buffering=1)
    try:
        c_lib = libc()
        c_lib.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent is already gone (it may be PID 1 itself)
            os._exit(1)
        try:
            check(c_lib.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
            # No IPv6 link-local address, so the kernel sends nothing out of the tap either.
            with contextlib.suppress(OSError):
                Path("/proc/sys/net/ipv6/conf/default/disable_ipv6").write_text("1\n")
            device = _Device(ifname)
        except OSError as exc:
            out.write(json.dumps({"fatal": str(exc)}) + "\n")
            os._exit(1)
        out.write(json.dumps({"ready": True}) + "\n")
        for line in os.fdopen(requests, "r", buffering=1):
            out.write(json.dumps(device.write(json.loads(line))) + "\n")
        code = 0
    except BaseException:  # the child must never fall back into the parent's code
        code = 1
    finally:
        os._exit(code)


class _Device:
    """The tap fd; reopened when IFF_VNET_HDR changes (a TUNSETIFF flag)."""

    def __init__(self, ifname: str) -> None:
        self.ifname = ifname
        self.fd: int | None = None
        self.vnet_hdr: bool | None = None
        self.xdp: tuple[str, int, int] | None = None  # the attached program: action, adjusts
        self._open(True)

    def _open(self, vnet_hdr: bool) -> None:
        if self.fd is not None:
            os.close(self.fd)  # a non-persistent tap disappears with its last fd
            self.fd = None
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
        flags = IFF_TAP | IFF_NO_PI | (IFF_VNET_HDR if vnet_hdr else 0)
        try:
            fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", self.ifname.encode(), flags))
            with contextlib.suppress(OSError):
                Path(f"/proc/sys/net/ipv6/conf/{self.ifname}/disable_ipv6").write_text("1\n")
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                ifr = fcntl.ioctl(
                    sock, SIOCGIFFLAGS, struct.pack("16sH22x", self.ifname.encode(), 0)
                )
                current = struct.unpack("16sH22x", ifr)[1]
                fcntl.ioctl(
                    sock,
                    SIOCSIFFLAGS,
                    struct.pack("16sH22x", self.ifname.encode(), current | IFF_UP),
                )
        except OSError:
            os.close(fd)
            raise
        self.fd, self.vnet_hdr, self.xdp = fd, vnet_hdr, None

    def _attach(self, program_of: tuple[str, int, int] | None) -> None:
        """Load and attach (native mode) the program (action, head and tail adjustments), or
        detach (None)."""
        ifindex = socket.if_nametoindex(self.ifname)
        if program_of is None:
            bpf.attach_xdp(ifindex, -1)
        else:
            action, head, tail = program_of
            program = bpf.xdp_program(XDP_ACTIONS[action],
                                      redirect_ifindex=ifindex if action == "redirect" else None,
                                      adjust_head=head, adjust_tail=tail)
            prog_fd = bpf.load_xdp(program)
            try:
                bpf.attach_xdp(ifindex, prog_fd)
            finally:
                os.close(prog_fd)  # the device holds the program now
        self.xdp = program_of

    def _read_queued(self) -> list[bytes]:
        """Everything the tap queued for its reader, without waiting (the fd may block)."""
        assert self.fd is not None
        frames = []
        while select.select([self.fd], [], [], 0)[0]:
            frames.append(os.read(self.fd, 1 << 17))  # readable: a frame is queued
        return frames

    def _counters(self) -> dict[str, int]:
        """This device's line of /proc/self/net/dev (this network namespace's)."""
        for line in Path("/proc/self/net/dev").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name.strip() == self.ifname:
                v = [int(x) for x in rest.split()]
                return {"rx_bytes": v[0], "rx_packets": v[1], "rx_dropped": v[3],
                        "tx_bytes": v[8], "tx_packets": v[9]}
        raise OSError(0, f"{self.ifname} is not in /proc/net/dev")

    def write(self, req: dict[str, Any]) -> dict[str, Any]:
        try:
            if req["vnet_hdr"] != self.vnet_hdr:
                self._open(req["vnet_hdr"])
            assert self.fd is not None
            fl = fcntl.fcntl(self.fd, fcntl.F_GETFL)
            fl = (fl & ~os.O_NONBLOCK) if req["blocking"] else (fl | os.O_NONBLOCK)
            fcntl.fcntl(self.fd, fcntl.F_SETFL, fl)
            fcntl.ioctl(self.fd, TUNSETSNDBUF, struct.pack("i", req["sndbuf"]))
            wanted = None if req.get("xdp") is None else (req["xdp"], *req["xdp_adjust"])
            if wanted != self.xdp:
                self._attach(wanted)
            offload_errno = None
            if req.get("offload") is not None:  # set (or refused) before every such write
                try:
                    fcntl.ioctl(self.fd, TUNSETOFFLOAD, req["offload"])
                except OSError as exc:
                    offload_errno = errno_mod.errorcode.get(exc.errno or 0, str(exc.errno))
            if req.get("tunnel"):
                data = build_tunnel_frame(req["frame_len"], parse_tunnel(req["tunnel"]),
                                          req["l4"], req["tcp_options"])
            elif req.get("l4"):
                data = build_frame(req["frame_len"], req["l4"], req["tcp_options"])
            else:
                data = frame_bytes(req["frame_len"])
            if req["vnet_hdr"]:
                size = req["vnet_hdr_sz"] or 10
                fcntl.ioctl(self.fd, TUNSETVNETHDRSZ, struct.pack("i", size))
                hdr = bytes.fromhex(req["hdr"] or "")
                data = (hdr + bytes(max(0, size - len(hdr))))[: max(size, len(hdr))] + data
            if self.xdp is not None:
                self._read_queued()  # nothing may be left over from an earlier write
                before = self._counters()
        except OSError as exc:
            return {"fatal": f"{exc.strerror} while configuring the tap device"}
        try:
            reply: dict[str, Any] = {"ret": os.write(self.fd, data)}
        except OSError as exc:
            reply = {"errno": errno_mod.errorcode.get(exc.errno or 0, str(exc.errno))}
        if req.get("offload") is not None:
            reply["offload_errno"] = offload_errno
        if self.xdp is not None:
            reads = self._read_queued()
            after = self._counters()
            reply["counters"] = {name: after[name] - before[name] for name in after}
            reply["reads"] = [len(r) for r in reads]
            if reads:
                size = (req["vnet_hdr_sz"] or 10) if req["vnet_hdr"] else 0
                reply["read_hdr"] = reads[0][:size].hex() if req["vnet_hdr"] else None
                reply["read_same"] = reads[0][size:] == data[len(data) - req["frame_len"]:]
        return reply
