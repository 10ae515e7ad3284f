"""vnetrx/model.py: the skb's output fields are declared once (SKB_FIELDS) and every output
derived from them carries exactly those fields, in that order."""

from __future__ import annotations

import json

from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.diff import RESULT_FIELDS
from vnetrx.model import KPROBE_FIELDS, SKB_FIELDS, TRACEPOINT_FIELDS, Skb
from vnetrx.schemas import SKB
from vnetrx.sweep import CSV_FIELDS, ROW_SKB_FIELDS

NAMES = [f.name for f in SKB_FIELDS]


def test_every_field_is_an_skb_attribute_and_every_skb_number_a_field() -> None:
    skb = Skb("x", 1536, 12, 1012, 1216, 1000, 0, 1792)
    for name in NAMES:
        assert hasattr(skb, name), name
    assert set(Skb._fields) - {"frags", "frag_list"} <= set(NAMES)
    assert len(set(NAMES)) == len(NAMES)
    assert {f.kind for f in SKB_FIELDS} <= {"nat", "nat?", "str", "strs", "bool"}


def test_trace_json_schema_and_derived_lists_follow_the_table(runner: CliRunner) -> None:
    doc = json.loads(runner.invoke(cli, ["trace", "--len", "1000", "--mergeable", "--json"]).stdout)
    assert list(doc["skb"])[: len(NAMES)] == NAMES
    assert list(doc["skb"])[len(NAMES):] == ["frags", "frag_list"]
    assert list(SKB["properties"])[: len(NAMES)] == NAMES
    assert [f for f in RESULT_FIELDS if f.startswith("skb.")] == [
        f"skb.{f.name}" for f in SKB_FIELDS if f.diff]
    assert list(ROW_SKB_FIELDS) == [f.name for f in SKB_FIELDS if f.row]
    assert CSV_FIELDS[4: 4 + len(ROW_SKB_FIELDS)] == ROW_SKB_FIELDS
    # what net:napi_gro_receive_entry / netif_receive_skb_entry print of the skb
    # (include/trace/events/net.h, net_dev_rx_verbose_template), and what the lab's kprobe reads
    assert TRACEPOINT_FIELDS == ("len", "data_len", "truesize", "nr_frags", "ip_summed",
                                 "gso_size", "gso_type", "hash", "l4_hash")
    assert KPROBE_FIELDS == ("mac_header", "end", "data", "tail")


def test_text_view_prints_every_placed_field(runner: CliRunner) -> None:
    out = runner.invoke(cli, ["trace", "--len", "1000", "--mergeable"]).stdout
    block = out[out.index("skb as the stack sees it"):]
    for f in SKB_FIELDS:
        if f.text is not None:
            assert f"{f.name} " in block, f.name
