"""VIRTIO_F_IN_ORDER in vhost-net (6.17+, 45347e79b544): from source only
(drivers/vhost/net.c:get_rx_bufs, handle_rx, handle_tx_copy, vhost_tx_batch;
vhost.c:vhost_add_used_n_in_order @6.17.0, @6.18.9): one used element per rx packet (the last
chain's used length) and per tx used-ring update (the last chain's head, len 0)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.errors import UnsupportedError
from vnetrx.kernel.registry import lookup
from vnetrx.paths.vhost import VhostTxSetup
from vnetrx.paths.vhost.rx import HostFrame, VhostRxSetup, vhost_rx
from vnetrx.paths.vhost.tx_stream import TxRow, handle_tx_stream


def test_one_used_element_per_packet() -> None:
    r = vhost_rx(lookup("6.18"), VhostRxSetup(buf_len=1536, uniform=True, in_order=True),
                 [HostFrame(3000), HostFrame(100)], guest=False)
    # 3000 + 12 = 3012 bytes: 1536 full, then 1476 in the second buffer
    assert [p.used for p in r.packets] == [(1536, 1476), (112,)]
    assert [p.used_elems for p in r.packets] == [(1476,), (112,)]


def test_without_in_order_every_chain_is_an_element() -> None:
    r = vhost_rx(lookup("6.18"), VhostRxSetup(buf_len=1536, uniform=True),
                 [HostFrame(3000)], guest=False)
    assert r.packets[0].used_elems == (1536, 1476)


@pytest.mark.parametrize(("kernel", "ok"), [("6.16.9", False), ("6.17.0", True)])
def test_release_boundary(kernel: str, ok: bool) -> None:
    setup = VhostRxSetup(buf_len=1536, uniform=True, in_order=True)
    if ok:
        assert vhost_rx(lookup(kernel), setup, [HostFrame(100)], guest=False).packets
    else:
        with pytest.raises(UnsupportedError, match=r"valid: --kernel 6\.17 or later"):
            vhost_rx(lookup(kernel), setup, [HostFrame(100)], guest=False)


def test_cli_rows_carry_used_elems_only_with_in_order() -> None:
    args = ["replay", "--path", "vhost-rx", "--len", "3000", "--mergeable", "--buf-len",
            "1536", "--kernel", "6.18", "--jsonl"]
    plain = CliRunner().invoke(cli, args)
    assert plain.exit_code == 0 and "used_elems" not in json.loads(plain.output)
    row = json.loads(CliRunner().invoke(cli, [*args, "--in-order"]).output)
    assert row["used"] == [1536, 1476] and row["used_elems"] == [1476]
    old = CliRunner().invoke(cli, [*args[:-3], "--kernel", "6.16.9", "--in-order"])
    assert old.exit_code == 2 and "6.17 or later" in old.output


def _tx_rows(kernel: str, lengths: list[int], in_order: bool) -> list[TxRow]:
    return list(handle_tx_stream(lookup(kernel), VhostTxSetup(),
                                 [(n, None) for n in lengths], in_order))


def test_tx_one_used_element_per_update() -> None:
    """handle_tx_copy @6.18.9: a frame too large to batch (5000 bytes: -ENOSPC) flushes the
    three batched before it (update 0); it and the frame after it share update 1. In order, each
    update writes one element, the last chain's."""
    rows = _tx_rows("6.18", [100, 100, 100, 5000, 100], in_order=True)
    assert [r.update for r in rows] == [0, 0, 0, 1, 1]
    assert [r.used_elem for r in rows] == [False, False, True, False, True]
    plain = _tx_rows("6.18", [100, 100, 100, 5000, 100], in_order=False)
    assert all(r.used_elem for r in plain)


def test_tx_64_chains_one_element() -> None:
    """done_idx reaching VHOST_NET_BATCH (64) flushes: 65 frames, two updates, two elements."""
    rows = _tx_rows("6.18", [100] * 65, in_order=True)
    assert [r.frame for r in rows if r.used_elem] == [63, 64]


@pytest.mark.parametrize(("kernel", "ok"), [("6.16.9", False), ("6.17.0", True)])
def test_tx_release_boundary(kernel: str, ok: bool) -> None:
    if ok:
        assert _tx_rows(kernel, [100], in_order=True)[0].used_elem
    else:
        with pytest.raises(UnsupportedError, match=r"valid: --kernel 6\.17 or later"):
            handle_tx_stream(lookup(kernel), VhostTxSetup(), [(100, None)], True)


def test_tx_rows_match_the_schema() -> None:
    from jsonschema import Draft202012Validator

    from vnetrx.schemas import schema

    out = CliRunner().invoke(cli, ["replay", "--path", "vhost-tx", "--len", "100x70,5000",
                                   "--in-order", "--kernel", "6.18", "--jsonl"]).output
    validator = Draft202012Validator(schema("vhost-tx-row"))
    rows = [json.loads(line) for line in out.splitlines()]
    for row in rows:
        validator.validate(row)
    assert sum(r["used_elem"] for r in rows) == 3  # updates at 64, before 5000, at the end


def test_cli_tx_rows_and_refusals() -> None:
    args = ["replay", "--path", "vhost-tx", "--len", "100,100", "--kernel", "6.18", "--jsonl"]
    rows = [json.loads(line) for line in
            CliRunner().invoke(cli, [*args, "--in-order"]).output.splitlines()]
    assert [r["used_elem"] for r in rows] == [False, True]
    plain = CliRunner().invoke(cli, args).output.splitlines()
    assert all("used_elem" not in json.loads(line) for line in plain)
    virtio = CliRunner().invoke(cli, ["replay", "--len", "100", "--in-order"])
    assert virtio.exit_code == 2 and "vhost-rx and vhost-tx only" in virtio.output
