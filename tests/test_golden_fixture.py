"""The golden files' comparison and scrubs (tests/goldens.py): a scrub removes what it names and
nothing else, so a scrubbed golden still fails on any other difference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.goldens import NO_KERNEL_CHANGES, compare, drop_json, scrubbed
from vnetrx.cli import cli

GOLDEN = Path(__file__).parent / "golden"

DOC = """{
  "kernel": {
    "name": "6.1.192",
    "changes": [
      "page_to_skb_build_skb"
    ]
  },
  "skb": {
    "len": 986
  }
}
"""


SCRUBBED = """{
  "kernel": {
    "name": "6.1.192"
  },
  "skb": {
    "len": 986
  }
}
"""


def test_drop_json_removes_the_key_and_keeps_the_form() -> None:
    assert NO_KERNEL_CHANGES(DOC) == SCRUBBED
    assert drop_json("kernel.changes", "skb")(DOC) == '{\n  "kernel": {\n    "name": "6.1.192"\n  }\n}\n'


@pytest.mark.parametrize("path", ["kernel.nope", "nope.changes", "skb.len.x", "changes"])
def test_a_key_that_is_not_there_fails(path: str) -> None:
    with pytest.raises(AssertionError, match=f"{path} is not in the document"):
        drop_json(path)(DOC)


def test_json_not_formatted_as_vnetrx_prints_it_fails() -> None:
    with pytest.raises(AssertionError, match="not JSON as vnetrx prints it"):
        NO_KERNEL_CHANGES(json.dumps(json.loads(DOC), indent=4) + "\n")
    with pytest.raises(AssertionError, match="not JSON as vnetrx prints it"):
        NO_KERNEL_CHANGES(DOC.rstrip("\n"))


def test_regex_scrubs_apply_in_order_and_must_match() -> None:
    assert scrubbed("took 12 ms\nat 0x7f00\n", [(r"\d+ ms", "N ms"), (r"0x[0-9a-f]+$", "ADDR")]) \
        == "took N ms\nat ADDR\n"
    assert scrubbed("as is\n", None) == "as is\n"
    with pytest.raises(AssertionError, match="matched nothing"):
        scrubbed("took 12 ms\n", [(r"\d+ s\b", "N s")])


def _small_1000_6_1() -> dict[str, object]:
    result = CliRunner().invoke(cli, ["trace", "--len", "1000", "--kernel", "6.1", "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def _printed(doc: object) -> str:
    return json.dumps(doc, indent=2) + "\n"


def test_a_scrubbed_golden_ignores_only_the_change_keys(tmp_path: Path) -> None:
    """README's small-mode golden: another list of change keys matches; one skb value or one
    note more does not, and the actual output is saved for review."""
    doc = _small_1000_6_1()
    name = "trace/small-1000-6.1.json"
    compare(GOLDEN, tmp_path, name, _printed(doc), NO_KERNEL_CHANGES)
    doc["kernel"]["changes"] = ["a_change_added_to_the_table"]  # type: ignore[index]
    compare(GOLDEN, tmp_path, name, _printed(doc), NO_KERNEL_CHANGES)
    assert not (tmp_path / name).exists()

    doc["skb"]["len"] = 987  # type: ignore[index]
    with pytest.raises(pytest.fail.Exception, match='(?s)differs from golden.*-    "len": 986,\n'
                                                    r'\+    "len": 987,'):
        compare(GOLDEN, tmp_path, name, _printed(doc), NO_KERNEL_CHANGES)
    assert '"len": 987' in (tmp_path / name).read_text()
    assert '"changes"' not in (tmp_path / name).read_text()  # saved as compared: scrubbed

    doc["skb"]["len"] = 986  # type: ignore[index]
    doc["notes"].append("one note more")  # type: ignore[attr-defined]
    with pytest.raises(pytest.fail.Exception, match="differs from golden"):
        compare(GOLDEN, tmp_path, name, _printed(doc), NO_KERNEL_CHANGES)


def test_update_writes_the_scrubbed_output_and_a_missing_golden_fails(tmp_path: Path) -> None:
    golden, actual = tmp_path / "golden", tmp_path / "actual"
    with pytest.raises(pytest.fail.Exception, match="no golden file"):
        compare(golden, actual, "t/doc.json", DOC, NO_KERNEL_CHANGES)
    compare(golden, actual, "t/doc.json", DOC, NO_KERNEL_CHANGES, update=True)
    assert (golden / "t/doc.json").read_text() == SCRUBBED
    compare(golden, actual, "t/doc.json", DOC, NO_KERNEL_CHANGES)
    with pytest.raises(pytest.fail.Exception, match="differs from golden"):
        compare(golden, actual, "t/doc.json", DOC)  # unscrubbed: the changes are a difference
