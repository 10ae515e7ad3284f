"""vnetrx's vhost-user net backend (vnetrx.lab.vhost_user) without QEMU: message encoding and
parsing, fd passing, the split ring filled in an in-memory fake guest, mergeable splitting, the
whole backend driven over its socket by a fake front end, the QEMU command line of the
vhost-user modes, cleanup, and the model against logs saved from real guests booted with it
(tests/data/lab_vhost_user)."""

from __future__ import annotations

import mmap
import os
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import DATA as TESTS_DATA
from vnetrx.errors import InputError
from vnetrx.kernel.registry import lookup
from vnetrx.lab import qemu
from vnetrx.lab import vhost_user as vu
from vnetrx.lab import vhost_user_proto as proto
from vnetrx.lab import vhost_user_ring as vring
from vnetrx.lab.compare import compare, setup_for
from vnetrx.lab.run import DEFAULT_LENGTHS, MODES, VHOST_USER_MODES, check_request
from vnetrx.observed.guest_log import parse_log
from vnetrx.observed.negotiated import lab_mode_for

DATA = TESTS_DATA / "lab_vhost_user"
SAVED = {"6.1.0-57-amd64": "6.1.192", "6.12.117+deb12-amd64": "6.12.117"}

# --- messages ---------------------------------------------------------------------------------


def test_header_round_trip() -> None:
    raw = proto.encode(proto.GET_FEATURES, proto.encode_u64(0x1_4000_0782), reply=True)
    assert raw[:12] == struct.pack("<III", 1, 0x1 | 0x4, 8)
    request, flags, size = proto.decode_header(raw[:12])
    assert (request, flags, size) == (proto.GET_FEATURES, 0x5, 8)
    assert proto.decode_u64(raw[12:]) == 0x1_4000_0782
    assert proto.encode(proto.SET_OWNER) == struct.pack("<III", 3, 1, 0)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (struct.pack("<III", 1, 0x2, 0), "version 2"),
        (struct.pack("<III", 1, 0x1, 1 << 20), "too large"),
        (b"\x01\x00", "header of 2 bytes"),
    ],
)
def test_bad_headers(raw: bytes, message: str) -> None:
    with pytest.raises(proto.VhostUserError, match=message):
        proto.decode_header(raw)


def test_payloads_round_trip() -> None:
    regions = (
        proto.MemRegion(0, 0xA0000, 0x7F00_0000_0000, 0),
        proto.MemRegion(0xC0000, 0xFF40000, 0x7F00_000C_0000, 0xC0000),
    )
    payload = proto.encode_mem_table(regions)
    assert len(payload) == 8 + 2 * 32
    assert proto.decode_mem_table(payload) == regions
    addr = proto.VringAddr(1, 0, 0x7F00_0000_1000, 0x7F00_0000_3000, 0x7F00_0000_2000)
    assert len(addr.encode()) == 40
    assert proto.VringAddr.decode(addr.encode()) == addr
    assert proto.decode_vring_state(proto.encode_vring_state(1, 256)) == (1, 256)
    assert proto.decode_vring_fd(proto.encode_u64(1)) == (1, True)
    assert proto.decode_vring_fd(proto.encode_u64(0x100)) == (0, False)
    with pytest.raises(proto.VhostUserError, match="9 regions"):
        proto.decode_mem_table(struct.pack("<II", 9, 0) + bytes(9 * 32))
    with pytest.raises(proto.VhostUserError, match="u64"):
        proto.decode_u64(b"\x01")


def test_features_and_header() -> None:
    big = proto.net_features(mergeable=False)
    merge = proto.net_features(mergeable=True)
    for bit in (1, 7, 8, 9, 10, 30, 32):  # GUEST_CSUM, TSO4, TSO6, ECN, UFO, PROTOCOL, VERSION_1
        assert big >> bit & 1 and merge >> bit & 1
    assert not big >> 15 & 1 and merge >> 15 & 1  # MRG_RXBUF only on request
    for bit in (0, 11, 12, 13, 14, 28, 29):  # no host offloads, INDIRECT_DESC, EVENT_IDX
        assert not merge >> bit & 1
    assert proto.hdr_len_for(1 << 32) == 12
    assert proto.hdr_len_for(1 << 15) == 12
    assert proto.hdr_len_for(1 << 7) == 10
    assert proto.net_header(12, 3) == bytes(10) + b"\x03\x00"
    assert proto.net_header(10, 1) == bytes(10)


