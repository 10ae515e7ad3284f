"""vnetrx's GRO (vnetrx/paths/gro.py, vnetrx/flow.tap_flow) against what the running 6.18.44
kernel did with 157 bursts written into IFF_NAPI taps (tests/data/gro/linux-6.18.44.json,
recorded by tools/gro_oracle.py with vnetrx.live.gro; tests/live/test_gro_oracle.py re-checks a
few live). Each burst's writes are rebuilt byte for byte from its description (the data file
keeps their SHA-256) and every skb that left GRO must match: len, data_len, headlen, truesize,
nr_frags, gso_size, gso_segs, gso_type, ip_summed, csum_start, csum_offset, the frames it
carries, the delivery order, and each input's napi_gro_receive_exit verdict (IFF_NAPI_FRAGS
writes: napi_gro_frags_exit's); for IFF_NAPI_FRAGS writes, which build NAPI's own skb, the skb
GRO got (napi_gro_frags_entry) too."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from vnetrx.flow import GroClock, TapWrite, replay_tap_gro, tap_flow
from vnetrx.kernel.registry import lookup, profile_for
from vnetrx.kernel.version import parse_release
from vnetrx.live import gro_frames
from vnetrx.live.verify_gro import udp_gro_of
from vnetrx.paths.gro import GroStep, gro_limits, read_frame
from vnetrx.paths.tun import TapSetup

DATA = json.loads((Path(__file__).parents[1] / "data" / "gro" / "linux-6.18.44.json").read_text())
# The machine that recorded it: 6.18.44 with MAX_HEADER 32, a 576-byte skbuff_small_head
# object (/sys/kernel/slab/skbuff_small_head/object_size) and CONFIG_VLAN_8021Q not set (no
# vlan_gro_receive), as `--kernel running` reads them
KERNEL = profile_for(parse_release("6.18.44"), lookup("6.18.44").build._replace(
    config="running", max_header=32, small_head_observed=576, vlan_8021q=False),
    source="tests/data/gro")
FIELDS = ("len", "data_len", "headlen", "truesize", "nr_frags", "gso_size", "gso_segs",
          "gso_type", "ip_summed", "csum_start", "csum_offset")
VERDICTS = {"merged": "MERGED", "merged_free": "MERGED_FREE", "held": "HELD",
            "normal": "NORMAL"}
CASES = [c for c in DATA["cases"] if not c["tap"].get("timed")]
# bursts that span jiffies and the flush timer (written with pauses): each input's ktime and
# jiffies were recorded with it
TIMED = [c for c in DATA["cases"] if c["tap"].get("timed")]


def _napi(tap: dict[str, Any]) -> str:
    if tap.get("napi_frags"):
        return "frags"
    if tap.get("threaded"):
        return "threaded"
    return "timeout" if tap.get("gro_flush_timeout") else "write"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_every_skb_leaving_gro_matches_the_kernel(case: dict[str, Any]) -> None:
    tap = case["tap"]
    writes = gro_frames.build(case["burst"])
    digest = hashlib.sha256(b"".join(w.hdr + w.frame for w in writes)).hexdigest()
    assert digest == case["writes_sha256"], "the burst's writes are not the ones recorded"
    setup = TapSetup(blocking=bool(tap.get("blocking")),
                     vnet_hdr=bool(tap.get("vnet_hdr")))
    limits = gro_limits(KERNEL, tap.get("gro_max_size"), tap.get("gro_ipv4_max_size"))
    run = tap_flow(KERNEL, setup, [(w.hdr or None, w.frame) for w in writes], _napi(tap),
                   gro=tap.get("gro", True), limits=limits, splits=[w.split for w in writes],
                   udp_gro=udp_gro_of(tap))
    mine = [{**{f: getattr(d.skb, f) or 0 for f in FIELDS}, "frames": list(d.frames)}
            for d in run.gro.delivered]
    theirs = [{**{f: o[f] for f in FIELDS}, "frames": o["frames"]}
              for o in case["observed"]["skbs"]]
    assert mine == theirs
    verdicts = [VERDICTS[str(step.result)] for step in
                sorted(run.gro.steps, key=lambda s: s.frame)]
    assert verdicts == [i["verdict"] for i in case["observed"]["inputs"]]
    if tap.get("napi_frags"):  # the skb tun_napi_alloc_frags and napi_frags_skb built
        built = [{"len": s.skb.len, "data_len": s.skb.data_len, "headlen": s.skb.headlen,
                  "truesize": s.skb.truesize, "nr_frags": s.skb.nr_frags, "data": s.skb.data,
                  "frags": [f.size for f in s.skb.frags]} for s in run.segments]
        assert built == [{f: i[f] for f in ("len", "data_len", "headlen", "truesize",
                                            "nr_frags", "data", "frags")}
                         for i in case["observed"]["inputs"]]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_streamed_tap_replay_delivers_what_the_kernel_did(case: dict[str, Any]) -> None:
    """``replay --path tap --gro`` (flow.replay_tap_gro, streamed write by write) on the same
    bursts: every skb that left GRO, in order, as the kernel delivered it."""
    tap = case["tap"]
    writes = gro_frames.build(case["burst"])
    setup = TapSetup(blocking=bool(tap.get("blocking")), vnet_hdr=bool(tap.get("vnet_hdr")))
    limits = gro_limits(KERNEL, tap.get("gro_max_size"), tap.get("gro_ipv4_max_size"))
    refused: list[str] = []
    delivered = replay_tap_gro(
        KERNEL, setup,
        (TapWrite(i, len(w.frame), w.hdr or None, read_frame(w.frame, len(w.frame), True),
                  w.split) for i, w in enumerate(writes)),
        _napi(tap), gro=tap.get("gro", True), limits=limits, refused=refused,
        udp_gro=udp_gro_of(tap))
    mine = [{**{f: getattr(d.skb, f) or 0 for f in FIELDS}, "frames": list(d.frames)}
            for _, d in delivered]
    theirs = [{**{f: o[f] for f in FIELDS}, "frames": o["frames"]}
              for o in case["observed"]["skbs"]]
    assert mine == theirs and refused == []


@pytest.mark.parametrize("case", TIMED, ids=[c["name"] for c in TIMED])
def test_writes_across_jiffies_and_the_timer_deliver_what_the_kernel_did(
        case: dict[str, Any]) -> None:
    """gro_flush_timeout with time (replay_tap_gro with a GroClock): each write polled at the
    ktime and in the jiffy its input entered GRO; a poll in a later jiffy completes the skbs
    held before it (flush_old), the timer's poll flushes everything timeout ns after the last
    poll that left one held."""
    tap = case["tap"]
    writes = gro_frames.build(case["burst"])
    when = {i["write"]: (i["ktime"], i["jiffies"]) for i in case["observed"]["inputs"]}
    steps: list[GroStep] = []
    delivered = replay_tap_gro(
        KERNEL, TapSetup(),
        (TapWrite(i, len(w.frame), None, read_frame(w.frame, len(w.frame), True), (),
                  *when[i]) for i, w in enumerate(writes)),
        _napi(tap), clock=GroClock(tap["gro_flush_timeout"]), steps=steps)
    mine = [{**{f: getattr(d.skb, f) or 0 for f in FIELDS}, "frames": list(d.frames)}
            for _, d in delivered]
    theirs = [{**{f: o[f] for f in FIELDS}, "frames": o["frames"]}
              for o in case["observed"]["skbs"]]
    assert mine == theirs
    assert [VERDICTS[str(s.result)] for s in steps] == [
        i["verdict"] for i in case["observed"]["inputs"]]
    # the pause put a tick (or the timer) between writes "after" and "after" + 1
    after = tap["pause"]["after"]
    assert when[after + 1][1] > when[after][1]


def test_the_timed_cases_are_the_ones_that_need_time() -> None:
    """Without their times (all within one jiffy) the model gives another answer: the timed
    cases test the clock, not the merges."""
    for case in TIMED:
        writes = gro_frames.build(case["burst"])
        delivered = replay_tap_gro(
            KERNEL, TapSetup(),
            (TapWrite(i, len(w.frame), None, read_frame(w.frame, len(w.frame), True))
             for i, w in enumerate(writes)), _napi(case["tap"]))
        assert [list(d.frames) for _, d in delivered] != [
            o["frames"] for o in case["observed"]["skbs"]], case["name"]
