"""vnetrx/replay/gro.py: GRO over a replayed ring. One GroState serves every poll; each poll
ends with napi_complete_done (after a whole budget, __napi_poll's flush first), so what it
delivers is what GRO run poll by poll delivers (gro_receive, one run per poll: the kernel's
order, checked against 6.18.44 by tests/paths/test_gro_oracle.py)."""

from __future__ import annotations

import pytest

from vnetrx.errors import InputError
from vnetrx.kernel.registry import lookup
from vnetrx.live.gro_frames import tcp_segment
from vnetrx.packet import build_frame
from vnetrx.paths.gro import GroInput, GroStep, Segment, TcpHeaders, gro_receive, read_frame
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.replay import RingConfig, Stream
from vnetrx.replay.gro import GroFrames, replay_gro


def frames() -> list[bytes]:
    """Two interleaved flows with a gap, a PSH, a short segment, a pure ACK and a UDP datagram."""
    out = []
    seq = [1000, 50_000]
    for i in range(150):
        flow = (i // 7) % 2
        size = 0 if i == 40 else 700 if i == 90 else 1448
        out.append(tcp_segment(4, sport=40000 + flow, seq=seq[flow], ack=1, window=512,
                               flags=0x18 if i == 60 else 0x10, options=bytes(12),
                               payload=bytes(size), ipid=i, df=True, ttl=64, udp=i == 100))
        seq[flow] += size + (5 if i == 120 else 0)
    return out


@pytest.mark.parametrize(("kernel", "batch"), [("6.1", 64), ("6.12", 64), ("6.18", 9)])
def test_one_state_across_polls_delivers_what_gro_run_poll_by_poll_does(kernel: str,
                                                                       batch: int) -> None:
    k = lookup(kernel)
    cfg = RingConfig(VirtioRxSetup(mergeable=True), batch=batch)
    data = frames()
    inputs = [read_frame(f, len(f), False) for f in data]
    records = list(Stream(k, cfg, [len(f) for f in data], rings=False, frags=True).records)
    steps: list[GroStep] = []
    got = list(replay_gro(k, cfg, records, inputs.__getitem__, steps=steps))
    polls: dict[int, list[Segment]] = {}
    for r in records:
        assert r.poll is not None and r.decision.skb is not None
        g = inputs[r.index]
        polls.setdefault(r.poll, []).append(Segment(
            r.index, r.decision.skb, r.decision.outcome == "build_skb", g.tcp,
            udp_validated=g.udp_validated, pull=g.pull, needs=g.needs, hbh_at=g.hbh_at))
    want, want_steps = [], []
    for poll, segments in polls.items():
        run = gro_receive(k, [[segments]], budget=cfg.budget)
        want += [(poll, d) for d in run.delivered]
        want_steps += run.steps
    assert got == want and steps == want_steps
    flushes = {d.flush for _, d in got}
    assert flushes >= {"flags", "mismatch", "not_held", "poll_end"}
    assert ("budget" in flushes) == (batch == 64)
    assert sum(len(d.frames) for _, d in got) == len(data)


def test_kept_frames_refuse_writev_boundaries_outside_napi_frags() -> None:
    frame = tcp_segment(4, sport=1, seq=1, ack=1, flags=0x10, window=1, options=b"",
                        payload=bytes(10), ipid=0, df=True, ttl=64)
    kept = GroFrames(napi_frags=False)
    with pytest.raises(InputError, match="applies to --path tap --gro --napi frags"):
        kept(0, len(frame), frame, True, (20,), None)
    timed = GroFrames(napi_frags=True, timed=True)
    timed(3, len(frame), frame, False, (20,), 1234)
    assert (timed.splits, timed.times) == ({3: (20,)}, {3: 1234})
    assert timed.read_input(3) == read_frame(frame, len(frame), False)
    untimed = GroFrames()
    untimed(0, len(frame), frame, False, (), 99)
    assert untimed.times == {}
    viewed = GroFrames()
    viewed(5, len(frame), memoryview(frame), False, (), None)
    assert viewed.read_input(5) == read_frame(frame, len(frame), False)


def test_kept_frames_are_read_back_by_index_as_read_frame_reads_them() -> None:
    tcp = build_frame(1514, "tcp4", 12)
    udp = build_frame(300, "udp4")
    frames = [tcp, udp, tcp[:60], tcp] * 700  # more than DROP_AFTER: the front is dropped
    kept = GroFrames()
    for index, frame in enumerate(frames):
        kept(index, 1514 if frame is not udp else 300, frame, False, (), None)
    for index, frame in enumerate(frames):
        length = 1514 if frame is not udp else 300
        want = read_frame(frame, length, False)
        got = kept.read(index)
        # a TcpHeaders stands for a GroInput of it, nothing else set
        assert (GroInput(got) if isinstance(got, TcpHeaders) else got) == want
        assert kept.read_input(index) == want
    assert isinstance(kept.read(0 + len(frames) - 1), TcpHeaders)
    assert len(kept.headers) < len(frames)  # the frames read were dropped as it went
    with pytest.raises(KeyError):
        kept.read(0)  # dropped


def test_a_frame_kept_out_of_order_is_refused() -> None:
    kept = GroFrames()
    frame = build_frame(1514, "tcp4", 12)
    kept(0, len(frame), frame, False, (), None)
    with pytest.raises(ValueError, match="out of order"):
        kept(2, len(frame), frame, False, (), None)
