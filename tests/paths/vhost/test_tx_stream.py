"""handle_tx over a stream (vnetrx/paths/vhost/tx_stream.py) against what real 6.1.192 and
6.12.117 guests' vhost-net did with the same chains (tests/data/vhost, recorded by `vnetrx lab
vhost`: each case a fresh vhost instance and tap, the chains queued before one kick): every
frame's road, the sendmsg() that carried it, the batch's size, its buffer's length and offset
in vhost's page frag, and the guest's signals (one per used-ring update)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from vnetrx.kernel.registry import lookup
from vnetrx.paths.vhost import VhostTxSetup
from vnetrx.paths.vhost.tx_stream import PageFrag, handle_tx_stream

DATA = Path(__file__).parents[2] / "data" / "vhost"
RUNS = {"6.1.170": "linux-6.1.0-47-amd64.json", "6.1.176": "linux-6.1.0-50-amd64.json",
        "6.1.177": "linux-6.1.0-51-amd64.json", "6.1.187": "linux-6.1.0-53-amd64.json",
        "6.1.192": "linux-6.1.0-57-amd64.json",
        "6.12.100": "linux-6.12.100+deb12-amd64.json",
        "6.12.107": "linux-6.12.107+deb12-amd64.json",
        "6.12.111": "linux-6.12.111+deb12-amd64.json",
        "6.12.113": "linux-6.12.113+deb12-amd64.json",
        "6.12.117": "linux-6.12.117+deb12-amd64.json"}


def cases(kernel: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in json.loads((DATA / RUNS[kernel]).read_text())["tx"]:
        out[record["case"]].append(record)
    return out


@pytest.mark.parametrize("kernel", RUNS)
def test_every_case_as_the_real_kernel_handled_it(kernel: str) -> None:
    k = lookup(kernel)
    checked = 0
    for name, records in cases(kernel).items():
        first = records[0]
        assert first["xdp_attach"] in (None, "rc 0"), name  # the XDP program attached
        setup = VhostTxSetup(sndbuf=first["sndbuf"], xdp=first["xdp"])
        frames = [(r["len"], bytes.fromhex(r["hdr"]) if int(r["hdr"], 16) else None)
                  for r in records]
        rows = list(handle_tx_stream(k, setup, frames))
        stalled = [r for r in rows if r.stalled]
        if stalled:  # the probe sees no sendmsg for it, and no signal
            assert [(r["outcome"], r["call"], r["signals"]) for r in records] == [
                ("stall", None, 0)], name
            assert [r.frame for r in rows] == [0] and rows[0].update is None
            checked += 1
            continue
        # the probe sees a buffer when build_skb runs on it (its kprobe): a frame tun_xdp_one
        # refuses before (shorter than ETH_HLEN, a native XDP drop) has none, and a batch is
        # as many frames as it built skbs
        built = defaultdict(int)
        for r in rows:
            built[r.call] += r.plan.built is not None
        mine = [(str(r.plan.road), r.call, built[r.call] if r.batch is not None else None,
                 *((r.plan.build.buflen, r.offset) if r.plan.built is not None
                   and r.plan.build is not None and r.batch is not None else (None, None)))
                for r in sorted(rows, key=lambda r: r.frame)]
        theirs = [(r["path"], r["call"], r["batch"], r["buflen"], r["buf_offset"])
                  for r in records]
        assert mine == theirs, name
        assert len({r.update for r in rows}) == first["signals"], name
        checked += 1
    assert checked == 38  # every case the probe ran


def test_a_burst_of_100_takes_two_batches_and_a_second_page() -> None:
    # done_idx reaches VHOST_NET_BATCH (64): the first batch goes; 22 buffers of 1472 bytes fit
    # one 32 KiB page (22 x 1472 = 32,384; a 23rd would end at 33,856)
    for kernel, first_offsets in (("6.1.192", [0, 1472]), ("6.12.117", [31296, 29824])):
        rows = list(handle_tx_stream(lookup(kernel), VhostTxSetup(), [(1000, None)] * 100))
        assert [r.batch for r in rows] == [64] * 64 + [36] * 36
        assert [r.call for r in rows] == [0] * 64 + [1] * 36
        assert [r.offset for r in rows[:2]] == first_offsets
        assert [r.page for r in rows[21:24]] == [0, 1, 1]
        assert rows[22].offset == first_offsets[0]


def test_the_page_frag_direction_by_version() -> None:
    # vhost's own refill up to 6.8; page_frag_alloc_align from 6.9: down until 6.13, then up
    got = {}
    for kernel in ("6.6", "6.12", "6.18"):
        frag = PageFrag(lookup(kernel), pf_cache=kernel != "6.6")
        got[kernel] = [frag.carve(1472)[1] for _ in range(2)]
    assert got == {"6.6": [0, 1472], "6.12": [31296, 29824], "6.18": [0, 1472]}


def test_the_packet_weight_ends_a_run() -> None:
    # vhost_exceeds_weight: 256 chains (VHOST_NET_PKT_WEIGHT) end a run; its batch is flushed
    rows = list(handle_tx_stream(lookup("6.12"), VhostTxSetup(), [(100, None)] * 300))
    assert [r.run for r in rows].count(0) == 256
    assert rows[255].batch == 256 - 3 * 64 and rows[256].run == 1


def test_a_stall_stops_the_stream() -> None:
    # NEEDS_CSUM whose fixed-up hdr_len passes the chain: -EINVAL, the chain is put back
    bad = bytes.fromhex("01000000000010031000")  # csum_start 784 + 16 > a 100-byte frame
    rows = list(handle_tx_stream(lookup("6.12"), VhostTxSetup(),
                                 [(1000, None), (100, bad), (1000, None)]))
    assert [(r.frame, r.stalled, r.call) for r in rows] == [(0, False, 0), (1, True, None)]
