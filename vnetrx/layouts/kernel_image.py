"""Container formats that carry BTF: a vmlinux or module ELF file (its ``.BTF`` section; a
module may be xz-, gzip- or zstd-compressed) and an x86 bzImage (Documentation/arch/x86/boot.rst: ``payload_offset``/``payload_length``), whose
payload is the compressed vmlinux ELF."""

from __future__ import annotations

import struct

from vnetrx.errors import VnetrxError

_XZ = b"\xfd7zXZ\x00"
_GZIP = b"\x1f\x8b\x08"
_ZSTD = b"\x28\xb5\x2f\xfd"


def bzimage_payload(image: bytes) -> bytes:
    """The decompressed vmlinux ELF inside a bzImage (xz, gzip or zstd)."""
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
    plain = decompress(payload, "the kernel payload")
    if plain is None:
        raise VnetrxError(f"unknown kernel payload compression (magic {payload[:4].hex()})")
    return plain


def decompress(data: bytes, what: str) -> bytes | None:
    """xz, gzip or zstd (the zstandard package) data decompressed; None if it is none of
    them."""
    import gzip
    import lzma
    import zlib

    try:
        if data.startswith(_XZ):
            return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data)
        if data.startswith(_GZIP):
            return gzip.decompress(data)
    except (lzma.LZMAError, OSError, EOFError, zlib.error) as exc:
        raise VnetrxError(f"cannot decompress {what}: {exc}") from None
    if not data.startswith(_ZSTD):
        return None
    import zstandard

    # every frame, as zstd -d reads them; no frame needs to state its size, each must end
    out, rest = [], data
    try:
        while rest:
            frame = zstandard.ZstdDecompressor().decompressobj()
            out.append(frame.decompress(rest))
            if not frame.eof:
                raise zstandard.ZstdError("truncated input")
            rest = frame.unused_data
    except zstandard.ZstdError as exc:
        raise VnetrxError(f"cannot decompress {what} (zstd): {exc}") from None
    return b"".join(out)


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
            return elf[offset : offset + size]
    return None


def read_btf_bytes(path: str) -> tuple[bytes, str]:
    """The BTF in a file, and how to name it in messages: a raw BTF blob, the .BTF section of
    an ELF file (vmlinux, a module .ko) or of the vmlinux inside a bzImage."""
    from vnetrx.errors import InputError, LayoutError
    from vnetrx.files import MiB, read_bounded

    try:
        data = read_bounded(path, 2048 * MiB, "--btf")  # a vmlinux with debug info is < 1 GiB
    except InputError as exc:
        raise LayoutError(exc.message.replace("cannot read ", "cannot read BTF from ", 1),
                          hint=exc.hint) from None
    try:
        plain = decompress(data, path)  # a compressed module: virtio_net.ko.xz
    except VnetrxError as exc:
        raise LayoutError(exc.message) from None
    data = data if plain is None else plain
    if data[:4] == b"\x7fELF":
        where = "ELF"
    elif data[0x202:0x206] == b"HdrS":
        try:
            data, where = bzimage_payload(data), "the vmlinux in the bzImage"
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
