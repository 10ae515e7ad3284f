"""Container formats that carry BTF: a vmlinux or module ELF file (its ``.BTF`` section; a
module may be xz-, gzip- or zstd-compressed) and an x86 bzImage (Documentation/arch/x86/boot.rst: ``payload_offset``/``payload_length``), whose
payload is the compressed vmlinux ELF."""

from __future__ import annotations

import struct
from collections.abc import Callable

from vnetrx.errors import VnetrxError

_XZ = b"\xfd7zXZ\x00"
_GZIP = b"\x1f\x8b\x08"
_ZSTD = b"\x28\xb5\x2f\xfd"


def bzimage_payload(image: bytes, headed: bool = False) -> bytes:
    """The decompressed vmlinux ELF inside a bzImage (xz, gzip or zstd);
    ``headed``: as far as its ELF header says (see ``decompress``)."""
    if len(image) < 0x250 or image[0x202:0x206] != b"HdrS":
        raise VnetrxError("not a bzImage (no HdrS signature)")
    setup_sects = image[0x1F1] or 4
    offset, length = struct.unpack_from("<II", image, 0x248)
    start = (setup_sects + 1) * 512 + offset
    payload = image[start : start + length]
    if payload.startswith(_ZSTD):
        # The payload ends with the 4-byte decompressed size (arch/x86/boot/compressed/Makefile,
        # cmd_zstd22_with_size), which would read as a broken frame.
        payload = payload[:-4]
    plain = decompress(payload, "the kernel payload", headed)
    if plain is None:
        raise VnetrxError(f"unknown kernel payload compression (magic {payload[:4].hex()})")
    return plain


MAX_PLAIN = 1 << 30  # bytes a compressed module or kernel payload may decompress to
STEP = 1 << 20


def decompress(data: bytes, what: str, headed: bool = False) -> bytes | None:
    """xz, gzip or zstd (the zstandard package) data decompressed; None if it is none of them.
    In steps of a MiB: nothing may decompress to more than MAX_PLAIN (a gzip bomb stops
    there). ``headed`` (a file read for its BTF): what does not begin as an ELF file or BTF is
    refused after the first step, and nothing past the end its header gives is decompressed."""
    import lzma
    import zlib

    try:
        if data.startswith(_XZ):
            xz = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
            return _bounded(lambda chunk: xz.decompress(chunk, STEP), data,
                            lambda: xz.eof or xz.needs_input, what, headed)
        if data.startswith(_GZIP):
            gz = zlib.decompressobj(wbits=31)

            def step(chunk: bytes) -> bytes:
                return gz.decompress(chunk or gz.unconsumed_tail, STEP)

            return _bounded(step, data, lambda: gz.eof or not gz.unconsumed_tail, what, headed)
    except (lzma.LZMAError, OSError, EOFError, zlib.error) as exc:
        raise VnetrxError(f"cannot decompress {what}: {exc}") from None
    if not data.startswith(_ZSTD):
        return None
    return _zstd(data, what, headed)


def _bounded(step: Callable[[bytes], bytes], data: bytes, done: Callable[[], bool],
             what: str, headed: bool) -> bytes:
    out = bytearray(step(data))
    end = _plain_end(bytes(out[:0x40]), what) if headed else MAX_PLAIN + 1
    while not done() and len(out) < end:
        out += step(b"")
    if len(out) > MAX_PLAIN:
        raise VnetrxError(f"cannot decompress {what}: more than {MAX_PLAIN >> 20} MiB")
    return bytes(out[:end])


def _plain_end(head: bytes, what: str) -> int:
    """Where the decompressed file ends, as its header says: an ELF file's section header
    table (last in a vmlinux or module; a section past it is refused by ``elf_section``), or
    a BTF's string section. Nothing past it is decompressed (a gzip bomb behind a header)."""
    if head.startswith(b"\x7fELF") and len(head) >= 0x40 and head[4:6] == b"\x02\x01":
        shoff = struct.unpack_from("<Q", head, 0x28)[0]
        shentsize, shnum = struct.unpack_from("<HH", head, 0x3A)
        end: int = shoff + shentsize * shnum
        if not shoff or not shnum:
            raise VnetrxError(f"cannot decompress {what}: an ELF file without section headers")
    elif head.startswith(b"\x9f\xeb") and len(head) >= 24:
        hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<5I", head, 4)
        end = hdr_len + max(type_off + type_len, str_off + str_len)
    else:
        raise VnetrxError(f"cannot decompress {what}: it holds neither a 64-bit little-endian "
                          f"ELF file nor BTF (it begins {head[:8].hex() or 'empty'})")
    if end > MAX_PLAIN:
        raise VnetrxError(f"cannot decompress {what}: its header gives a {end}-byte file, more "
                          f"than {MAX_PLAIN >> 20} MiB")
    return end