def test_mtu_feature_and_protocol_feature() -> None:
    """VIRTIO_NET_F_MTU is bit 3 (include/uapi/linux/virtio_net.h), offered only with an MTU;
    VHOST_USER_PROTOCOL_F_NET_MTU is protocol bit 4, VHOST_USER_NET_SET_MTU request 20
    (docs/interop/vhost-user.rst)."""
    assert proto.net_features(False, False, mtu=True) == proto.net_features(False, False) | 8
    assert not proto.net_features(True, True) >> 3 & 1
    assert proto.protocol_features(True) == 0x10 and proto.protocol_features(False) == 0
    assert proto.NET_SET_MTU == 20 and proto.REQUEST_NAMES[20] == "NET_SET_MTU"


def test_recv_message_with_fds() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    fd = os.eventfd(0)
    try:
        socket.send_fds(a, [proto.encode(proto.SET_VRING_KICK, proto.encode_u64(1))], [fd])
        msg = proto.recv_message(b)
        assert msg is not None
        assert (msg.name, msg.payload, len(msg.fds)) == ("SET_VRING_KICK", proto.encode_u64(1), 1)
        os.write(fd, struct.pack("<Q", 5))
        assert struct.unpack("<Q", os.read(msg.fds[0], 8)) == (5,)  # the same eventfd
        os.close(msg.fds[0])
        a.sendall(proto.encode(77, b"xyz"))
        msg = proto.recv_message(b)
        assert msg is not None and msg.name == "request 77" and msg.payload == b"xyz"
        a.close()
        assert proto.recv_message(b) is None
    finally:
        os.close(fd)
        a.close()
        b.close()


# --- a fake guest: one memory region and split rings in a bytearray ---------------------------


GPA, UVA = 0x10_0000, 0x7F00_0000_0000


class FakeGuest:
    """Guest RAM in a bytearray (guest physical GPA.., QEMU userspace UVA..) with one split ring
    laid out as the driver would: descriptors, avail, used; buffers from BUF on."""

    def __init__(self, num: int = 16, size: int = 1 << 20) -> None:
        self.ram = bytearray(size)
        self.mem = vring.GuestMemory()
        self.mem.add(proto.MemRegion(GPA, size, UVA, 0), self.ram)
        self.num = num
        self.desc, self.avail, self.used = GPA, GPA + 16 * num, GPA + 0x1000
        self.ring = vring.Vring(0)
        self.ring.num = num
        self.ring.addr = proto.VringAddr(0, 0, UVA, UVA + 0x1000, UVA + 16 * num)
        self.ring.set_addresses(
            self.mem,
            self.mem.gpa_of_uva(self.ring.addr.desc),
            self.mem.gpa_of_uva(self.ring.addr.avail),
            self.mem.gpa_of_uva(self.ring.addr.used),
        )
        self.ring.started = self.ring.enabled = True
        self.next_desc = 0
        self.next_buf = GPA + 0x2000
        self.avail_idx = 0

    def off(self, gpa: int) -> int:
        return gpa - GPA

    def post(self, *lengths: int, writable: bool = True) -> tuple[int, list[int]]:
        """One chain of buffers of these lengths: (head, buffer addresses)."""
        head = self.next_desc
        addrs = []
        for i, length in enumerate(lengths):
            index = self.next_desc
            self.next_desc += 1
            last = i == len(lengths) - 1
            flags = (0 if last else vring.DESC_F_NEXT) | (vring.DESC_F_WRITE if writable else 0)
            struct.pack_into(
                "<QIHH",
                self.ram,
                self.off(self.desc) + 16 * index,
                self.next_buf,
                length,
                flags,
                0 if last else index + 1,
            )
            addrs.append(self.next_buf)
            self.next_buf += length
        slot = self.avail_idx % self.num
        struct.pack_into("<H", self.ram, self.off(self.avail) + 4 + 2 * slot, head)
        self.avail_idx += 1
        struct.pack_into("<H", self.ram, self.off(self.avail) + 2, self.avail_idx & 0xFFFF)
        return head, addrs

    def used_idx(self) -> int:
        return int(struct.unpack_from("<H", self.ram, self.off(self.used) + 2)[0])

    def used_entry(self, slot: int) -> tuple[int, int]:
        head, length = struct.unpack_from("<II", self.ram, self.off(self.used) + 4 + 8 * slot)
        return head, length

    def read(self, gpa: int, size: int) -> bytes:
        return bytes(self.ram[self.off(gpa) : self.off(gpa) + size])


