"""``vnetrx lab virtio --gro`` as text: a line per burst, the skbs that differ, the notes."""

from __future__ import annotations

from collections.abc import Iterator

from vnetrx.lab.gro import FIELDS, GroReport, replay_args


def _skb(row: dict[str, object] | None) -> str:
    if row is None:
        return "(none)"
    frames = row["frames"]
    assert isinstance(frames, list)
    span = f"{frames[0]}..{frames[-1]}" if len(frames) > 1 else str(frames[0]) if frames else "-"
    return (f"len {row['len']} data_len {row['data_len']} headlen {row['headlen']} "
            f"truesize {row['truesize']} nr_frags {row['nr_frags']} frag_list "
            f"{row['frag_list']} gso_size {row['gso_size']} gso_segs {row['gso_segs']} "
            f"gso_type {row['gso_type']:#x} ip_summed {row['ip_summed']} frames {span}")


def lab_gro_lines(r: GroReport, boot_s: float, total_s: float,
                  saved: str | None) -> Iterator[str]:
    bursts = sum(b.name != "sentinel" for b in r.bursts)
    mode = r.mode if r.mtu is None else f"{r.mode} (host_mtu {r.mtu})"
    yield (f"Linux {r.release} ({r.kernel}), {mode}: {bursts} bursts and the sentinel, each "
           f"written with one used-ring update and one interrupt; booted in {boot_s:.1f} s, "
           f"{total_s:.1f} s in all")
    yield f"  polls observed (napi_poll work > 0): {','.join(map(str, r.polls))}"
    yield f"  {'burst':<22} {'frames':>6} {'polls':<10} {'skbs':>5}  result"
    for b in r.bursts:
        differ = [s for s in b.skbs if not s.match]
        yield (f"  {b.name:<22} {b.count:>6} {','.join(map(str, b.polls)) or '-':<10} "
               f"{len(b.skbs):>5}  {'agree' if b.match else f'DISAGREE ({len(differ)})'}")
        for s in differ:
            fields = ", ".join(s.differ) if s.differ else "missing on one side"
            yield f"      skb {s.index}: {fields}"
            yield f"        guest: {_skb(s.observed)}"
            yield f"        model: {_skb(s.predicted)}"
    agree = sum(s.match for b in r.bursts for s in b.skbs)
    total = sum(len(b.skbs) for b in r.bursts)
    yield (f"  {agree} of {total} skbs that left GRO agree on {', '.join(FIELDS)} and delivery "
           "order")
    for i, observed, predicted in r.verdicts_differ:
        yield (f"  input {i}: napi_gro_receive_exit {observed or '(none)'}, the model "
               f"{predicted or '(none)'}")
    for note in r.notes:
        yield f"  note: {note}"
    if saved is not None:
        flags = "".join(f" {arg}" for arg in replay_args(r.mode, r.mtu))
        yield (f"  replay: vnetrx replay --from {saved}{flags} --kernel {r.kernel} --gro "
               f"--polls {','.join(map(str, r.polls))} --jsonl")
