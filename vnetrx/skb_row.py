"""The skb fields a row shows (``SKB_FIELDS`` marked ``row``: sweep rows, replay rows, CSV)
and their JSON members, written out for the rows a sweep or a replay prints by the thousand.
Compiled with mypyc (vnetrx/compiled.py); imports nothing else of vnetrx's than the model."""

from __future__ import annotations

from typing import Final

from vnetrx.model import SKB_FIELDS, Skb

ROW_SKB_FIELDS: Final = tuple(f.name for f in SKB_FIELDS if f.row)


def row_skb_json(skb: Skb) -> str:
    """The ROW_SKB_FIELDS of ``skb`` as JSON members, in that order (``"len": 1000, ...``), as
    ``json.dumps`` writes them: what a sweep row and a replay row print. Written out field by
    field (compiled, an f-string of the record's int fields costs a quarter of a ``%`` over an
    attrgetter's tuple); tests/test_skb_row.py checks it against ROW_SKB_FIELDS, so a field
    whose ``row`` changes in SKB_FIELDS fails there until this is changed too."""
    return (f'"len": {skb.len}, "data_len": {skb.data_len}, "truesize": {skb.truesize}, '
            f'"nr_frags": {skb.nr_frags}, "ip_summed": {skb.ip_summed}, '
            f'"gso_size": {skb.gso_size}, "gso_type": {skb.gso_type}')
