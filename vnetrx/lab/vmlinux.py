"""The guest kernel's own struct sk_buff offsets, for the kprobe: decompress the bzImage
payload (Documentation/arch/x86/boot.rst: ``payload_offset``/``payload_length``), find the
``.BTF`` ELF section of vmlinux and look the fields up with vnetrx's BTF reader."""

from __future__ import annotations

import gzip
import json
import lzma
import struct
from pathlib import Path

from vnetrx.errors import VnetrxError
from vnetrx.lab.initramfs import Kprobe

_XZ = b"\xfd7zXZ\x00"
_GZIP = b"\x1f\x8b\x08"
_ZSTD = b"\x28\xb5\x2f\xfd"


def bzimage_payload(image: bytes) -> bytes:
    """The decompressed vmlinux ELF inside a bzImage (xz or gzip; zstd via the zstd tool)."""
    if len(image) < 0x250 or image[0x202:0x206] != b"HdrS":
        raise VnetrxError("not a bzImage (no HdrS signature)")
    setup_sects = image[0x1F1] or 4
    offset, length = struct.unpack_from("<II", image, 0x248)
    start = (setup_sects + 1) * 512 + offset
    payload = image[start : start + length]
    if payload.startswith(_XZ):
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(payload)
    if payload.startswith(_GZIP):
        return gzip.decompress(payload)
    if payload.startswith(_ZSTD):
        import subprocess

        # The payload ends with the 4-byte decompressed size (arch/x86/boot/compressed/Makefile,
        # cmd_zstd22_with_size), which zstd would read as a broken frame.
        try:
            proc = subprocess.run(["zstd", "-dc"], input=payload[:-4], capture_output=True)
        except OSError as exc:
            raise VnetrxError(
                f"cannot decompress the zstd kernel payload: {exc}", hint="apt-get install zstd"
            ) from None
        if proc.returncode != 0:
            raise VnetrxError(
                "cannot decompress the zstd kernel payload: "
                + proc.stderr.decode(errors="replace").strip()
            )
        return proc.stdout
    raise VnetrxError(f"unknown kernel payload compression (magic {payload[:4].hex()})")


def elf_section(elf: bytes, wanted: str) -> bytes | None:
    """The bytes of a named section of a 64-bit little-endian ELF file."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise VnetrxError("vmlinux is not a 64-bit little-endian ELF file")
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


def kprobe_offsets(image: Path, cache_dir: Path | None = None) -> Kprobe:
    """struct sk_buff offsets of head, data, tail, end, mac_header, len in the image's BTF
    (cached as JSON next to the other lab files)."""
    cache = None
    if cache_dir is not None:
        stat = image.stat()
        cache = cache_dir / f"skb-offsets-{image.name}-{stat.st_size}-{int(stat.st_mtime)}.json"
        if cache.is_file():
            try:
                return Kprobe(**json.loads(cache.read_text()))
            except (ValueError, TypeError):
                pass
    from vnetrx.layouts.btf import Btf

    elf = bzimage_payload(image.read_bytes())
    blob = elf_section(elf, ".BTF")
    if blob is None:
        raise VnetrxError(f"{image}: vmlinux has no .BTF section (CONFIG_DEBUG_INFO_BTF off)")
    btf = Btf(blob, f"{image}:.BTF")
    offsets: dict[str, int] = {}
    for name in ("head", "data", "tail", "end", "mac_header", "len"):
        member = btf.member("sk_buff", name)
        if member is None:
            raise VnetrxError(f"{image}: struct sk_buff has no member {name} in its BTF")
        offsets[name] = member.offset
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(offsets))
    return Kprobe(**offsets)
