"""Kernel versions, behaviour changes, build configurations and the profiles that combine them."""

from __future__ import annotations
