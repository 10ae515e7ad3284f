"""render/int_text.py: an int's text as str() writes it, kept or not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vnetrx.render.int_text import KEPT, int_head, int_tail, int_text


def test_kept_values_and_their_neighbours_read_as_str() -> None:
    # the kept range's ends and the first values past them (a negative, KEPT itself)
    for v in (0, 1, 9, 10, 1448, KEPT - 1, KEPT, KEPT + 1, -1, -KEPT, 2**63, -(2**63)):
        assert int_text(v) == repr(v)
        assert int_text(v) == repr(v)  # the kept text, the second time


def test_a_kept_text_is_made_once() -> None:
    assert int_text(65000) is int_text(65000)
    assert int_text(KEPT) is not int_text(KEPT)  # past the kept range: made each time


@given(st.integers())
def test_any_int(v: int) -> None:
    assert int_text(v) == f"{v:d}"


def test_head_and_tail_around_each_thousand() -> None:
    # below and at 1000 (the head appears), zero-filled tails, the kept range's end, negatives
    cases = {0: ("", "0"), 999: ("", "999"), 1000: ("1", "000"), 1001: ("1", "001"),
             1099: ("1", "099"), 199999: ("199", "999"), 200000: ("200", "000"),
             KEPT * 1000 - 1: ("65535", "999"), KEPT * 1000: ("65536", "000"),
             -1: ("-1", ""), -1000: ("-1000", "")}
    for v, (head, tail) in cases.items():
        assert (int_head(v), int_tail(v)) == (head, tail), v
    assert int_tail(1001) is int_tail(5001)  # one kept "001"


@given(st.integers())
def test_head_and_tail_make_str(v: int) -> None:
    assert int_head(v) + int_tail(v) == f"{v:d}"
