"""vnetrx/model.py: the skb's output fields (SKB_FIELDS) and an XDP run's (XDP_FIELDS) are
declared once and every output derived from them carries exactly those fields, in that order;
the paths and outcomes a trace has are enums that hold exactly what traces produce."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.diff import RESULT_FIELDS
from vnetrx.engine import trace_virtio
from vnetrx.kernel.registry import lookup
from vnetrx.model import (
    DRIVER_COUNTERS,
    KPROBE_FIELDS,
    RESULT_RECORDS,
    RESULT_STRINGS,
    SKB_FIELDS,
    TRACEPOINT_FIELDS,
    XDP_ACTIONS,
    XDP_FIELDS,
    XDP_OUTCOMES,
    Outcome,
    Path,
    Received,
    RecordField,
    Skb,
    Trace,
    XdpMode,
    XdpRun,
)
from vnetrx.paths.virtio_net import RxFrame, VirtioRxSetup
from vnetrx.schemas import SKB, VHOST_TX, XDP_RUN
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


# --- what surrounds the skb: XdpRun's fields (XDP_FIELDS) and the enums ------------------------

XDP_NAMES = [f.name for f in XDP_FIELDS]
# a virtio-net XDP_TX (xdp, its counters and driver_counters, xdp_tx) and a tap XDP_TX
XDP_TX_ARGS = [["--len", "1000", "--xdp", "tx", "--kernel", "6.18"],
               ["--path", "tap", "--len", "1000", "--xdp", "tx"]]


def test_xdp_fields_cover_every_xdprun_attribute_once() -> None:
    assert len(XDP_NAMES) == len(set(XDP_NAMES)) == len(XdpRun._fields)
    assert set(XDP_NAMES) == set(XdpRun._fields)
    places = [f.at for f in XDP_FIELDS]
    assert len(places) == len(set(places))
    assert {p.split(".")[0] for p in places} == {"xdp", "xdp_tx"}
    assert {f.kind for f in XDP_FIELDS} <= {"nat", "nat?", "str", "str?", "bool", "counters?"}
    assert all(f.values for f in XDP_FIELDS if f.kind == "counters?")
    assert [f.name for f in XDP_FIELDS if f.gate] == ["read_len"]


@pytest.mark.parametrize("args", XDP_TX_ARGS)
def test_xdp_json_is_laid_out_as_the_table_says(runner: CliRunner, args: list[str]) -> None:
    doc = json.loads(runner.invoke(cli, ["trace", *args, "--json"]).stdout)
    assert list(doc)[-2:] == ["xdp", "xdp_tx"]
    assert list(doc["xdp"]) == ["action", "mode", "function", "xdp_buff", "ran", "refused",
                                "result", "errno", "copied", "counters", "driver_counters"]
    assert list(doc["xdp"]["xdp_buff"]) == ["headroom", "len", "frame_sz", "tailroom",
                                            "nr_frags", "frags_size", "meta_len"]
    assert list(doc["xdp"]["counters"]) == ["rx_packets", "rx_bytes", "rx_dropped",
                                            "tx_packets", "tx_bytes"]
    assert list(doc["xdp_tx"]) == ["len", "hdr"]
    assert list(XDP_RUN["properties"]) == list(doc["xdp"])


def test_xdp_json_without_a_read_back_has_no_xdp_tx(runner: CliRunner) -> None:
    doc = json.loads(runner.invoke(cli, ["trace", "--len", "1000", "--xdp", "drop", "--kernel",
                                         "6.18", "--json"]).stdout)
    assert "xdp" in doc and "xdp_tx" not in doc
    assert doc["xdp"]["driver_counters"] == {
        "rx_drops": 1, "rx_xdp_packets": 1, "rx_xdp_tx": 0, "rx_xdp_redirects": 0,
        "rx_xdp_drops": 1, "tx_xdp_tx": 0, "tx_xdp_tx_drops": 0}
    tap = json.loads(runner.invoke(cli, ["trace", "--path", "tap", "--len", "1000", "--xdp",
                                         "drop", "--json"]).stdout)
    assert tap["xdp"]["driver_counters"] is None  # tun has no queue counters


# --- the structured result records (RESULT_RECORDS): refused_by, xdp, vhost ------------------

def _covered(fields: tuple[RecordField, ...], record: type) -> None:
    names = [f.name for f in fields]
    assert names == list(record._fields), record  # type: ignore[attr-defined]
    assert len({f.at for f in fields}) == len(fields)
    assert {f.kind for f in fields} <= {"nat", "nat?", "str", "str?", "strs", "bool",
                                        "counters?", "record?"}
    for f in fields:
        assert (f.table is not None) == (f.kind == "record?"), f.name
        if f.table is not None:
            _covered(f.table.fields, f.table.record)


@pytest.mark.parametrize("r", RESULT_RECORDS, ids=lambda r: r.name)
def test_each_result_record_table_covers_its_record_in_attribute_order(r: object) -> None:
    from vnetrx.model import ResultRecord

    assert isinstance(r, ResultRecord)
    table = r.table
    if r.name == "xdp":  # XDP_FIELDS is in JSON order, not attribute order
        assert {f.name for f in table.fields} == set(XdpRun._fields)
        assert len(table.fields) == len(XdpRun._fields)
    else:
        _covered(table.fields, table.record)


def test_every_result_attribute_is_declared_in_one_table() -> None:
    """Received's fields: the string ones (RESULT_STRINGS), the structured ones (RESULT_RECORDS)
    and the skb and its buffers; a Trace has each of them too. A new field not declared in a
    table fails here (its JSON, schema and diff would miss it)."""
    strings = [f.name for f in RESULT_STRINGS]
    records = [r.name for r in RESULT_RECORDS]
    assert sorted([*strings, *records, "buffer", "buffers", "skb", "cost"]) == sorted(
        Received._fields)
    assert set(Received._fields) <= set(Trace._fields)


def test_vhost_json_is_laid_out_as_the_table_says(runner: CliRunner) -> None:
    doc = json.loads(runner.invoke(cli, ["trace", "--path", "vhost-tx", "--len", "1000",
                                         "--json"]).stdout)
    assert list(doc)[-1] == "vhost"
    assert list(doc["vhost"]) == ["path", "reason", "sock_hlen", "len", "sk_sndbuf", "zerocopy",
                                  "zcopy_used", "iff_napi", "page_frag", "stalled", "delivery",
                                  "limits", "buffer"]
    assert list(doc["vhost"]["limits"]) == ["batch", "weight", "pkt_weight"]
    # drivers/vhost/net.c: VHOST_NET_BATCH 64, VHOST_NET_WEIGHT 0x80000, VHOST_NET_PKT_WEIGHT 256
    assert doc["vhost"]["limits"] == {"batch": 64, "weight": 0x80000, "pkt_weight": 256}
    assert list(doc["vhost"]["buffer"]) == ["pad", "headroom", "buflen", "page_size",
                                            "max_frame", "hdr_offset"]
    assert list(VHOST_TX["properties"]) == list(doc["vhost"])
    assert doc["refused_by"] is None and list(doc).index("refused_by") == list(doc).index(
        "counter") + 1


def test_diff_compares_the_vhost_fields_in_table_order() -> None:
    assert [f for f in RESULT_FIELDS if f.startswith("vhost")] == [
        "vhost.path", "vhost.reason", "vhost.page_frag", "vhost.stalled", "vhost.buffer.buflen",
        "vhost.buffer.hdr_offset"]
    assert not [f for f in RESULT_FIELDS if f.startswith("refused_by")]


def test_diff_compares_the_xdp_fields_in_this_order() -> None:
    """`vnetrx diff`'s XDP rows, as it prints them: the run's own fields, then the xdp_buff's,
    the counters and the queue counters, then the reader's bytes."""
    assert [f for f in RESULT_FIELDS if f.startswith("xdp")] == [
        "xdp.mode", "xdp.function", "xdp.refused", "xdp.result", "xdp.errno", "xdp.copied",
        "xdp.xdp_buff.headroom", "xdp.xdp_buff.frame_sz", "xdp.xdp_buff.nr_frags",
        "xdp.counters.rx_packets", "xdp.counters.rx_bytes", "xdp.counters.rx_dropped",
        "xdp.counters.tx_packets", "xdp.counters.tx_bytes",
        "xdp.driver_counters.rx_drops", "xdp.driver_counters.rx_xdp_packets",
        "xdp.driver_counters.rx_xdp_tx", "xdp.driver_counters.rx_xdp_redirects",
        "xdp.driver_counters.rx_xdp_drops", "xdp.driver_counters.tx_xdp_tx",
        "xdp.driver_counters.tx_xdp_tx_drops", "xdp_tx.len"]


