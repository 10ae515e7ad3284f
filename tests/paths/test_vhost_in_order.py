"""VIRTIO_F_IN_ORDER in vhost-net's handle_rx (6.17+, 45347e79b544): from source only
(drivers/vhost/net.c:get_rx_bufs, handle_rx; vhost.c:vhost_add_used_n_in_order @6.17.0,
@6.18.9): one used element per packet, the last chain's used length."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.errors import UnsupportedError
from vnetrx.kernel.registry import lookup
from vnetrx.paths.vhost.rx import HostFrame, VhostRxSetup, vhost_rx


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
