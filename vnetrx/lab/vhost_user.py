"""vnetrx's own vhost-user net backend: the device side of the lab's virtio-net NIC when the
guest must see guest offloads (VIRTIO_NET_F_GUEST_TSO4/TSO6/ECN/UFO) and a virtio-net header.

QEMU (``-netdev vhost-user``) connects to a unix stream socket this module listens on, hands
over the guest's RAM (memfd, ``share=on``) and the rings, and from then on the backend is the
device: it writes each frame, behind a ``struct virtio_net_hdr_mrg_rxbuf`` (12 bytes with
VERSION_1 or MRG_RXBUF, else 10; flags 0, gso_type NONE), into the receive queue's posted
buffers the way QEMU's ``virtio_net_receive_rcu`` does:

- every avail chain is filled completely before the next one;
- mergeable (MRG_RXBUF): as many chains as the frame needs, ``num_buffers`` in the first header,
  one used entry per chain with the bytes written in it; a frame waits until enough is posted;
- otherwise the frame must fit one chain, else it is dropped and the chain stays posted.

Used entries are written before the used index, then the call eventfd is signalled. The
transmit queue is drained (every chain marked used) so the guest never stalls. Split rings
only; the backend offers neither EVENT_IDX nor INDIRECT_DESC. It does offer
VHOST_USER_F_PROTOCOL_FEATURES (with no protocol feature in it but NET_MTU when the device has
an MTU): QEMU 7.2's vhost_net_start re-sends SET_VRING_ENABLE, which fails with EINVAL without
it, and then QEMU falls back on its own userspace virtio, i.e. no backend at all. With an MTU
(``-device virtio-net-pci,host_mtu=N``) the backend offers VIRTIO_NET_F_MTU, so the feature is
in the backend's own set rather than added by QEMU's x-mtu-bypass-backend (which strips it from
SET_FEATURES), and VHOST_USER_PROTOCOL_F_NET_MTU, so QEMU's virtio_net_vhost_status sends
VHOST_USER_NET_SET_MTU, which must carry the MTU the backend was given. So a ring runs from its SET_VRING_KICK until
GET_VRING_BASE and carries data while SET_VRING_ENABLE has it enabled.

Everything here (socket, connection, received fds, mmaps, the thread) is closed by
:meth:`VhostUserNet.close`. No IP networking: frames are bytes written into guest memory.

The protocol's messages and features are in vhost_user_proto.py, the virtqueue and guest memory
in vhost_user_ring.py; this module is the server that ties them to QEMU.
"""

from __future__ import annotations

import collections
import contextlib
import mmap
import os
import select
import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from vnetrx.lab.vhost_user_proto import (
    F_MRG_RXBUF,
    F_PROTOCOL_FEATURES,
    FLAG_NEED_REPLY,
    GET_FEATURES,
    GET_PROTOCOL_FEATURES,
    GET_QUEUE_NUM,
    GET_VRING_BASE,
    NET_SET_MTU,
    RESET_OWNER,
    SET_FEATURES,
    SET_MEM_TABLE,
    SET_OWNER,
    SET_PROTOCOL_FEATURES,
    SET_VRING_ADDR,
    SET_VRING_BASE,
    SET_VRING_CALL,
    SET_VRING_ENABLE,
    SET_VRING_ERR,
    SET_VRING_KICK,
    SET_VRING_NUM,
    Message,
    VhostUserError,
    VringAddr,
    close_fds,
    decode_mem_table,
    decode_u64,
    decode_vring_fd,
    decode_vring_state,
    encode,
    encode_u64,
    encode_vring_state,
    hdr_len_for,
    net_features,
    protocol_features,
    recv_message,
)
from vnetrx.lab.vhost_user_ring import (
    RX_QUEUE,
    TX_QUEUE,
    GuestMemory,
    Rx,
    Vring,
    drain,
    receive,
    receive_burst,
)

# --- the backend ------------------------------------------------------------------------------


