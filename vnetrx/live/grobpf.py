"""BPF programs of vnetrx's own that record what enters and what leaves GRO (root only).

This kernel has no kprobes (``CONFIG_KPROBES`` is not set on the running 6.18.44), so tracefs
kprobe_events cannot read the merged skb. Instead, raw tracepoint programs, assembled here
instruction by instruction (no compiler, like vnetrx.live.bpf), copy whole structures into a
BPF queue map that user space pops:

* ``napi_gro_receive_entry`` / ``napi_gro_frags_entry`` (the skb before GRO),
* ``napi_gro_receive_exit`` / ``napi_gro_frags_exit`` (the ``gro_result``: 0 MERGED,
  1 MERGED_FREE, 2 HELD, 3 NORMAL, 4 CONSUMED), paired with the entry that ran just before on the
  same CPU (a per-CPU flag set only by an entry on our device),
* ``netif_receive_skb`` (``__netif_receive_skb_core``: every skb that leaves GRO, merged or not),
  followed by one record per ``frag_list`` member (walked through ``skb->next``, at most
  ``MAX_MEMBERS``),
* optionally ``napi_poll`` (``__napi_poll``, right after the driver's poll returned: its work and
  budget, the ``napi_struct`` address; the polls of the watched device only), for
  ``vnetrx observe --gro``.

Every record holds a 64-byte header (kind, ktime ns, jiffies, pid_tgid, skb address or verdict,
CPU or member index, the device name read), the whole ``struct sk_buff``, the whole
``struct skb_shared_info`` (at ``head + end``), the first ``PACKET_BYTES`` bytes at
``skb->data`` and ``MAC_BYTES`` at ``head + mac_header`` (the Ethernet header GRO compares). A push
the full queue refuses is counted (per CPU): :meth:`GroProbe.lost`. Only skbs whose ``dev->name`` equals the watched name are recorded. Offsets and
sizes come from the kernel's BTF (``/sys/kernel/btf/vmlinux``). The programs, maps and
attachments live as long as their file descriptors: :class:`GroProbe` closes them, and the kernel
drops them when the process dies however it dies.

ABI: include/uapi/linux/bpf.h (bpf_insn, bpf_attr for BPF_MAP_CREATE, BPF_PROG_LOAD,
BPF_RAW_TRACEPOINT_OPEN, BPF_MAP_LOOKUP_AND_DELETE_ELEM), helper numbers from enum bpf_func_id.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vnetrx.live.bpf import _bpf, _insn

if TYPE_CHECKING:
    from vnetrx.layouts.btf import Btf

# bpf commands, map and program types
BPF_MAP_CREATE = 0
BPF_MAP_LOOKUP_ELEM = 1
BPF_PROG_LOAD = 5
BPF_RAW_TRACEPOINT_OPEN = 17
BPF_MAP_LOOKUP_AND_DELETE_ELEM = 21
BPF_MAP_TYPE_PERCPU_ARRAY = 6
BPF_MAP_TYPE_QUEUE = 22
BPF_PROG_TYPE_RAW_TRACEPOINT = 17
BPF_PSEUDO_MAP_FD = 1
# helpers (enum bpf_func_id)
MAP_LOOKUP_ELEM = 1
KTIME_GET_NS = 5
GET_SMP_PROCESSOR_ID = 8
GET_CURRENT_PID_TGID = 14
MAP_PUSH_ELEM = 87
PROBE_READ_KERNEL = 113
JIFFIES64 = 118
# opcodes
MOV64_K, MOV64_X, ADD64_K, ADD64_X = 0xB7, 0xBF, 0x07, 0x0F
LDX_DW, LDX_W, LDX_H = 0x79, 0x61, 0x69
STX_DW, ST_DW, ST_W = 0x7B, 0x7A, 0x62
LD_IMM64 = 0x18
JEQ_K, JNE_X, JA = 0x15, 0x5D, 0x05
CALL, EXIT = 0x85, 0x95

# record kinds
ENTRY, EXIT_VERDICT, DELIVERED, MEMBER, FRAGS_ENTRY, POLL = 1, 2, 3, 4, 5, 6
KIND_NAMES = {ENTRY: "entry", EXIT_VERDICT: "exit", DELIVERED: "delivered", MEMBER: "member",
              FRAGS_ENTRY: "frags_entry", POLL: "poll"}
HEADER = 64
NAME_AT = 48
PACKET_BYTES = 80
MAC_BYTES = 16  # ETH_HLEN, rounded up to 8
MAX_MEMBERS = 64
QUEUE_ENTRIES = 16384
PROG_NAME = b"vnetrx_gro"


@dataclass(frozen=True)
class SkbOffsets:
    """Byte offsets (and bitfield bit positions) in the running kernel's structures."""

    skb_size: int
    shinfo_size: int
    dev: int
    name: int  # net_device.name
    next: int
    len: int
    data_len: int
    truesize: int
    head: int
    data: int
    tail: int
    end: int
    csum_start: int
    csum_offset: int
    network_header: int
    transport_header: int
    mac_header: int
    ip_summed_bit: int  # absolute bit position, 2 bits
    head_frag_bit: int
    pp_recycle_bit: int
    nr_frags: int
    gso_size: int
    gso_segs: int
    gso_type: int
    frag_list: int
    frags: int
    frag_size: int  # sizeof(skb_frag_t)
    frag_len: int  # offset of len in skb_frag_t
    frag_offset: int
    max_skb_frags: int
    hash: int = 148  # sk_buff.hash (6.18.44)
    napi_dev: int = 48  # napi_struct.dev (6.18.44)

    @property
    def skb_at(self) -> int:
        return HEADER

    @property
    def shinfo_at(self) -> int:
        return HEADER + (self.skb_size + 7) // 8 * 8

    @property
    def packet_at(self) -> int:
        return self.shinfo_at + (self.shinfo_size + 7) // 8 * 8

    @property
    def mac_at(self) -> int:
        return self.packet_at + PACKET_BYTES

    @property
    def record_size(self) -> int:
        return self.mac_at + MAC_BYTES


