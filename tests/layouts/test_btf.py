"""The BTF reader against the running kernel, and against corrupt input."""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.pahole_oracle import pahole, pahole_text, skeleton
from vnetrx.errors import LayoutError, VnetrxError
from vnetrx.kernel.build import BuildConfig
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.version import v
from vnetrx.layouts.btf import Btf
from vnetrx.layouts.check import compare, layouts_for
from vnetrx.layouts.skbuff import skb_shared_info
from vnetrx.live.running import running_profile

VMLINUX = Path("/sys/kernel/btf/vmlinux")
needs_btf = pytest.mark.skipif(not VMLINUX.exists(), reason="no /sys/kernel/btf/vmlinux here")


@pytest.fixture(scope="module")
def vmlinux() -> Btf:
    return Btf.load(str(VMLINUX))


@needs_btf
def test_every_vnetrx_layout_matches_the_running_kernel(vmlinux: Btf) -> None:
    k = running_profile()
    layouts = layouts_for(k)
    assert len(layouts) == 8
    for name, layout in layouts.items():
        assert compare(layout, vmlinux) == [], name


@needs_btf
def test_the_check_can_fail(vmlinux: Btf) -> None:
    """The pre-6.14 skb_shared_info (xdp_frags_size at 36) is not this 6.18 kernel's."""
    k = running_profile()
    if k.version.key() < (6, 14, 0):
        pytest.skip("running kernel predates the xdp_frags union")
    old = skb_shared_info(k.build.max_skb_frags, xdp_frags_union=False)
    problems = compare(old, vmlinux)
    assert [(p.member, p.ours, p.kernel) for p in problems] == [("xdp_frags_size", "36/4", "40/4")]


@needs_btf
def test_known_members(vmlinux: Btf) -> None:
    sk_buff = vmlinux.struct("sk_buff")
    assert sk_buff.size == 224  # docs/kernel/virtio-net-rx.md Appendix B
    by_name = {m.name: m for m in sk_buff.members}
    assert (by_name["len"].offset, by_name["data_len"].offset, by_name["truesize"].offset) == (
        112, 116, 208)
    assert (by_name["head"].offset, by_name["data"].offset) == (192, 200)
    num_buffers = vmlinux.member("virtio_net_hdr_mrg_rxbuf", "num_buffers")
    assert num_buffers is not None and (num_buffers.offset, num_buffers.size) == (10, 2)


def test_layouts_for_old_kernels_use_the_old_forms() -> None:
    layouts = layouts_for(KernelProfile(v("6.1.192"), BuildConfig()))
    assert layouts["skb_shared_info"].field("xdp_frags_size").offset == 36
    assert layouts["virtio_net_hdr_v1_hash"].field("hash_value").size == 4


# --- a small synthetic BTF blob, and corruptions of it ----------------------------------------

def tiny_btf() -> bytes:
    strings = b"\0int\0pair\0a\0b\0"
    int_t = struct.pack("<III", 1, 1 << 24, 4) + struct.pack("<I", 32)
    pair = struct.pack("<III", 5, (4 << 24) | 2, 8)
    pair += struct.pack("<III", 10, 1, 0) + struct.pack("<III", 12, 1, 32)
    types = int_t + pair
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    return header + types + strings


