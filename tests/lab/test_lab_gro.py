"""`vnetrx lab virtio --gro` against real Debian guests under QEMU (TCG): one boot per kernel
(mergeable with guest GSO: the mode with the most bursts), every burst of TCP frames put in the
rx ring with one used-ring update and one interrupt, every skb that leaves GRO in the guest
compared with `vnetrx replay --gro` of the same frames and observed polls. The recorded boots
of both kernels in all three modes are checked without QEMU by tests/paths/test_gro_guest.py.

Needs what tests/lab/test_lab_guest.py needs, plus gcc and a static libc for the guest's BPF
loader (data/groprobe.c); skipped with the reason otherwise. About 40 s per boot.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from tests.lab.test_lab_guest import IMAGES, _skip_reason
from vnetrx.cli import cli
from vnetrx.lab import gro
from vnetrx.schemas import schema

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("image", IMAGES or [None],
                         ids=[p.name.removeprefix("vmlinuz-") for p in IMAGES] or ["no-kernel"])
def test_every_skb_that_leaves_gro_in_the_guest_is_predicted(image: Path | None,
                                                             tmp_path: Path) -> None:
    reason = _skip_reason() or (None if shutil.which("gcc") else "gcc not installed")
    if reason is None and image is None:
        reason = "no Debian kernel (run `vnetrx lab fetch-kernel`)"
    if reason is not None:
        pytest.skip(reason)
    saved = tmp_path / "input.json"
    result = CliRunner().invoke(cli, ["lab", "virtio", "--image", str(image), "--gro",
                                      "--mode", "mergeable-gso", "--json", "--save-input",
                                      str(saved)])
    doc = json.loads(result.stdout)
    bad = [(b["name"], s["differ"]) for b in doc["bursts"] for s in b["skbs"] if not s["match"]]
    assert result.exit_code == 0, (bad, doc["notes"])
    assert doc["schema"] == gro.SCHEMA and doc["mode"] == "mergeable-gso"
    Draft202012Validator(schema("lab-gro")).validate(doc)
    names = [b["name"] for b in doc["bursts"]]
    assert names == [b.name for b in gro.bursts_for("mergeable-gso")] + ["sentinel"]
    # each burst in one poll, but the two larger than the budget: 64, and 64 + 6
    polls = {b["name"]: b["polls"] for b in doc["bursts"]}
    assert polls["v4-seg64"] == [64] and polls["v4-seg70"] == [64, 6]
    assert all(len(p) == 1 for name, p in polls.items() if name != "v4-seg70")
    objects = json.loads(saved.read_text())
    assert len(objects) == sum(doc["polls"])
    assert all(set(o) == {"frame", "hdr"} and len(bytes.fromhex(o["hdr"])) == 12
               for o in objects)


@pytest.mark.parametrize("image", IMAGES[-1:] or [None],
                         ids=[p.name.removeprefix("vmlinuz-") for p in IMAGES[-1:]]
                         or ["no-kernel"])
def test_big_mode_from_host_mtu_through_the_cli(image: Path | None) -> None:
    """--mode big --mtu 9000: QEMU offers VIRTIO_NET_F_MTU to the guest because the backend
    does (and sends it NET_SET_MTU), the guest picks big mode from the MTU alone (3-page
    chains, no guest GSO), and every skb that leaves GRO and every verdict agrees. One boot
    (the newest kernel): the four recorded ones are replayed by tests/paths/test_gro_guest.py."""
    reason = _skip_reason() or (None if shutil.which("gcc") else "gcc not installed")
    if reason is None and image is None:
        reason = "no Debian kernel (run `vnetrx lab fetch-kernel`)"
    if reason is not None:
        pytest.skip(reason)
    result = CliRunner().invoke(cli, ["lab", "virtio", "--image", str(image), "--gro",
                                      "--mode", "big", "--mtu", "9000", "--json"])
    doc = json.loads(result.stdout)
    bad = [(b["name"], s["differ"]) for b in doc["bursts"] for s in b["skbs"] if not s["match"]]
    assert result.exit_code == 0, (bad, doc["notes"], doc["verdicts_differ"])
    assert (doc["mode"], doc["mtu"], doc["notes"]) == ("big", 9000, [])
    Draft202012Validator(schema("lab-gro")).validate(doc)
    assert [b["name"] for b in doc["bursts"]] == [
        b.name for b in gro.bursts_for("big", 9000)] + ["sentinel"]
    assert all(len(b["polls"]) == 1 for b in doc["bursts"])  # every burst in one poll
