"""The guest kernel's own struct sk_buff offsets, for the kprobe: decompress the bzImage
payload (Documentation/arch/x86/boot.rst: ``payload_offset``/``payload_length``), find the
``.BTF`` ELF section of vmlinux and look the fields up with vnetrx's BTF reader."""

from __future__ import annotations

import json
from pathlib import Path

from vnetrx.errors import VnetrxError
from vnetrx.lab.initramfs import Kprobe
from vnetrx.layouts.kernel_image import bzimage_payload, elf_section

__all__ = ["bzimage_payload", "elf_section", "kprobe_offsets"]


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
    from vnetrx.layouts.btf_format import GrammarBtf

    elf = bzimage_payload(image.read_bytes())
    blob = elf_section(elf, ".BTF")
    if blob is None:
        raise VnetrxError(f"{image}: vmlinux has no .BTF section (CONFIG_DEBUG_INFO_BTF off)")
    btf = GrammarBtf(blob, f"{image}:.BTF")
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
