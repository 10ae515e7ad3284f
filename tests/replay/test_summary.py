"""vnetrx/replay/summary.py: the totals of a replay, worked by hand from the frames' skbs."""

from __future__ import annotations

from vnetrx.kernel.registry import lookup
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.replay import RingConfig, replay
from vnetrx.replay.summary import Totals


def test_totals_of_a_short_mergeable_replay() -> None:
    """6.12, mergeable, MTU 9000 (docs/kernel/virtio-net-rx.md §9): 60-byte frames are copied
    whole into a napi head (truesize 1280; two allocations: the sk_buff and the head; 60 bytes
    copied); 1000 bytes build_skb in a 1536-byte buffer (truesize 1792; the sk_buff only); 10
    bytes is a short packet."""
    run = replay(lookup("6.12"), RingConfig(
        VirtioRxSetup(mergeable=True, mtu=9000)), [60, 60, 1000, 10])
    totals = Totals()
    for f in run.frames:
        totals.add(f)
    d = totals.to_dict()
    assert (d["frames"], d["frame_bytes"], d["skbs"]) == (4, 1130, 3)
    assert d["drops"] == {"short_packet": 1} and d["counters"] == {"rx_length_errors": 1}
    assert (d["build_skb"], d["copy"], d["build_skb_share"]) == (1, 2, 0.3333)
    assert (d["bytes_copied"], d["allocations"], d["buffers"], d["pages"]) == (120, 5, 4, 1)
    assert d["truesize"] == {"sum": 1280 + 1280 + 1792, "min": 1280, "median": 1280,
                             "p99": 1792, "max": 1792}
    assert d["truesize_per_byte"] == round(4352 / 1120, 4)


def test_the_hand_worked_totals_hold_when_decisions_are_folded_as_they_come() -> None:
    """Totals counts received frames by decision, each at its serial's slot (of SEEN_KEPT),
    and folds a decision's count into its counts when another decision comes to that slot
    (memory stays flat): decisions all in one slot (copies, serial -1), so every other frame
    folds one, give the same totals as worked by hand above."""
    from vnetrx.replay.state import FrameRecord

    run = replay(lookup("6.12"), RingConfig(
        VirtioRxSetup(mergeable=True, mtu=9000)), [60, 60, 1000, 10])
    copies = {id(f.decision): f.decision._replace() for f in run.frames}
    assert {d.serial for d in copies.values()} == {-1}  # (a copy is no replay's: one slot)
    assert run.frames[0].decision is run.frames[1].decision  # (the two 60-byte frames)
    totals = Totals()
    for f in run.frames:
        totals.add(FrameRecord(f.index, f.frame_len, f.poll, f.buffers, copies[id(f.decision)],
                               f.ewma_before, f.ewma_after, f.refill, f.ring))
    d = totals.to_dict()
    assert (d["frames"], d["skbs"], d["build_skb"], d["copy"]) == (4, 3, 1, 2)
    assert d["drops"] == {"short_packet": 1} and d["counters"] == {"rx_length_errors": 1}
    assert (d["bytes_copied"], d["allocations"], d["buffers"], d["pages"]) == (120, 5, 4, 1)
    assert d["truesize"]["sum"] == 1280 + 1280 + 1792
    assert totals.to_dict() == d  # (settled twice: nothing counted again)


def test_no_skbs() -> None:
    d = Totals().to_dict()
    assert (d["frames"], d["truesize"]["median"], d["truesize_per_byte"]) == (0, None, None)


def test_a_replay_with_no_skb_says_so_instead_of_none() -> None:
    """Every frame a short packet (header-only and 5-byte writes): no truesize to sum, and the
    line says so rather than printing Python's None."""
    from click.testing import CliRunner

    from vnetrx.cli import cli

    out = CliRunner().invoke(cli, ["replay", "--len", "0x2,5", "--mergeable", "--summary"])
    assert out.exit_code == 0, out.output
    assert "0 skbs, drops: 3 short_packet" in out.stdout and "truesize sum 0;" in out.stdout
    assert "None" not in out.stdout
