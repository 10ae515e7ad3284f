"""The finish list of issue 29, as a new user meets it: frame options that used to assert,
numbers too long to read, texts that printed Python values, the replay ring's words, a
reversed kernel range, the --check exit status, and what the wheel installs."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner(env={"COLUMNS": "100"}).invoke(cli, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


# --csum valid / none without --l4: only the header's flags, no transport header needed.
# virtio: VIRTIO_NET_HDR_F_DATA_VALID → skb->ip_summed = CHECKSUM_UNNECESSARY (1)
# (drivers/net/virtio_net.c:receive_buf @ 6.12); no flags → CHECKSUM_NONE (0).
@pytest.mark.parametrize(("csum", "ip_summed"), [("valid", 1), ("none", 0)])
def test_csum_valid_and_none_need_no_l4(csum: str, ip_summed: int) -> None:
    code, out, err = _run(["trace", "--len", "100", "--csum", csum, "--kernel", "6.12", "--json"])
    assert code == 0, err
    assert json.loads(out)["skb"]["ip_summed"] == ip_summed


def test_csum_valid_on_a_tap_sweep_and_partial_still_needs_headers() -> None:
    code, out, _ = _run(["sweep", "--len", "60-61", "--path", "tap", "--csum", "valid", "--json"])
    assert code == 0 and json.loads(out)["lengths"] == 2
    code, _, err = _run(["trace", "--len", "100", "--csum", "partial"])
    assert code == 2 and "--csum partial needs to know where the transport header is" in err


@pytest.mark.parametrize(("gso", "shown"), [
    ("tcpv4:" + "1" * 5000, "--gso size 111111111111... (5000 digits) out of range"),
    ("tcpv4:65536", "--gso size 65536 out of range (valid: 1..65535)"),
    ("tcpv4:0", "--gso size 0 out of range (valid: 1..65535)"),
    ("tcpv4:\u00b2", "expected TYPE:SIZE[+ecn]"),  # "²".isdigit() is true; int() refuses it
])
def test_gso_sizes_that_cannot_be_read_are_one_line(gso: str, shown: str) -> None:
    code, _, err = _run(["trace", "--len", "3000", "--l4", "tcp4", "--gso", gso])
    assert code == 2 and shown in err and err.count("\n") == 1


def test_gso_size_boundaries_are_accepted() -> None:
    for size in ("1", "65535"):
        code, _, err = _run(["trace", "--len", "3000", "--l4", "tcp4", "--gso", f"tcpv4:{size}"])
        assert code == 0, err


def test_a_whole_number_too_long_is_out_of_range_not_not_a_number() -> None:
    code, _, err = _run(["trace", "--path", "tap", "--len", "1000", "--tcp-options", "9" * 21])
    assert code == 2 and "999999999999999999999 is out of range (valid: 0..40 bytes)" in err
    code, _, err = _run(["trace", "--path", "tap", "--len", "1000", "--tcp-options", "x"])
    assert code == 2 and "'x' is not a whole number" in err


def test_counts_name_what_they_count() -> None:
    code, _, err = _run(["xdp", "check", "--queues", "0"])
    assert code == 2 and "(valid: 1..32768 queue pairs)" in err
    code, _, err = _run(["xdp", "check", "--cpus", "0"])
    assert code == 2 and "(valid: 1..8192 CPUs)" in err


def test_a_reversed_kernel_range_is_named() -> None:
    code, _, err = _run(["kernels", "--between", "6.12..6.1"])
    assert code == 2
    assert "--between 6.12..6.1 is reversed: 6.12 (6.12." in err and "give the older" in err
    assert _run(["kernels", "--between", "6.1..6.12"])[0] == 0
    assert _run(["kernels", "--between", "6.1..6.1"])[0] == 0  # the same kernel: no change


def test_diff_cells_show_no_python_values() -> None:
    code, out, _ = _run(["diff", "--", "--len", "100", "--", "--len", "5"])
    assert code == 0
    table = out[out.index("Results that differ"):]
    assert "None" not in table and "False" not in table and "True" not in table
    reason = next(line for line in table.splitlines() if line.split()[:1] == ["reason"])
    assert reason.split() == ["reason", "-", "short_packet"]
    l4_hash = next(line for line in table.splitlines() if line.split()[:1] == ["skb.l4_hash"])
    assert l4_hash.split() == ["skb.l4_hash", "0", "-"]


def test_replay_totals_without_an_skb_print_no_none() -> None:
    code, out, _ = _run(["replay", "--len", "9000"])  # longer than the MTU: the device drops it
    totals = next(line for line in out.splitlines() if line.startswith("totals:"))
    assert code == 0 and "None" not in totals
    assert "0 skbs, drops: 1 device_too_long" in totals and "truesize sum 0;" in totals


def test_observe_cells_show_no_python_values() -> None:
    """A frame the model receives in no skb (16,450 bytes on a device modelled in small mode)
    shows "-" as its prediction, not Python's None (found by tools/battery.py)."""
    trace = Path(__file__).resolve().parents[1] / "data" / "traces" / "eth0-6.18.44-tracefs.txt"
    code, out, _ = _run(["observe", "--from-trace", str(trace)])
    assert code == 1 and "None" not in out  # 1: the small-mode model disagrees with eth0
    row = next(line for line in out.splitlines() if line.split()[:1] == ["16450"])
    assert row.split()[2] == "-≠16436"  # len: no skb predicted, 16,436 observed


