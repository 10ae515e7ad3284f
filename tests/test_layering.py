"""The core imports neither click nor rich; `--json` does not import rich, and a virtio trace
does not import construct (start-up time, issue 15)."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
{setup}
bad = sorted({{m.split('.')[0] for m in sys.modules}} & {{{banned}}})
print(','.join(bad))
"""


def loaded(setup: str, banned: str) -> str:
    code = CHECK.format(setup=setup, banned=banned)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_core_imports_no_click_or_rich() -> None:
    setup = ("import vnetrx.engine, vnetrx.codec, vnetrx.paths.virtio_net, vnetrx.kernel.registry,"
             " vnetrx.kernel.running, vnetrx.layouts.virtio_net")
    assert loaded(setup, "'click', 'rich'") == ""


def test_json_trace_does_not_import_rich_or_construct() -> None:
    setup = """
sys.argv = ['vnetrx', 'trace', '--len', '1000', '--mergeable', '--json']
import io, contextlib
from vnetrx.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        assert exc.code == 0, exc.code
"""
    assert loaded(setup, "'rich', 'construct'") == ""


def test_a_tap_trace_does_use_construct() -> None:
    """The check above can fail: parsing a tap frame's virtio_net_hdr loads construct."""
    setup = """
sys.argv = ['vnetrx', 'trace', '--path', 'tap', '--len', '1000', '--l4', 'tcp4', '--gso', 'tcpv4:1448', '--json']
import io, contextlib
from vnetrx.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
"""
    assert loaded(setup, "'construct'") == "construct"


def test_text_trace_does_use_rich() -> None:
    """The check above can fail: the text path really loads rich."""
    setup = """
sys.argv = ['vnetrx', 'trace', '--len', '1000']
import io, contextlib
from vnetrx.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
"""
    assert loaded(setup, "'rich'") == "rich"


def test_a_virtio_trace_does_not_load_the_tap_path() -> None:
    code = """
import sys, io, contextlib
sys.argv = ['vnetrx', 'trace', '--len', '1000', '--mergeable', '--json']
from vnetrx.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        assert exc.code == 0, exc.code
print(sorted(m for m in sys.modules if m.startswith('vnetrx.paths.tun')))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
