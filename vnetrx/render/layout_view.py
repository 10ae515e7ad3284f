"""``vnetrx layout``'s views of one struct: pahole-style text and the JSON document.

Built-in modules only (json is imported when JSON is asked for): the fast entry (vnetrx/main.py)
renders with this module without loading click or rich.
"""

from __future__ import annotations

from vnetrx.layouts.rows import Group, StructRows, holes

_TYPE_WIDTH, _NAME_WIDTH = 34, 26


def declaration(type_name: str, name: str) -> tuple[str, str]:
    """A C declaration split as pahole prints it: ``skb_frag_t`` + ``frags[17]``, ``void`` +
    ``(*destructor)(struct sk_buff *)``; other types are ``type`` + ``name``."""
    if "(*)" in type_name:
        ret, _, params = type_name.partition("(*)")
        return ret.rstrip(), f"(*{name}){params}"
    if type_name.endswith("]") and "[" in type_name:
        base, _, dims = type_name.partition("[")
        return base.rstrip(), f"{name}[{dims}"
    return type_name, name


def pahole_text(name: str, view: StructRows, cache_line: int) -> str:
    """Members with offset and size, holes, padding and ``cache_line`` boundaries, as pahole
    prints them; anonymous structs and unions (``view.groups``) nested in ``{ };`` blocks."""
    size, rows = view.size, view.rows
    gaps = dict(holes(rows, size))
    depth = [0] * len(rows)
    opens: dict[int, list[Group]] = {}
    closes: dict[int, list[Group]] = {}
    for group in sorted(view.groups, key=lambda g: g[5]):  # outer blocks open first
        first, end = group[0], group[1]
        depth[first:end] = [d + 1 for d in depth[first:end]]
        if first < end:
            opens.setdefault(first, []).append(group)
        closes.setdefault(end, []).insert(0, group)  # inner blocks close first
    out = [f"{view.kind} {name} {{"]
    boundary = cache_line
    for index, row in enumerate(rows):
        out += _closing(closes.get(index, []))
        opening = opens.get(index, [])
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
        type_part, name_part = declaration(row.type_name, row.name + bits)
        out.append(
            f"{indent}{type_part:<{_TYPE_WIDTH}} {name_part + ';':<{_NAME_WIDTH}} "
            f"/* {row.offset:5} {row.size:5} */"
        )
        end = row.offset + row.size
        if end in gaps and end < size:
            out.append(f"{indent}/* XXX {gaps[end]} bytes hole */")
    out += _closing(closes.get(len(rows), []))
    covered = max((row.offset + row.size for row in rows), default=0)
    if rows and covered < size:  # after the last member (a hole before a member is no padding)
        out.append(f"\t/* padding: {size - covered} */")
    # members: as pahole counts them, an anonymous struct or union is one member
    top = depth.count(0) + sum(g[5] == 1 for g in view.groups)
    out.append(f"\t/* size: {size}, cachelines: {-(-size // cache_line)}, members: {top} */")
    out.append("};")
    return "\n".join(out) + "\n"


def _closing(groups: list[Group]) -> list[str]:
    """The ``};`` lines of blocks that end here, inner first; an empty block opens here too."""
    lines = []
    for first, end, kind, offset, size, depth in groups:
        if first == end:
            lines.append("\t" * depth + f"{kind} {{")
        lines.append(
            # the comment lines up with the members', which sit one tab further in
            "\t" * depth + f"{'};':<{_TYPE_WIDTH + _NAME_WIDTH + 1 + 8}} /* {offset:5} {size:5} */"
        )
    return lines


def layout_json(name: str, view: StructRows) -> str:
    """The ``vnetrx.layout/1`` document; offsets and sizes in bytes, bit fields in bits."""
    from vnetrx.render.json_out import dumps

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
    return dumps(doc)
