"""vnetrx/skb_row.py: the skb fields of a row and their JSON members."""

from __future__ import annotations

import json

from vnetrx.model import SKB_FIELDS, Skb
from vnetrx.skb_row import ROW_SKB_FIELDS, row_skb_json


def test_row_fields_are_the_model_s_row_fields_in_order() -> None:
    assert ROW_SKB_FIELDS == ("len", "data_len", "truesize", "nr_frags", "ip_summed",
                              "gso_size", "gso_type")
    assert tuple(f.name for f in SKB_FIELDS if f.row) == ROW_SKB_FIELDS


def test_row_skb_json_is_json_dumps_of_the_row_fields() -> None:
    """Each field a different number (and more than one digit): a field swapped, left out or
    misnamed shows; json.dumps of the fields read by name is the reference."""
    skb = Skb("kmalloc-1k", 1024, 78, 1078, 1280, 12345, 2345, 45678, 3, 64,
              ip_summed=1, gso_size=1448, gso_type=17)
    want = json.dumps({name: getattr(skb, name) for name in ROW_SKB_FIELDS})[1:-1]
    assert row_skb_json(skb) == want
    assert list(json.loads("{" + row_skb_json(skb) + "}")) == list(ROW_SKB_FIELDS)
