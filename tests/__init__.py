"""vnetrx's tests, laid out like the package they test (tests/paths/virtio_net/test_page_to_skb.py
tests vnetrx/paths/virtio_net/page_to_skb.py)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).parent
DATA = TESTS / "data"  # saved real-kernel logs and captures
ROOT = TESTS.parent  # the repository
