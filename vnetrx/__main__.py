"""``python -m vnetrx`` → the command line."""

from __future__ import annotations

from vnetrx.main import main

main()
