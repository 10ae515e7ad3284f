"""A struct layout as rows (pahole's view), the holes between them, and an on-disk cache of the
rows read from a BTF file. No Construct here: a warm ``vnetrx layout --btf`` needs nothing more."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Row:
    """One member as a pahole-style view shows it."""

    name: str
    type_name: str
    offset: int
    size: int
    bit_offset: int | None = None
    bit_size: int | None = None


def holes(rows: list[Row], size: int) -> list[tuple[int, int]]:
    """(offset, size) of every gap between members, and of the padding at the end."""
    gaps, covered = [], 0
    for row in rows:
        if row.offset > covered:
            gaps.append((covered, row.offset - covered))
        covered = max(covered, row.offset + row.size)
    if covered < size:
        gaps.append((covered, size - covered))
    return gaps


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vnetrx"


def btf_key(path: str) -> str | None:
    """Identifies a BTF file by its path, size and modification time (None: unreadable)."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    text = f"{Path(path).resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _rows_file(key: str, name: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch == "_" else "-" for ch in name)
    return cache_dir() / f"btf-{key}-{safe}.json"


def load_rows(key: str, name: str) -> tuple[int, list[Row]] | None:
    try:
        doc = json.loads(_rows_file(key, name).read_text())
        return int(doc["size"]), [Row(**row) for row in doc["rows"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_rows(key: str, name: str, size: int, rows: list[Row]) -> None:
    """Best effort: an unwritable cache is skipped."""
    target = _rows_file(key, name)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps({"size": size, "rows": [asdict(r) for r in rows]}))
        tmp.replace(target)
    except OSError:
        pass
