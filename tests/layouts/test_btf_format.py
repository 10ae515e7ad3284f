"""The word-based BTF reader (layouts/btf.py) against the Construct grammar (layouts/btf_format.py):
the same records at the same offsets, the same fields, on the running kernel's BTF and on
mutated blobs."""

from __future__ import annotations

import io
import random
from pathlib import Path

import construct
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.layouts.test_btf import tiny_btf
from vnetrx.errors import LayoutError, VnetrxError
from vnetrx.layouts.btf import Btf
from vnetrx.layouts.btf_format import btf_header, btf_type, iter_records
from vnetrx.layouts.btf_index import STRUCT, TRAILER_WORDS, UNION

VMLINUX = Path("/sys/kernel/btf/vmlinux")
needs_btf = pytest.mark.skipif(not VMLINUX.exists(), reason="no /sys/kernel/btf/vmlinux here")


def _section(btf: Btf) -> bytes:
    return btf.data[btf.types_start : btf.types_end]


def _agree(btf: Btf, stream: io.BytesIO, local_id: int) -> None:
    """Record ``local_id`` decoded both ways."""
    word = btf.starts[local_id]
    stream.seek(4 * word)
    rec = btf_type.parse_stream(stream)
    words = btf.words
    assert (rec.name_off, rec.info, rec.size_or_type) == (words[word], words[word + 1],
                                                          words[word + 2])
    fixed, each = TRAILER_WORDS.get(rec.kind, (0, 0))
    assert rec.size == 4 * (3 + fixed + each * rec.vlen)
    if rec.kind in (STRUCT, UNION):
        assert [(m.name_off, m.type, m.offset) for m in rec.trailer] == [
            tuple(words[word + 3 + 3 * i : word + 6 + 3 * i]) for i in range(rec.vlen)]


@needs_btf
def test_header_and_first_records_agree() -> None:
    btf = Btf.load(str(VMLINUX), cache=False)
    header = btf_header.parse(btf.data)
    assert btf.types_start == header.hdr_len + header.type_off
    assert btf.str_end - btf.str_start == header.str_len
    offsets = []
    for offset, _ in iter_records(_section(btf)):
        offsets.append(offset)
        if len(offsets) == 5000:
            break
    assert offsets == [4 * w for w in btf.starts[:5000]]


@needs_btf
def test_every_kind_and_a_sample_agree() -> None:
    """One record of each kind the kernel uses, every record skb_shared_info and sk_buff touch,
    and 2000 random ones: same fields, same length."""
    btf = Btf.load(str(VMLINUX), cache=False)
    stream = io.BytesIO(_section(btf))
    first_of_kind: dict[int, int] = {}
    for local_id, word in enumerate(btf.starts):
        first_of_kind.setdefault((btf.words[word + 1] >> 24) & 0x1F, local_id)
    assert {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 13, 14, 15} <= set(first_of_kind)
    sample = set(first_of_kind.values())
    sample |= set(random.Random(6).sample(range(len(btf.starts)), 2000))
    for name in ("skb_shared_info", "sk_buff"):
        type_id = btf.find_struct(name)
        assert type_id is not None
        sample.add(type_id - 1)
        sample |= {m.type_id - 1 for m in btf.struct(name).members if m.type_id}
    for local_id in sorted(sample):
        _agree(btf, stream, local_id)


def test_tiny_blob_agrees() -> None:
    btf = Btf(tiny_btf(), "tiny")
    section = _section(btf)
    assert [o for o, _ in iter_records(section)] == [4 * w for w in btf.starts] == [0, 16]
    stream = io.BytesIO(section)
    for local_id in range(len(btf.starts)):
        _agree(btf, stream, local_id)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(data=st.data())
def test_mutated_type_sections_split_the_same_way(data: st.DataObject) -> None:
    """Whenever the word walk accepts a mutated type section, Construct cuts it into the same
    records; whenever Construct cannot, the walk refuses it too."""
    blob = bytearray(tiny_btf())
    for _ in range(data.draw(st.integers(1, 4))):
        blob[data.draw(st.integers(24, 75))] = data.draw(st.sampled_from([0, 1, 2, 3, 4, 5, 0x84]))
    try:
        btf = Btf(bytes(blob), "fuzz.btf")
        starts = btf.starts
    except LayoutError:
        starts = None
    section = bytes(blob[24:76])
    try:
        grammar = [offset for offset, _ in iter_records(section)]
        grammar_ok = all((rec.kind in range(1, 20)) for _, rec in iter_records(section))
    except construct.ConstructError:
        grammar, grammar_ok = None, False
    if starts is not None:
        assert grammar == [4 * w for w in starts]
    elif grammar is not None:
        assert not grammar_ok  # Construct reads kind 0 or > 19 as a bare header: the walk refuses


@needs_btf
def test_grammar_reader_agrees_on_structs() -> None:
    """GrammarBtf (records decoded by Construct) and Btf (32-bit words) give the same layout for
    300 structs of the running kernel, and for the ones vnetrx checks."""
    from vnetrx.layouts.btf_format import GrammarBtf

    words, grammar = Btf.load(str(VMLINUX), cache=False), GrammarBtf.load(str(VMLINUX), cache=False)
    names = sorted(set(words.struct_names()))
    sample = random.Random(6).sample(names, 300)
    sample += ["sk_buff", "skb_shared_info", "virtio_net_hdr_v1_hash", "skb_frag"]
    for name in sample:
        assert grammar.struct(name) == words.struct(name), name
    assert isinstance(grammar, GrammarBtf) and grammar._parsed  # the grammar did the decoding


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=200)
@given(data=st.data())
def test_grammar_reader_agrees_on_mutated_blobs(data: st.DataObject) -> None:
    from vnetrx.layouts.btf_format import GrammarBtf

    blob = bytearray(tiny_btf())
    for _ in range(data.draw(st.integers(1, 4))):
        blob[data.draw(st.integers(24, 89))] = data.draw(st.integers(0, 255))

    def read(reader: type[Btf]) -> object:
        try:
            btf = reader(bytes(blob), "fuzz.btf")
            return [btf.struct(name) for name in btf.struct_names()]
        except VnetrxError as exc:
            return type(exc).__name__
    assert read(GrammarBtf) == read(Btf)