def test_tiny_btf_parses() -> None:
    btf = Btf(tiny_btf(), "tiny")
    pair = btf.struct("pair")
    assert pair.size == 8
    assert [(m.name, m.offset, m.size, m.type_name) for m in pair.members] == [
        ("a", 0, 4, "int"), ("b", 4, 4, "int")]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: b"\0\0" + d[2:], r"not BTF at byte 0 \(magic 0x0000, expected 0xeb9f\)"),
        (lambda d: b"\xeb\x9f" + d[2:], "big-endian BTF: not supported"),
        (lambda d: d[:2] + b"\x02" + d[3:], r"not BTF at byte 2 \(version 2; vnetrx reads 1\)"),
        (lambda d: d[:6], "not BTF at byte 0 \\(only 6 bytes\\)"),
        (lambda d: d[:4] + struct.pack("<I", 8) + d[8:], "header length 8 at byte 4"),
        (lambda d: d[:40], "run past the end of the file \\(40 bytes\\) at byte 12"),
        (lambda d: d[:12] + struct.pack("<I", 30) + d[16:], "length 30 at byte 12 is not a mult"),
        (lambda d: d[:12] + struct.pack("<I", 28) + d[16:], "ends inside a record at byte 40"),
        (lambda d: d[:12] + struct.pack("<I", 20) + d[16:], "ends inside a record at byte 40"),
        (lambda d: d[:31] + b"\x1f" + d[32:], "unknown type kind 31 at byte 24"),
        # member a: name_off at byte 52, type at 56
        (lambda d: d[:56] + struct.pack("<I", 9) + d[60:], r"type id 9 out of range \(1..2\), referred to at byte 52"),
        (lambda d: d[:52] + struct.pack("<II", 0, 2) + d[60:], "nest too deep at type id 2 \\(byte 40\\)"),
        (lambda d: d[:52] + struct.pack("<I", 999) + d[56:], "string offset 999 outside"),
    ],
    ids=["bad-magic", "big-endian", "bad-version", "short", "bad-hdr-len", "truncated",
         "type-length-not-words", "type-length-short", "type-length-past-record",
         "unknown-kind", "type-id-out-of-range", "self-containing", "string-out-of-range"],
)
def test_corrupt_btf_is_a_one_line_error(mutate: object, message: str) -> None:
    def parse() -> None:
        Btf(mutate(tiny_btf()), "bad.btf").struct("pair")  # type: ignore[operator]

    with pytest.raises(LayoutError, match=message):
        parse()


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_btf_never_crashes(data: st.DataObject) -> None:
    blob = bytearray(tiny_btf())
    for _ in range(data.draw(st.integers(1, 6))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    blob = blob[: data.draw(st.integers(0, len(blob)))]
    try:
        btf = Btf(bytes(blob), "fuzz.btf")
        for name in btf.struct_names():
            btf.struct(name)
            btf.member(name, "a")
    except VnetrxError as exc:
        # A LayoutError, or an InputError when a corrupted first string makes it look like a
        # module's split BTF; either way one line that names the file.
        assert "fuzz.btf" in str(exc) and "\n" not in str(exc)  # noqa: PT017


# --- the command -------------------------------------------------------------------------------

@needs_btf
def test_cli_check_running_passes() -> None:
    from click.testing import CliRunner

    from vnetrx.cli import cli

    result = CliRunner().invoke(cli, ["layout", "--check", "--btf", "running", "--kernel", "running"])
    assert result.exit_code == 0, result.output
    assert result.stdout.count(" ok") == 8


@needs_btf
def test_cli_check_against_another_profile_fails() -> None:
    from click.testing import CliRunner

    from vnetrx.cli import cli

    result = CliRunner().invoke(cli, ["layout", "--check", "--btf", "running", "--kernel", "6.12"])
    assert result.exit_code == 1
    assert "xdp_frags_size: vnetrx 36/4, kernel 40/4" in result.stdout


@needs_btf
def test_cli_btf_json_matches_the_kernel() -> None:
    import json

    from click.testing import CliRunner

    from vnetrx.cli import cli

    result = CliRunner().invoke(cli, ["layout", "skb_shared_info", "--btf", "running", "--json"])
    doc = json.loads(result.stdout)
    assert doc["size"] == 320
    assert {"name": "frags", "offset": 48, "size": 272, "type": "skb_frag_t[17]"} in doc["members"]
    assert doc["holes"] == [{"offset": 36, "size": 4}]


def test_cli_corrupt_btf_is_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from vnetrx.cli import cli

    bad = tmp_path / "bad.btf"
    bad.write_bytes(tiny_btf()[:40])
    result = CliRunner().invoke(cli, ["layout", "pair", "--btf", str(bad)])
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "bad.btf" in result.stderr
    assert "Traceback" not in result.output


@needs_btf
def test_index_cache_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cold = Btf.load(str(VMLINUX))
    expected = cold.struct("skb_shared_info")
    cold.save_index()
    assert len(list((tmp_path / "vnetrx").glob("btf-*.idx"))) == 1
    warm = Btf.load(str(VMLINUX))
    assert warm._starts is not None  # the record table came from the cache, not a walk
    assert warm.struct("skb_shared_info") == expected
    assert warm.starts == cold.starts


def test_damaged_cache_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    blob = tmp_path / "tiny.btf"
    blob.write_bytes(tiny_btf())
    first = Btf.load(str(blob))
    first.struct("pair")
    first.save_index()
    for idx in (tmp_path / "vnetrx").glob("btf-*.idx"):
        idx.write_bytes(b"\xff\xff\xff\xffgarbage")
    assert Btf.load(str(blob)).struct("pair").size == 8


# --- pahole as the oracle ----------------------------------------------------------------------

@needs_btf
@pytest.mark.parametrize("name", ["skb_shared_info", "sk_buff", "virtio_net_hdr",
                                  "virtio_net_hdr_mrg_rxbuf", "virtio_net_hdr_v1_hash", "skb_frag"])
def test_layout_json_agrees_with_pahole(name: str) -> None:
    if shutil.which("pahole") is None:
        pytest.fail("pahole is missing: install Debian's dwarves (.ci/run does)")
    from click.testing import CliRunner

    from vnetrx.cli import cli

    size, expected = pahole(name, str(VMLINUX))
    doc = json.loads(CliRunner().invoke(cli, ["layout", name, "--btf", "running", "--json"]).stdout)
    assert doc["size"] == size
    ours = {m["name"]: (m["offset"], m["size"]) for m in doc["members"] if m["name"]}
    assert len(expected) >= 2
    for member, where in expected.items():
        assert ours.get(member) == where, member


@needs_btf
def test_layout_rows_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm `vnetrx layout NAME --btf` prints exactly what the cold one did; a damaged cache
    file is ignored."""
    from click.testing import CliRunner

    from vnetrx.cli import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    args = ["layout", "skb_shared_info", "--btf", "running", "--json"]
    cold = CliRunner().invoke(cli, args).stdout
    [cached] = (tmp_path / "vnetrx").glob("btf-*-skb_shared_info.rows")
    assert CliRunner().invoke(cli, args).stdout == cold
    cached.write_text("{not json")
    assert CliRunner().invoke(cli, args).stdout == cold


def _named_blob(strings: bytes, name_off: int) -> bytes:
    """One int and one empty-bodied 4-byte struct named by ``name_off``."""
    int_t = struct.pack("<III", 1, 1 << 24, 4) + struct.pack("<I", 32)
    one = struct.pack("<III", name_off, (4 << 24) | 1, 4) + struct.pack("<III", 0, 1, 0)
    types = int_t + one
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    return header + types + strings


def test_struct_found_by_whole_string_not_by_a_suffix() -> None:
    # "xpair" ends in "pair"; the struct is named by the whole string "pair" at offset 11
    btf = Btf(_named_blob(b"\0int\0xpair\0pair\0", 11), "names")
    assert btf.find_struct("pair") == 2
    assert btf.find_struct("xpair") is None and btf.find_struct("") is None


def test_struct_named_by_an_offset_into_a_longer_string() -> None:
    # name_off 6 points into "xpair": the struct is "pair"; no whole "pair" string exists
    btf = Btf(_named_blob(b"\0int\0xpair\0", 6), "names")
    assert btf.find_struct("pair") == 2
    assert btf.struct("pair").size == 4


def _running_tree(tmp_path: Path, config: str) -> str:
    """A fake root for running_profile: 6.1.0-57-amd64 with ``config`` and a synthetic BTF whose
    skb_shared_info.frags has 45 entries and sk_buff is 232 bytes."""
    strings = b"\0int\0sk_buff\0skb_shared_info\0frags\0len\0"
    name = {s: strings.index(b"\0" + s.encode() + b"\0") + 1 for s in
            ("int", "sk_buff", "skb_shared_info", "frags", "len")}
    types = struct.pack("<IIII", name["int"], 1 << 24, 4, 32)  # [1] int
    types += struct.pack("<III", 0, 3 << 24, 0) + struct.pack("<III", 1, 1, 45)  # [2] int[45]
    types += struct.pack("<III", name["skb_shared_info"], (4 << 24) | 1, 180)  # [3]
    types += struct.pack("<III", name["frags"], 2, 0)
    types += struct.pack("<III", name["sk_buff"], (4 << 24) | 1, 232)  # [4]
    types += struct.pack("<III", name["len"], 1, 0)
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    root = tmp_path / "root"
    for rel, text in [("proc/sys/kernel/osrelease", "6.1.0-57-amd64\n"),
                      ("proc/version", "Linux version 6.1.0-57-amd64 (Debian 6.1.192-1)\n"),
                      ("proc/config", config)]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "sys/kernel/btf").mkdir(parents=True)
    (root / "sys/kernel/btf/vmlinux").write_bytes(header + types + strings)
    return str(root)


def test_running_profile_takes_max_skb_frags_from_btf(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    k = running_profile(_running_tree(tmp_path, "CONFIG_MAX_SKB_FRAGS=17\n"))
    assert (k.build.max_skb_frags, k.build.sk_buff_size) == (45, 232)
    assert "config says MAX_SKB_FRAGS 17, BTF 45" in k.source
    assert "MAX_SKB_FRAGS 45 (BTF: skb_shared_info.frags)" in k.source


def test_loop_in_the_type_graph_is_one_line() -> None:
    """Member a's type is [3], a typedef of itself: a loop, reported with the byte of [3]."""
    strings = b"\0int\0pair\0a\0t\0"
    types = struct.pack("<III", 1, 1 << 24, 4) + struct.pack("<I", 32)  # [1] int
    types += struct.pack("<III", 5, (4 << 24) | 1, 4) + struct.pack("<III", 10, 3, 0)  # [2]
    types += struct.pack("<III", 12, 8 << 24, 3)  # [3] typedef t -> [3]
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    with pytest.raises(LayoutError, match=r"loop\.btf: loop in the type graph at type id 3 \(byte 64\)"):
        Btf(header + types + strings, "loop.btf").struct("pair")


def test_cli_list_structs_of_a_btf_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from vnetrx.cli import cli
    from vnetrx.schemas import schema

    blob = tmp_path / "tiny.btf"
    blob.write_bytes(tiny_btf())
    result = CliRunner().invoke(cli, ["layout", "--list", "--btf", str(blob), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["structs"] == [{"name": "pair", "kind": "struct", "size": 8}]
    assert doc["source"] == str(blob)
    import jsonschema

    jsonschema.validate(doc, schema("layout-list"))
    text = CliRunner().invoke(cli, ["layout", "--list", "--btf", str(blob)]).stdout
    assert text.split() == ["pair", "8", "bytes", "struct"]
    bad = CliRunner().invoke(cli, ["layout", "pair", "--list", "--btf", str(blob)])
    assert bad.exit_code == 2 and "--list takes no struct name" in bad.stderr


def test_a_corrupted_first_string_reads_as_split_btf() -> None:
    blob = bytearray(tiny_btf())
    blob[76] = ord("A")  # the string section's first byte: no longer the empty string
    with pytest.raises(VnetrxError, match=r"bad\.btf is a module.s split BTF: give --btf-base"):
        Btf(bytes(blob), "bad.btf")


@needs_btf
@pytest.mark.parametrize("name", ["sk_buff", "skb_shared_info", "task_struct", "net_device",
                                  "virtio_net_hdr_v1_hash", "page", "sigval"])  # sigval: a union
def test_layout_text_nests_like_pahole(name: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The text view has pahole's shape: the same anonymous struct/union blocks around the same
    members in the same order, and pahole's member count; cold and from the rows cache."""
    from click.testing import CliRunner

    from vnetrx.cli import cli

    if shutil.which("pahole") is None:
        pytest.fail("pahole is missing: install Debian's dwarves (.ci/run does)")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    theirs = pahole_text(name, str(VMLINUX))
    for _ in ("cold", "warm"):
        ours = CliRunner().invoke(cli, ["layout", name, "--btf", "running"]).stdout
        assert skeleton(ours) == skeleton(theirs)
        assert ours.splitlines()[0] == theirs.splitlines()[0]  # "struct x {" or "union x {"
        count = re.search(r"members: (\d+)", theirs)  # pahole prints none for a union
        assert count is None or f"members: {count.group(1)} */" in ours


# --- impossible offsets: damaged BTF is refused, not printed as a layout ------------------------

# tiny_btf: struct pair (8 bytes) at byte 40; member b's bit offset at byte 72
@pytest.mark.parametrize(("bits", "fits"), [(32, True), (33, False), (64, False),
                                            (4_194_363, False), (0xFFFFFFFF, False)])
def test_a_member_past_the_struct_is_refused(bits: int, fits: bool) -> None:
    """b is a 4-byte int: at bit 32 it ends at bit 64, the 8-byte struct's end; one bit
    later it does not fit (the battery found b at 4,194,363 in a 304-byte virtnet_info
    printed as a layout)."""
    blob = tiny_btf()
    btf = Btf(blob[:72] + struct.pack("<I", bits) + blob[76:], "bad.btf")
    if fits:
        assert [m.offset for m in btf.struct("pair").members] == [0, 4]
        return
    with pytest.raises(LayoutError, match=rf"bad.btf: damaged BTF: member 'b' of 'pair' \(type "
                       rf"id 2, byte 40\) ends at bit {bits + 32}, past the 8-byte size"):
        btf.struct("pair")


def test_a_bit_field_past_the_struct_is_refused() -> None:
    """kind_flag set: the offset word is bit size (8) << 24 | bit offset; 56 + 8 = 64 fits,
    57 + 8 does not."""
    blob = bytearray(tiny_btf())
    blob[40 + 7] |= 0x80  # kind_flag: bit 31 of pair's info word
    for offset, fits in ((56, True), (57, False)):
        blob[72:76] = struct.pack("<I", 8 << 24 | offset)
        btf = Btf(bytes(blob), "bits.btf")
        if fits:
            assert btf.struct("pair").members[1].bit_size == 8
        else:
            with pytest.raises(LayoutError, match="ends at bit 65, past the 8-byte size"):
                btf.struct("pair")


def test_a_name_with_undecodable_bytes_is_not_found(tmp_path: Path) -> None:
    """`vnetrx layout $'pair\\xff' --btf FILE`: the name's bytes are searched as they were
    given (surrogates from the command line), not a UnicodeEncodeError."""
    import subprocess
    import sys

    path = tmp_path / "tiny.btf"
    path.write_bytes(tiny_btf())
    for argv in ([b"layout", b"pair\xff", b"--btf", bytes(path)],
                 [b"layout", b"pair\xff", b"--btf", bytes(path), b"--json"]):
        done = subprocess.run([sys.executable.encode(), b"-m", b"vnetrx", *argv],
                              capture_output=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count(b"\n") == 1 and b"Traceback" not in done.stderr
        assert b"no struct or union named 'pair\\udcff'" in done.stderr
