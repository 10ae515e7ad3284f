"""Pure checks over a trace's buffers and skb. The engine runs them on every trace; the property
tests use the same functions. Each returns a list of problems (empty when all is well)."""

from __future__ import annotations

from vnetrx.model import XDP_OUTCOMES, Buffer, Skb, Trace


def buffer_problems(buffer: Buffer) -> list[str]:
    problems = []
    offset = 0
    for region in buffer.regions:
        if region.offset != offset:
            problems.append(
                f"{buffer.page}: region {region.name} starts at {region.offset}, expected {offset}"
            )
        if region.size <= 0:
            problems.append(f"{buffer.page}: region {region.name} has size {region.size}")
        offset = region.offset + region.size
    if buffer.regions and offset != buffer.size:
        problems.append(f"{buffer.page}: regions end at {offset}, buffer size is {buffer.size}")
    return problems


def skb_problems(skb: Skb, sk_buff_aligned: int, truesize_may_lag: bool = False) -> list[str]:
    """``truesize_may_lag``: the head was regrown by pskb_expand_head() on a socket-owned skb,
    which keeps truesize (net/core/skbuff.c:pskb_expand_head: only an skb without a socket is
    re-charged), so truesize is below the bytes it now holds — measured on 6.18.44."""
    problems = []
    if not 0 <= skb.data <= skb.tail <= skb.end <= skb.head_size:
        problems.append(
            f"skb: need 0 <= data {skb.data} <= tail {skb.tail} <= end {skb.end} "
            f"<= head_size {skb.head_size}"
        )
    if skb.len != (skb.tail - skb.data) + skb.data_len:
        problems.append(
            f"skb: len {skb.len} != headlen {skb.tail - skb.data} + data_len {skb.data_len}"
        )
    chained = sum(fl.len for fl in skb.frag_list)
    if skb.data_len != sum(f.size for f in skb.frags) + chained:
        problems.append(f"skb: data_len {skb.data_len} != frag sizes + frag_list lengths")
    problems.extend(
        "frag_list skb: len != sum of its frag sizes"
        for fl in skb.frag_list
        if fl.len != sum(f.size for f in fl.frags)
    )
    owned = (
        skb.head_size
        + sk_buff_aligned
        + sum(f.size for f in skb.frags)
        + sum(fl.truesize for fl in skb.frag_list)
    )
    if skb.truesize < owned and not truesize_may_lag:
        problems.append(f"skb: truesize {skb.truesize} < bytes owned {owned}")
    return problems


def trace_problems(trace: Trace, sk_buff_aligned: int) -> list[str]:
    problems = [p for b in trace.buffers for p in buffer_problems(b)]
    if trace.buffer is not None:
        problems += buffer_problems(trace.buffer)
    if trace.skb is not None:
        regrown = trace.xdp is not None and trace.xdp.copied > 0  # generic XDP's new head
        problems += skb_problems(trace.skb, sk_buff_aligned, truesize_may_lag=regrown)
    if (trace.skb is None) != (trace.outcome in ("drop", "error", *XDP_OUTCOMES)):
        problems.append(
            f"outcome {trace.outcome} with skb {'absent' if trace.skb is None else 'present'}"
        )
    if (trace.xdp is not None and trace.xdp.result == "pass" and trace.skb is None
            and trace.outcome != "error"):  # a tap write may still fail after the program
        problems.append(f"XDP_PASS with outcome {trace.outcome} and no skb")
    return problems
