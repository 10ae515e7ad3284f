"""Kernel versions, behaviour changes, build configurations and the profiles that combine them.
Pure: nothing here reads the machine (``--kernel running`` is vnetrx.live.running)."""

from __future__ import annotations
