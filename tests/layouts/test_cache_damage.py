"""A damaged cache file never changes ``vnetrx layout`` output: every byte of a rows file flipped
in turn, every truncation, and damaged record tables (.idx) all give the uncached output (the
damaged file is ignored and rebuilt). Issue 29: 26 of 300 corrupted btf-*.rows files changed
the output before cache files carried a length and a CRC-32 (vnetrx.cache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetrx.layouts.rows import btf_rows
from vnetrx.render.layout_view import layout_json, pahole_text

VMLINUX = Path("/sys/kernel/btf/vmlinux")
needs_btf = pytest.mark.skipif(not VMLINUX.exists(), reason="no /sys/kernel/btf/vmlinux here")
NAME = "virtio_net_hdr_v1_hash"  # small: its rows file is a few hundred bytes


def output() -> str:
    view = btf_rows(str(VMLINUX), NAME)
    return layout_json(NAME, view) + pahole_text(NAME, view, 64)


@pytest.fixture
def uncached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "none"))
    (tmp_path / "none").mkdir(mode=0o700)
    (tmp_path / "none" / "vnetrx").symlink_to(tmp_path)  # refused: no cache at all
    text = output()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert output() == text  # cold: writes the cache
    return text


def rows_file(tmp_path: Path) -> Path:
    [rows] = (tmp_path / "vnetrx").glob(f"btf-*-{NAME}.rows")
    return rows


@needs_btf
def test_every_flipped_byte_of_a_rows_file_is_ignored(uncached: str, tmp_path: Path) -> None:
    rows = rows_file(tmp_path)
    good = rows.read_bytes()
    assert 100 < len(good) < 4096
    for position in range(len(good)):
        for flip in (0x01, 0x80, 0xFF):
            bad = bytearray(good)
            bad[position] ^= flip
            rows.write_bytes(bytes(bad))
            assert output() == uncached, (position, flip)
            assert rows.read_bytes() == good  # rebuilt


@needs_btf
def test_every_truncation_and_extension_of_a_rows_file_is_ignored(
    uncached: str, tmp_path: Path
) -> None:
    rows = rows_file(tmp_path)
    good = rows.read_bytes()
    for end in range(len(good)):
        rows.write_bytes(good[:end])
        assert output() == uncached, end
    for extra in (b"\n", b"M\tx\tint\t0\t4\t\t\n", b"\0"):
        rows.write_bytes(good + extra)
        assert output() == uncached, extra


@needs_btf
def test_a_damaged_record_table_is_ignored(uncached: str, tmp_path: Path) -> None:
    rows = rows_file(tmp_path)
    [idx] = (tmp_path / "vnetrx").glob(f"{rows.name.split('-on-')[0][:-len(NAME) - 6]}*.idx")
    good = idx.read_bytes()
    positions = [*range(32), *range(32, len(good), max(1, len(good) // 24)), len(good) - 1]
    for position in positions:
        rows.unlink(missing_ok=True)  # the struct is then looked up through the table
        bad = bytearray(good)
        bad[position] ^= 0x10
        idx.write_bytes(bytes(bad))
        assert output() == uncached, position
    for end in (0, 5, len(good) // 2, len(good) - 4, len(good) - 1):
        rows.unlink(missing_ok=True)
        idx.write_bytes(good[:end])
        assert output() == uncached, end
