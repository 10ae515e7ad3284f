"""The device side of a split virtqueue (virtio 1.x §2.7) in guest memory shared over
vhost-user: translating addresses, walking descriptor chains, filling receive buffers the way
QEMU's virtio_net_receive_rcu does, and draining the transmit queue."""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from vnetrx.lab.vhost_user_proto import (
    U16,
    U64,
    MemRegion,
    VhostUserError,
    VringAddr,
    close_fds,
    net_header,
)

# Split virtqueue (virtio 1.x §2.7).
DESC = struct.Struct("<QIHH")  # addr, len, flags, next
DESC_F_NEXT = 1
DESC_F_WRITE = 2
DESC_F_INDIRECT = 4
USED_ELEM = struct.Struct("<II")
RX_QUEUE, TX_QUEUE = 0, 1

Memory = bytearray | mmap.mmap


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
        close_fds(fd for fd in (self.kick_fd, self.call_fd, self.err_fd) if fd is not None)
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
    mem: GuestMemory, ring: Vring, frame: bytes, *, hdr_len: int, mergeable: bool,
    hdr: bytes = b"",
) -> tuple[Rx, int]:
    """Put one frame (behind its virtio-net header: ``hdr``'s 10 bytes, or all zero) into the
    receive queue: (outcome, chains used). The used index is published and the guest notified
    on delivery."""
    total = hdr_len + len(frame)
    pending = ring.pending(mem)
    if pending == 0:
        return Rx.WAIT, 0
    if not mergeable:
        head = ring.head(mem)
        segments = ring.chain(mem, head)
        if capacity(segments) < total:
            return Rx.DROPPED, 0
        data = memoryview(net_header(hdr_len, 1, hdr) + frame)
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
    data = memoryview(net_header(hdr_len, len(chains), hdr) + frame)
    done = 0
    for head, segments in chains:
        written = write_chain(mem, segments, data[done:])
        done += written
        ring.add_used(mem, head, written)
    ring.last_avail = (ring.last_avail + len(chains)) & 0xFFFF
    ring.publish(mem)
    ring.notify()
    return Rx.DELIVERED, len(chains)


def receive_burst(
    mem: GuestMemory, ring: Vring, frames: Sequence[tuple[bytes, bytes]], *, hdr_len: int,
    mergeable: bool,
) -> list[bytes | None] | None:
    """Put a burst of frames (each ``(hdr, frame)``: its 10-byte virtio_net_hdr, or b"" for all
    zero, and the frame) into the receive queue with ONE used-index update and ONE
    notification, so that the guest takes them in one NAPI poll (if its budget allows). Nothing
    is written (None) while fewer chains are posted than the whole burst needs. Per frame: the
    virtio-net header written in front of it (num_buffers included), or None when it was
    dropped (non-mergeable, larger than the chain at the head: the chain stays posted)."""
    pending = ring.pending(mem)
    plan: list[list[tuple[int, list[Segment]]] | None] = []
    ahead = 0
    for _hdr, frame in frames:
        total = hdr_len + len(frame)
        chains: list[tuple[int, list[Segment]]] = []
        room = 0
        while room < total:
            if ahead == pending:
                return None
            head = ring.head(mem, ahead)
            segments = ring.chain(mem, head)
            if not mergeable and capacity(segments) < total:
                break
            chains.append((head, segments))
            room += capacity(segments)
            ahead += 1
            if not mergeable:
                break
        plan.append(chains if room >= total else None)
    written: list[bytes | None] = []
    for (hdr, frame), planned in zip(frames, plan, strict=True):
        if planned is None:
            written.append(None)
            continue
        header = net_header(hdr_len, len(planned), hdr)
        data = memoryview(header + frame)
        done = 0
        for head, segments in planned:
            put = write_chain(mem, segments, data[done:])
            done += put
            ring.add_used(mem, head, put)
        written.append(header)
    ring.last_avail = (ring.last_avail + ahead) & 0xFFFF
    ring.publish(mem)
    ring.notify()
    return written


def drain(mem: GuestMemory, ring: Vring, lengths: list[int] | None = None) -> int:
    """Take every posted chain (the transmit queue), mark it used with 0 bytes written;
    ``lengths`` collects the bytes of each (the virtio-net header included)."""
    count = ring.pending(mem)
    for _ in range(count):
        head = ring.head(mem)
        segments = ring.chain(mem, head)  # validates it
        if lengths is not None:
            lengths.append(sum(seg.length for seg in segments if not seg.writable))
        ring.last_avail = (ring.last_avail + 1) & 0xFFFF
        ring.add_used(mem, head, 0)
    if count:
        ring.publish(mem)
        ring.notify()
    return count
