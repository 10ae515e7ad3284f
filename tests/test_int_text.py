"""render/int_text.py: an int's text as str() writes it, kept or not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vnetrx.render.int_text import KEPT, int_text


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