def _frame(length: int) -> bytes:
    return qemu.ethernet_frame(length, 1)


def test_guest_memory_translation() -> None:
    g = FakeGuest()
    assert g.mem.gpa_of_uva(UVA + 5) == GPA + 5
    g.mem.write(GPA + 10, b"abc")
    assert g.mem.read(GPA + 10, 3) == b"abc" and g.ram[10:13] == b"abc"
    with pytest.raises(proto.VhostUserError, match="in no memory region"):
        g.mem.locate(GPA - 1)
    with pytest.raises(proto.VhostUserError, match="userspace address"):
        g.mem.gpa_of_uva(1)


def test_guest_memory_spans_regions() -> None:
    mem = vring.GuestMemory()
    low, high = bytearray(16), bytearray(32)
    mem.add(proto.MemRegion(0, 16, 0x1000, 0), low)
    mem.add(proto.MemRegion(16, 16, 0x2000, 16), high)  # mmap_offset 16 into its own buffer
    mem.write(12, b"12345678")
    assert low[12:] == b"1234" and high[16:20] == b"5678"
    assert mem.read(12, 8) == b"12345678"


def test_big_chain_gets_header_then_frame() -> None:
    g = FakeGuest()
    # add_recvbuf_big's shape: 12 header bytes, the rest of page 0 from 16, then pages
    head, addrs = g.post(12, 4096 - 16, 4096, 4096)
    frame = _frame(9000)
    outcome, chains = vring.receive(g.mem, g.ring, frame, hdr_len=12, mergeable=False)
    assert (outcome, chains) == (vring.Rx.DELIVERED, 1)
    assert g.read(addrs[0], 12) == proto.net_header(12, 1)
    assert g.read(addrs[1], 4080) == frame[:4080]
    assert g.read(addrs[2], 4096) == frame[4080:8176]
    assert g.read(addrs[3], 824) == frame[8176:]
    assert g.used_idx() == 1 and g.used_entry(0) == (head, 9012)
    assert g.ring.last_avail == 1


def test_non_mergeable_drop_keeps_the_chain_and_wait() -> None:
    g = FakeGuest()
    assert vring.receive(g.mem, g.ring, _frame(60), hdr_len=12, mergeable=False) == (vring.Rx.WAIT, 0)
    g.post(12, 100)
    assert vring.receive(g.mem, g.ring, _frame(101), hdr_len=12, mergeable=False) == (
        vring.Rx.DROPPED,
        0,
    )
    assert g.used_idx() == 0 and g.ring.last_avail == 0  # QEMU's virtqueue_unpop
    assert vring.receive(g.mem, g.ring, _frame(100), hdr_len=12, mergeable=False)[0] is vring.Rx.DELIVERED
    assert g.used_entry(0)[1] == 112


def test_legacy_header_is_ten_bytes() -> None:
    g = FakeGuest()
    _, addrs = g.post(200)
    vring.receive(g.mem, g.ring, _frame(60), hdr_len=10, mergeable=False)
    assert g.read(addrs[0], 70) == bytes(10) + _frame(60)
    assert g.used_entry(0)[1] == 70


def test_mergeable_splits_over_whole_chains() -> None:
    g = FakeGuest()
    posted = [g.post(1536) for _ in range(3)]
    frame = _frame(4000)
    outcome, chains = vring.receive(g.mem, g.ring, frame, hdr_len=12, mergeable=True)
    assert (outcome, chains) == (vring.Rx.DELIVERED, 3)
    data = proto.net_header(12, 3) + frame
    assert data[10:12] == b"\x03\x00"  # num_buffers in the first header only
    for i, (head, addrs) in enumerate(posted):
        written = min(1536, len(data) - 1536 * i)
        assert g.used_entry(i) == (head, written)
        assert g.read(addrs[0], written) == data[1536 * i : 1536 * i + written]
    assert g.used_idx() == 3 and g.ring.last_avail == 3


