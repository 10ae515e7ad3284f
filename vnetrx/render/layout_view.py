"""``vnetrx layout``'s views of one struct: pahole-style text and the JSON document.

Built-in modules only (json is imported when JSON is asked for): the fast entry (vnetrx/main.py)
renders with this module without loading click or rich.
"""

from __future__ import annotations

from vnetrx.layouts.rows import Row, holes


def pahole_text(name: str, size: int, rows: list[Row], cache_line: int) -> str:
    """Members with offset and size, holes, padding and ``cache_line`` boundaries, as pahole."""
    gaps = dict(holes(rows, size))
    out = [f"struct {name} {{"]
    boundary = cache_line
    for row in rows:
        if row.offset >= boundary:  # one marker for the last boundary crossed, as pahole
            line, start = row.offset // cache_line, row.offset // cache_line * cache_line
            ago = f" was {row.offset - start} bytes ago" if row.offset > start else ""
            out.append(f"\t/* --- cacheline {line} boundary ({start} bytes){ago} --- */")
            boundary = start + cache_line
        bits = f":{row.bit_size}" if row.bit_size else ""
        out.append(
            f"\t{row.type_name:<34} {row.name + bits + ';':<26} /* {row.offset:5} {row.size:5} */"
        )
        end = row.offset + row.size
        if end in gaps and end < size:
            out.append(f"\t/* XXX {gaps[end]} bytes hole */")
    tail = [g for g in holes(rows, size) if g[0] + g[1] == size and g[0] != 0]
    if tail:
        out.append(f"\t/* padding: {tail[0][1]} */")
    out.append(f"\t/* size: {size}, cachelines: {-(-size // cache_line)}, members: {len(rows)} */")
    out.append("};")
    return "\n".join(out) + "\n"


def layout_json(name: str, size: int, rows: list[Row]) -> str:
    """The ``vnetrx.layout/1`` document; offsets and sizes in bytes, bit fields in bits."""
    import json

    members = []
    for row in rows:
        member: dict[str, object] = {
            "name": row.name,
            "type": row.type_name,
            "offset": row.offset,
            "size": row.size,
        }
        if row.bit_offset is not None:
            member["bit_offset"] = row.bit_offset
        if row.bit_size is not None:
            member["bit_size"] = row.bit_size
        members.append(member)
    doc = {
        "schema": "vnetrx.layout/1",
        "name": name,
        "size": size,
        "members": members,
        "holes": [{"offset": o, "size": s} for o, s in holes(rows, size)],
    }
    return json.dumps(doc, indent=2) + "\n"
