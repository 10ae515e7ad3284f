"""vnetrx's tests, laid out like the package they test (tests/paths/virtio_net/test_page_to_skb.py
tests vnetrx/paths/virtio_net/page_to_skb.py)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).parent
DATA = TESTS / "data"  # saved real-kernel logs and captures
ROOT = TESTS.parent  # the repository


def fake_root(tmp_path: Path, files: dict[str, str]) -> str:
    """A machine's files (/proc, /sys, /boot: relative path -> text) under tmp_path, for the
    readers that take a root (vnetrx.live.running); the root's path."""
    root = tmp_path / "root"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return str(root)