def test_mergeable_waits_for_enough_buffers() -> None:
    g = FakeGuest()
    g.post(1536)
    frame = _frame(2000)
    assert vring.receive(g.mem, g.ring, frame, hdr_len=12, mergeable=True) == (vring.Rx.WAIT, 0)
    assert g.used_idx() == 0 and g.ring.last_avail == 0
    g.post(1536)
    assert vring.receive(g.mem, g.ring, frame, hdr_len=12, mergeable=True) == (vring.Rx.DELIVERED, 2)
    assert [g.used_entry(i)[1] for i in range(2)] == [1536, 2012 - 1536]


def test_mergeable_chain_of_several_descriptors_is_filled_first() -> None:
    g = FakeGuest()
    _, first = g.post(10, 20)
    _, second = g.post(100)
    data = proto.net_header(12, 2) + _frame(60)
    assert vring.receive(g.mem, g.ring, _frame(60), hdr_len=12, mergeable=True)[1] == 2
    assert g.read(first[0], 10) + g.read(first[1], 20) == data[:30]
    assert g.read(second[0], 42) == data[30:]
    assert [g.used_entry(i)[1] for i in range(2)] == [30, 42]


def test_ring_wraps_the_16_bit_index() -> None:
    g = FakeGuest(num=4)
    g.ring.last_avail = g.avail_idx = 0xFFFF
    g.ring.used_idx = 0xFFFF
    struct.pack_into("<H", g.ram, g.off(g.avail) + 2, 0xFFFF)
    g.post(200)
    g.post(200)
    for length in (60, 61):
        assert vring.receive(g.mem, g.ring, _frame(length), hdr_len=12, mergeable=False)[0] is (
            vring.Rx.DELIVERED
        )
    assert g.used_idx() == 1 and g.ring.last_avail == 1


def test_bad_rings_are_refused() -> None:
    g = FakeGuest(num=4)
    g.post(10, 10)
    struct.pack_into("<H", g.ram, g.off(g.desc) + 16 + 14, 0)  # descriptor 1 → 0: a loop
    struct.pack_into("<H", g.ram, g.off(g.desc) + 16 + 12, vring.DESC_F_NEXT | vring.DESC_F_WRITE)
    with pytest.raises(proto.VhostUserError, match="loops"):
        g.ring.chain(g.mem, 0)
    struct.pack_into("<H", g.ram, g.off(g.desc) + 12, vring.DESC_F_INDIRECT)
    with pytest.raises(proto.VhostUserError, match="indirect"):
        g.ring.chain(g.mem, 0)
    struct.pack_into("<H", g.ram, g.off(g.avail) + 2, 9)
    with pytest.raises(proto.VhostUserError, match="runs 9 ahead"):
        g.ring.pending(g.mem)


def test_tx_queue_is_drained() -> None:
    g = FakeGuest()
    heads = [g.post(60, writable=False)[0] for _ in range(3)]
    assert vring.drain(g.mem, g.ring) == 3
    assert [g.used_entry(i) for i in range(3)] == [(h, 0) for h in heads]
    assert g.used_idx() == 3 and vring.drain(g.mem, g.ring) == 0


# --- the whole backend, driven over its socket by a fake front end -----------------------------


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


