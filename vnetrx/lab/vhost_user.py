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
VHOST_USER_F_PROTOCOL_FEATURES (with no protocol feature in it): QEMU 7.2's vhost_net_start
re-sends SET_VRING_ENABLE, which fails with EINVAL without it, and then QEMU falls back on its
own userspace virtio, i.e. no backend at all. So a ring runs from its SET_VRING_KICK until
GET_VRING_BASE and carries data while SET_VRING_ENABLE has it enabled.

Everything here (socket, connection, received fds, mmaps, the thread) is closed by
:meth:`VhostUserNet.close`. No IP networking: frames are bytes written into guest memory.
"""

from __future__ import annotations

import collections
import contextlib
import mmap
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from vnetrx.errors import VnetrxError

# docs/interop/vhost-user.rst: message header flags.
VERSION = 0x1
FLAG_REPLY = 0x4
FLAG_NEED_REPLY = 0x8
HEADER = struct.Struct("<III")  # request, flags, size
MAX_PAYLOAD = 4096
MAX_FDS = 8

GET_FEATURES = 1
SET_FEATURES = 2
SET_OWNER = 3
RESET_OWNER = 4
SET_MEM_TABLE = 5
SET_LOG_BASE = 6
SET_LOG_FD = 7
SET_VRING_NUM = 8
SET_VRING_ADDR = 9
SET_VRING_BASE = 10
GET_VRING_BASE = 11
SET_VRING_KICK = 12
SET_VRING_CALL = 13
SET_VRING_ERR = 14
GET_PROTOCOL_FEATURES = 15
SET_PROTOCOL_FEATURES = 16
GET_QUEUE_NUM = 17
SET_VRING_ENABLE = 18
REQUEST_NAMES = {
    GET_FEATURES: "GET_FEATURES",
    SET_FEATURES: "SET_FEATURES",
    SET_OWNER: "SET_OWNER",
    RESET_OWNER: "RESET_OWNER",
    SET_MEM_TABLE: "SET_MEM_TABLE",
    SET_LOG_BASE: "SET_LOG_BASE",
    SET_LOG_FD: "SET_LOG_FD",
    SET_VRING_NUM: "SET_VRING_NUM",
    SET_VRING_ADDR: "SET_VRING_ADDR",
    SET_VRING_BASE: "SET_VRING_BASE",
    GET_VRING_BASE: "GET_VRING_BASE",
    SET_VRING_KICK: "SET_VRING_KICK",
    SET_VRING_CALL: "SET_VRING_CALL",
    SET_VRING_ERR: "SET_VRING_ERR",
    GET_PROTOCOL_FEATURES: "GET_PROTOCOL_FEATURES",
    SET_PROTOCOL_FEATURES: "SET_PROTOCOL_FEATURES",
    GET_QUEUE_NUM: "GET_QUEUE_NUM",
    SET_VRING_ENABLE: "SET_VRING_ENABLE",
}
VRING_FD_INDEX_MASK = 0xFF
VRING_FD_NOFD = 0x100

# Feature bits (include/uapi/linux/virtio_net.h, virtio_config.h).
F_GUEST_CSUM = 1
F_GUEST_TSO4 = 7
F_GUEST_TSO6 = 8
F_GUEST_ECN = 9
F_GUEST_UFO = 10
F_MRG_RXBUF = 15
F_PROTOCOL_FEATURES = 30
F_VERSION_1 = 32
GUEST_OFFLOADS = (F_GUEST_CSUM, F_GUEST_TSO4, F_GUEST_TSO6, F_GUEST_ECN, F_GUEST_UFO)

# Split virtqueue (virtio 1.x §2.7).
DESC = struct.Struct("<QIHH")  # addr, len, flags, next
DESC_F_NEXT = 1
DESC_F_WRITE = 2
DESC_F_INDIRECT = 4
U16 = struct.Struct("<H")
USED_ELEM = struct.Struct("<II")
U64 = struct.Struct("<Q")
VRING_STATE = struct.Struct("<II")  # index, num
VRING_ADDR = struct.Struct("<IIQQQQ")  # index, flags, desc, used, avail, log (user addresses)
MEM_TABLE_HEAD = struct.Struct("<II")  # nregions, padding
MEM_REGION = struct.Struct("<QQQQ")  # guest_phys_addr, memory_size, userspace_addr, mmap_offset
RX_QUEUE, TX_QUEUE = 0, 1
GSO_NONE = 0

Memory = bytearray | mmap.mmap


class VhostUserError(VnetrxError):
    """The vhost-user peer (QEMU) sent something this backend cannot follow."""


def net_features(mergeable: bool) -> int:
    """What the backend offers: VERSION_1, the guest receive offloads, MRG_RXBUF on request,
    and VHOST_USER_F_PROTOCOL_FEATURES (see the module docstring)."""
    bits = (
        F_VERSION_1,
        F_PROTOCOL_FEATURES,
        *GUEST_OFFLOADS,
        *((F_MRG_RXBUF,) if mergeable else ()),
    )
    return sum(1 << bit for bit in bits)


def hdr_len_for(features: int) -> int:
    """The header the device writes: virtio_net_hdr_mrg_rxbuf (12) with VERSION_1 or MRG_RXBUF,
    else the legacy virtio_net_hdr (10)."""
    return 12 if features & ((1 << F_VERSION_1) | (1 << F_MRG_RXBUF)) else 10


def net_header(hdr_len: int, num_buffers: int) -> bytes:
    """flags 0, gso_type VIRTIO_NET_HDR_GSO_NONE, hdr_len/gso_size/csum_* 0, then num_buffers
    (12-byte header only)."""
    head = bytes([0, GSO_NONE]) + bytes(8)
    return head + U16.pack(num_buffers) if hdr_len == 12 else head


# --- messages ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    request: int
    flags: int
    payload: bytes
    fds: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return REQUEST_NAMES.get(self.request, f"request {self.request}")


def encode(request: int, payload: bytes = b"", *, reply: bool = False, flags: int = 0) -> bytes:
    """Header (request, flags with version 1 and the reply bit, size) + payload."""
    return HEADER.pack(request, VERSION | (FLAG_REPLY if reply else 0) | flags, len(payload)) + (
        payload
    )


def decode_header(data: bytes) -> tuple[int, int, int]:
    """(request, flags, size) of a 12-byte header; VhostUserError if it is not version 1."""
    if len(data) != HEADER.size:
        raise VhostUserError(f"vhost-user header of {len(data)} bytes, not {HEADER.size}")
    request, flags, size = HEADER.unpack(data)
    if flags & 0x3 != VERSION:
        raise VhostUserError(f"vhost-user message version {flags & 0x3}, not {VERSION}")
    if size > MAX_PAYLOAD:
        raise VhostUserError(f"vhost-user payload of {size} bytes is too large")
    return request, flags, size


def encode_u64(value: int) -> bytes:
    return U64.pack(value)


def decode_u64(payload: bytes) -> int:
    if len(payload) < U64.size:
        raise VhostUserError(f"expected a u64 payload, got {len(payload)} bytes")
    value: int = U64.unpack_from(payload)[0]
    return value


def encode_vring_state(index: int, num: int) -> bytes:
    return VRING_STATE.pack(index, num)


def decode_vring_state(payload: bytes) -> tuple[int, int]:
    if len(payload) < VRING_STATE.size:
        raise VhostUserError(f"expected a vring state, got {len(payload)} bytes")
    index, num = VRING_STATE.unpack_from(payload)
    return index, num


@dataclass(frozen=True)
class VringAddr:
    index: int
    flags: int
    desc: int  # QEMU userspace addresses
    used: int
    avail: int
    log: int = 0

    def encode(self) -> bytes:
        return VRING_ADDR.pack(self.index, self.flags, self.desc, self.used, self.avail, self.log)

    @classmethod
    def decode(cls, payload: bytes) -> VringAddr:
        if len(payload) < VRING_ADDR.size:
            raise VhostUserError(f"expected a vring address, got {len(payload)} bytes")
        return cls(*VRING_ADDR.unpack_from(payload))


@dataclass(frozen=True)
class MemRegion:
    guest_phys_addr: int
    memory_size: int
    userspace_addr: int
    mmap_offset: int


def encode_mem_table(regions: Sequence[MemRegion]) -> bytes:
    return MEM_TABLE_HEAD.pack(len(regions), 0) + b"".join(
        MEM_REGION.pack(r.guest_phys_addr, r.memory_size, r.userspace_addr, r.mmap_offset)
        for r in regions
    )


def decode_mem_table(payload: bytes) -> tuple[MemRegion, ...]:
    if len(payload) < MEM_TABLE_HEAD.size:
        raise VhostUserError("SET_MEM_TABLE without a region count")
    count = MEM_TABLE_HEAD.unpack_from(payload)[0]
    if count > MAX_FDS or len(payload) < MEM_TABLE_HEAD.size + count * MEM_REGION.size:
        raise VhostUserError(f"SET_MEM_TABLE with {count} regions in {len(payload)} bytes")
    return tuple(
        MemRegion(*MEM_REGION.unpack_from(payload, MEM_TABLE_HEAD.size + i * MEM_REGION.size))
        for i in range(count)
    )


def decode_vring_fd(payload: bytes) -> tuple[int, bool]:
    """SET_VRING_KICK/CALL/ERR: (queue index, whether an fd comes with it)."""
    value = decode_u64(payload)
    return value & VRING_FD_INDEX_MASK, not value & VRING_FD_NOFD


def recv_message(conn: socket.socket) -> Message | None:
    """One message (None when the peer closed the connection). fds ride with the header."""
    fds: list[int] = []
    header = b""
    while len(header) < HEADER.size:
        data, got, _flags, _addr = socket.recv_fds(conn, HEADER.size - len(header), MAX_FDS)
        fds += got
        if not data:
            _close_fds(fds)
            return None
        header += data
    try:
        request, flags, size = decode_header(header)
    except VhostUserError:
        _close_fds(fds)
        raise
    payload = b""
    while len(payload) < size:
        data, got, _flags, _addr = socket.recv_fds(conn, size - len(payload), MAX_FDS)
        fds += got
        if not data:
            _close_fds(fds)
            return None
        payload += data
    return Message(request, flags, payload, tuple(fds))


def _close_fds(fds: Iterable[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


# --- guest memory -----------------------------------------------------------------------------


class GuestMemory:
    """The regions of SET_MEM_TABLE, each a buffer whose byte ``mmap_offset`` is the region's
    first byte. Ring addresses come as QEMU userspace addresses, buffer addresses as guest
    physical ones."""

    def __init__(self) -> None:
        self.regions: list[tuple[MemRegion, Memory]] = []

    def add(self, region: MemRegion, buf: Memory) -> None:
        if len(buf) < region.mmap_offset + region.memory_size:
            raise VhostUserError("a memory region is larger than its mapping")
        self.regions.append((region, buf))

    def close(self) -> None:
        regions, self.regions = self.regions, []
        for _, buf in regions:
            if isinstance(buf, mmap.mmap):
                buf.close()

    def gpa_of_uva(self, uva: int) -> int:
        for region, _ in self.regions:
            if region.userspace_addr <= uva < region.userspace_addr + region.memory_size:
                return uva - region.userspace_addr + region.guest_phys_addr
        raise VhostUserError(f"userspace address {uva:#x} is in no memory region")

    def locate(self, gpa: int) -> tuple[Memory, int, int]:
        """(buffer, offset in it, bytes contiguous from there) of a guest physical address."""
        for region, buf in self.regions:
            start = region.guest_phys_addr
            if start <= gpa < start + region.memory_size:
                return buf, region.mmap_offset + gpa - start, start + region.memory_size - gpa
        raise VhostUserError(f"guest physical address {gpa:#x} is in no memory region")

    def read(self, gpa: int, size: int) -> bytes:
        out = b""
        while len(out) < size:
            buf, offset, room = self.locate(gpa + len(out))
            take = min(room, size - len(out))
            out += bytes(buf[offset : offset + take])
        return out

    def write(self, gpa: int, data: bytes | memoryview) -> None:
        view = memoryview(data)
        done = 0
        while done < len(view):
            buf, offset, room = self.locate(gpa + done)
            take = min(room, len(view) - done)
            buf[offset : offset + take] = view[done : done + take]
            done += take

    def u16(self, gpa: int) -> int:
        buf, offset, room = self.locate(gpa)
        if room < 2:
            return int(U16.unpack(self.read(gpa, 2))[0])
        return int(U16.unpack_from(buf, offset)[0])

    def put_u16(self, gpa: int, value: int) -> None:
        self.write(gpa, U16.pack(value))


# --- split virtqueue --------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    addr: int  # guest physical
    length: int
    writable: bool


class Vring:
    """One split virtqueue, device side. Addresses are guest physical."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.num = 0
        self.desc = self.avail = self.used = 0
        self.addr: VringAddr | None = None
        self.last_avail = 0  # next avail ring slot the device reads (SET/GET_VRING_BASE)
        self.used_idx = 0  # next used ring slot the device writes
        self.started = False  # between SET_VRING_KICK and GET_VRING_BASE
        # SET_VRING_ENABLE. QEMU 7.2 sends it (peer_attach) before SET_FEATURES, so it is kept
        # from whenever it came, as libvhost-user does.
        self.enabled = False
        self.kick_fd: int | None = None
        self.call_fd: int | None = None
        self.err_fd: int | None = None

    def close_fds(self) -> None:
        _close_fds(fd for fd in (self.kick_fd, self.call_fd, self.err_fd) if fd is not None)
        self.kick_fd = self.call_fd = self.err_fd = None

    def set_addresses(self, mem: GuestMemory, desc: int, avail: int, used: int) -> None:
        """Guest physical addresses of the three parts; the used index is read back."""
        self.desc, self.avail, self.used = desc, avail, used
        self.used_idx = mem.u16(used + 2)

    def ready(self) -> bool:
        return self.started and self.enabled and self.num > 0 and self.addr is not None

    def avail_idx(self, mem: GuestMemory) -> int:
        return mem.u16(self.avail + 2)

    def pending(self, mem: GuestMemory) -> int:
        """Chains the driver posted that the device has not taken yet."""
        waiting = (self.avail_idx(mem) - self.last_avail) & 0xFFFF
        if waiting > self.num:
            raise VhostUserError(f"queue {self.index}: avail index runs {waiting} ahead")
        return waiting

    def head(self, mem: GuestMemory, ahead: int = 0) -> int:
        slot = (self.last_avail + ahead) % self.num
        head = mem.u16(self.avail + 4 + 2 * slot)
        if head >= self.num:
            raise VhostUserError(f"queue {self.index}: descriptor {head} out of range")
        return head

    def chain(self, mem: GuestMemory, head: int) -> list[Segment]:
        """The descriptors of a chain, following NEXT (no INDIRECT: it is not offered)."""
        segments: list[Segment] = []
        index = head
        while True:
            if len(segments) >= self.num:
                raise VhostUserError(f"queue {self.index}: descriptor chain loops")
            addr, length, flags, nxt = DESC.unpack(mem.read(self.desc + 16 * index, DESC.size))
            if flags & DESC_F_INDIRECT:
                raise VhostUserError(f"queue {self.index}: indirect descriptor (not offered)")
            segments.append(Segment(addr, length, bool(flags & DESC_F_WRITE)))
            if not flags & DESC_F_NEXT:
                return segments
            if nxt >= self.num:
                raise VhostUserError(f"queue {self.index}: next descriptor {nxt} out of range")
            index = nxt

    def add_used(self, mem: GuestMemory, head: int, length: int) -> None:
        slot = self.used_idx % self.num
        mem.write(self.used + 4 + USED_ELEM.size * slot, USED_ELEM.pack(head, length))
        self.used_idx = (self.used_idx + 1) & 0xFFFF

    def publish(self, mem: GuestMemory) -> None:
        """The used index, after the entries (x86 keeps store order)."""
        mem.put_u16(self.used + 2, self.used_idx)

    def notify(self) -> None:
        if self.call_fd is not None:
            # BlockingIOError: the counter is saturated, the guest is notified anyway
            with contextlib.suppress(BlockingIOError):
                os.write(self.call_fd, U64.pack(1))