@pytest.mark.parametrize("size", ["3", "6", "255", "257"])
def test_ring_size_must_be_a_power_of_two(size: str) -> None:
    code, _, err = _run(["replay", "--len", "100x3", "--ring-size", size])
    assert code == 2 and f"{size} is not a power of two" in err


@pytest.mark.parametrize("size", ["1", "2", "256", "32768"])
def test_ring_sizes_that_are_powers_of_two_replay(size: str) -> None:
    assert _run(["replay", "--len", "100x3", "--ring-size", size])[0] == 0


def test_a_page_pool_that_holds_no_fragment_page_says_so() -> None:
    # ring 4, 7.3: min_buf_len makes every mergeable buffer 4096 bytes, whose double does not
    # fit a page: page_pool_alloc_frag_netmem hands out whole pages and keeps no fragment page
    # (net/core/page_pool.c @7.3.4)
    code, out, _ = _run(["replay", "--len", "100x5", "--mergeable", "--ring-size", "4",
                         "--kernel", "7.3"])
    final = next(line for line in out.splitlines() if line.startswith("final ring:"))
    assert code == 0 and "page_pool holds no fragment page" in final and "pool-1" not in out
    code, out, _ = _run(["replay", "--len", "100x5", "--mergeable", "--ring-size", "4",
                         "--kernel", "7.3", "--json"])
    ring = json.loads(out)["final_ring"]
    assert ring["page"] is None and ring["page_size"] == 0


def test_trace_check_exits_3_when_no_skb_reaches_the_stack() -> None:
    assert _run(["trace", "--len", "500", "--check"])[0] == 0
    assert _run(["trace", "--len", "13", "--check"])[0] == 3  # < ETH_HLEN after the header
    assert _run(["trace", "--len", "14", "--check"])[0] == 0
    assert _run(["trace", "--len", "500", "--xdp", "drop", "--check", "--json"])[0] == 3
    assert _run(["trace", "--len", "13"])[0] == 0  # without --check: 0 whatever happens


def test_decode_check_exits_3_when_the_write_is_refused() -> None:
    # GSO_UDP_L4 on 6.1.0: virtio_net_hdr_to_skb has no case for it yet → EINVAL
    refused = ["decode", "0105", "0000", "e803", "2200", "0600", "--len", "3000",
               "--kernel", "6.1"]
    code, out, _ = _run([*refused, "--json"])
    assert code == 0 and json.loads(out)["validation"]["errno"] == "EINVAL"
    assert _run([*refused, "--check"])[0] == 3
    assert _run(["decode", "0100", "0000", "0000", "2200", "0600", "--len", "1000",
                 "--check"])[0] == 0


def test_the_wheel_installs_the_man_page_and_py_typed(tmp_path: Path) -> None:
    pytest.importorskip("build")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True,
                   env={"VNETRX_PURE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    (wheel,) = tmp_path.glob("vnetrx-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".data/data/share/man/man1/vnetrx.1") for n in names)
    assert "vnetrx/py.typed" in names
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA")))
    assert b"Classifier: Topic :: System :: Networking" in metadata