def missing_for_bpf(btf: str = "/sys/kernel/btf/vmlinux") -> list[str]:
    """What this machine lacks for these programs (empty when they can run): root, and the
    kernel's BTF (where the sk_buff offsets come from)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (it loads BPF programs on raw tracepoints)")
    if not Path(btf).exists():
        missing.append(f"the kernel's BTF ({btf}: CONFIG_DEBUG_INFO_BTF)")
    return missing


def btf_offsets(path: str = "/sys/kernel/btf/vmlinux") -> SkbOffsets:
    """The offsets from the kernel's BTF (OSError when a member is missing)."""
    from vnetrx.layouts.btf import load_btf

    return offsets_of(load_btf(path), path)


def offsets_of(btf: Btf, path: str) -> SkbOffsets:
    """The offsets in a loaded BTF (``path`` names it in errors; OSError when a member is
    missing), e.g. a guest kernel's .BTF section (vnetrx lab virtio --gro)."""

    def off(struct_name: str, member: str) -> int:
        found = btf.member(struct_name, member)
        if found is None:
            raise OSError(0, f"{path}: struct {struct_name} has no member {member}")
        return int(found.offset)

    def bit(member: str) -> int:
        found = btf.member("sk_buff", member)
        if found is None or found.bit_offset is None:
            raise OSError(0, f"{path}: sk_buff.{member} is not a bitfield")
        return int(found.bit_offset)

    from vnetrx.errors import StructNotFound

    try:
        frag_type = btf.struct("skb_frag")
        frag_members = {m.name: m.offset for m in frag_type.members}
    except StructNotFound:  # up to 6.4 skb_frag_t is struct bio_vec (bv_page, bv_len, ...)
        frag_type = btf.struct("bio_vec")
        frag_members = {m.name.removeprefix("bv_"): m.offset for m in frag_type.members}
    frags = btf.member("skb_shared_info", "frags")
    assert frags is not None
    count = btf.array_length(frags.type_id) if frags.type_id is not None else None
    return SkbOffsets(
        skb_size=btf.struct("sk_buff").size, shinfo_size=btf.struct("skb_shared_info").size,
        dev=off("sk_buff", "dev"), name=off("net_device", "name"), next=off("sk_buff", "next"),
        len=off("sk_buff", "len"), data_len=off("sk_buff", "data_len"),
        truesize=off("sk_buff", "truesize"), head=off("sk_buff", "head"),
        data=off("sk_buff", "data"), tail=off("sk_buff", "tail"), end=off("sk_buff", "end"),
        csum_start=off("sk_buff", "csum_start"), csum_offset=off("sk_buff", "csum_offset"),
        network_header=off("sk_buff", "network_header"),
        transport_header=off("sk_buff", "transport_header"),
        mac_header=off("sk_buff", "mac_header"), ip_summed_bit=bit("ip_summed"),
        head_frag_bit=bit("head_frag"), pp_recycle_bit=bit("pp_recycle"),
        nr_frags=off("skb_shared_info", "nr_frags"), gso_size=off("skb_shared_info", "gso_size"),
        gso_segs=off("skb_shared_info", "gso_segs"), gso_type=off("skb_shared_info", "gso_type"),
        frag_list=off("skb_shared_info", "frag_list"), frags=frags.offset,
        frag_size=frag_type.size, frag_len=frag_members["len"],
        frag_offset=frag_members["offset"], max_skb_frags=count or 17,
        hash=off("sk_buff", "hash"), napi_dev=off("napi_struct", "dev"),
    )


