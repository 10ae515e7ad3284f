"""zstd data (Debian 6.12's bzImage payload, .ko.zst modules) is decompressed in-process with
the zstandard package, without the zstd program. The frames below are what ``zstd -q -c``
(zstd 1.5, reading a pipe) wrote: no content size in their headers, a checksum each."""

from __future__ import annotations

import subprocess

import pytest

from vnetrx.errors import VnetrxError
from vnetrx.lab.run import cache_dir
from vnetrx.layouts.kernel_image import bzimage_payload, decompress

ONE = bytes.fromhex("28b52ffd0458b10000766e65747278207a737464206672616d65206f6e650af67a011d")
TWO = bytes.fromhex("28b52ffd04583900007365636f6e640a16404c55")


def no_programs(*_args: object, **_kw: object) -> None:
    raise AssertionError("no program may be run")


def test_frames_without_a_size_are_all_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "run", no_programs)
    assert decompress(ONE, "x") == b"vnetrx zstd frame one\n"
    assert decompress(ONE + TWO, "x") == b"vnetrx zstd frame one\nsecond\n"


@pytest.mark.parametrize("bad", [ONE[:-1], ONE[:-4] + b"\0\0\0\0", ONE[:12]])
def test_a_damaged_frame_is_one_error(bad: bytes) -> None:
    with pytest.raises(VnetrxError, match=r"cannot decompress m\.ko\.zst \(zstd\)") as info:
        decompress(bad, "m.ko.zst")
    assert "\n" not in info.value.message


def test_a_zstd_kernel_payload_decompresses(monkeypatch: pytest.MonkeyPatch) -> None:
    images = sorted(cache_dir().glob("linux-image-6.12*/boot/vmlinuz-*"))
    if not images:
        pytest.skip(f"no Debian 6.12 kernel in {cache_dir()} (vnetrx lab fetch-kernel)")
    monkeypatch.setattr(subprocess, "run", no_programs)
    elf = bzimage_payload(images[0].read_bytes())
    assert elf[:4] == b"\x7fELF"