ZSTD_IN = 256  # compressed bytes a step feeds: even an RLE block of zeros makes a few MiB


def _zstd(data: bytes, what: str, headed: bool) -> bytes:
    """Every zstd frame in ``data``, as zstd -d reads them (no frame needs to state its size;
    each must end: a cut frame is an error), fed ZSTD_IN bytes at a time so that the output
    grows in bounded steps: MAX_PLAIN and a header's end stop it as they stop xz and gzip."""
    import zstandard

    out = bytearray()
    end = MAX_PLAIN + 1
    rest = data
    try:
        while rest and len(out) < end:
            frame = zstandard.ZstdDecompressor().decompressobj()
            pos = 0
            while not frame.eof and pos < len(rest) and len(out) < end:
                out += frame.decompress(rest[pos:pos + ZSTD_IN])
                pos += ZSTD_IN
                if headed and end > MAX_PLAIN and len(out) >= 0x40:
                    end = _plain_end(bytes(out[:0x40]), what)
            if len(out) >= end:
                break
            if not frame.eof:
                raise zstandard.ZstdError("truncated input: the last frame does not end")
            rest = frame.unused_data + rest[pos:]
    except zstandard.ZstdError as exc:
        raise VnetrxError(f"cannot decompress {what} (zstd): {exc}") from None
    if len(out) > MAX_PLAIN:
        raise VnetrxError(f"cannot decompress {what}: more than {MAX_PLAIN >> 20} MiB")
    if headed and end > MAX_PLAIN:
        end = _plain_end(bytes(out[:0x40]), what)
    return bytes(out[:end])


def elf_section(elf: bytes, wanted: str) -> bytes | None:
    """The bytes of a named section of a 64-bit little-endian ELF file."""
    if elf[:4] != b"\x7fELF" or len(elf) < 0x40 or elf[4] != 2 or elf[5] != 1:
        raise VnetrxError("not a 64-bit little-endian ELF file")
    try:
        return _elf_section(elf, wanted)
    except struct.error:
        raise VnetrxError("truncated ELF file: its section headers run past the end") from None


def _elf_section(elf: bytes, wanted: str) -> bytes | None:
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def header(i: int) -> tuple[int, int, int]:
        base = shoff + i * shentsize
        name = struct.unpack_from("<I", elf, base)[0]
        offset, size = struct.unpack_from("<QQ", elf, base + 0x18)
        return name, offset, size

    _, str_off, str_size = header(shstrndx)
    names = elf[str_off : str_off + str_size]
    for i in range(shnum):
        name_off, offset, size = header(i)
        end = names.find(b"\0", name_off)
        if names[name_off:end].decode(errors="replace") == wanted:
            if offset + size > len(elf):
                raise VnetrxError(f"truncated ELF file: section {wanted} (bytes {offset}.."
                                  f"{offset + size}) runs past the end ({len(elf)} bytes)")
            return elf[offset : offset + size]
    return None


def read_btf_bytes(path: str) -> tuple[bytes, str]:
    """The BTF in a file, and how to name it in messages: a raw BTF blob, the .BTF section of
    an ELF file (vmlinux, a module .ko) or of the vmlinux inside a bzImage."""
    from vnetrx.errors import InputError, LayoutError
    from vnetrx.files import MiB, read_bounded

    def check(head: bytes) -> None:
        """What the file is, from its first bytes, before the rest is read."""
        if len(head) < 8 or head.startswith((b"\x9f\xeb", b"\x7fELF", _XZ, _GZIP, _ZSTD)):
            return
        if head[0x202:0x206] == b"HdrS":
            return
        from vnetrx.layouts.btf import Btf

        Btf(head, path)  # raises the message reading it all would have: "not BTF at byte 0"

    try:
        # a vmlinux with debug info is < 1 GiB
        data = read_bounded(path, 2048 * MiB, "--btf", check)
    except InputError as exc:
        raise LayoutError(exc.message.replace("cannot read ", "cannot read BTF from ", 1),
                          hint=exc.hint) from None
    try:
        plain = decompress(data, path, headed=True)  # a compressed module: virtio_net.ko.xz
    except VnetrxError as exc:
        raise LayoutError(exc.message) from None
    data = data if plain is None else plain
    if data[:4] == b"\x7fELF":
        where = "ELF"
    elif data[0x202:0x206] == b"HdrS":
        try:
            data, where = bzimage_payload(data, headed=True), "the vmlinux in the bzImage"
        except VnetrxError as exc:
            raise LayoutError(f"{path}: {exc.message}") from None
    else:
        return data, path
    try:
        section = elf_section(data, ".BTF")
    except VnetrxError as exc:
        raise LayoutError(f"{path}: {exc.message}") from None
    if section is None:
        raise LayoutError(f"{path}: {where} has no .BTF section (CONFIG_DEBUG_INFO_BTF off?)")
    return section, f"{path} (.BTF section; offsets within it)"
