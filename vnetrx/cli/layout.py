"""``vnetrx layout``: vnetrx's struct layouts, the kernel's (BTF), and a check of one against the other."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from vnetrx.cli import cli
from vnetrx.cli.options import kernel_option
from vnetrx.errors import InputError, StructNotFound
from vnetrx.kernel.choice import load_profile
from vnetrx.layouts.btf import Btf, load_btf
from vnetrx.layouts.rows import StructRows, btf_path, btf_rows
from vnetrx.render.layout_view import layout_json, pahole_text

if TYPE_CHECKING:
    from vnetrx.kernel.profile import KernelProfile
    from vnetrx.layouts.base import Layout


@cli.command()
@click.argument("name", required=False)
@click.option(
    "--btf",
    "btf_given",
    metavar="PATH",
    default=None,
    help="Read the kernel's own layout from BTF: a raw BTF file ('running' = "
    "/sys/kernel/btf/vmlinux; /sys/kernel/btf/MODULE for a loaded module), a vmlinux or module "
    ".ko ELF file, or a bzImage.",
)
@click.option(
    "--btf-base",
    "btf_base",
    metavar="PATH",
    default=None,
    help="The vmlinux BTF a module's split BTF sits on (default for /sys/kernel/btf/MODULE: "
    "/sys/kernel/btf/vmlinux; a .ko needs the vmlinux or bzImage of its kernel).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Compare vnetrx's layouts with the BTF ones member by member; exit 1 on a difference.",
)
@click.option(
    "--list",
    "list_",
    is_flag=True,
    help="List the structs vnetrx defines (for --kernel), or with --btf every struct and union "
    "in that file.",
)
@kernel_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON: vnetrx.layout/1 (with --check vnetrx.layout-check/1, with --list "
    "vnetrx.layout-list/1).",
)
def layout(
    name: str | None,
    btf_given: str | None,
    btf_base: str | None,
    check: bool,
    list_: bool,
    kernel: str | None,
    config: str | None,
    as_json: bool,
) -> None:
    """Show a struct layout: vnetrx's own (for --kernel) or the kernel's (from BTF), pahole-style.

    \b
    Examples:
      vnetrx layout skb_shared_info                   # vnetrx's layout for the newest profile
      vnetrx layout skb_shared_info --btf running     # the running kernel's, from BTF
      vnetrx layout receive_queue --btf /sys/kernel/btf/virtio_net   # a module's split BTF
      vnetrx layout tun_file --btf tun.ko.xz --btf-base vmlinuz-6.12.117+deb12-amd64
      vnetrx layout --check --btf running --kernel running   # every struct, member by member
      vnetrx layout --list                            # the structs vnetrx defines
      vnetrx layout --list --btf /sys/kernel/btf/virtio_net   # every struct in that BTF
    """
    profile = load_profile(kernel, config)
    path = None if btf_given is None else btf_path(btf_given)
    base = None if btf_base is None else btf_path(btf_base)
    if base is not None and path is None:
        raise InputError("--btf-base is the base of a split BTF: give the module's --btf too")
    if name is not None and not name.strip():
        raise InputError("the struct name is empty (see vnetrx layout --list)")
    if list_ and (check or name is not None):
        raise InputError("--list takes no struct name and no --check")
    if list_:
        _list(profile, path, base, as_json)
        return
    if name is not None and path is not None and not (check or list_):
        try:
            view = btf_rows(path, name, base)  # cached per struct and file
        except StructNotFound as exc:
            names = exc.known() if callable(exc.known) else []
            raise InputError(exc.message, hint=_did_you_mean(name, names, 0.75)
                             or "vnetrx layout --list --btf PATH lists them") from None
    else:
        from vnetrx.layouts.check import layouts_for, rows_of_layout

        ours = layouts_for(profile)
        if check:
            # --check imports construct anyway (vnetrx's layouts): read BTF through its grammar
            from vnetrx.layouts.btf_format import GrammarBtf

            btf = None if path is None else load_btf(path, base, GrammarBtf)
            _check(ours, btf, name, as_json)
            return
        if name is None:
            raise InputError("name a struct (see vnetrx layout --list), or give --check or --list")
        if name not in ours:
            raise InputError(
                f"vnetrx does not define struct {name!r} (known: {', '.join(ours)}); "
                "give --btf to read any struct from BTF", hint=_did_you_mean(name, list(ours)))
        view = StructRows("struct", ours[name].size, rows_of_layout(ours[name]), [])
    if as_json:
        sys.stdout.write(layout_json(name, view))
        return
    click.echo(pahole_text(name, view, profile.build.l1_cache_bytes), nl=False)


def _did_you_mean(name: str, known: list[str], cutoff: float = 0.6) -> str | None:
    from difflib import get_close_matches

    close = get_close_matches(name, known, n=3, cutoff=cutoff)
    return f"did you mean {' or '.join(close)}?" if close else None


def _list(profile: KernelProfile, path: str | None, base: str | None, as_json: bool) -> None:
    """vnetrx's structs for the profile, or (with --btf) every named struct and union in the
    BTF file (not its base)."""
    if path is None:
        from vnetrx.layouts.check import layouts_for

        source = "vnetrx"
        structs = [
            {"name": name, "kind": "struct", "size": item.size, "source": item.source}
            for name, item in layouts_for(profile).items()
        ]
    else:
        btf = load_btf(path, base)
        source = btf.path
        structs = [
            {"name": name, "kind": kind, "size": size} for name, kind, size in btf.struct_sizes()
        ]
    if as_json:
        from vnetrx.render.json_out import dumps

        sys.stdout.write(
            dumps({"schema": "vnetrx.layout-list/1", "source": source, "structs": structs})
        )
        return
    for item in structs:
        where = f"  {item['source']}" if "source" in item else f"  {item['kind']}"
        click.echo(f"{item['name']:<32} {item['size']:6} bytes{where}")


def _check(ours: dict[str, Layout], btf: Btf | None, name: str | None, as_json: bool) -> None:
    if btf is None:
        raise InputError("--check compares with BTF: give --btf PATH or --btf running")
    names = [name] if name else list(ours)
    unknown = [item for item in names if item not in ours]
    if unknown:
        raise InputError(f"vnetrx does not define struct {unknown[0]!r} (known: "
                         f"{', '.join(ours)})", hint=_did_you_mean(unknown[0], list(ours)))
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
            if problems and problems[0].member == "(struct)":
                click.echo(f"{item:<32} ABSENT from this BTF (vnetrx: {problems[0].ours})")
                continue
            click.echo(f"{item:<32} {'DIFFERS' if problems else 'ok'}")
            for p in problems:
                click.echo(f"    {p.member}: vnetrx {p.ours}, kernel {p.kernel}")
        if any(p and p[0].member == "(struct)" for p in results.values()):
            click.echo(
                "(a struct of a driver built as a module is in the module's BTF: give it with "
                "--btf and vmlinux with --btf-base)"
            )
    if any(results.values()):
        sys.exit(1)
