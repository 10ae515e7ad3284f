"""The guest kernel's own struct sk_buff offsets, for the kprobe: decompress the bzImage
payload (Documentation/arch/x86/boot.rst: ``payload_offset``/``payload_length``), find the
``.BTF`` ELF section of vmlinux and look the fields up with vnetrx's BTF reader."""

from __future__ import annotations

import json
from pathlib import Path

from vnetrx import cache
from vnetrx.errors import VnetrxError
from vnetrx.lab.initramfs import Kprobe
from vnetrx.layouts.kernel_image import bzimage_payload, elf_section

__all__ = ["bzimage_payload", "elf_section", "kprobe_offsets"]


FIELDS = ("head", "data", "tail", "end", "mac_header", "len")


def kprobe_offsets(image: Path, use_cache: bool = True) -> Kprobe:
    """struct sk_buff offsets of head, data, tail, end, mac_header, len in the image's BTF
    (kept in vnetrx's cache, keyed by the image's path, size and mtime; a cached entry is used
    only when it holds exactly those six small offsets)."""
    name = None
    if use_cache:
        from zlib import crc32

        st = image.stat()
        where = crc32(str(image.resolve()).encode())
        name = f"skb-offsets-{where:08x}-{st.st_size:x}-{st.st_mtime_ns:x}.json"
        cached = _valid(cache.read(name, limit=4096))
        if cached is not None:
            return cached
    from vnetrx.layouts.btf_format import GrammarBtf

    elf = bzimage_payload(image.read_bytes())
    blob = elf_section(elf, ".BTF")
    if blob is None:
        raise VnetrxError(f"{image}: vmlinux has no .BTF section (CONFIG_DEBUG_INFO_BTF off)")
    btf = GrammarBtf(blob, f"{image}:.BTF")
    offsets: dict[str, int] = {}
    for field in FIELDS:
        member = btf.member("sk_buff", field)
        if member is None:
            raise VnetrxError(f"{image}: struct sk_buff has no member {field} in its BTF")
        offsets[field] = member.offset
    if name is not None:
        cache.write(name, json.dumps(offsets).encode())
    return Kprobe(**offsets)


def _valid(raw: bytes | None) -> Kprobe | None:
    """A cached offsets record, or None unless it is {the six fields: ints in 0..4095}."""
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or sorted(doc) != sorted(FIELDS):
        return None
    if not all(type(v) is int and 0 <= v < 4096 for v in doc.values()):
        return None
    return Kprobe(**doc)
