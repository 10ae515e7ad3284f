"""Where BTF's records are: the type id → record table (one pass over ~127k record headers,
~25 ms), its on-disk cache, and finding struct records by name with byte searches. Built-in
modules only (see btf.py for why)."""

from __future__ import annotations

from bisect import bisect_left

from vnetrx import cache

KINDS = {
    1: "INT",
    2: "PTR",
    3: "ARRAY",
    4: "STRUCT",
    5: "UNION",
    6: "ENUM",
    7: "FWD",
    8: "TYPEDEF",
    9: "VOLATILE",
    10: "CONST",
    11: "RESTRICT",
    12: "FUNC",
    13: "FUNC_PROTO",
    14: "VAR",
    15: "DATASEC",
    16: "FLOAT",
    17: "DECL_TAG",
    18: "TYPE_TAG",
    19: "ENUM64",
}
STRUCT, UNION, PTR, ARRAY, FUNC_PROTO = 4, 5, 2, 3, 13
# 32-bit words after the 3-word struct btf_type, per kind: (fixed, per vlen entry). INT: u32
# encoding; ARRAY: struct btf_array; STRUCT/UNION: btf_member; ENUM: btf_enum; FUNC_PROTO:
# btf_param; VAR: btf_var; DATASEC: btf_var_secinfo; DECL_TAG: btf_decl_tag; ENUM64: btf_enum64.
TRAILER_WORDS = {
    1: (1, 0),
    3: (3, 0),
    4: (0, 3),
    5: (0, 3),
    6: (0, 2),
    13: (0, 2),
    14: (1, 0),
    15: (0, 3),
    17: (1, 0),
    19: (0, 3),
}


class RecordError(Exception):
    """The type section does not split into records; ``word`` is where it went wrong."""

    def __init__(self, problem: str, word: int) -> None:
        super().__init__(problem)
        self.problem, self.word = problem, word


class _UnknownKind(Exception):
    def __init__(self, kind: int) -> None:
        self.kind = kind


class _Steps(dict[int, int]):
    """info word → record length in words (3 + the kind's trailer), computed once per value."""

    def __missing__(self, info: int) -> int:
        kind = (info >> 24) & 0x1F
        if kind not in KINDS:
            raise _UnknownKind(kind)
        fixed, each = TRAILER_WORDS.get(kind, (0, 0))
        step = self[info] = 3 + fixed + each * (info & 0xFFFF)
        return step


def walk(words: memoryview) -> list[int]:
    """Word index of every record of a type section: record k starts where record k-1's
    trailer ends. The step per distinct ``info`` word is memoised (a few hundred of them)."""
    steps = _Steps()
    starts: list[int] = []
    append, i = starts.append, 0
    try:
        while True:
            step = steps[words[i + 1]]
            append(i)
            i += step
    except IndexError:
        pass
    except _UnknownKind as exc:
        raise RecordError(f"unknown type kind {exc.kind}", i) from None
    if i != len(words):
        raise RecordError(
            "type section ends inside a record", starts[-1] if i > len(words) and starts else i
        )
    return starts


def load_table(name: str, words: memoryview) -> list[int] | None:
    """A cached record table (vnetrx.cache ``name``), if it still fits this type section."""
    raw = cache.read(name)
    if raw is None or not raw or len(raw) % 4:
        return None  # no cache yet, or a damaged one: walk from scratch
    try:
        starts = memoryview(raw).cast("I").tolist()
        # A damaged or stale table must still end exactly at the end of the type section.
        last = starts[-1]
        ends_right = last + _Steps()[words[last + 1]] == len(words)
    except (TypeError, ValueError, IndexError, _UnknownKind):
        return None
    return starts if ends_right and starts[0] == 0 and starts == sorted(starts) else None


def save_table(name: str, starts: list[int]) -> None:
    """Best effort: an unwritable cache is skipped."""
    from array import array

    cache.write(name, array("I", starts).tobytes())


def string_offsets(
    data: bytes, str_start: int, str_end: int, str_base: int, wanted: bytes
) -> tuple[set[int], set[int]]:
    """String offsets at which ``wanted`` (a name and its NUL) is a whole string, and at which
    it ends a longer one."""
    whole: set[int] = set()
    suffixes: set[int] = set()
    pos = data.find(wanted, str_start, str_end)
    while pos >= 0:
        starts_string = pos == str_start or data[pos - 1] == 0
        (whole if starts_string else suffixes).add(pos - str_start + str_base)
        pos = data.find(wanted, pos + 1, str_end)
    return whole, suffixes


def structs_named(
    data: bytes, types_start: int, types_end: int, starts: list[int], name_offs: set[int]
) -> list[int]:
    """Indexes into ``starts`` of the struct/union records whose name_off is in ``name_offs``:
    a byte search of the type section for each value, kept where it begins a record (bisect)
    whose info word says STRUCT or UNION."""
    found = []
    for name_off in name_offs:
        needle = name_off.to_bytes(4, "little")
        pos = data.find(needle, types_start, types_end)
        while pos >= 0:
            # Cheap byte tests first: word-aligned, info's byte 2 is 0, its kind 4 or 5.
            if (
                (pos - types_start) & 3 == 0
                and not data[pos + 6]
                and data[pos + 7] & 0x1F in (4, 5)
            ):
                word = (pos - types_start) >> 2
                k = bisect_left(starts, word)
                if k < len(starts) and starts[k] == word:
                    found.append(k)
            pos = data.find(needle, pos + 1, types_end)
    return found
