"""A tiny XDP program, loaded with bpf(2) and attached to a device with rtnetlink (root only).

The program is built here, instruction by instruction (no compiler): ``r0 = ACTION; exit``,
or, for a redirect, ``r1 = ifindex; r2 = 0; call bpf_redirect; exit`` (bpf_redirect returns
XDP_REDIRECT). It is attached in native (driver) mode with RTM_SETLINK / IFLA_XDP, as
``ip link set dev D xdpdrv fd N`` does. The program lives as long as its fd or the device
holding it: vnetrx attaches it to a tap in a private namespace, so it goes with the tap.

ABI: include/uapi/linux/bpf.h (struct bpf_insn, union bpf_attr for BPF_PROG_LOAD),
include/uapi/linux/if_link.h (IFLA_XDP_*), include/uapi/linux/rtnetlink.h.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct

from vnetrx.live.tracefs import libc

SYS_BPF = {"x86_64": 321, "aarch64": 280}
BPF_PROG_LOAD = 5
BPF_PROG_TYPE_XDP = 6
# instruction classes and codes
BPF_ALU64_MOV_K = 0xB7  # BPF_ALU64 | BPF_MOV | BPF_K
BPF_JMP_CALL = 0x85  # BPF_JMP | BPF_CALL
BPF_JMP_EXIT = 0x95  # BPF_JMP | BPF_EXIT
BPF_FUNC_REDIRECT = 23  # bpf_redirect(ifindex, flags)
BPF_FUNC_XDP_ADJUST_HEAD = 44  # bpf_xdp_adjust_head(xdp_md, delta)
BPF_FUNC_XDP_ADJUST_TAIL = 65  # bpf_xdp_adjust_tail(xdp_md, delta)
BPF_ALU64_MOV_X = 0xBF  # BPF_ALU64 | BPF_MOV | BPF_X
# rtnetlink
RTM_SETLINK = 19
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLMSG_ERROR = 0x2
NLA_F_NESTED = 0x8000
IFLA_XDP = 43
IFLA_XDP_FD = 1
IFLA_XDP_FLAGS = 3
XDP_FLAGS_DRV_MODE = 1 << 2
NLMSGERR_ATTR_MSG = 1  # extack text
NETLINK_EXT_ACK = 11


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def xdp_program(action: int, redirect_ifindex: int | None = None, adjust_head: int = 0,
                adjust_tail: int = 0) -> bytes:
    """The instructions: call bpf_xdp_adjust_head(ctx, adjust_head) and
    bpf_xdp_adjust_tail(ctx, adjust_tail) when asked (their results ignored), then return
    ``action``, or redirect to ``redirect_ifindex``."""
    code = b""
    if adjust_head or adjust_tail:
        code += _insn(BPF_ALU64_MOV_X, dst=6, src=1)  # r6 = ctx (r1-r5 die in a call)
    for helper, offset in ((BPF_FUNC_XDP_ADJUST_HEAD, adjust_head),
                           (BPF_FUNC_XDP_ADJUST_TAIL, adjust_tail)):
        if offset:
            code += (_insn(BPF_ALU64_MOV_X, dst=1, src=6)
                     + _insn(BPF_ALU64_MOV_K, dst=2, imm=offset)
                     + _insn(BPF_JMP_CALL, imm=helper))
    if redirect_ifindex is not None:
        return (code + _insn(BPF_ALU64_MOV_K, dst=1, imm=redirect_ifindex)
                + _insn(BPF_ALU64_MOV_K, dst=2, imm=0)
                + _insn(BPF_JMP_CALL, imm=BPF_FUNC_REDIRECT)
                + _insn(BPF_JMP_EXIT))
    return code + _insn(BPF_ALU64_MOV_K, dst=0, imm=action) + _insn(BPF_JMP_EXIT)


def load_xdp(insns: bytes) -> int:
    """BPF_PROG_LOAD: the program's fd (OSError with the verifier's log on failure)."""
    code = ctypes.create_string_buffer(insns, len(insns))
    license_ = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(4096)
    # prog_type, insn_cnt, insns, license, log_level, log_size, log_buf, kern_version,
    # prog_flags, prog_name[16]
    attr = struct.pack(
        "<IIQQIIQII16s", BPF_PROG_TYPE_XDP, len(insns) // 8, ctypes.addressof(code),
        ctypes.addressof(license_), 1, len(log), ctypes.addressof(log), 0, 0, PROG_NAME)
    try:
        fd, _ = _bpf(BPF_PROG_LOAD, attr)
    except OSError as exc:
        text = log.value.decode(errors="replace").strip()
        raise OSError(exc.errno, f"BPF_PROG_LOAD: {exc.strerror}"
                      + (f": {text}" if text else "")) from None
    return fd


def attach_xdp(ifindex: int, prog_fd: int) -> None:
    """RTM_SETLINK with IFLA_XDP {FD, FLAGS = XDP_FLAGS_DRV_MODE}; ``prog_fd`` -1 detaches."""
    fd_attr = struct.pack("<HHi", 8, IFLA_XDP_FD, prog_fd)
    flags_attr = struct.pack("<HHI", 8, IFLA_XDP_FLAGS, XDP_FLAGS_DRV_MODE)
    nested = struct.pack("<HH", 4 + len(fd_attr) + len(flags_attr), IFLA_XDP | NLA_F_NESTED)
    body = struct.pack("<BxHiII", socket.AF_UNSPEC, 0, ifindex, 0, 0) + nested + fd_attr + \
        flags_attr
    header = struct.pack("<IHHII", 16 + len(body), RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.setsockopt(270, NETLINK_EXT_ACK, 1)  # SOL_NETLINK: the kernel's message on error
        sock.bind((0, 0))
        sock.sendall(header + body)
        reply = sock.recv(65536)
    _length, kind = struct.unpack_from("<IH", reply)
    if kind != NLMSG_ERROR:
        raise OSError(0, f"RTM_SETLINK: unexpected netlink reply type {kind}")
    (error,) = struct.unpack_from("<i", reply, 16)
    if error:
        message = _extack(reply)
        raise OSError(-error, f"attaching XDP: {os.strerror(-error)}"
                      + (f": {message}" if message else ""))


def _extack(reply: bytes) -> str:
    """NLMSGERR_ATTR_MSG from the TLVs after the echoed request header."""
    length = struct.unpack_from("<I", reply)[0]
    offset = 16 + 4 + 16  # nlmsghdr, error, the echoed nlmsghdr (capped: NLM_F_CAPPED)
    while offset + 4 <= length:
        size, kind = struct.unpack_from("<HH", reply, offset)
        if size < 4:
            break
        if kind & 0x3FFF == NLMSGERR_ATTR_MSG:
            return reply[offset + 4: offset + size].split(b"\0")[0].decode(errors="replace")
        offset += (size + 3) & ~3
    return ""


BPF_PROG_GET_NEXT_ID = 11
BPF_PROG_GET_FD_BY_ID = 13
BPF_OBJ_GET_INFO_BY_FD = 15
PROG_NAME = b"vnetrx_xdp"


def _bpf(cmd: int, attr: bytes) -> tuple[int, bytes]:
    number = SYS_BPF.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"bpf(2): syscall number unknown on {os.uname().machine}")
    buf = ctypes.create_string_buffer(attr, len(attr))
    c_lib = libc()
    c_lib.syscall.restype = ctypes.c_long
    ret = int(c_lib.syscall(ctypes.c_long(number), ctypes.c_int(cmd), buf,
                            ctypes.c_uint(len(attr))))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret, buf.raw


def loaded_vnetrx_programs(name: bytes = PROG_NAME) -> list[int]:
    """The ids of loaded BPF programs named ``name`` (default ``vnetrx_xdp``; the GRO oracle's
    are ``vnetrx_gro``) (root; a freed program can take a moment to disappear: its release is
    RCU-deferred)."""
    ids: list[int] = []
    start = 0
    while True:
        try:
            _, raw = _bpf(BPF_PROG_GET_NEXT_ID, struct.pack("<III", start, 0, 0))
        except OSError:  # ENOENT: no more
            return ids
        start = struct.unpack_from("<I", raw, 4)[0]
        try:
            fd, _ = _bpf(BPF_PROG_GET_FD_BY_ID, struct.pack("<III", start, 0, 0))
        except OSError:  # gone meanwhile
            continue
        try:
            info = ctypes.create_string_buffer(128)
            _bpf(BPF_OBJ_GET_INFO_BY_FD,
                 struct.pack("<IIQ", fd, len(info), ctypes.addressof(info)))
            if info.raw[64:80].split(b"\0")[0] == name:
                ids.append(start)
        except OSError:
            pass
        finally:
            os.close(fd)
