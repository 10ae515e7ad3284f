"""The one table class vnetrx prints with: a rich Table whose cells fold onto the next line
instead of being cut with "…" when the terminal is narrow, so no number or source path is ever
shown truncated (a ``no_wrap`` column still keeps its cells whole)."""

from __future__ import annotations

from typing import Any

from rich.table import Table as _RichTable


class Table(_RichTable):
    def add_column(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("overflow", "fold")
        super().add_column(*args, **kwargs)
