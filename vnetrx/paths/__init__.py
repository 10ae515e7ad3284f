"""Paths: generators of steps that mirror kernel source files, one module per file."""

from __future__ import annotations
