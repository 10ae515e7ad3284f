"""`vnetrx layout` as a new user meets it: one exit code for an unknown name, a suggestion, and
C declarations as pahole prints them."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.render.layout_view import declaration

RUNNING = "/sys/kernel/btf/vmlinux"
needs_btf = pytest.mark.skipif(not os.path.exists(RUNNING), reason="no BTF for the running kernel")


def test_declarations() -> None:
    assert declaration("skb_frag_t[17]", "frags") == ("skb_frag_t", "frags[17]")
    assert declaration("void (*)(struct sk_buff *)", "destructor") == (
        "void", "(*destructor)(struct sk_buff *)")
    assert declaration("struct sk_buff *", "next") == ("struct sk_buff *", "next")


def test_own_layout_prints_c_types() -> None:
    out = CliRunner().invoke(cli, ["layout", "skb_shared_info"]).stdout
    assert "skb_frag_t" in out and "frags[17];" in out
    assert "MAX_SKB_FRAGS=" not in out and "union {struct" not in out


@pytest.mark.parametrize("args", [["layout", "skb_shared_inf"],
                                  ["layout", "skb_shared_inf", "--check", "--btf", "running"]])
def test_unknown_own_struct_is_exit_2_with_a_suggestion(args: list[str]) -> None:
    if "--btf" in args and not os.path.exists(RUNNING):
        pytest.skip("no BTF for the running kernel")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and "did you mean skb_shared_info?" in result.output


@needs_btf
def test_unknown_btf_struct_is_exit_2_with_a_suggestion() -> None:
    result = CliRunner().invoke(cli, ["layout", "sk_bufff", "--btf", "running"])
    assert result.exit_code == 2 and "did you mean sk_buff" in result.output


@needs_btf
def test_function_pointers_read_as_c() -> None:
    out = CliRunner().invoke(cli, ["layout", "sk_buff", "--btf", "running"]).stdout
    assert "(*destructor)(struct sk_buff *);" in out and "fn *" not in out
