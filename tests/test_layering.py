"""The core imports neither click nor rich; `--json` does not import rich, and a virtio trace
does not import construct, the tap path or dataclasses (start-up time, issue 15). The pure side
of the live checks and the lab (predicting, parsing, comparing) loads nothing that touches the
system or boots a guest, and vnetrx.kernel nothing of either."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests import DATA

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


def every_module(package: str) -> str:
    """Code that imports every module of ``package``."""
    return (f"import importlib, pkgutil, {package}\n"
            f"for m in pkgutil.iter_modules({package}.__path__):\n"
            f"    importlib.import_module('{package}.' + m.name)")


# What touches the system (root: a netns, a tap, tracefs, bpf(2); reading /proc, /sys, ioctls)
# or boots a guest (QEMU, the vhost-user backend), and lab.run, which drives QEMU.
SYSTEM = ("vnetrx.live.tap", "vnetrx.live.bpf", "vnetrx.live.tracefs", "vnetrx.live.device",
          "vnetrx.live.running", "vnetrx.lab.qemu", "vnetrx.lab.run", "vnetrx.lab.vhost_user",
          "vnetrx.lab.vhost_user_proto", "vnetrx.lab.vhost_user_ring", "vnetrx.lab.vhost_run",
          "vnetrx.lab.vhost_predict")


def test_core_imports_no_click_or_rich() -> None:
    setup = ("import vnetrx.engine, vnetrx.codec, vnetrx.paths.virtio_net, vnetrx.kernel.registry,"
             " vnetrx.live.running, vnetrx.layouts.virtio_net, vnetrx.kernel.choice,"
             " vnetrx.trace_input, vnetrx.report, vnetrx.fast_trace")
    assert loaded(setup, "click", "rich") == ""


def test_json_trace_does_not_import_rich_construct_or_the_tap_path() -> None:
    setup = command("trace", "--len", "1000", "--mergeable", "--json")
    assert loaded(setup, "rich", "construct", "vnetrx.paths.tun", "dataclasses") == ""


def test_a_plain_trace_does_not_load_gro() -> None:
    """GRO's modules load with --gro only (start-up, issue 28): --segments' bound is
    vnetrx.model's, and the distribution schemes' patterns are compiled when first matched."""
    setup = command("trace", "--len", "1000", "--mergeable", "--json")
    assert loaded(setup, "vnetrx.flow", "vnetrx.paths.gro") == ""
    setup += "\nfrom vnetrx.kernel import distro\nprint(distro.re._cache)"
    out = subprocess.run([sys.executable, "-c", "import sys\n" + setup], capture_output=True,
                         text=True, check=True).stdout
    assert "flavour" not in out  # no scheme's pattern compiled
    gro = command("trace", "--len", "1514", "--l4", "tcp4", "--mergeable", "--gro",
                  "--segments", "4", "--json")
    assert loaded(gro, "vnetrx.flow", "vnetrx.paths.gro") == "vnetrx.flow,vnetrx.paths.gro"


def test_a_tap_trace_does_use_construct_and_the_tap_path() -> None:
    """The check above can fail: parsing a tap frame's virtio_net_hdr loads construct."""
    setup = command("trace", "--path", "tap", "--len", "1000", "--l4", "tcp4", "--gso",
                    "tcpv4:1448", "--json")
    assert loaded(setup, "construct", "vnetrx.paths.tun") == "construct,vnetrx.paths.tun"


def test_replay_summary_into_a_pipe_does_not_import_rich() -> None:
    """--summary's one line into a pipe or file is written plain; with colour it is rich's."""
    argv = ("replay", "--len", "60x10,1514x3", "--mergeable", "--summary")
    assert loaded(command(*argv), "rich") == ""
    assert loaded(command("--color", "always", *argv), "rich") == "rich"


def test_text_trace_does_use_rich() -> None:
    """The check above can fail: the text path really loads rich."""
    assert loaded(command("trace", "--len", "1000"), "rich") == "rich"


@pytest.mark.parametrize(("module", "other_side"), [
    ("vnetrx.live.observe_predict", "vnetrx.lab"),
    ("vnetrx.live.verify", "vnetrx.lab"),
    ("vnetrx.live.observe_parse", "vnetrx.lab"),
    ("vnetrx.live.observe", "vnetrx.lab"),
    ("vnetrx.lab.compare", "vnetrx.live"),
    ("vnetrx.lab.vhost_cases", "vnetrx.live"),
    ("vnetrx.lab.vhost_records", "vnetrx.live"),
    ("vnetrx.lab.vhost_compare", "vnetrx.live"),
])
def test_the_pure_checks_load_nothing_that_touches_the_system(module: str,
                                                               other_side: str) -> None:
    """Nor anything of the other side: what the live checks and the lab share is
    vnetrx.observed."""
    assert loaded(f"import {module}", *SYSTEM, other_side, "click", "rich") == ""


def test_observed_loads_nothing_of_live_or_lab() -> None:
    """vnetrx.observed is what both sides share: it depends on neither."""
    assert loaded(every_module("vnetrx.observed"), "vnetrx.live", "vnetrx.lab", "vnetrx.cli",
                  "vnetrx.render", "click", "rich") == ""


def test_kernel_loads_nothing_of_live_or_lab() -> None:
    assert loaded(every_module("vnetrx.kernel"), "vnetrx.live", "vnetrx.lab", "vnetrx.cli",
                  "vnetrx.render", "click", "rich") == ""


def test_the_lab_run_and_the_tap_do_load_the_system_side() -> None:
    """The checks above can fail: a boot loads QEMU's driver, a live write the tracefs and bpf
    modules, and ``every_module`` reaches them."""
    assert loaded("import vnetrx.lab.run", *SYSTEM) == \
        "vnetrx.lab.qemu,vnetrx.lab.run,vnetrx.lab.vhost_user,vnetrx.lab.vhost_user_proto," \
        "vnetrx.lab.vhost_user_ring"
    assert loaded("import vnetrx.live.tap", *SYSTEM) == \
        "vnetrx.live.bpf,vnetrx.live.tap,vnetrx.live.tracefs"
    assert loaded(every_module("vnetrx.live"), "vnetrx.live.running") == "vnetrx.live.running"


@pytest.mark.parametrize("argv", [
    ("xdp", "check", "--mergeable", "--json"),
    ("xdp", "check", "--path", "tap", "--json"),
    ("kernels", "--changes", "--json"),
    ("lab", "virtio", "--from-log", str(DATA / "lab" / "mergeable-6.1.0-57-amd64.log"), "--json"),
    ("observe", "--from-trace", str(DATA / "lab" / "small-6.1.0-57-amd64.log"), "--json"),
    ("lab", "vhost", "--from-log", str(DATA / "vhost" / "linux-6.1.0-57-amd64.log"), "--json",
     "--no-predict"),
], ids=["xdp-virtio", "xdp-tap", "kernels", "lab", "observe", "lab-vhost"])
def test_json_reports_do_not_import_rich(argv: tuple[str, ...]) -> None:
    assert loaded(command(*argv), "rich") == ""


def test_a_text_report_does_use_rich() -> None:
    """The check above can fail: the text report really loads rich."""
    assert loaded(command("xdp", "check", "--mergeable"), "rich") == "rich"
