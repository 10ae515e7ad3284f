"""The vhost-user protocol as vnetrx's backend speaks it (QEMU's docs/interop/vhost-user.rst):
message header and payload encodings, fd passing, and the virtio-net features and header the
backend offers. See vhost_user.py for the backend itself."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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
NET_SET_MTU = 20
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
    NET_SET_MTU: "NET_SET_MTU",
}
VRING_FD_INDEX_MASK = 0xFF
VRING_FD_NOFD = 0x100

# Feature bits (include/uapi/linux/virtio_net.h, virtio_config.h).
F_GUEST_CSUM = 1
F_MTU = 3  # VIRTIO_NET_F_MTU: the device's MTU is in config space (QEMU's host_mtu)
F_GUEST_TSO4 = 7
F_GUEST_TSO6 = 8
F_GUEST_ECN = 9
F_GUEST_UFO = 10
F_MRG_RXBUF = 15
F_PROTOCOL_FEATURES = 30
F_VERSION_1 = 32
GUEST_OFFLOADS = (F_GUEST_CSUM, F_GUEST_TSO4, F_GUEST_TSO6, F_GUEST_ECN, F_GUEST_UFO)
# docs/interop/vhost-user.rst: protocol feature VHOST_USER_PROTOCOL_F_NET_MTU (bit 4): QEMU
# sends VHOST_USER_NET_SET_MTU (u64) once VIRTIO_NET_F_MTU is negotiated (hw/net/virtio-net.c
# virtio_net_vhost_status → vhost_net_set_mtu → vhost_user_net_set_mtu, which sends nothing
# without this protocol feature)
PROTOCOL_F_NET_MTU = 4

U16 = struct.Struct("<H")
U64 = struct.Struct("<Q")
GSO_NONE = 0
VRING_STATE = struct.Struct("<II")  # index, num
VRING_ADDR = struct.Struct("<IIQQQQ")  # index, flags, desc, used, avail, log (user addresses)
MEM_TABLE_HEAD = struct.Struct("<II")  # nregions, padding
MEM_REGION = struct.Struct("<QQQQ")  # guest_phys_addr, memory_size, userspace_addr, mmap_offset


class VhostUserError(VnetrxError):
    """The vhost-user peer (QEMU) sent something this backend cannot follow."""


def net_features(mergeable: bool, guest_gso: bool = True, mtu: bool = False) -> int:
    """What the backend offers: VERSION_1, the guest receive offloads (``guest_gso`` False:
    GUEST_CSUM alone, no TSO4/TSO6/ECN/UFO), MRG_RXBUF on request, VIRTIO_NET_F_MTU when the
    device has an MTU (QEMU's host_mtu), and VHOST_USER_F_PROTOCOL_FEATURES (see the module
    docstring)."""
    bits = (
        F_VERSION_1,
        F_PROTOCOL_FEATURES,
        *(GUEST_OFFLOADS if guest_gso else (F_GUEST_CSUM,)),
        *((F_MRG_RXBUF,) if mergeable else ()),
        *((F_MTU,) if mtu else ()),
    )
    return sum(1 << bit for bit in bits)


def hdr_len_for(features: int) -> int:
    """The header the device writes: virtio_net_hdr_mrg_rxbuf (12) with VERSION_1 or MRG_RXBUF,
    else the legacy virtio_net_hdr (10)."""
    return 12 if features & ((1 << F_VERSION_1) | (1 << F_MRG_RXBUF)) else 10


def protocol_features(mtu: bool) -> int:
    """The protocol features offered: NET_MTU when the device has an MTU, else none (no
    REPLY_ACK, no MQ, no config space)."""
    return 1 << PROTOCOL_F_NET_MTU if mtu else 0


def net_header(hdr_len: int, num_buffers: int, base: bytes = b"") -> bytes:
    """The 10-byte virtio_net_hdr ``base`` (default: flags 0, VIRTIO_NET_HDR_GSO_NONE, the rest
    0), then num_buffers (12-byte header only)."""
    head = (base[:10] + bytes(10))[:10] if base else bytes([0, GSO_NONE]) + bytes(8)
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
            close_fds(fds)
            return None
        header += data
    try:
        request, flags, size = decode_header(header)
    except VhostUserError:
        close_fds(fds)
        raise
    payload = b""
    while len(payload) < size:
        data, got, _flags, _addr = socket.recv_fds(conn, size - len(payload), MAX_FDS)
        fds += got
        if not data:
            close_fds(fds)
            return None
        payload += data
    return Message(request, flags, payload, tuple(fds))


def close_fds(fds: Iterable[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
