"""vnetrx.live.bpf: the instructions it builds (include/uapi/linux/bpf.h encoding)."""

from __future__ import annotations

from vnetrx.live.bpf import xdp_program


def test_return_action_is_two_instructions() -> None:
    # BPF_ALU64|BPF_MOV|BPF_K r0 = 3 (XDP_TX); BPF_JMP|BPF_EXIT
    assert xdp_program(3).hex() == "b700000003000000" + "9500000000000000"


def test_redirect_calls_bpf_redirect_with_the_ifindex() -> None:
    # r1 = 7; r2 = 0; call 23 (BPF_FUNC_redirect); exit
    assert xdp_program(0, redirect_ifindex=7).hex() == (
        "b701000007000000" "b702000000000000" "8500000017000000" "9500000000000000")


def test_adjusting_program_keeps_ctx_in_r6() -> None:
    # r6 = r1; r1 = r6; r2 = -250; call 44 (bpf_xdp_adjust_head); r0 = 2; exit
    assert xdp_program(2, adjust_head=-250).hex() == (
        "bf16000000000000" "bf61000000000000" "b702000006ffffff" "850000002c000000"
        "b700000002000000" "9500000000000000")
