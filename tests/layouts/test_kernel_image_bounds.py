"""layouts/kernel_image.py reads what it is given only as far as it must (issue 29): a file
read for its BTF is decompressed in steps, refused after the first when it begins as neither
an ELF file nor BTF, and never past the end its header gives (a bomb behind a valid header)."""

from __future__ import annotations

import gzip
import lzma
import shutil
import struct
import subprocess
from collections.abc import Callable

import pytest

from tests.layouts.test_btf import tiny_btf
from vnetrx.errors import VnetrxError
from vnetrx.layouts.kernel_image import decompress, elf_section


def _zstd(data: bytes) -> bytes:
    return subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True,
                          check=True).stdout


COMPRESSORS: list[tuple[str, Callable[[bytes], bytes]]] = [
    ("gzip", lambda d: gzip.compress(d, 1)), ("xz", lambda d: lzma.compress(d, preset=0))]
if shutil.which("zstd"):
    COMPRESSORS.append(("zstd", _zstd))


@pytest.mark.parametrize(("name", "pack"), COMPRESSORS, ids=[c[0] for c in COMPRESSORS])
def test_zeros_are_refused_after_the_first_step(name: str, pack: Callable[[bytes], bytes]
                                                ) -> None:
    with pytest.raises(VnetrxError, match="holds neither a 64-bit little-endian ELF file nor "
                       "BTF \\(it begins 0000000000000000\\)"):
        decompress(pack(bytes(64 << 20)), "bomb", headed=True)


@pytest.mark.parametrize(("name", "pack"), COMPRESSORS, ids=[c[0] for c in COMPRESSORS])
def test_a_btf_ends_where_its_header_says(name: str, pack: Callable[[bytes], bytes]) -> None:
    """64 MiB of zeros after a BTF: not decompressed (the BTF is returned whole); without
    ``headed`` (the lab's modules) all of it is."""
    btf = tiny_btf()
    assert decompress(pack(btf + bytes(64 << 20)), "f", headed=True) == btf
    assert decompress(pack(btf + bytes(100)), "f") == btf + bytes(100)


def test_an_elf_header_claiming_more_than_a_gib_is_refused() -> None:
    header = bytearray(b"\x7fELF\x02\x01" + bytes(58))
    struct.pack_into("<Q", header, 0x28, 1 << 30)  # e_shoff
    struct.pack_into("<HH", header, 0x3A, 64, 2)  # e_shentsize, e_shnum
    with pytest.raises(VnetrxError, match="its header gives a 1073741952-byte file, more than "
                       "1024 MiB"):
        decompress(gzip.compress(bytes(header)), "f", headed=True)


def test_a_section_past_the_end_is_refused() -> None:
    """A 64-bit ELF of 200 bytes whose .BTF section (bytes 64..264) runs past its end (it was
    returned cut short before); to the end exactly, it is read."""
    names = b"\0.BTF\0"
    elf = bytearray(b"\x7fELF\x02\x01" + bytes(58))
    struct.pack_into("<Q", elf, 0x28, 64 + 8)  # e_shoff: after the names
    struct.pack_into("<HHH", elf, 0x3A, 64, 2, 0)  # 2 headers; names in section 0
    elf += names + bytes(2)
    shstr = bytearray(64)
    struct.pack_into("<I", shstr, 0, 0)
    struct.pack_into("<QQ", shstr, 0x18, 64, len(names))
    btf = bytearray(64)
    struct.pack_into("<I", btf, 0, 1)  # ".BTF"
    struct.pack_into("<QQ", btf, 0x18, 64, 200)
    elf += shstr + btf
    with pytest.raises(VnetrxError, match=r"section .BTF \(bytes 64..264\) runs past the end \(200 bytes\)"):
        elf_section(bytes(elf), ".BTF")
    assert len(elf) == 200
    struct.pack_into("<Q", elf, len(elf) - 64 + 0x20, 136)  # size: to the end
    assert elf_section(bytes(elf), ".BTF") == bytes(elf[64:])