class FakeFrontEnd:
    """Does what QEMU 7.2 does on the socket, with a memfd for guest RAM and eventfds."""

    def __init__(self, path: Path, size: int = 1 << 20) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.memfd = os.memfd_create("vnetrx-test-ram")
        os.ftruncate(self.memfd, size)
        self.ram = mmap.mmap(self.memfd, size)
        self.fds: list[int] = [self.memfd]
        self.calls: list[int] = []
        self.kicks: list[int] = []

    def send(self, request: int, payload: bytes = b"", fds: tuple[int, ...] = ()) -> None:
        socket.send_fds(self.sock, [proto.encode(request, payload)], list(fds))

    def ask(self, request: int, payload: bytes = b"") -> bytes:
        self.send(request, payload)
        msg = proto.recv_message(self.sock)
        assert msg is not None and msg.request == request and msg.flags == 0x5
        return msg.payload

    def set_up(self, features: int, num: int = 16) -> None:
        self.ask(proto.GET_FEATURES)
        self.ask(proto.GET_PROTOCOL_FEATURES)
        self.send(proto.SET_PROTOCOL_FEATURES, proto.encode_u64(0))
        self.send(proto.SET_OWNER)
        for index in (0, 1):
            self.send(proto.SET_VRING_ENABLE, proto.encode_vring_state(index, 1))
        self.send(proto.SET_FEATURES, proto.encode_u64(features))
        table = proto.encode_mem_table([proto.MemRegion(GPA, len(self.ram), UVA, 0)])
        self.send(proto.SET_MEM_TABLE, table, (self.memfd,))
        for index in (0, 1):
            base = 0x4000 * (index + 1)  # descriptors, avail at +0x800, used at +0x1000
            self.send(proto.SET_VRING_NUM, proto.encode_vring_state(index, num))
            self.send(proto.SET_VRING_BASE, proto.encode_vring_state(index, 0))
            addr = proto.VringAddr(index, 0, UVA + base, UVA + base + 0x1000, UVA + base + 0x800)
            self.send(proto.SET_VRING_ADDR, addr.encode())
            kick, call = os.eventfd(0, os.EFD_NONBLOCK), os.eventfd(0, os.EFD_NONBLOCK)
            self.fds += [kick, call]
            self.kicks.append(kick)
            self.calls.append(call)
            self.send(proto.SET_VRING_KICK, proto.encode_u64(index), (kick,))
            self.send(proto.SET_VRING_CALL, proto.encode_u64(index), (call,))

    def post_rx(self, slot: int, length: int) -> None:
        base = 0x4000
        addr = 0x10000 + slot * length
        struct.pack_into("<QIHH", self.ram, base + 16 * slot, GPA + addr, length, 2, 0)
        struct.pack_into("<H", self.ram, base + 0x800 + 4 + 2 * slot, slot)
        struct.pack_into("<H", self.ram, base + 0x800 + 2, slot + 1)
        os.write(self.kicks[0], struct.pack("<Q", 1))

    def rx_used(self) -> tuple[int, list[tuple[int, int]]]:
        used = 0x4000 + 0x1000
        idx = struct.unpack_from("<H", self.ram, used + 2)[0]
        return idx, [struct.unpack_from("<II", self.ram, used + 4 + 8 * i) for i in range(idx)]

    def close(self) -> None:
        self.sock.close()
        self.ram.close()
        for fd in self.fds:
            os.close(fd)


def _until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="vnetrx-vu-test-"))
    yield path
    for child in path.iterdir():
        child.unlink()
    path.rmdir()


def test_backend_end_to_end_and_cleanup(sock_dir: Path) -> None:
    before = _open_fds()
    backend = vu.VhostUserNet(sock_dir / "vu.sock", mergeable=True)
    backend.start()
    front = FakeFrontEnd(sock_dir / "vu.sock")
    try:
        features = proto.net_features(mergeable=True)
        assert proto.decode_u64(front.ask(proto.GET_FEATURES)) == features
        front.set_up(features)
        front.send(99, b"?")  # unknown: logged, ignored
        frames = [_frame(60), _frame(3000)]
        backend.send(frames)
        front.post_rx(0, 1536)
        front.post_rx(1, 1536)
        front.post_rx(2, 1536)
        assert backend.wait_idle(5.0), backend.log
        idx, used = front.rx_used()
        assert idx == 3 and used == [(0, 72), (1, 1536), (2, 3012 - 1536)]
        assert front.ram[0x10000 : 0x10000 + 72] == proto.net_header(12, 1) + frames[0]
        assert front.ram[0x10000 + 1536 + 10 : 0x10000 + 1536 + 12] == b"\x02\x00"
        front.ask(proto.GET_FEATURES)  # a barrier: every message before it has been handled
        assert struct.unpack("<Q", os.read(front.calls[0], 8))[0] >= 1  # the guest was notified
        base = front.ask(proto.GET_VRING_BASE, proto.encode_vring_state(0, 0))
        assert proto.decode_vring_state(base) == (0, 3)
        assert backend.delivered == 2 and backend.dropped == [] and backend.error is None
        assert any("request 99 (unknown" in line for line in backend.log)
        assert backend.hdr_len == 12 and backend.mergeable
    finally:
        front.close()
        backend.close()
    assert not backend._thread.is_alive()
    assert _open_fds() == before  # the socket, received fds and mappings are all closed


