"""The vnetrx(1) man page, generated from the click commands themselves (their help texts,
options, choices and defaults), so it never drifts from ``--help``. ``tools/make_man.py``
writes ``docs/vnetrx.1``; a test checks that the file is current."""

from __future__ import annotations

import click

from vnetrx import __version__


def _escape(text: str) -> str:
    """roff: backslashes doubled, a leading dot or quote protected, dashes kept literal."""
    out = []
    for line in text.splitlines():
        line = line.replace("\\", "\\e").replace("-", "\\-")
        line = "".join(ch if ord(ch) < 128 else f"\\[u{ord(ch):04X}]" for ch in line)
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def _help_text(command: click.Command) -> str:
    import inspect

    text = inspect.cleandoc(command.help or "").replace("\b\n", "").replace("\b", "")
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _options(ctx: click.Context, command: click.Command) -> list[str]:
    out = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        names = _escape(names).replace("|", "|\\:")  # \: lets groff break a long choice list
        out += [".TP", f"\\fB{names}\\fR", _escape(help_text or "")]
    return out


def _section(ctx: click.Context, path: str, command: click.Command) -> list[str]:
    out = [f'.SS "{_escape(path)}"']
    usage = " ".join(command.collect_usage_pieces(ctx))
    out += [f"\\fB{_escape(path)}\\fR {_escape(usage)}", ".PP"]
    body = _help_text(command)
    if body:
        out += [".nf", _escape(body), ".fi"]
    out += _options(ctx, command)
    return out


def man_page(root: click.Group, date: str) -> str:
    """The whole page: NAME, SYNOPSIS, DESCRIPTION, one subsection per command."""
    # make_context applies each command's context_settings (-h as well as --help) the way a
    # real invocation does, whatever else ran in this process before
    ctx = root.make_context("vnetrx", [], resilient_parsing=True)
    lines = [
        f'.TH VNETRX 1 "{date}" "vnetrx {__version__}" "User Commands"',
        ".ad l",  # ragged right: long option lists and paths are not stretched
        ".SH NAME",
        "vnetrx \\- packet\\-path tracer and explainer for Linux virtio\\-net and tun/tap",
        ".SH SYNOPSIS",
        "\\fBvnetrx\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".SH DESCRIPTION",
        ".nf",
        _escape(_help_text(root)),
        ".fi",
    ]
    lines += _options(ctx, root)
    lines.append(".SH COMMANDS")
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = command.make_context(name, [], parent=ctx, resilient_parsing=True)
        if isinstance(command, click.Group):
            for child_name in command.list_commands(sub):
                child = command.get_command(sub, child_name)
                if child is not None and not child.hidden:
                    lines += _section(
                        child.make_context(child_name, [], parent=sub, resilient_parsing=True),
                        f"vnetrx {name} {child_name}", child)
        else:
            lines += _section(sub, f"vnetrx {name}", command)
    lines += [".SH EXIT STATUS",
              "0 success; 1 a runtime failure or a mismatch; 2 a usage error; 130 "
              "interrupted (what was seen is printed).",
              ".SH SEE ALSO", "README.md and CHANGELOG.md in the source distribution."]
    return "\n".join(lines) + "\n"
