"""``vnetrx trace ... --json`` served before click is imported.

Issue 28 asks for the start-up of a JSON trace to cost at most pahole's CPU; on the reference
machine importing click alone costs about as much as pahole's whole run (callgrind: 169M of
the command's 238M instructions are Python's start and ``import click``). So a command line is
served here when it is ``trace`` followed only by options of ``fast_trace_options.OPTIONS``
(the virtio receive path's options whose values can be checked completely: derived from the
click command by vnetrx.cli.fast_options), each at most once, with values those options accept,
``--json`` among them. Anything else returns None before any work: help, other paths, --gro,
--load, pictures, --hdr and --frame, a value out of range, an option given twice, a positional
argument. A trace the core refuses (an InputError) also returns None, with nothing printed: the
click CLI then runs the command from the start and reports the error the usual way.

The trace is the CLI's own: the same functions (vnetrx.kernel.choice, vnetrx.trace_input,
vnetrx.engine, vnetrx.render.json_out) on the same option values, and the same exit statuses
(--check, a closed pipe, a failed write); tests/cli/test_fast_trace.py compares both byte for
byte.
"""

from __future__ import annotations

import sys
from typing import Any

from vnetrx.fast_trace_options import DEFAULTS, OPTIONS


def trace_request(argv: list[str]) -> dict[str, Any] | None:
    """The trace command's parameters by name (every one, as click would give them) when
    ``argv`` is a JSON virtio trace this module serves; None for anything else."""
    if not argv or argv[0] != "trace":
        return None
    params: dict[str, Any] = dict(DEFAULTS)
    given: set[str] = set()
    i = 1
    while i < len(argv):
        spelling, eq, value = argv[i].partition("=")
        entry = OPTIONS.get(spelling)
        if entry is None:
            return None
        name, kind, low, high, choices = entry
        if name in given:  # click keeps the last; a repeat is rare enough to leave to it
            return None
        given.add(name)
        i += 1
        if kind == "flag":
            if eq:
                return None
            params[name] = True
            continue
        if not eq:
            if i == len(argv):
                return None
            value = argv[i]
            i += 1
        parsed = _value(kind, value, low, high, choices)
        if parsed is None:
            return None
        params[name] = parsed
    return params if params["as_json"] else None


def _value(kind: str, text: str, low: int, high: int, choices: tuple[str, ...]) -> object:
    """``text`` as the option's type converts it, or None when only click can say (its error
    message, or a form the fast path does not read: 0x, a sign, spaces, a leading "-")."""
    if kind == "choice":
        return text if text in choices else None
    if kind == "text":
        return None if text.startswith("-") else text
    digits = text[1:] if kind == "int" and text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 20):
        return None
    number = int(text)
    if kind == "int":
        return number
    if not low <= number <= high or (kind == "power_of_two" and number & (number - 1)):
        return None
    return number


def serve_trace(params: dict[str, Any], argv: list[str]) -> int | None:
    """Print the trace ``params`` describe as JSON; its exit status, or None (nothing printed)
    when the core refused it and the CLI should report that."""
    from vnetrx.errors import VnetrxError
    from vnetrx.kernel.choice import options_profile
    from vnetrx.main import modules_loaded
    from vnetrx.model import EXIT_CHECK, STACK_OUTCOMES
    from vnetrx.render.json_out import render_trace
    from vnetrx.report import output_failed
    from vnetrx.trace_input import virtio_trace

    modules_loaded()
    try:
        result = virtio_trace(options_profile(params), params["frame_len"], params)
    except VnetrxError:
        return None
    try:
        sys.stdout.write(render_trace(result))
        sys.stdout.flush()
    except BrokenPipeError:  # `vnetrx trace ... --json | head -c 10`
        sys.stderr.close()
        return 0
    except OSError as exc:  # a full disk
        output_failed(exc, argv)
    if params["check"] and result.outcome not in STACK_OUTCOMES:
        return EXIT_CHECK
    return 0