# --- a tiny assembler with labels ------------------------------------------------------------


class _Asm:
    def __init__(self) -> None:
        self.code: list[tuple[str, tuple[int, int, int, int, int], str | None]] = []
        self.labels: dict[str, int] = {}

    def _slot(self) -> int:
        return sum(2 if op[0] == "imm64" else 1 for op in self.code)

    def label(self, name: str) -> None:
        self.labels[name] = self._slot()

    def ins(self, code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> None:
        self.code.append(("ins", (code, dst, src, off, imm), None))

    def jump(self, code: int, dst: int, target: str, src: int = 0, imm: int = 0) -> None:
        self.code.append(("jump", (code, dst, src, 0, imm), target))

    def imm64(self, dst: int, value: int, src: int = 0) -> None:
        self.code.append(("imm64", (LD_IMM64, dst, src, 0, value), None))

    def call(self, helper: int) -> None:
        self.ins(CALL, imm=helper)

    def assemble(self) -> bytes:
        out = b""
        slot = 0
        for kind, (code, dst, src, off, imm), target in self.code:
            if kind == "imm64":
                low, high = imm & 0xFFFFFFFF, (imm >> 32) & 0xFFFFFFFF
                out += _insn(code, dst, src, 0, struct.unpack("<i", struct.pack("<I", low))[0])
                out += _insn(0, 0, 0, 0, struct.unpack("<i", struct.pack("<I", high))[0])
                slot += 2
                continue
            if kind == "jump":
                assert target is not None
                off = self.labels[target] - slot - 1
            out += _insn(code, dst, src, off, imm)
            slot += 1
        return out


def _lookup(asm: _Asm, map_fd: int, into: int, out: str) -> None:
    """``into`` = &map[0] (a PERCPU_ARRAY or ARRAY), or jump to ``out``."""
    asm.ins(ST_W, dst=10, off=-4, imm=0)
    asm.imm64(1, map_fd, src=BPF_PSEUDO_MAP_FD)
    asm.ins(MOV64_X, dst=2, src=10)
    asm.ins(ADD64_K, dst=2, imm=-4)
    asm.call(MAP_LOOKUP_ELEM)
    asm.jump(JEQ_K, 0, out, imm=0)
    asm.ins(MOV64_X, dst=into, src=0)


def _read(asm: _Asm, at: int, size: int, src_reg: int, src_off: int = 0) -> None:
    """bpf_probe_read_kernel(r7 + at, size, src_reg + src_off)."""
    asm.ins(MOV64_X, dst=1, src=7)
    asm.ins(ADD64_K, dst=1, imm=at)
    asm.ins(MOV64_K, dst=2, imm=size)
    asm.ins(MOV64_X, dst=3, src=src_reg)
    if src_off:
        asm.ins(ADD64_K, dst=3, imm=src_off)
    asm.call(PROBE_READ_KERNEL)


def _stamp(asm: _Asm, kind: int, what_reg: int) -> None:
    """The record header: kind, ktime, jiffies, pid_tgid, ``what_reg`` (skb or verdict)."""
    asm.ins(ST_DW, dst=7, off=0, imm=kind)
    for at, helper in ((8, KTIME_GET_NS), (16, JIFFIES64), (24, GET_CURRENT_PID_TGID),
                       (40, GET_SMP_PROCESSOR_ID)):
        asm.call(helper)
        asm.ins(STX_DW, dst=7, src=0, off=at)
    asm.ins(STX_DW, dst=7, src=what_reg, off=32)


def _body(asm: _Asm, o: SkbOffsets, skb_reg: int) -> None:
    """Copy the sk_buff at ``skb_reg``, its skb_shared_info and the bytes at data."""
    _read(asm, o.skb_at, o.skb_size, skb_reg)
    asm.ins(LDX_DW, dst=3, src=7, off=o.skb_at + o.head)
    asm.ins(LDX_W, dst=1, src=7, off=o.skb_at + o.end)
    asm.ins(ADD64_X, dst=3, src=1)
    asm.ins(MOV64_X, dst=1, src=7)
    asm.ins(ADD64_K, dst=1, imm=o.shinfo_at)
    asm.ins(MOV64_K, dst=2, imm=o.shinfo_size)
    asm.call(PROBE_READ_KERNEL)
    asm.ins(LDX_DW, dst=3, src=7, off=o.skb_at + o.data)
    asm.ins(MOV64_X, dst=1, src=7)
    asm.ins(ADD64_K, dst=1, imm=o.packet_at)
    asm.ins(MOV64_K, dst=2, imm=PACKET_BYTES)
    asm.call(PROBE_READ_KERNEL)
    # the MAC header: head + mac_header (a read that faults leaves zeros)
    asm.ins(LDX_DW, dst=3, src=7, off=o.skb_at + o.head)
    asm.ins(LDX_H, dst=1, src=7, off=o.skb_at + o.mac_header)
    asm.ins(ADD64_X, dst=3, src=1)
    asm.ins(MOV64_X, dst=1, src=7)
    asm.ins(ADD64_K, dst=1, imm=o.mac_at)
    asm.ins(MOV64_K, dst=2, imm=MAC_BYTES)
    asm.call(PROBE_READ_KERNEL)


def _push(asm: _Asm, queue_fd: int, lost_fd: int | None = None) -> None:
    """Push the record; a refused push (the queue is full) adds one to ``lost_fd``'s counter."""
    asm.imm64(1, queue_fd, src=BPF_PSEUDO_MAP_FD)
    asm.ins(MOV64_X, dst=2, src=7)
    asm.ins(MOV64_K, dst=3, imm=0)
    asm.call(MAP_PUSH_ELEM)
    if lost_fd is None:
        return
    label = f"pushed{len(asm.code)}"
    asm.jump(JEQ_K, 0, label, imm=0)
    _lookup(asm, lost_fd, 1, label)
    asm.ins(LDX_DW, dst=2, src=1, off=0)
    asm.ins(ADD64_K, dst=2, imm=1)
    asm.ins(STX_DW, dst=1, src=2, off=0)
    asm.label(label)


def _name_words(name: str) -> tuple[int, int]:
    raw = name.encode().ljust(16, b"\0")
    if len(raw) > 16:
        raise ValueError(f"{name!r}: a device name has at most 15 bytes")
    low, high = struct.unpack("<QQ", raw)
    return low, high


def skb_program(o: SkbOffsets, kind: int, device: str, queue_fd: int, scratch_fd: int,
                flag_fd: int | None, members: int = 0, lost_fd: int | None = None) -> bytes:
    """An skb tracepoint's program: args[0] is the skb. ``flag_fd`` (entries): the per-CPU
    flag the exit program reads; ``members``: how many frag_list members to walk;
    ``lost_fd``: the counter of pushes the full queue refused."""
    asm = _Asm()
    asm.ins(LDX_DW, dst=6, src=1, off=0)  # r6 = skb
    if flag_fd is not None:
        _lookup(asm, flag_fd, 9, "out")
        asm.ins(ST_DW, dst=9, off=0, imm=0)
    _lookup(asm, scratch_fd, 7, "out")
    # the device name: skb->dev->name
    asm.ins(MOV64_X, dst=1, src=7)
    asm.ins(ADD64_K, dst=1, imm=o.skb_at + o.dev)
    asm.ins(MOV64_K, dst=2, imm=8)
    asm.ins(MOV64_X, dst=3, src=6)
    asm.ins(ADD64_K, dst=3, imm=o.dev)
    asm.call(PROBE_READ_KERNEL)
    asm.ins(LDX_DW, dst=3, src=7, off=o.skb_at + o.dev)
    asm.jump(JEQ_K, 3, "out", imm=0)
    _read(asm, NAME_AT, 16, 3, o.name)
    low, high = _name_words(device)
    for at, word in ((NAME_AT, low), (NAME_AT + 8, high)):
        asm.ins(LDX_DW, dst=1, src=7, off=at)
        asm.imm64(2, word)
        asm.jump(JNE_X, 1, "out", src=2)
    if flag_fd is not None:
        asm.ins(ST_DW, dst=9, off=0, imm=1)
    _stamp(asm, kind, 6)
    _body(asm, o, 6)
    _push(asm, queue_fd, lost_fd)
    if members:
        asm.ins(LDX_DW, dst=8, src=7, off=o.shinfo_at + o.frag_list)
        for index in range(members):
            asm.jump(JEQ_K, 8, "out", imm=0)
            _stamp(asm, MEMBER, 8)
            asm.ins(ST_DW, dst=7, off=40, imm=index)
            _body(asm, o, 8)
            _push(asm, queue_fd, lost_fd)
            asm.ins(LDX_DW, dst=8, src=7, off=o.skb_at + o.next)
    asm.label("out")
    asm.ins(MOV64_K, dst=0, imm=0)
    asm.ins(EXIT)
    return asm.assemble()


def exit_program(queue_fd: int, scratch_fd: int, flag_fd: int,
                 lost_fd: int | None = None) -> bytes:
    """napi_gro_*_exit(int ret): record ret when the entry just before was ours."""
    asm = _Asm()
    asm.ins(LDX_DW, dst=6, src=1, off=0)  # r6 = ret
    _lookup(asm, flag_fd, 9, "out")
    asm.ins(LDX_DW, dst=1, src=9, off=0)
    asm.jump(JEQ_K, 1, "out", imm=0)
    asm.ins(ST_DW, dst=9, off=0, imm=0)
    _lookup(asm, scratch_fd, 7, "out")
    _stamp(asm, EXIT_VERDICT, 6)
    _push(asm, queue_fd, lost_fd)
    asm.label("out")
    asm.ins(MOV64_K, dst=0, imm=0)
    asm.ins(EXIT)
    return asm.assemble()


def poll_program(o: SkbOffsets, device: str, queue_fd: int, scratch_fd: int,
                 lost_fd: int | None = None) -> bytes:
    """napi_poll(struct napi_struct *napi, int work, int budget), the watched device's polls
    only: the napi address in the header's skb word, work and budget (as u64, sign-extended by
    the raw tracepoint's args) at the record's first two body words."""
    asm = _Asm()
    asm.ins(LDX_DW, dst=6, src=1, off=0)  # r6 = napi
    asm.ins(LDX_DW, dst=8, src=1, off=8)  # r8 = work
    asm.ins(LDX_DW, dst=9, src=1, off=16)  # r9 = budget
    _lookup(asm, scratch_fd, 7, "out")
    # napi->dev (NULL for the backlog's napi), then dev->name
    asm.ins(MOV64_X, dst=1, src=7)
    asm.ins(ADD64_K, dst=1, imm=NAME_AT)
    asm.ins(MOV64_K, dst=2, imm=8)
    asm.ins(MOV64_X, dst=3, src=6)
    asm.ins(ADD64_K, dst=3, imm=o.napi_dev)
    asm.call(PROBE_READ_KERNEL)
    asm.ins(LDX_DW, dst=3, src=7, off=NAME_AT)
    asm.jump(JEQ_K, 3, "out", imm=0)
    _read(asm, NAME_AT, 16, 3, o.name)
    low, high = _name_words(device)
    for at, word in ((NAME_AT, low), (NAME_AT + 8, high)):
        asm.ins(LDX_DW, dst=1, src=7, off=at)
        asm.imm64(2, word)
        asm.jump(JNE_X, 1, "out", src=2)
    _stamp(asm, POLL, 6)
    asm.ins(STX_DW, dst=7, src=8, off=o.skb_at)
    asm.ins(STX_DW, dst=7, src=9, off=o.skb_at + 8)
    _push(asm, queue_fd, lost_fd)
    asm.label("out")
    asm.ins(MOV64_K, dst=0, imm=0)
    asm.ins(EXIT)
    return asm.assemble()


# --- syscalls -----------------------------------------------------------------------------


def _map_create(kind: int, key_size: int, value_size: int, entries: int, name: bytes) -> int:
    attr = struct.pack("<IIIIIII16s", kind, key_size, value_size, entries, 0, 0, 0, name)
    fd, _ = _bpf(BPF_MAP_CREATE, attr + bytes(128 - len(attr)))
    return fd


def _prog_load(insns: bytes, log_level: int = 0) -> int:
    """Load quietly; on a refusal, load again with the verifier's log for the message."""
    code = ctypes.create_string_buffer(insns, len(insns))
    license_ = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(1 << 20)
    attr = struct.pack("<IIQQIIQII16s", BPF_PROG_TYPE_RAW_TRACEPOINT, len(insns) // 8,
                       ctypes.addressof(code), ctypes.addressof(license_), log_level,
                       len(log) if log_level else 0, ctypes.addressof(log) if log_level else 0,
                       0, 0, PROG_NAME)
    try:
        fd, _ = _bpf(BPF_PROG_LOAD, attr + bytes(160 - len(attr)))
    except OSError as exc:
        if not log_level:
            return _prog_load(insns, 1)
        text = log.value.decode(errors="replace").strip().splitlines()[-6:]
        raise OSError(exc.errno, f"BPF_PROG_LOAD: {exc.strerror}: {' | '.join(text)}") from None
    return fd


def _attach(tracepoint: str, prog_fd: int) -> int:
    name = ctypes.create_string_buffer(tracepoint.encode())
    attr = struct.pack("<QI", ctypes.addressof(name), prog_fd)
    fd, _ = _bpf(BPF_RAW_TRACEPOINT_OPEN, attr + bytes(16 - len(attr) % 16))
    return fd


class GroProbe:
    """Context manager: the programs attached, recording ``device``'s skbs around GRO."""

    def __init__(self, device: str, offsets: SkbOffsets | None = None,
                 polls: bool = False) -> None:
        self.device = device
        self.offsets = offsets or btf_offsets()
        self.polls = polls  # also record the device's napi_poll events
        self.fds: list[int] = []
        self.lost_map: int | None = None

    def __enter__(self) -> GroProbe:
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _keep(self, fd: int) -> int:
        self.fds.append(fd)
        return fd

    def _setup(self) -> None:
        o = self.offsets
        size = o.record_size
        self.queue = self._keep(_map_create(BPF_MAP_TYPE_QUEUE, 0, size, QUEUE_ENTRIES,
                                            b"vnetrx_groq"))
        scratch = self._keep(_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, 4, size, 1, b"vnetrx_gros"))
        flag = self._keep(_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 1, b"vnetrx_grof"))
        lost = self._keep(_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 1, b"vnetrx_grol"))
        self.lost_map = lost
        programs = {
            "napi_gro_receive_entry": skb_program(o, ENTRY, self.device, self.queue, scratch,
                                                  flag, lost_fd=lost),
            "napi_gro_frags_entry": skb_program(o, FRAGS_ENTRY, self.device, self.queue,
                                                scratch, flag, lost_fd=lost),
            "napi_gro_receive_exit": exit_program(self.queue, scratch, flag, lost),
            "napi_gro_frags_exit": exit_program(self.queue, scratch, flag, lost),
            "netif_receive_skb": skb_program(o, DELIVERED, self.device, self.queue, scratch,
                                             None, MAX_MEMBERS, lost),
        }
        if self.polls:
            programs["napi_poll"] = poll_program(o, self.device, self.queue, scratch, lost)
        for tracepoint, insns in programs.items():
            prog = self._keep(_prog_load(insns))
            self._keep(_attach(tracepoint, prog))

    def drain(self) -> list[bytes]:
        """Pop every record queued so far, oldest first."""
        size = self.offsets.record_size
        buf = ctypes.create_string_buffer(size)
        out: list[bytes] = []
        while True:
            attr = struct.pack("<IIQQQ", self.queue, 0, 0, ctypes.addressof(buf), 0)
            try:
                _bpf(BPF_MAP_LOOKUP_AND_DELETE_ELEM, attr)
            except OSError:  # ENOENT: empty
                return out
            out.append(buf.raw)

    def lost(self) -> int:
        """Records the full queue refused so far, summed over the CPUs."""
        if self.lost_map is None:
            return 0
        cpus = os.cpu_count() or 1
        possible = _possible_cpus() or cpus
        buf = ctypes.create_string_buffer(8 * possible)
        key = ctypes.c_uint32(0)
        attr = struct.pack("<IIQQQ", self.lost_map, 0, ctypes.addressof(key),
                           ctypes.addressof(buf), 0)
        _bpf(BPF_MAP_LOOKUP_ELEM, attr)
        return sum(struct.unpack(f"<{possible}Q", buf.raw))

    def close(self) -> None:
        """Detach and free everything (attachments first). Safe to call twice."""
        while self.fds:
            fd = self.fds.pop()
            with contextlib.suppress(OSError):
                os.close(fd)


