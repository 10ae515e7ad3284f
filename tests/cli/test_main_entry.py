"""The process entry (vnetrx/main.py): `vnetrx layout NAME --btf PATH` without click prints
exactly what the click command prints; everything else, and every error, goes to click; the
process ends without the interpreter's teardown only when that loses nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.main import layout_request

VMLINUX = Path("/sys/kernel/btf/vmlinux")
needs_btf = pytest.mark.skipif(not VMLINUX.exists(), reason="no /sys/kernel/btf/vmlinux here")


@pytest.mark.parametrize(("argv", "expected"), [
    (["layout", "sk_buff", "--btf", "running"], ("sk_buff", "running", None, False)),
    (["layout", "--btf=x.btf", "sk_buff", "--json"], ("sk_buff", "x.btf", None, True)),
    (["layout", "tun_file", "--btf", "m.btf", "--btf-base", "v.btf"],
     ("tun_file", "m.btf", "v.btf", False)),
    (["layout", "sk_buff", "--btf-base=v", "--btf=m"], ("sk_buff", "m", "v", False)),
])
def test_fast_requests(argv: list[str], expected: tuple[object, ...]) -> None:
    assert layout_request(argv) == expected


@pytest.mark.parametrize("argv", [
    [], ["trace"], ["layout"], ["layout", "sk_buff"],  # no --btf: vnetrx's own layouts
    ["layout", "sk_buff", "--btf"], ["layout", "sk_buff", "--btf", "--json"],
    ["layout", "sk_buff", "--btf", "a", "--btf", "b"], ["layout", "a", "b", "--btf", "x"],
    ["layout", "sk_buff", "--btf", "x", "--kernel", "6.1"],  # another cache line: click
    ["layout", "--check", "--btf", "running"], ["layout", "--list"],
    ["layout", "sk_buff", "--btf", "x", "--help"], ["layout", "sk_buff", "--btf", "x", "-h"],
    ["layout", "sk_buff", "--btf", "x", "--json", "--json"], ["--color", "never", "layout"],
])
def test_everything_else_goes_to_click(argv: list[str]) -> None:
    assert layout_request(argv) is None


def _run(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    return subprocess.run([sys.executable, "-m", "vnetrx", *args], capture_output=True,
                          text=True, env=env, check=False)


@needs_btf
@pytest.mark.parametrize("name", ["skb_shared_info", "sk_buff", "virtio_net_hdr_v1_hash"])
@pytest.mark.parametrize("fmt", [[], ["--json"]], ids=["text", "json"])
def test_fast_path_prints_what_click_prints(name: str, fmt: list[str], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["layout", name, "--btf", str(VMLINUX), *fmt]
    cold, warm = _run(args, tmp_path), _run(args, tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "click"))
    clicked = CliRunner().invoke(cli, args)
    assert clicked.exit_code == 0 and cold.returncode == 0 and warm.returncode == 0
    assert cold.stdout == warm.stdout == clicked.stdout
    assert list(tmp_path.glob("vnetrx/btf-*.rows"))  # the warm run read the rows cache


@needs_btf
def test_fast_path_loads_neither_click_nor_construct(tmp_path: Path) -> None:
    """The reason the fast path exists (issue 6): a BTF lookup imports no click, rich or
    construct, cold or warm."""
    code = (
        "import sys\n"
        "from vnetrx.main import layout_request, serve_layout\n"
        "assert serve_layout(*layout_request(['layout', 'skb_shared_info', '--btf', 'running']))\n"
        "heavy = {'click', 'rich', 'construct', 'dataclasses', 'json'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    for _ in ("cold", "warm"):
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=False)
        assert run.returncode == 0, run.stderr
        assert "struct skb_shared_info {" in run.stdout


def test_errors_fall_through_to_click(tmp_path: Path) -> None:
    bad = tmp_path / "bad.btf"
    bad.write_bytes(b"\x9f\xeb\x01\x00" + b"\0" * 4)
    run = _run(["layout", "pair", "--btf", str(bad)], tmp_path)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "bad.btf: header length 0 at byte 4" in run.stderr
    run = _run(["layout", "pair", "--btf", str(bad), "--json"], tmp_path)
    doc = json.loads(run.stdout)
    assert run.returncode == 1 and doc["exit_code"] == 1 and "header length 0" in doc["error"]
    run = _run(["layout", "pair", "--btf", str(tmp_path / "absent")], tmp_path)
    assert run.returncode == 1 and "cannot read BTF from" in run.stderr


@needs_btf
def test_unknown_struct_falls_through(tmp_path: Path) -> None:
    run = _run(["layout", "no_such_struct", "--btf", "running"], tmp_path)
    assert run.returncode == 2  # the name is the user's input: a usage error
    assert "no struct or union named 'no_such_struct'" in run.stderr


def test_other_commands_still_run() -> None:
    run = subprocess.run([sys.executable, "-m", "vnetrx", "layout", "--list"],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "skb_shared_info" in run.stdout


def test_cache_keeps_one_generation_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A BTF file that changed (a reboot, for /sys/kernel/btf/*) replaces its cache files instead
    of piling them up; another file's cache stays."""
    import struct as st

    from tests.layouts.test_btf import tiny_btf

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from vnetrx.layouts.rows import btf_rows

    first, other = tmp_path / "a.btf", tmp_path / "b.btf"
    first.write_bytes(tiny_btf())
    other.write_bytes(tiny_btf())
    assert btf_rows(str(first), "pair").size == 8
    assert btf_rows(str(other), "pair").size == 8
    blob = bytearray(tiny_btf())
    st.pack_into("<I", blob, 24 + 16 + 8, 12)  # struct pair now 12 bytes: a new key (size, mtime)
    first.write_bytes(bytes(blob) + b"\0")  # one byte longer
    assert btf_rows(str(first), "pair").size == 12
    cache = sorted(p.name for p in (tmp_path / "cache" / "vnetrx").iterdir())
    assert len(cache) == 4, cache  # a.btf: one .idx and one .rows; b.btf: the same


# vnetrx.main.main with something registered for the interpreter's exit: the normal exit runs
_WITH_EXIT_WORK = """
import atexit, sys, threading, time
{setup}
sys.argv = ['vnetrx'] + sys.argv[1:]
from vnetrx.main import main
main()
"""


def _entry(setup: str, *argv: str) -> subprocess.CompletedProcess[str]:
    code = _WITH_EXIT_WORK.format(setup=setup)
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          check=False)


def test_output_is_whole_and_the_exit_status_kept_without_teardown() -> None:
    rows = _entry("", "sweep", "--len", "1-20000", "--mergeable", "--jsonl")
    assert rows.returncode == 0 and rows.stderr == ""
    lines = rows.stdout.splitlines()
    assert len(lines) == 20000 and json.loads(lines[-1])["frame_len"] == 20000
    bad = _entry("", "trace", "--len", "65536", "--json")
    assert bad.returncode == 2 and json.loads(bad.stdout)["exit_code"] == 2


def test_exit_handlers_still_run() -> None:
    run = _entry("atexit.register(lambda: print('handler ran', file=sys.stderr))",
                 "trace", "--len", "1000", "--json")
    assert run.returncode == 0 and run.stderr == "handler ran\n"
    assert json.loads(run.stdout)["skb"]["truesize"] > 0


def test_other_threads_are_waited_for() -> None:
    setup = ("threading.Thread(target=lambda: (time.sleep(0.3), "
             "print('thread done', file=sys.stderr))).start()")
    run = _entry(setup, "trace", "--len", "1000", "--json")
    assert run.returncode == 0 and run.stderr == "thread done\n"