def test_backend_refuses_features_it_never_offered(sock_dir: Path) -> None:
    with vu.VhostUserNet(sock_dir / "vu.sock", mergeable=False) as backend:
        backend.start()
        front = FakeFrontEnd(sock_dir / "vu.sock")
        try:
            front.send(proto.SET_FEATURES, proto.encode_u64(1 << proto.F_MRG_RXBUF))
            assert _until(lambda: backend.error is not None)
            assert "never offered" in str(backend.error)
        finally:
            front.close()


def test_backend_with_an_mtu_offers_it_and_checks_net_set_mtu(sock_dir: Path) -> None:
    """host_mtu: the backend offers VIRTIO_NET_F_MTU and NET_MTU; QEMU's NET_SET_MTU carries
    the backend's MTU (a REPLY_ACK of 0 when asked), any other MTU is an error."""
    with vu.VhostUserNet(sock_dir / "vu.sock", mergeable=False, guest_gso=False,
                         mtu=9000) as backend:
        backend.start()
        front = FakeFrontEnd(sock_dir / "vu.sock")
        try:
            assert proto.decode_u64(front.ask(proto.GET_FEATURES)) >> proto.F_MTU & 1
            assert proto.decode_u64(front.ask(proto.GET_PROTOCOL_FEATURES)) == 1 << 4
            features = proto.net_features(False, False, mtu=True)
            front.send(proto.SET_FEATURES, proto.encode_u64(features))
            front.send(proto.NET_SET_MTU, proto.encode_u64(9000))
            socket.send_fds(front.sock, [proto.encode(
                proto.NET_SET_MTU, proto.encode_u64(9000), flags=proto.FLAG_NEED_REPLY)], [])
            reply = proto.recv_message(front.sock)
            assert reply is not None and reply.request == proto.NET_SET_MTU
            assert proto.decode_u64(reply.payload) == 0
            assert backend.mtu_set == 9000 and backend.acked == features
            assert backend.error is None and any("NET_SET_MTU 9000" in x for x in backend.log)
            front.send(proto.NET_SET_MTU, proto.encode_u64(8999))
            assert _until(lambda: backend.error is not None)
            assert "set the MTU to 8999, the backend's is 9000" in str(backend.error)
        finally:
            front.close()


# --- QEMU command line, modes, requests, cleanup ----------------------------------------------


def test_qemu_command_for_vhost_user(tmp_path: Path) -> None:
    boot = qemu.Boot(tmp_path / "vmlinuz", mergeable=False, mtu=None, backend="vhost-user")
    argv = qemu.qemu_command(boot, tmp_path / "i", tmp_path / "g.sock", tmp_path / "h.sock")
    text = " ".join(argv)
    assert "memory-backend-memfd,id=mem,size=256M,share=on" in argv
    assert argv[argv.index("-m") + 1] == "256"
    assert f"socket,id=c0,path={tmp_path}/g.sock" in argv
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "-netdev"] == [
        "vhost-user,id=n0,chardev=c0"
    ]
    for banned in ("-nic", "tap", "bridge", "hostfwd", "dgram", "h.sock"):
        assert banned not in text
    device = argv[argv.index("-device") + 1]
    assert "vectors=0" in device and "mrg_rxbuf=off" in device and "host_mtu" not in device
    assert "guest_tso4" not in device and "guest_csum" not in device  # left on
    assert "host_tso4=off" in device and "csum=off" in device
    dgram = qemu.device_properties(qemu.Boot(tmp_path, mergeable=True, mtu=None))
    assert "vectors" not in dgram and "guest_tso4=off" in dgram
    with pytest.raises(ValueError, match="unknown NIC backend"):
        qemu.netdev_arguments(qemu.Boot(tmp_path, False, None, backend="tap"), tmp_path, tmp_path)