def _possible_cpus() -> int | None:
    """How many values a per-CPU map holds: /sys/devices/system/cpu/possible ("0-1")."""
    try:
        text = Path("/sys/devices/system/cpu/possible").read_text().strip()
    except OSError:
        return None
    last = 0
    for part in text.split(","):
        last = max(last, int(part.split("-")[-1]))
    return last + 1


def decode(record: bytes, o: SkbOffsets) -> dict[str, object]:
    """One record as a dict of the fields the oracle keeps (raw addresses included)."""
    kind, ktime, jiffies, pid_tgid, what, cpu = struct.unpack_from("<QQQQQQ", record, 0)
    out: dict[str, object] = {"kind": KIND_NAMES.get(kind, str(kind)), "ktime": ktime,
                              "jiffies": jiffies, "tid": pid_tgid & 0xFFFFFFFF}
    if kind == EXIT_VERDICT:
        out["ret"] = struct.unpack("<q", struct.pack("<Q", what))[0]
        out["cpu"] = cpu
        return out
    if kind == POLL:
        work, budget = struct.unpack_from("<qq", record, o.skb_at)
        out.update({"cpu": cpu, "napi": what, "work": work, "budget": budget})
        return out
    out["cpu" if kind != MEMBER else "index"] = cpu
    out["skb"] = what
    skb = record[o.skb_at: o.skb_at + o.skb_size]
    sh = record[o.shinfo_at: o.shinfo_at + o.shinfo_size]

    def u(buf: bytes, at: int, size: int) -> int:
        return int.from_bytes(buf[at: at + size], "little")

    def bits(at_bit: int, width: int) -> int:
        return (skb[at_bit // 8] >> (at_bit % 8)) & ((1 << width) - 1)

    head, data = u(skb, o.head, 8), u(skb, o.data, 8)
    length, data_len = u(skb, o.len, 4), u(skb, o.data_len, 4)
    nr_frags = u(sh, o.nr_frags, 1)
    frags = []
    for i in range(min(nr_frags, o.max_skb_frags)):
        at = o.frags + i * o.frag_size
        frags.append({"len": u(sh, at + o.frag_len, 4), "offset": u(sh, at + o.frag_offset, 4)})
    out.update({
        "len": length, "data_len": data_len, "headlen": length - data_len,
        "truesize": u(skb, o.truesize, 4), "data": data - head, "tail": u(skb, o.tail, 4),
        "end": u(skb, o.end, 4), "head_frag": bits(o.head_frag_bit, 1),
        "pp_recycle": bits(o.pp_recycle_bit, 1), "ip_summed": bits(o.ip_summed_bit, 2),
        "csum_start": u(skb, o.csum_start, 2), "csum_offset": u(skb, o.csum_offset, 2),
        "network_header": u(skb, o.network_header, 2),
        "transport_header": u(skb, o.transport_header, 2),
        "mac_header": u(skb, o.mac_header, 2),
        "nr_frags": nr_frags, "frags": frags, "gso_size": u(sh, o.gso_size, 2),
        "gso_segs": u(sh, o.gso_segs, 2), "gso_type": u(sh, o.gso_type, 4),
        "frag_list": u(sh, o.frag_list, 8) != 0, "next": u(skb, o.next, 8),
        "packet": record[o.packet_at: o.packet_at + PACKET_BYTES].hex(),
        "mac": record[o.mac_at: o.mac_at + 14].hex(), "hash": u(skb, o.hash, 4),
    })
    return out
