"""vnetrx/paths/skbuff.py: the skb helpers that rebuild an skb in one construction keep every
field they do not change."""

from __future__ import annotations

from vnetrx.model import Frag, FragListSkb, Skb
from vnetrx.paths.skbuff import eth_type_trans, skb_at, skb_reset_mac_header

# every field away from its default, so a field skb_at forgot would show
FULL = Skb(head="kmalloc-2048", head_size=2048, data=66, tail=1066, end=1728, len=1500,
           data_len=500, truesize=2816, nr_frags=1, mac_header=50,
           frags=(Frag("frag0", 1536, 500, 1536),), frag_list=(FragListSkb(10, 768),),
           ip_summed=3, csum_start=100, csum_offset=16, gso_size=1448, gso_type=0x11,
           gso_type_names=("SKB_GSO_TCPV4", "SKB_GSO_TCPV6"), gso_segs=2, hash=0xABCD,
           l4_hash=True, meta_len=8)


def test_every_field_is_set_away_from_its_default() -> None:
    defaults = Skb._field_defaults
    assert all(getattr(FULL, name) != value for name, value in defaults.items())


def test_skb_at_changes_data_len_and_mac_header_only() -> None:
    moved = skb_at(FULL, 80, 1486, 66)
    assert moved == FULL._replace(data=80, len=1486, mac_header=66)


def test_eth_type_trans_pulls_the_ethernet_header() -> None:
    """mac_header = data (66), then data += ETH_HLEN (14), len -= 14."""
    assert eth_type_trans(FULL) == FULL._replace(data=80, len=1486, mac_header=66)


def test_eth_type_trans_without_frags_leaves_out_the_frags_only() -> None:
    """A replay's record keeps no frags: the same pull, frags and frag_list empty, nr_frags and
    truesize kept (the skb still has them)."""
    assert eth_type_trans(FULL, with_frags=False) == FULL._replace(
        data=80, len=1486, mac_header=66, frags=(), frag_list=())


def test_skb_set_gso_changes_the_gso_fields_only() -> None:
    from vnetrx.paths.skbuff import skb_set_gso

    assert skb_set_gso(FULL, 1428, 0x12, ("SKB_GSO_DODGY", "SKB_GSO_TCPV6"), 0) == FULL._replace(
        gso_size=1428, gso_type=0x12, gso_type_names=("SKB_GSO_DODGY", "SKB_GSO_TCPV6"),
        gso_segs=0)


def test_skb_reset_mac_header() -> None:
    assert skb_reset_mac_header(FULL) == FULL._replace(mac_header=66)


def test_new_skb_is_the_record_skb_makes() -> None:
    """new_skb builds the record without Skb's Python-level __new__: the same class, the same
    fields, and Skb's defaults for the fields left out."""
    from vnetrx.paths.skbuff import new_skb, skb_headlen

    frag = Frag("frag0", 128, 1000, 1536)
    member = FragListSkb(100, 868, (frag,))
    given = ("kmalloc-512", 512, 64, 142, 192, 1078, 1000, 2048)
    short = new_skb(*given)
    assert type(short) is Skb and short == Skb(*given) and short._fields == Skb._fields
    full = (*given, 1, 50, (frag,), (member,), 3, 98, 16, 1448, 0x11, ("SKB_GSO_TCPV4",), 2,
            0xABCD, True, 8)
    assert new_skb(*full) == Skb(*full) and len(new_skb(*full)) == len(Skb._fields)
    assert skb_headlen(short) == short.headlen == 78  # len 1078 - data_len 1000


def test_new_frag_is_the_record_frag_makes() -> None:
    from vnetrx.paths.skbuff import new_frag

    made = new_frag("frag3", 128, 1000, 1536)
    assert type(made) is Frag and made == Frag("frag3", 128, 1000, 1536)
    assert made.offset == 128 and made.truesize == 1536
