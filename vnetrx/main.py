"""The process entry point (the ``vnetrx`` script and ``python -m vnetrx``).

Two command lines are served here, before click is imported, because people run them again and
again and click plus the CLI's option modules cost most of a run (issues 6 and 28 measure them
against pahole): ``vnetrx layout NAME --btf PATH [--btf-base PATH] [--json]``, with the same
functions as ``vnetrx.cli.layout`` (layouts/rows.py, render/layout_view.py), and ``vnetrx trace
... --json`` on the virtio path (vnetrx.fast_trace says which). Their outputs are tested to be
byte for byte the CLI's.

Any other command line, and any error, goes to the click CLI, which does the same work again
and reports the error in the usual way (one line, exit status, JSON with --json).
"""

from __future__ import annotations

import gc
import sys


def layout_request(argv: list[str]) -> tuple[str, str, str | None, bool] | None:
    """(name, btf path, base path, as_json) when ``argv`` is exactly a BTF layout lookup with
    the default kernel profile; None for anything else (including --help, --check, --kernel)."""
    if not argv or argv[0] != "layout":
        return None
    name = path = base = None
    as_json = False
    args = iter(argv[1:])
    for arg in args:
        if arg == "--json" and not as_json:
            as_json = True
        elif arg in ("--btf", "--btf-base") or arg.startswith(("--btf=", "--btf-base=")):
            option, eq, value = arg.partition("=")
            if not eq:
                value = next(args, "")
            if not value or value.startswith("-"):
                return None
            if option == "--btf" and path is None:
                path = value
            elif option == "--btf-base" and base is None:
                base = value
            else:
                return None
        elif not arg.startswith("-") and name is None and arg:
            name = arg
        else:
            return None
    if name is None or path is None:
        return None
    return name, path, base, as_json


def serve_layout(name: str, path: str, base: str | None, as_json: bool) -> bool:
    """Print the layout; False (nothing printed) when the CLI should handle it instead."""
    from vnetrx.errors import VnetrxError
    from vnetrx.kernel.arches import ARCHES, DEFAULT_ARCH
    from vnetrx.layouts.rows import btf_path, btf_rows
    from vnetrx.render.layout_view import layout_json, pahole_text

    try:
        view = btf_rows(btf_path(path), name, None if base is None else btf_path(base))
    except VnetrxError:
        return False
    if as_json:
        text = layout_json(name, view)
    else:
        # The default profile's cache line (kernel.choice.load_profile with no --kernel/--arch).
        text = pahole_text(name, view, ARCHES[DEFAULT_ARCH]["l1_cache_bytes"])
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `vnetrx layout ... | head`
        sys.stderr.close()
    return True


def main() -> None:
    # No cyclic garbage collection while the modules load: the ~30 collections a start-up
    # triggers (each walking every object made so far) cost ~4 ms of a ~80 ms trace on the
    # reference machine. The CLI turns it back on once the command's modules are in
    # (``modules_loaded``); the layout fast path and --help end before that.
    gc.disable()
    _standard_streams()
    try:
        argv = sys.argv[1:]
        request = layout_request(argv)
        if request is not None and serve_layout(*request):
            sys.exit(0)
        if argv[:1] == ["trace"]:
            _serve_trace(argv)
        from vnetrx.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:  # Ctrl-C before click runs (while the modules load)
        sys.stderr.write("\nvnetrx: interrupted\n")
        interrupted_json(sys.argv[1:])
        sys.exit(130)
    except SystemExit as done:  # the CLI always ends here (click's standalone exit)
        exit_without_teardown(done.code)
        raise


def _serve_trace(argv: list[str]) -> None:
    """A JSON virtio trace without click (vnetrx.fast_trace): exits when it served ``argv``."""
    from vnetrx.fast_trace import serve_trace, trace_request

    params = trace_request(argv)
    if params is not None:
        code = serve_trace(params, argv)
        if code is not None:
            sys.exit(code)


def interrupted_json(argv: list[str]) -> None:
    """With --json/--jsonl, a run interrupted before its command began (while the modules load,
    or at click's prompt) still prints a JSON document: the error object, exit_code 130."""
    if "--json" not in argv and "--jsonl" not in argv:
        return
    try:
        import json

        from vnetrx.codec import error_to_dict

        sys.stdout.write(json.dumps(error_to_dict(
            "interrupted before the command began", 130)) + "\n")
        sys.stdout.flush()
    except (OSError, ValueError, KeyboardInterrupt):  # a closed pipe, a second Ctrl-C
        pass


def modules_loaded() -> None:
    """The command's modules are imported: collect garbage again (if ``main`` stopped it), with
    what start-up made frozen out of every later collection's walk (a long replay's too)."""
    if not gc.isenabled():
        gc.freeze()
        # A replay or a sweep makes a few short-lived containers per frame (tuples, records)
        # that reference counting frees and that never form cycles; the default first
        # generation (700 allocations) walked them every ~150 frames: 3-5 % of a compiled
        # replay's time. 20,000 holds at most that many uncollected cyclic objects.
        gc.set_threshold(20_000, 10, 10)
        gc.enable()


def exit_without_teardown(code: object) -> None:
    """End the process now, with ``code``, when the interpreter's teardown has nothing to do.

    Tearing the interpreter down frees every object of every module one by one: ~10 ms of CPU
    of a ~80 ms ``vnetrx trace --json`` on the 2-core reference machine (issue 15 measures the
    whole process against pahole). The kernel frees the memory anyway, so the only work that
    matters is what Python would still run: exit handlers (``atexit``, which also holds
    ``weakref.finalize``'s temporary-directory cleanups and logging's flush) and other threads
    it would wait for. When there are none and the output is flushed, os._exit loses nothing;
    otherwise (and for a non-integer code, which Python prints) the normal exit runs.
    """
    import atexit
    import os
    import threading

    if code is not None and not isinstance(code, int):
        return
    # atexit._ncallbacks: CPython's count of registered handlers (no public API says it)
    if atexit._ncallbacks() or threading.active_count() > 1:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: let the normal exit report it
        return
    os._exit(code or 0)


def _standard_streams() -> None:
    """Make the standard streams safe to use, or end with a one-line error.

    A stream closed by the caller (``vnetrx kernels >&-``, ``2>&-``, ``<&-``) leaves its file
    descriptor free: the next file vnetrx opens (a capture, a tracefs file, a QEMU pipe) would
    become fd 0, 1 or 2 and receive what was meant for the terminal. Each closed one is pointed
    at /dev/null first. A closed stderr then swallows error lines, as ``2>/dev/null`` would
    (exit statuses and --json errors on stdout are unchanged); a closed stdin stays None in
    ``sys.stdin``, which the options that read "-" report; a closed stdout leaves nothing to
    print the answer on: one line on stderr and exit 1, as coreutils report a write error.
    """
    import os

    for fd in (0, 1, 2):
        if not _is_open(fd):
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stderr is None:
        sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")  # noqa: SIM115
    if sys.stdout is None:
        sys.stderr.write("vnetrx: error: standard output is closed (nothing to print on)\n")
        sys.stderr.flush()
        os._exit(1)
    _encodable_streams()


def _is_open(fd: int) -> bool:
    import os

    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _encodable_streams() -> None:
    """Output that a terminal's encoding cannot show (PYTHONIOENCODING=ascii, LANG=C on an old
    Python) becomes '?' instead of a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        if not _can_encode(stream.encoding):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="replace")


def _can_encode(encoding: str | None) -> bool:
    try:
        "\u2713\u2192\u00d7\u2264\u2500".encode(encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True
