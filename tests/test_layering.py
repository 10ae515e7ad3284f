"""The core imports neither click nor rich; `--json` does not import rich, and a virtio trace
does not import construct, the tap path or dataclasses (start-up time, issue 15)."""

from __future__ import annotations

import subprocess
import sys

# a command line through the CLI, as the vnetrx script runs it (it must succeed)
RUN = """
import io, contextlib
sys.argv = ['vnetrx', *{argv!r}]
from vnetrx.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        assert exc.code == 0, exc.code
"""


def loaded(setup: str, *watched: str) -> str:
    """Which of the ``watched`` modules (and packages: a package counts when any of its
    modules is loaded) running ``setup`` loads, comma-separated."""
    code = "import sys\n" + setup + "\nprint('\\n'.join(sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names = out.stdout.split()
    found = {w for w in watched if any(m == w or m.startswith(w + ".") for m in names)}
    return ",".join(sorted(found))


def command(*argv: str) -> str:
    return RUN.format(argv=list(argv))


def test_core_imports_no_click_or_rich() -> None:
    setup = ("import vnetrx.engine, vnetrx.codec, vnetrx.paths.virtio_net, vnetrx.kernel.registry,"
             " vnetrx.live.running, vnetrx.layouts.virtio_net")
    assert loaded(setup, "click", "rich") == ""


def test_json_trace_does_not_import_rich_construct_or_the_tap_path() -> None:
    setup = command("trace", "--len", "1000", "--mergeable", "--json")
    assert loaded(setup, "rich", "construct", "vnetrx.paths.tun", "dataclasses") == ""


def test_a_tap_trace_does_use_construct_and_the_tap_path() -> None:
    """The check above can fail: parsing a tap frame's virtio_net_hdr loads construct."""
    setup = command("trace", "--path", "tap", "--len", "1000", "--l4", "tcp4", "--gso",
                    "tcpv4:1448", "--json")
    assert loaded(setup, "construct", "vnetrx.paths.tun") == "construct,vnetrx.paths.tun"


def test_text_trace_does_use_rich() -> None:
    """The check above can fail: the text path really loads rich."""
    assert loaded(command("trace", "--len", "1000"), "rich") == "rich"
