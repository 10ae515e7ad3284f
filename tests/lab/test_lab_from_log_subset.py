"""``lab virtio --from-log LOG --len …``: a length the log never sent is "not in the log" (a
usage error naming it), never a matching drop; lengths it sent are reported exactly as in the
whole log's comparison (a mergeable frame's buffer depends on every frame before it). Issue 29:
``--len 30001,40001,50001`` reported "3/3 frames match"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests import DATA
from vnetrx.cli import cli

LOGS = sorted((DATA / "lab").glob("*.log"))
RUNNER = CliRunner()


def lab(log: Path, *args: str) -> tuple[int, str, str]:
    out = RUNNER.invoke(cli, ["lab", "virtio", "--from-log", str(log), *args])
    return out.exit_code, out.stdout, out.stderr


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_lengths_never_sent_are_refused(log: Path) -> None:
    code, out, err = lab(log, "--len", "30001,40001,50001")
    assert code == 2 and out == ""
    assert err.startswith("vnetrx: error: --len: 3 of 3 lengths are not in the log "
                          "(30001,40001,50001)") and err.count("\n") == 1, err
    code, out, err = lab(log, "--len", "1-65535", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["exit_code"] == 2 and "lengths are not in the log" in doc["error"]


def test_one_absent_length_among_sent_ones_is_refused() -> None:
    log = DATA / "lab" / "mergeable-6.1.0-57-amd64.log"
    code, _, err = lab(log, "--len", "60,3000,3001")
    assert code == 2 and "1 of 3 lengths are not in the log (3001)" in err


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_sent_lengths_report_as_in_the_whole_log(log: Path) -> None:
    code, out, _ = lab(log, "--json")
    whole = {f["frame_len"]: f for f in json.loads(out)["frames"]}
    picked = sorted(whole)[1::3]  # every third sent length
    code, out, err = lab(log, "--len", ",".join(map(str, reversed(picked))), "--json")
    frames = json.loads(out)["frames"]
    assert sorted(f["frame_len"] for f in frames) == picked, err
    assert all(f == whole[f["frame_len"]] for f in frames)
    assert code == (0 if all(f["match"] for f in frames) else 1)
