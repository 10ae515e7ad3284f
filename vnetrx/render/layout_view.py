"""``vnetrx layout``'s views of one struct: pahole-style text and the JSON document.

Built-in modules only (json is imported when JSON is asked for): the fast entry (vnetrx/main.py)
renders with this module without loading click or rich.
"""

from __future__ import annotations

from vnetrx.layouts.rows import Group, StructRows, holes

_TYPE_WIDTH, _NAME_WIDTH = 34, 26


def pahole_text(name: str, view: StructRows, cache_line: int) -> str:
    """Members with offset and size, holes, padding and ``cache_line`` boundaries, as pahole
    prints them; anonymous structs and unions (``view.groups``) nested in ``{ };`` blocks."""
    size, rows, groups = view.size, view.rows, tuple(view.groups)
    gaps = dict(holes(rows, size))
    depth = [sum(g[0] <= i < g[1] for g in groups) for i in range(len(rows))]
    out = [f"{view.kind} {name} {{"]
    boundary = cache_line
    for index, row in enumerate(rows):
        out += _closing(groups, index, row_count=len(rows))
        opening = sorted((g for g in groups if g[0] == index and g[1] > index), key=lambda g: g[5])
        if row.offset >= boundary:  # one marker for the last boundary crossed, as pahole does,
            # before the blocks that open here
            line, start = row.offset // cache_line, row.offset // cache_line * cache_line
            ago = f" was {row.offset - start} bytes ago" if row.offset > start else ""
            outer = "\t" * (depth[index] - len(opening) + 1)
            out.append(f"{outer}/* --- cacheline {line} boundary ({start} bytes){ago} --- */")
            boundary = start + cache_line
        out += ["\t" * g[5] + f"{g[2]} {{" for g in opening]
        indent = "\t" * (depth[index] + 1)
        bits = f":{row.bit_size}" if row.bit_size else ""
        out.append(
            f"{indent}{row.type_name:<{_TYPE_WIDTH}} {row.name + bits + ';':<{_NAME_WIDTH}} "
            f"/* {row.offset:5} {row.size:5} */"
        )
        end = row.offset + row.size
        if end in gaps and end < size:
            out.append(f"{indent}/* XXX {gaps[end]} bytes hole */")
    out += _closing(groups, len(rows), row_count=len(rows))
    covered = max((row.offset + row.size for row in rows), default=0)
    if rows and covered < size:  # after the last member (a hole before a member is no padding)
        out.append(f"\t/* padding: {size - covered} */")
    # members: as pahole counts them, an anonymous struct or union is one member
    top = depth.count(0) + sum(g[5] == 1 for g in groups)
    out.append(f"\t/* size: {size}, cachelines: {-(-size // cache_line)}, members: {top} */")
    out.append("};")
    return "\n".join(out) + "\n"


def _closing(groups: tuple[Group, ...], index: int, row_count: int) -> list[str]:
    """The ``};`` lines of the groups that end before row ``index`` (inner first); an empty
    group (no members) opens and closes here."""
    lines = []
    for first, end, kind, offset, size, depth in sorted(groups, key=lambda g: -g[5]):
        if end != index or (first == end and index < row_count and first != index):
            continue
        if first == end:
            lines.append("\t" * depth + f"{kind} {{")
        lines.append(
            # the comment lines up with the members', which sit one tab further in
            "\t" * depth + f"{'};':<{_TYPE_WIDTH + _NAME_WIDTH + 1 + 8}} /* {offset:5} {size:5} */"
        )
    return lines


def layout_json(name: str, view: StructRows) -> str:
    """The ``vnetrx.layout/1`` document; offsets and sizes in bytes, bit fields in bits."""
    import json

    size, rows = view.size, view.rows
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