class VhostUserNet:
    """A vhost-user net device on a unix socket, served by one thread.

    ``start()`` before QEMU runs (QEMU waits for the backend when it starts), ``send(frames)``
    queues frames for the receive queue, ``close()`` stops the thread and closes everything.
    """

    def __init__(self, path: Path, *, mergeable: bool, poll_ms: int = 20,
                 guest_gso: bool = True, mtu: int | None = None) -> None:
        self.path = path
        self.mtu = mtu  # the device's MTU (QEMU's host_mtu): VIRTIO_NET_F_MTU offered
        self.features = net_features(mergeable, guest_gso, mtu is not None)
        self.protocol_features = protocol_features(mtu is not None)
        self.acked = 0
        self.mtu_set: int | None = None  # what VHOST_USER_NET_SET_MTU said
        self.poll_ms = poll_ms
        self.log: list[str] = []  # requests as they came (seconds since start), and errors
        self._born = time.monotonic()
        self.delivered = 0
        self.dropped: list[int] = []  # lengths of frames dropped (non-mergeable, too large)
        self.transmitted: list[int] = []  # bytes of each chain the guest put on its tx queue
        self.error: BaseException | None = None
        self.mem = GuestMemory()
        self.rings = [Vring(RX_QUEUE), Vring(TX_QUEUE)]
        # (the 10-byte virtio_net_hdr or b"" for all zero, the frame)
        self._frames: collections.deque[tuple[bytes, bytes]] = collections.deque()
        # send_bursts: bursts still to write, each with one used-ring update and one interrupt
        self._bursts: collections.deque[list[tuple[bytes, bytes]]] = collections.deque()
        self._burst_gap_s = 0.0
        self._next_burst = 0.0  # time.monotonic() before which no burst is written
        self.written: list[bytes | None] = []  # send_bursts: the header written per frame
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._conn: socket.socket | None = None
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(str(path))
            self._listener.listen(1)
        except OSError:
            self._listener.close()
            raise
        self._thread = threading.Thread(target=self._serve, name="vnetrx-vhost-user", daemon=True)

    @property
    def hdr_len(self) -> int:
        return hdr_len_for(self.acked)

    @property
    def mergeable(self) -> bool:
        return bool(self.acked & (1 << F_MRG_RXBUF))

    def start(self) -> None:
        self._thread.start()

    def send(self, frames: Iterable[bytes], hdrs: Iterable[bytes] | None = None) -> None:
        """Queue frames, each behind its virtio_net_hdr (``hdrs``; default all zero)."""
        frames = list(frames)
        heads = list(hdrs) if hdrs is not None else [b""] * len(frames)
        with self._lock:
            self._frames.extend(zip(heads, frames, strict=True))
            if self._frames:
                self._idle.clear()

    def send_bursts(self, bursts: Iterable[list[tuple[bytes, bytes]]], gap_s: float) -> None:
        """Queue bursts of ``(hdr, frame)``: each goes into the receive queue whole, with one
        used-index update and one interrupt (``receive_burst``), ``gap_s`` seconds after the
        one before (time for the guest's poll to end). ``written`` then has the virtio-net
        header written in front of each frame (None: dropped)."""
        with self._lock:
            self._burst_gap_s = gap_s
            self._bursts.extend(list(b) for b in bursts)
            if self._bursts:
                self._idle.clear()

    def wait_idle(self, timeout_s: float) -> bool:
        """True once every queued frame was delivered or dropped."""
        return self._idle.wait(timeout_s)

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._listener.close()
        self.path.unlink(missing_ok=True)
        for ring in self.rings:
            ring.close_fds()
        self.mem.close()

    def __enter__(self) -> VhostUserNet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # the thread

    def _serve(self) -> None:
        try:
            while not self._stop.is_set():
                self._step()
        except BaseException as exc:  # reported by the caller (qemu.run)
            self.error = exc
            self.log.append(f"error: {exc}")

    def _step(self) -> None:
        poller = select.poll()
        watched = self._conn if self._conn is not None else self._listener
        poller.register(watched.fileno(), select.POLLIN)
        kicks = {r.kick_fd: r for r in self.rings if r.kick_fd is not None and r.started}
        for fd in kicks:
            poller.register(fd, select.POLLIN)
        for fd, _events in poller.poll(self.poll_ms):
            if fd == watched.fileno():
                if self._conn is None:
                    self._conn, _ = self._listener.accept()
                    self.log.append("connected")
                else:
                    self._handle_control()
            elif fd in kicks:
                with contextlib.suppress(BlockingIOError):
                    os.read(fd, 8)
        self._run_queues()

    def _run_queues(self) -> None:
        rx, tx = self.rings
        if tx.ready() and self.mem.regions:
            drain(self.mem, tx, self.transmitted)
        if not (rx.ready() and self.mem.regions):
            return
        while True:
            with self._lock:
                burst = self._bursts[0] if self._bursts else None
            if burst is None:
                break
            if time.monotonic() < self._next_burst:
                return
            written = receive_burst(self.mem, rx, burst, hdr_len=self.hdr_len,
                                    mergeable=self.mergeable)
            if written is None:
                return
            self.written.extend(written)
            self.delivered += sum(h is not None for h in written)
            self.dropped.extend(len(f) for (_, f), h in zip(burst, written, strict=True)
                                if h is None)
            self._next_burst = time.monotonic() + self._burst_gap_s
            with self._lock:
                self._bursts.popleft()
        while True:
            with self._lock:
                if not self._frames:
                    self._idle.set()
                    return
                hdr, frame = self._frames[0]
            outcome, _chains = receive(
                self.mem, rx, frame, hdr_len=self.hdr_len, mergeable=self.mergeable, hdr=hdr
            )
            if outcome is Rx.WAIT:
                return
            if outcome is Rx.DROPPED:
                self.dropped.append(len(frame))
            else:
                self.delivered += 1
            with self._lock:
                self._frames.popleft()

    def _reply(self, request: int, payload: bytes) -> None:
        assert self._conn is not None
        self._conn.sendall(encode(request, payload, reply=True))

    def _handle_control(self) -> None:
        assert self._conn is not None
        self._conn.settimeout(5.0)
        try:
            msg = recv_message(self._conn)
        finally:
            if self._conn is not None:
                self._conn.settimeout(None)
        if msg is None:
            self.log.append("disconnected")
            self._conn.close()
            self._conn = None
            for ring in self.rings:
                ring.started = False
                ring.close_fds()
            return
        try:
            self._dispatch(msg)
        finally:
            close_fds(msg.fds)  # whatever was kept was dup'ed

    def _ring(self, index: int) -> Vring:
        if not 0 <= index < len(self.rings):
            raise VhostUserError(f"queue {index} does not exist (one rx/tx pair)")
        return self.rings[index]

    def _dispatch(self, msg: Message) -> None:
        req, payload = msg.request, msg.payload
        detail = ""
        if req == GET_FEATURES:
            self._reply(req, encode_u64(self.features))
        elif req == SET_FEATURES:
            self.acked = decode_u64(payload)
            if self.acked & ~self.features:
                raise VhostUserError(
                    f"QEMU acked features {self.acked & ~self.features:#x} never offered"
                )
            if not self.acked & (1 << F_PROTOCOL_FEATURES):
                for ring in self.rings:  # no SET_VRING_ENABLE will come
                    ring.enabled = True
            detail = f" {self.acked:#x}"
        elif req == GET_PROTOCOL_FEATURES:
            self._reply(req, encode_u64(self.protocol_features))
        elif req == SET_PROTOCOL_FEATURES:
            detail = f" {decode_u64(payload):#x}"
        elif req == NET_SET_MTU:
            self.mtu_set = decode_u64(payload)
            if self.mtu_set != self.mtu:
                raise VhostUserError(f"QEMU set the MTU to {self.mtu_set}, the backend's is "
                                     f"{self.mtu}")
            detail = f" {self.mtu_set}"
            if msg.flags & FLAG_NEED_REPLY:
                self._reply(req, encode_u64(0))  # REPLY_ACK: the MTU is valid
        elif req == GET_QUEUE_NUM:
            self._reply(req, encode_u64(1))
        elif req == SET_VRING_ENABLE:
            index, enable = decode_vring_state(payload)
            self._ring(index).enabled = bool(enable)
            detail = f" {index} {enable}"
        elif req in (SET_OWNER, RESET_OWNER):
            for ring in self.rings:
                ring.started = False
        elif req == SET_MEM_TABLE:
            regions = decode_mem_table(payload)
            if len(msg.fds) != len(regions):
                raise VhostUserError(f"SET_MEM_TABLE: {len(regions)} regions, {len(msg.fds)} fds")
            self.mem.close()
            for region, fd in zip(regions, msg.fds, strict=True):
                self.mem.add(
                    region, mmap.mmap(fd, region.mmap_offset + region.memory_size, mmap.MAP_SHARED)
                )
            detail = " " + ", ".join(
                f"gpa {r.guest_phys_addr:#x}+{r.memory_size:#x}" for r in regions
            )
            for ring in self.rings:  # re-translate the rings in the new table
                if ring.addr is not None:
                    self._place(ring)
        elif req == SET_VRING_NUM:
            index, num = decode_vring_state(payload)
            if not 0 < num <= 32768 or num & (num - 1):
                raise VhostUserError(f"queue {index}: ring size {num}")
            self._ring(index).num = num
            detail = f" {index} {num}"
        elif req == SET_VRING_ADDR:
            addr = VringAddr.decode(payload)
            ring = self._ring(addr.index)
            ring.addr = addr
            self._place(ring)
            detail = f" {addr.index}"
        elif req == SET_VRING_BASE:
            index, base = decode_vring_state(payload)
            self._ring(index).last_avail = base
            detail = f" {index} {base}"
        elif req == GET_VRING_BASE:
            index, _ = decode_vring_state(payload)
            ring = self._ring(index)
            ring.started = False
            self._reply(req, encode_vring_state(index, ring.last_avail))
            detail = f" {index} → {ring.last_avail}"
        elif req in (SET_VRING_KICK, SET_VRING_CALL, SET_VRING_ERR):
            index, has_fd = decode_vring_fd(payload)
            ring = self._ring(index)
            new = os.dup(msg.fds[0]) if has_fd and msg.fds else None
            if has_fd and new is None:
                raise VhostUserError(f"{msg.name} for queue {index} without an fd")
            attr = {SET_VRING_KICK: "kick_fd", SET_VRING_CALL: "call_fd"}.get(req, "err_fd")
            old = getattr(ring, attr)
            if old is not None:
                os.close(old)
            if new is not None and req != SET_VRING_ERR:
                os.set_blocking(new, False)
            setattr(ring, attr, new)
            if req == SET_VRING_KICK:
                ring.started = True  # the kick starts the ring
            elif req == SET_VRING_CALL and ring.started:
                # QEMU sends the call fd after the kick: anything used in between was signalled
                # to the old fd (or none). A spurious interrupt is harmless; a lost one stalls.
                ring.notify()
            detail = f" {index}" + ("" if has_fd else " (no fd)")
        else:
            detail = f" (unknown, flags {msg.flags:#x}, {len(payload)} bytes): ignored"
            if msg.flags & FLAG_NEED_REPLY:
                self._reply(req, encode_u64(1))  # REPLY_ACK: failure
        self.log.append(f"{time.monotonic() - self._born:.2f} {msg.name}{detail}")

    def _place(self, ring: Vring) -> None:
        if ring.addr is None or not self.mem.regions:
            return
        addr = ring.addr
        ring.set_addresses(
            self.mem,
            self.mem.gpa_of_uva(addr.desc),
            self.mem.gpa_of_uva(addr.avail),
            self.mem.gpa_of_uva(addr.used),
        )