class Rx(Enum):
    DELIVERED = "delivered"
    DROPPED = "dropped"  # non-mergeable: larger than the chain at the head (QEMU drops it too)
    WAIT = "wait"  # too few buffers posted


def write_chain(mem: GuestMemory, segments: Sequence[Segment], data: memoryview) -> int:
    """Fill the chain's device-writable segments in order with a prefix of ``data``."""
    done = 0
    for seg in segments:
        if done == len(data):
            break
        if not seg.writable:
            continue
        take = min(seg.length, len(data) - done)
        mem.write(seg.addr, data[done : done + take])
        done += take
    return done


def capacity(segments: Sequence[Segment]) -> int:
    return sum(seg.length for seg in segments if seg.writable)


def receive(
    mem: GuestMemory, ring: Vring, frame: bytes, *, hdr_len: int, mergeable: bool
) -> tuple[Rx, int]:
    """Put one frame (behind its virtio-net header) into the receive queue: (outcome, chains
    used). The used index is published and the guest notified on delivery."""
    total = hdr_len + len(frame)
    pending = ring.pending(mem)
    if pending == 0:
        return Rx.WAIT, 0
    if not mergeable:
        head = ring.head(mem)
        segments = ring.chain(mem, head)
        if capacity(segments) < total:
            return Rx.DROPPED, 0
        data = memoryview(net_header(hdr_len, 1) + frame)
        written = write_chain(mem, segments, data)
        ring.last_avail = (ring.last_avail + 1) & 0xFFFF
        ring.add_used(mem, head, written)
        ring.publish(mem)
        ring.notify()
        return Rx.DELIVERED, 1
    chains: list[tuple[int, list[Segment]]] = []
    room = 0
    while room < total:
        if len(chains) == pending:
            return Rx.WAIT, 0
        head = ring.head(mem, len(chains))
        segments = ring.chain(mem, head)
        chains.append((head, segments))
        room += capacity(segments)
    data = memoryview(net_header(hdr_len, len(chains)) + frame)
    done = 0
    for head, segments in chains:
        written = write_chain(mem, segments, data[done:])
        done += written
        ring.add_used(mem, head, written)
    ring.last_avail = (ring.last_avail + len(chains)) & 0xFFFF
    ring.publish(mem)
    ring.notify()
    return Rx.DELIVERED, len(chains)