def test_the_paths_name_the_verdicts_and_counters_as_the_table() -> None:
    """paths/xdp.py's verdicts (enum xdp_action, by value) and the queue counters virtio-net's
    XDP path moves are the table's."""
    from vnetrx.paths.xdp import ACTIONS, VERDICT

    assert [VERDICT[name] for name in sorted(ACTIONS, key=ACTIONS.__getitem__)] == list(
        XDP_ACTIONS)
    t = trace_virtio(lookup("6.12"), VirtioRxSetup(xdp="pass"), RxFrame(1000))
    assert t.xdp is not None
    assert tuple(name for name, _ in t.xdp.driver) == DRIVER_COUNTERS


def test_enum_members_print_as_their_values() -> None:
    assert str(Outcome.XDP_TX) == f"{Outcome.XDP_TX}" == "xdp_tx"
    assert str(Path.VIRTIO_MERGEABLE) == "virtio-mergeable"
    assert json.dumps([XdpMode.GENERIC, Outcome.COPY]) == '["generic", "copy"]'
    assert Outcome.DROP == "drop" and "tap" in set(Path)
    assert XDP_OUTCOMES == ("xdp_drop", "xdp_tx", "xdp_redirect")


# One trace per outcome, path and XDP mode the model has; each case is the fact that these
# options end so on that kernel.
PRODUCED = [
    (["--len", "1000", "--kernel", "6.1"], "virtio-small", "build_skb"),
    (["--len", "1000", "--mtu", "9000", "--kernel", "6.1"], "virtio-big", "build_skb"),
    (["--len", "1000", "--mergeable", "--kernel", "5.12"], "virtio-mergeable", "copy"),
    (["--len", "2000", "--kernel", "6.1"], "virtio-small", "drop"),
    (["--path", "tap", "--len", "9000", "--blocking", "--kernel", "6.1"], "tap", "alloc_skb"),
    (["--path", "tap", "--len", "5"], "tap", "error"),
    (["--len", "1000", "--mergeable", "--mtu", "9000", "--xdp", "pass", "--kernel", "6.12"],
     "virtio-mergeable", "error"),  # virtnet_xdp_set refuses the program
    (["--len", "1000", "--xdp", "drop", "--kernel", "6.18"], "virtio-small", "xdp_drop"),
    (["--len", "1000", "--mergeable", "--xdp", "tx", "--kernel", "6.1"], "virtio-mergeable",
     "xdp_tx"),
    (["--path", "tap", "--len", "1000", "--xdp", "redirect"], "tap", "xdp_redirect"),
    (["--path", "tap", "--len", "9000", "--xdp", "pass"], "tap", "alloc_skb"),  # generic XDP
    (["--path", "vhost-tx", "--len", "1000"], "vhost-tx", "build_skb"),  # tun_xdp_one
]


def test_every_outcome_path_and_xdp_mode_is_one_a_trace_produces() -> None:
    """The enums hold exactly the values traces produce: each case's path and outcome are
    members, and together the cases produce every member."""
    from vnetrx.cli.trace import run_trace_args

    outcomes, paths, modes = set(), set(), set()
    for args, path, outcome in PRODUCED:
        t = run_trace_args(args)
        assert (t.path, t.outcome) == (path, outcome), args
        assert Path(t.path) == path and Outcome(t.outcome) == outcome
        outcomes.add(t.outcome)
        paths.add(t.path)
        if t.xdp is not None:
            modes.add(XdpMode(t.xdp.mode))
            for f in XDP_FIELDS:
                value = getattr(t.xdp, f.name)
                if f.values and f.kind != "counters?" and value is not None:
                    assert value in f.values, (f.name, value)
    assert outcomes == set(Outcome)
    assert paths == set(Path)
    assert modes == set(XdpMode)
