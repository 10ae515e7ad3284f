"""Where ``lab vhost`` gets vnetrx's predictions: the CLI's own ``vnetrx trace --path vhost-tx
--json`` (one run per TX frame) and ``vnetrx replay --path vhost-rx --jsonl`` (one run per RX
case), run in this process as the command line runs them. Before either exists (issue 27's model lands on other
branches) the first call is refused as a usage error (exit 2): the direction is then reported
as not predicted, and nothing else is tried."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class Unavailable(Exception):
    """The vnetrx this runs has no such path (its CLI refused the option)."""


def _run(argv: list[str]) -> tuple[int, str, str]:
    """``vnetrx ARGV`` run in this process (its exit status, stdout and stderr): the same
    options, checks and output as the command line, without a Python start-up per case (a
    process each made ``lab vhost --from-log`` of 150 cases take a minute)."""
    from vnetrx.cli import cli

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(args=argv, prog_name="vnetrx")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def tx_argv(record: Mapping[str, Any], kernel: str) -> list[str]:
    """``trace --path vhost-tx`` for one observed TX frame (the 10-byte virtio_net_hdr it was
    sent behind; --sndbuf only when the case set one)."""
    argv = ["trace", "--path", "vhost-tx", "--len", str(record["len"]), "--kernel", kernel]
    if record.get("l4"):
        argv += ["--l4", str(record["l4"])]
    if any(c != "0" for c in str(record["hdr"])):
        argv += ["--hdr", str(record["hdr"])]
    if record.get("sndbuf"):
        argv += ["--sndbuf", str(record["sndbuf"])]
    if record.get("xdp"):
        argv += ["--xdp", str(record["xdp"])]
    return [*argv, "--json"]


def rx_argv(record: Mapping[str, Any], kernel: str, frames_file: str) -> list[str]:
    mode = {"mergeable": ["--mergeable"], "big": ["--big"]}.get(str(record["mode"]), [])
    # the probe posts buffers of exactly buf_len, one a chain without MRG_RXBUF
    argv = ["replay", "--path", "vhost-rx", "--from", frames_file, *mode,
            "--buf-len", str(record["buf_len"]), "--uniform-buffers",
            "--hdr-len", str(record["hdr_size"]), "--kernel", kernel]
    if not record["tap_offload"]:
        argv.append("--no-tap-offload")
    return [*argv, "--jsonl"]


def _refused_option(code: int, stderr: str) -> bool:
    return code == 2 and ("--path" in stderr or "No such option" in stderr
                          or "no such option" in stderr)


class CliPredictions:
    """The two prediction callables of vhost_compare.compare, backed by the vnetrx CLI.
    ``notes``: why a direction is not predicted."""

    def __init__(self) -> None:
        self.tx_available: bool | None = None
        self.rx_available: bool | None = None
        self.notes: list[str] = []

    def tx(self, record: Mapping[str, Any], kernel: str) -> Mapping[str, Any] | None:
        if self.tx_available is False:
            return None
        code, out, err = _run(tx_argv(record, kernel))
        if _refused_option(code, err):
            self.tx_available = False
            self.notes.append("vnetrx trace has no --path vhost-tx here: TX not predicted ("
                              + (err.strip().splitlines() or ["exit 2"])[-1] + ")")
            return None
        self.tx_available = True
        try:
            document = json.loads(out)
        except ValueError:
            return None
        return document if isinstance(document, dict) and "error" not in document else None

    def rx(self, record: Mapping[str, Any], kernel: str) -> Sequence[Mapping[str, Any]] | None:
        if self.rx_available is False:
            return None
        with tempfile.TemporaryDirectory(prefix="vnetrx-lab-vhost-") as tmp:
            frames = Path(tmp, "frames.json")
            frames.write_text(json.dumps(record["frames"]))
            code, out, err = _run(rx_argv(record, kernel, str(frames)))
        if _refused_option(code, err):
            self.rx_available = False
            self.notes.append("vnetrx replay has no --path vhost-rx here: RX not predicted ("
                              + (err.strip().splitlines() or ["exit 2"])[-1] + ")")
            return None
        self.rx_available = True
        if code != 0:
            return None
        lines = []
        for line in out.splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                return None
            if isinstance(value, dict) and ("used" in value or value.get("discarded")):
                lines.append(value)
        return lines
