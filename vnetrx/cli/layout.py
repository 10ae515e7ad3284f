"""``vnetrx layout``: vnetrx's struct layouts, the kernel's (BTF), and a check of one against the other."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from vnetrx.cli import cli
from vnetrx.cli.options import kernel_option, load_profile
from vnetrx.errors import InputError
from vnetrx.layouts.rows import Row, btf_key, holes, load_rows, save_rows

if TYPE_CHECKING:
    from vnetrx.layouts.base import Layout
    from vnetrx.layouts.btf import Btf

RUNNING_BTF = "/sys/kernel/btf/vmlinux"


def _pahole(name: str, size: int, rows: list[Row], line: int) -> str:
    gaps = dict(holes(rows, size))
    out = [f"struct {name} {{"]
    boundary = line
    for row in rows:
        while row.offset >= boundary:
            out.append(f"\t/* --- cacheline {boundary // line} boundary ({boundary} bytes) --- */")
            boundary += line
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
    out.append(f"\t/* size: {size}, cachelines: {-(-size // line)}, members: {len(rows)} */")
    out.append("};")
    return "\n".join(out) + "\n"


@cli.command()
@click.argument("name", required=False)
@click.option(
    "--btf",
    "btf_path",
    metavar="PATH",
    default=None,
    help="Read the kernel's own layout from a BTF file ('running' = /sys/kernel/btf/vmlinux).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Compare vnetrx's layouts with the BTF ones member by member; exit 1 on a difference.",
)
@click.option("--list", "list_", is_flag=True, help="List the structs vnetrx defines.")
@kernel_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def layout(
    name: str | None,
    btf_path: str | None,
    check: bool,
    list_: bool,
    kernel: str | None,
    config: str,
    as_json: bool,
) -> None:
    """Show a struct layout: vnetrx's own (for --kernel) or the kernel's (from BTF), pahole-style.

    \b
    Examples:
      vnetrx layout skb_shared_info                   # vnetrx's layout for the newest profile
      vnetrx layout skb_shared_info --btf running     # the running kernel's, from BTF
      vnetrx layout --check --btf running --kernel running   # every struct, member by member
      vnetrx layout --list
    """
    profile = load_profile(kernel, config)
    path = None if btf_path is None else RUNNING_BTF if btf_path == "running" else btf_path
    if name is not None and path is not None and not (check or list_):
        size, rows = _btf_rows(path, name)  # cached per struct: a warm run needs no Construct
    else:
        from vnetrx.layouts.check import layouts_for, rows_of_layout

        ours = layouts_for(profile)
        if list_:
            for layout_name, item in ours.items():
                click.echo(f"{layout_name:<32} {item.size:4} bytes  {item.source}")
            return
        if check:
            _check(ours, None if path is None else _load_btf(path), name, as_json)
            return
        if name is None:
            raise InputError("name a struct (see vnetrx layout --list), or give --check or --list")
        if name not in ours:
            raise InputError(
                f"vnetrx does not define struct {name!r} (known: {', '.join(ours)}); "
                "give --btf to read any struct from BTF"
            )
        size, rows = ours[name].size, rows_of_layout(ours[name])
    if as_json:
        from vnetrx.render.json_out import dumps

        members = [{k: v for k, v in vars(r).items() if v is not None} for r in rows]
        for member in members:
            member["type"] = member.pop("type_name")
        sys.stdout.write(
            dumps(
                {
                    "schema": "vnetrx.layout/1",
                    "name": name,
                    "size": size,
                    "members": members,
                    "holes": [{"offset": o, "size": s} for o, s in holes(rows, size)],
                }
            )
        )
        return
    click.echo(_pahole(name, size, rows, profile.build.l1_cache_bytes), nl=False)


def _load_btf(path: str) -> Btf:
    from vnetrx.layouts.btf import Btf

    btf = Btf.load(path)
    btf.save_index()
    return btf


def _btf_rows(path: str, name: str) -> tuple[int, list[Row]]:
    key = btf_key(path)
    cached = None if key is None else load_rows(key, name)
    if cached is not None:
        return cached
    from vnetrx.layouts.check import rows_of_btf

    size, rows = rows_of_btf(_load_btf(path), name)
    if key is not None:
        save_rows(key, name, size, rows)
    return size, rows


def _check(ours: dict[str, Layout], btf: Btf | None, name: str | None, as_json: bool) -> None:
    if btf is None:
        raise InputError("--check compares with BTF: give --btf PATH or --btf running")
    names = [name] if name else list(ours)
    unknown = [item for item in names if item not in ours]
    if unknown:
        raise InputError(f"vnetrx does not define struct {unknown[0]!r}")
    from vnetrx.layouts.check import compare

    results = {item: compare(ours[item], btf) for item in names}
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(
            dumps(
                {
                    "schema": "vnetrx.layout-check/1",
                    "btf": btf.path,
                    "structs": {k: [vars(p) for p in v] for k, v in results.items()},
                }
            )
        )
    else:
        for item, problems in results.items():
            status = "ok" if not problems else "DIFFERS"
            click.echo(f"{item:<32} {status}")
            for p in problems:
                click.echo(f"    {p.member}: vnetrx {p.ours}, kernel {p.kernel}")
    if any(results.values()):
        sys.exit(1)
