"""`vnetrx lab vhost --zcopy` without a boot: four real Debian guests (6.1.170, 6.1.192,
6.12.100, 6.12.117) loaded their own vhost_net.ko with experimental_zcopytx=1 and drove it
with the static probe (tests/data/vhost/*.zcopy.log, the JSON read back from each). The facts
below are read from those records; the last test runs vnetrx's predictions (trace --path
vhost-tx --zcopy, replay --path vhost-tx --zcopy) against every frame."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests import DATA
from vnetrx.cli import cli
from vnetrx.kernel.registry import lookup
from vnetrx.lab.initramfs import VHOST_ZCOPY_ARGS, VHOST_ZCOPY_KPROBES, vhost_init_script
from vnetrx.lab.vhost_cases import ZCOPY_OFFSET, case_file, zcopy_tx_cases
from vnetrx.lab.vhost_predict import tx_argv
from vnetrx.lab.vhost_records import document
from vnetrx.lab.vhost_run import recheck
from vnetrx.observed.vhost import parse_vhost_log
from vnetrx.paths.vhost import VhostTxSetup
from vnetrx.paths.vhost.tx_stream import handle_tx_stream
from vnetrx.schemas import LAB_VHOST_KERNEL

VHOST = DATA / "vhost"
RELEASES = {"6.1.0-47-amd64": "6.1.170", "6.1.0-57-amd64": "6.1.192",
            "6.12.100+deb12-amd64": "6.12.100", "6.12.117+deb12-amd64": "6.12.117"}


def _log(release: str) -> str:
    return (VHOST / f"linux-{release}.zcopy.log").read_text()


def _doc(release: str) -> dict[str, Any]:
    return recheck(_log(release))


def _tx(release: str, case: str, index: int = 0) -> dict[str, Any]:
    return next(r for r in _doc(release)["tx"] if r["case"] == case and r["index"] == index)


def _skb(record: dict[str, Any]) -> tuple[int, int, int, int]:
    s = record["skb"]
    return (s["len"], s["data_len"], s["truesize"], s["nr_frags"])


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_saved_records_are_what_the_log_says(release: str) -> None:
    saved = json.loads((VHOST / f"linux-{release}.zcopy.json").read_text())
    assert saved == _doc(release)
    assert saved == document(parse_vhost_log(_log(release)), zcopy_tx_cases(), ())


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_the_guest_loaded_vhost_net_with_experimental_zcopytx(release: str) -> None:
    doc = _doc(release)
    assert doc["kernel"] == {"release": release, "version": RELEASES[release]}
    assert doc["experimental_zcopytx"] == 1 and doc["complete"] and doc["errors"] == []
    assert doc["thp"] == "always madvise [never]"  # order-0 pages: no frag merges
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate({**doc, "boot_s": None, "total_s": None, "comparison": None},
                        LAB_VHOST_KERNEL)


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_the_ubuf_callback_was_renamed_between_6_1_and_6_12(release: str) -> None:
    """vhost_zerocopy_callback (6.1) became vhost_zerocopy_complete (6.12, ubuf_info_ops):
    exactly one of the two kprobes arms on each kernel."""
    kprobes = _doc(release)["kprobes"]
    old = RELEASES[release].startswith("6.1.")
    assert (kprobes["zc_callback"], kprobes["zc_complete"]) == (old, not old)
    assert kprobes["zerocopy_sg"] and kprobes["tun_get_user"]


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_zerocopy_starts_at_a_256_byte_chain(release: str) -> None:
    """handle_tx_zerocopy: len >= VHOST_GOODCOPY_LEN with the 12-byte header: 243 bytes (a
    255-byte chain) is copied (tun_build_skb: no frag), 244 and 245 are pinned; every chain
    goes through tun_get_user, none is batched."""
    rows = {n: _tx(release, f"zc-{n}") for n in (243, 244, 245)}
    assert [rows[n]["zerocopy"] for n in (243, 244, 245)] == [False, True, True]
    assert {r["path"] for r in _doc(release)["tx"]} == {"tun_get_user"}
    assert _skb(rows[243])[1:] == (0, 896, 0)
    # 244: 128 bytes copied (114 after the Ethernet pull), 116 pinned from page offset 140
    assert _skb(rows[244])[:2] == (230, 116) and _skb(rows[245])[:2] == (231, 117)


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_pinned_pages_add_a_page_each_to_truesize(release: str) -> None:
    """The head (64 + 128 bytes) costs 768 on 6.1 (kmalloc-512 + sk_buff) and 960 on 6.12
    (skbuff_small_head); every page the rest spans adds 4096: PAGE_ALIGN(copied + start)."""
    head = 768 if RELEASES[release].startswith("6.1.") else 960
    expected = {1000: (986, 872, head + 4096, 1), 3636: (3622, 3508, head + 4096, 1),
                4000: (3986, 3872, head + 4096, 1), 9000: (8986, 8872, head + 3 * 4096, 3),
                65000: (64986, 64872, head + 16 * 4096, 16)}
    for length, skb in expected.items():
        assert _skb(_tx(release, f"zc-{length}")) == skb, length
    # a chain at page offset 3900: its pinned part starts at 4040, 56 bytes before a page ends
    assert _skb(_tx(release, f"zc-off{ZCOPY_OFFSET}-244")) == (230, 116, head + 2 * 4096, 2)
    assert _skb(_tx(release, f"zc-off{ZCOPY_OFFSET}-9000")) == (8986, 8872, head + 4 * 4096, 4)


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_hdr_len_is_what_tun_get_user_copies(release: str) -> None:
    """NEEDS_CSUM at 34 + 16: hdr_len becomes 52 and 52 bytes are copied; the GSO header's
    hdr_len 54. Those TCP frames reach ip_rcv, whose delivery copies the pinned frags
    (skb_orphan_frags_rx): the ubuf completes with success 0; raw frames nobody takes are
    freed with success 1."""
    csum, gso = _tx(release, "zc-csum-1000"), _tx(release, "zc-gso-3000")
    assert _skb(csum)[1] == 1000 - 52 and _skb(gso)[1] == 3000 - 54
    assert csum["completions"] == gso["completions"] == [0]
    assert _tx(release, "zc-1000")["completions"] == [1]
    assert _tx(release, "zc-243")["completions"] == []  # no ubuf: msg_control NULL


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_each_chain_is_used_and_signalled_alone_in_order(release: str) -> None:
    """handle_tx_zerocopy never batches: three chains give three signals, in the order
    queued, a copied one (100 bytes) between pinned ones included; replay --path vhost-tx
    --zcopy says the same (one used-ring update per frame)."""
    k = lookup(RELEASES[release])
    for case in ("zc-burst-1000x3", "zc-burst-100-1000-100"):
        first = _tx(release, case)
        assert first["signals"] == 3 and first["used_order"] == [0, 1, 2]
        lengths = [_tx(release, case, i)["len"] for i in range(3)]
        rows = list(handle_tx_stream(k, VhostTxSetup(zcopy=True), [(n, None) for n in lengths]))
        assert [r.update for r in rows] == [0, 1, 2]
        assert [r.call for r in rows] == [0, 1, 2]
    assert [_tx(release, "zc-burst-100-1000-100", i)["zerocopy"] for i in range(3)] == [
        False, True, False]


def test_case_file_and_init_script_of_a_zerocopy_boot() -> None:
    cases = zcopy_tx_cases()
    text = case_file(cases, ())
    assert f"tx zc-off{ZCOPY_OFFSET}-1000 0 - - {ZCOPY_OFFSET}" in text.splitlines()
    assert "tx zc-1000 0 - -" in text.splitlines()  # offset 0: the field left out
    script = vhost_init_script(["tun", "vhost", "vhost_net"], VHOST_ZCOPY_KPROBES,
                               VHOST_ZCOPY_ARGS)
    assert "insmod /lib/modules/vhost_net.ko experimental_zcopytx=1" in script
    assert "insmod /lib/modules/tun.ko || say error insmod tun" in script
    assert "say param vhost_net experimental_zcopytx" in script
    for definition in VHOST_ZCOPY_KPROBES:
        assert definition in script
    # a boot without --zcopy loads its modules as before
    assert "experimental_zcopytx" not in vhost_init_script(["tun", "vhost_net"])


def test_prediction_command_line_of_a_zerocopy_frame() -> None:
    record = _tx("6.12.117+deb12-amd64", f"zc-off{ZCOPY_OFFSET}-1000")
    assert tx_argv(record, "6.12.117")[-4:] == ["--zcopy", "--zcopy-offset",
                                                 str(ZCOPY_OFFSET), "--json"]


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_every_prediction_matches_the_real_kernel(release: str) -> None:
    """trace --path vhost-tx --zcopy against every frame: road, zcopy_used, len, data_len,
    truesize, nr_frags (22 frames a kernel)."""
    log = VHOST / f"linux-{release}.zcopy.log"
    result = CliRunner().invoke(cli, ["lab", "vhost", "--from-log", str(log), "--json"])
    assert result.exit_code == 0, result.output
    comparison = json.loads(result.output)["kernels"][0]["comparison"]
    assert [r["case"] for r in comparison["results"] if not r["match"]] == []
    assert comparison["mismatches"] == 0 and comparison["compared"] == 22
    checks = {c["name"] for r in comparison["results"] for c in r["checks"]}
    assert {"path", "zcopy_used", "skb.truesize", "skb.nr_frags"} <= checks


def test_save_dir_names_a_zerocopy_run_apart(tmp_path: Path) -> None:
    log = VHOST / "linux-6.1.0-57-amd64.zcopy.log"
    result = CliRunner().invoke(cli, ["lab", "vhost", "--from-log", str(log), "--no-predict",
                                      "--save-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert [p.name for p in tmp_path.iterdir()] == ["linux-6.1.0-57-amd64.zcopy.json"]
