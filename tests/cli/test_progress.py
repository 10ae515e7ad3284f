"""Progress lines go to stderr only when it is a terminal (a pty here), never into a pipe."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys

import pytest

SCRIPTS = {
    "lab stage": "from vnetrx.cli.lab import stage_line\nimport time\n"
                 "with stage_line() as stage:\n    stage('booting Linux 6.1.0-57-amd64')\n"
                 "    time.sleep(0.5)\n",
    "observe count": "from vnetrx.cli.observe import _progress\nimport time\n"
                     "with _progress(10, 'eth0') as advance:\n    advance(); advance()\n"
                     "    time.sleep(0.5)\n",
}
EXPECTED = {"lab stage": "booting Linux 6.1.0-57-amd64", "observe count": "recording skbs on eth0"}


def _stderr_on_a_pty(script: str) -> str:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=slave, stdout=subprocess.PIPE,
                            env={**os.environ, "TERM": "xterm", "COLUMNS": "100"})
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 10)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the pty
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=10)
    os.close(master)
    return out.decode(errors="replace")


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_progress_on_a_terminal(name: str) -> None:
    assert EXPECTED[name] in _stderr_on_a_pty(SCRIPTS[name])


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_no_progress_into_a_pipe(name: str) -> None:
    run = subprocess.run([sys.executable, "-c", SCRIPTS[name]], capture_output=True, text=True,
                         check=True)
    assert run.stderr == "" and run.stdout == ""
