"""Renderers: functions of a ``Trace``. Only this package (and the CLI) may import rich."""

from __future__ import annotations