def drain(mem: GuestMemory, ring: Vring) -> int:
    """Take every posted chain (the transmit queue), mark it used with 0 bytes written."""
    count = ring.pending(mem)
    for _ in range(count):
        head = ring.head(mem)
        ring.chain(mem, head)  # validates it
        ring.last_avail = (ring.last_avail + 1) & 0xFFFF
        ring.add_used(mem, head, 0)
    if count:
        ring.publish(mem)
        ring.notify()
    return count


# --- the backend ------------------------------------------------------------------------------


class VhostUserNet:
    """A vhost-user net device on a unix socket, served by one thread.

    ``start()`` before QEMU runs (QEMU waits for the backend when it starts), ``send(frames)``
    queues frames for the receive queue, ``close()`` stops the thread and closes everything.
    """

    def __init__(self, path: Path, *, mergeable: bool, poll_ms: int = 20) -> None:
        self.path = path
        self.features = net_features(mergeable)
        self.acked = 0
        self.poll_ms = poll_ms
        self.log: list[str] = []  # requests as they came (seconds since start), and errors
        self._born = time.monotonic()
        self.delivered = 0
        self.dropped: list[int] = []  # lengths of frames dropped (non-mergeable, too large)
        self.error: BaseException | None = None
        self.mem = GuestMemory()
        self.rings = [Vring(RX_QUEUE), Vring(TX_QUEUE)]
        self._frames: collections.deque[bytes] = collections.deque()
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

    def send(self, frames: Iterable[bytes]) -> None:
        with self._lock:
            self._frames.extend(frames)
            if self._frames:
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
            drain(self.mem, tx)
        if not (rx.ready() and self.mem.regions):
            return
        while True:
            with self._lock:
                if not self._frames:
                    self._idle.set()
                    return
                frame = self._frames[0]
            outcome, _chains = receive(
                self.mem, rx, frame, hdr_len=self.hdr_len, mergeable=self.mergeable
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
            _close_fds(msg.fds)  # whatever was kept was dup'ed

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
            self._reply(req, encode_u64(0))  # none: no REPLY_ACK, no MQ, no config space
        elif req == SET_PROTOCOL_FEATURES:
            detail = f" {decode_u64(payload):#x}"
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
