"""vnetrx verify gro: the comparison (vnetrx/live/verify_gro.py) on the 157 cases recorded on
6.18.44 (tests/data/gro; no root needed), a changed observation caught with its first
difference, the JSON document against its schema; the command's refusals."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from vnetrx.cli import cli
from vnetrx.kernel.registry import lookup, profile_for
from vnetrx.kernel.version import parse_release
from vnetrx.live import gro_cases
from vnetrx.live.verify_gro import compare, report
from vnetrx.schemas import schema

DATA = json.loads((Path(__file__).parents[1] / "data" / "gro" / "linux-6.18.44.json").read_text())
# the machine that recorded it, as `--kernel running` read it (tests/paths/test_gro_oracle.py)
KERNEL = profile_for(parse_release("6.18.44"), lookup("6.18.44").build._replace(
    config="running", max_header=32, small_head_observed=576, vlan_8021q=False),
    source="tests/data/gro")


def case_and_result(saved: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    case = {"name": saved["name"], "burst": saved["burst"], "tap": saved["tap"]}
    return case, {"observed": saved["observed"], "retries": saved["retries"],
                  "deterministic": saved["deterministic"]}


def test_every_recorded_case_matches_and_the_report_validates() -> None:
    checks = [compare(KERNEL, *case_and_result(c)) for c in DATA["cases"]]
    assert [c.name for c in checks if not c.match] == []
    doc = report(KERNEL, checks)
    Draft202012Validator(schema("verify-gro")).validate(doc)
    assert doc["summary"] == {"cases": 157, "matched": 157}


def test_a_changed_observation_is_a_difference() -> None:
    saved = next(c for c in DATA["cases"] if c["name"] == "seg46")
    case, result = case_and_result(copy.deepcopy(saved))
    result["observed"]["skbs"][0]["truesize"] += 1
    check = compare(KERNEL, case, result)
    assert not check.match and check.difference is not None
    assert check.difference.startswith("skb 0: truesize")
    case, result = case_and_result(copy.deepcopy(saved))
    result["observed"]["inputs"][3]["verdict"] = "NORMAL"
    assert compare(KERNEL, case, result).difference == (
        "input 3: gro_result NORMAL (kernel) != MERGED_FREE (model)")
    case, result = case_and_result(copy.deepcopy(saved))
    result["observed"]["skbs"].pop()
    assert compare(KERNEL, case, result).difference == (
        "the kernel delivered 1 skb(s), the model 2")


def test_the_matrix_is_the_recorded_one() -> None:
    # the cases verify gro writes are the ones tests/data/gro holds, option for option
    assert [(c["name"], c["burst"], gro_cases.tap_options(c)) for c in gro_cases.cases()] == [
        (c["name"], c["burst"], c["tap"]) for c in DATA["cases"]]


@pytest.mark.parametrize(("args", "message"), [
    (["verify", "gro", "--cases", "seg8,nope"], "--cases: nope: not a case"),
    (["verify", "gro", "--repeats", "0"], "--repeats"),
    (["verify", "tap", "--gro", "--blocking"], "--gro writes its own bursts: drop --blocking"),
])
def test_refusals(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and message in result.stderr, result.output


def test_list() -> None:
    result = CliRunner().invoke(cli, ["verify", "gro", "--list"])
    assert result.exit_code == 0
    assert result.stdout.split() == [c["name"] for c in DATA["cases"]]


def test_the_schema_names_the_compared_fields() -> None:
    from vnetrx.live.verify_gro import FIELDS

    skb = schema("verify-gro")["properties"]["cases"]["items"]["properties"]["kernel"]
    assert set(skb["properties"]["skbs"]["items"]["properties"]) == {*FIELDS, "frames"}