def test_gso_modes() -> None:
    assert set(VHOST_USER_MODES) <= set(MODES)
    for mode in VHOST_USER_MODES:
        assert check_request(mode, None, (60,)) is None
        with pytest.raises(InputError, match="offers no VIRTIO_NET_F_MTU"):
            check_request(mode, 9000, (60,))
        lengths = DEFAULT_LENGTHS[mode]
        assert len(lengths) >= 20 and max(lengths) == 65535 and {13, 128, 129} <= set(lengths)
    assert {3744, 3745, 4064, 4065, 65504, 65505} <= set(DEFAULT_LENGTHS["big-gso"])
    big = setup_for("big-gso", 1500, 12)
    assert big.guest_gso and not big.mergeable and big.ewma is None
    merge = setup_for("mergeable-gso", 1500, 12)
    assert merge.mergeable and merge.guest_gso and merge.ewma == 0
    assert merge == setup_for("mergeable", 1500, 12)._replace(guest_gso=True)
    gso = ("VERSION_1", "GUEST_CSUM", "GUEST_TSO4", "GUEST_TSO6")
    assert lab_mode_for(gso, 1500) == "big-gso"
    assert lab_mode_for((*gso, "MRG_RXBUF"), 1500) == "mergeable-gso"
    assert lab_mode_for(("VERSION_1", "MRG_RXBUF"), 1500) == "mergeable"
    assert lab_mode_for(("VERSION_1", "MTU"), 9000) == "big"


def _backend_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "vnetrx-vhost-user"]


def test_vhost_user_ctrl_c_kills_qemu_and_cleans_up(
    fake_qemu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made_dirs: list[Path]
) -> None:
    before = _open_fds()

    def interrupted(self: object) -> None:
        time.sleep(1)  # QEMU (the fake) and the backend thread are running by now
        raise KeyboardInterrupt

    monkeypatch.setattr(qemu._Reader, "start", interrupted)
    boot = qemu.Boot(tmp_path / "vmlinuz", mergeable=True, mtu=None, backend="vhost-user")
    with pytest.raises(KeyboardInterrupt):
        qemu.run(boot, b"initrd", [])
    with pytest.raises(ProcessLookupError):
        os.kill(int(fake_qemu.read_text()), 0)
    assert len(made_dirs) == 1 and not made_dirs[0].exists()
    assert _backend_threads() == []
    assert _open_fds() == before


def test_vhost_user_boot_that_never_gets_ready_is_cleaned_up(
    fake_qemu: Path, tmp_path: Path, made_dirs: list[Path]
) -> None:
    pidfile = fake_qemu
    before = _open_fds()
    boot = qemu.Boot(
        tmp_path / "vmlinuz", mergeable=False, mtu=None, ready_timeout_s=1.5, backend="vhost-user"
    )
    with pytest.raises(qemu.GuestError, match="vhost-user backend: QEMU never connected"):
        qemu.run(boot, b"initrd", [qemu.ethernet_frame(60, 0)])
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert len(made_dirs) == 1 and not made_dirs[0].exists()
    assert _backend_threads() == []
    assert _open_fds() == before


# --- the model against logs saved from real guests on the vhost-user backend --------------------


@pytest.mark.parametrize("release", sorted(SAVED))
@pytest.mark.parametrize("mode", VHOST_USER_MODES)
def test_saved_vhost_user_logs_match_the_model(mode: str, release: str) -> None:
    """Recorded with `vnetrx lab virtio --mode MODE --serial-log` (QEMU 7.2, TCG)."""
    text = (DATA / f"{mode}-{release}.log").read_text()
    lengths = tuple(int(x) for x in text.splitlines()[0].split("--len ")[1].split(","))
    assert lengths == DEFAULT_LENGTHS[mode]
    log = parse_log(text)
    assert log.complete and log.kprobe and not log.errors and log.release == release
    assert {"GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO"} <= set(log.features)
    assert "MTU" not in log.features
    report = compare(lookup(SAVED[release]), mode, lengths, log)
    assert report.mode == mode
    mismatches = [
        (f.frame_len, [(c.name, c.predicted, c.observed) for c in f.checks if not c.ok])
        for f in report.frames
        if not f.match
    ]
    assert mismatches == [] and report.counters_match
    by_len = {f.frame_len: f for f in report.frames}
    if mode == "big-gso":
        assert by_len[65535].observed["nr_frags"] == 17  # MAX_SKB_FRAGS: the 18th page
        assert by_len[65504].observed["nr_frags"] == 16
        assert (by_len[3744].predicted["outcome"], by_len[3745].predicted["outcome"]) == (
            "build_skb",
            "copy",
        )
    else:
        assert by_len[65535].observed["outcome"] == "skb"
        assert report.mergeable_rx_buffer_size == 1536
