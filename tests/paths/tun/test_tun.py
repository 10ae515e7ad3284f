"""The tap path (drivers/net/tun.c write path) against the numbers measured on 6.18.44 and the
per-version predictions of docs/kernel/tun-tap.md §11-§12."""

from __future__ import annotations

import json
import struct

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.engine import trace_tap
from vnetrx.errors import InputError, UnsupportedError
from vnetrx.kernel.build import MAX_HEADER_BY_CONFIG, BuildConfig
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import lookup
from vnetrx.model import Trace
from vnetrx.paths.skbuff import frag_chunks
from vnetrx.paths.tun import TapFrame, TapSetup, build_limit

# This machine: 6.18.44, MAX_HEADER 32, skbuff_small_head object 576 (§C.2).
RUNNING_LIKE = BuildConfig(
    config="minimal", max_header=MAX_HEADER_BY_CONFIG["minimal"], small_head_observed=576
)


def k618() -> KernelProfile:
    return lookup("6.18.44", RUNNING_LIKE)


def tap(length: int, kernel: KernelProfile | None = None, hdr: bytes | None = None,
        **options: object) -> Trace:
    return trace_tap(kernel or k618(), TapSetup(**options),  # type: ignore[arg-type]
                     TapFrame(length, hdr))


def fields(t: Trace) -> tuple[str, int, int, int, int]:
    assert t.skb is not None
    return (t.outcome, t.skb.len, t.skb.data_len, t.skb.truesize, t.skb.nr_frags)


# --- the measured numbers (6.18.44, non-blocking, default sndbuf, zero 10-byte header) --


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (60, ("build_skb", 46, 0, 704, 0)),
        (1000, ("build_skb", 986, 0, 1664, 0)),
        (3456, ("build_skb", 3442, 0, 4096, 0)),
        (3457, ("alloc_skb", 3443, 0, 4352, 0)),
        (9000, ("alloc_skb", 8986, 5288, 12544, 1)),
    ],
)
def test_measured_6_18(frame: int, expected: tuple[str, int, int, int, int]) -> None:
    assert fields(tap(frame)) == expected


def test_short_frame_is_einval() -> None:
    t = tap(13)
    assert (t.outcome, t.errno, t.skb) == ("error", "EINVAL", None)


def test_blocking_and_sndbuf_take_the_alloc_path() -> None:
    assert fields(tap(1000, blocking=True)) == ("alloc_skb", 986, 0, 2304, 0)
    assert fields(tap(1000, sndbuf=65536)) == ("alloc_skb", 986, 0, 2304, 0)


# --- §A.10 tables ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "truesize"),
    [
        (100, 768),
        (128, 768),
        (200, 896),
        (500, 1152),
        (1500, 2176),
        (1514, 2176),
        (3000, 3648),
        (3136, 3776),
        (3137, 3840),
        (3455, 4096),
        (3500, 4352),
        (3711, 4352),
        (3712, 4352),
        (3800, 8448),
        (3850, 8448),
        (4000, 8448),
    ],
)
def test_ground_truth_truesize(frame: int, truesize: int) -> None:
    t = tap(frame)
    assert t.skb is not None
    assert (t.skb.truesize, t.skb.data_len, t.skb.len) == (truesize, 0, frame - 14)


@pytest.mark.parametrize(
    ("frame", "truesize", "data_len", "nr_frags"),
    [
        (4032, 8448, 320, 1),
        (4033, 8448, 321, 1),
        (8000, 12544, 4288, 1),
        (16000, 16640, 12288, 2),
        (20000, 20736, 16288, 1),
        (32768, 37120, 29056, 1),
        (65000, 65792, 61288, 4),
    ],
)
def test_big_frames_6_18(frame: int, truesize: int, data_len: int, nr_frags: int) -> None:
    assert fields(tap(frame))[2:] == (data_len, truesize, nr_frags)


@pytest.mark.parametrize(
    ("frame", "truesize"),
    [
        (60, 832),
        (100, 832),
        (128, 832),
        (200, 1280),
        (500, 1280),
        (1000, 2304),
        (1514, 2304),
        (3000, 4352),
        (3456, 4352),
        (3800, 8448),
        (4000, 8448),
        (9000, 12544),
    ],
)
def test_blocking_6_18(frame: int, truesize: int) -> None:
    t = tap(frame, blocking=True)
    assert t.outcome == "alloc_skb"
    assert t.skb is not None and t.skb.truesize == truesize


@pytest.mark.parametrize(
    ("frame", "truesize"), [(60, 960), (100, 1024), (1514, 2432), (3000, 3904), (3456, 4352)]
)
def test_native_xdp_pad(frame: int, truesize: int) -> None:
    t = tap(frame, xdp="pass")
    assert t.outcome == "build_skb"
    assert t.skb is not None and t.skb.truesize == truesize


def test_hdr_len_hint_small_head() -> None:
    # hdr_len 54: linear 54 → head obj 448 ≤ 576 → small head; frags 8 KiB + 4 KiB (§A.10).
    hdr = bytes.fromhex("0000" + "3600")
    assert fields(tap(9000, hdr=hdr)) == ("alloc_skb", 8986, 8946, 13120, 2)


@pytest.mark.parametrize("size", [11, 12, 13, 20, 24, 100])
def test_vnet_hdr_size_does_not_change_sizes(size: int) -> None:
    assert fields(tap(1514, vnet_hdr_sz=size)) == fields(tap(1514))
    assert fields(tap(1514, vnet_hdr=False)) == fields(tap(1514))


def test_write_return_value_in_step() -> None:
    t = tap(1000, vnet_hdr_sz=12)
    assert dict(t.steps[-1].values)["ret"] == 1012


# --- versions (§A.11) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kernel", "frame", "expected"),
    [
        ("4.13", 60, ("alloc_skb", 768)),
        ("4.13", 3456, ("alloc_skb", 4352)),
        ("4.14", 60, ("build_skb", 704)),
        ("4.14", 3500, ("build_skb", 4160)),
        ("4.14", 3712, ("build_skb", 4352)),
        ("5.15", 3500, ("build_skb", 4160)),
        ("6.1", 3456, ("build_skb", 4096)),
        ("6.1", 3500, ("alloc_skb", 4352)),
        ("6.1.0", 3500, ("build_skb", 4160)),
        ("6.6", 3500, ("alloc_skb", 4352)),
        ("6.12", 1514, ("build_skb", 2176)),
    ],
)
def test_versions(kernel: str, frame: int, expected: tuple[str, int]) -> None:
    t = tap(frame, lookup(kernel))
    assert t.skb is not None
    assert (t.outcome, t.skb.truesize) == expected


def test_jumbo_fully_linear_before_6_6() -> None:
    for kernel in ("4.13", "4.14", "5.15", "6.1"):
        assert fields(tap(9000, lookup(kernel)))[2:] == (0, 16640, 0)
    assert fields(tap(9000, lookup("6.6")))[2:] == (5288, 12544, 1)


def test_hdr_len_hint_order0_before_6_6() -> None:
    t = tap(9000, lookup("4.13"), hdr=bytes.fromhex("00003600"))
    assert fields(t)[2:] == (8946, 13056, 3)


def test_build_limit_by_version() -> None:
    assert build_limit(lookup("5.15")) == 3712
    assert build_limit(lookup("6.1")) == 3456
    assert build_limit(k618()) == 3456


def test_frag_chunks_6_6() -> None:
    k = k618()
    assert [p for _, p in frag_chunks(k, 61288, 3)] == [32768, 16384, 8192, 4096]
    assert [p for _, p in frag_chunks(k, 12288, 3)] == [8192, 4096]
    assert [p for _, p in frag_chunks(lookup("6.1"), 8946, 0)] == [4096] * 3


# --- header handling and errors ----------------------------------------------------------------


def test_needs_csum_raises_hdr_len() -> None:
    # NEEDS_CSUM, csum_start 34, csum_offset 6 → hdr_len 42 (§A.3); on 9000 that is the linear part.
    hdr = bytes.fromhex("01 00 0000 0000 2200 0600")
    t = tap(9000, hdr=hdr)
    assert t.skb is not None and t.skb.headlen == 42 - 14
    # skb_partial_csum_set: CHECKSUM_PARTIAL, csum_start counted from skb->head
    assert t.skb.mac_header is not None
    assert (t.skb.ip_summed, t.skb.csum_start, t.skb.csum_offset) == (
        3, t.skb.mac_header + 34, 6)


def test_hdr_len_beyond_frame_is_einval() -> None:
    t = tap(100, hdr=bytes.fromhex("0000c800"))  # hdr_len 200 on a 100-byte frame
    assert (t.outcome, t.errno) == ("error", "EINVAL")


def test_hdr_len_below_eth_hlen_is_einval() -> None:
    assert tap(100, hdr=bytes.fromhex("00000a00")).errno == "EINVAL"


@pytest.mark.parametrize("vnet_hdr", [True, False])
@pytest.mark.parametrize("kernel", ["5.15", "6.1", "6.12", "6.18.44"])
def test_a_write_of_no_frame_byte(kernel: str, vnet_hdr: bool) -> None:
    """tun_get_user on a write of the vnet header alone (or of nothing): measured on 6.18.44
    in a private netns, IFF_NO_PI, non-blocking, with and without IFF_VNET_HDR: TAP → EINVAL
    and no counter moves (len < ETH_HLEN, before any skb); TUN → EINVAL and rx_dropped +1
    (ip_version = skb->len ? data[0] >> 4 : 0 is neither 4 nor 6)."""
    k = lookup(kernel, RUNNING_LIKE)
    t = tap(0, k, vnet_hdr=vnet_hdr)
    assert (t.outcome, t.errno, t.counter, t.skb) == ("error", "EINVAL", None, None)
    assert t.reason == "frame of 0 bytes below ETH_HLEN (14)"
    t = tap(0, k, tun=True, vnet_hdr=vnet_hdr)
    assert (t.outcome, t.errno, t.counter, t.skb) == ("error", "EINVAL", "drops", None)
    assert t.steps[-1].function == "tun_get_user" and dict(t.steps[-1].values)["rx_dropped"] == 1
    assert tap(1, k, tun=True, vnet_hdr=vnet_hdr).outcome == "alloc_skb"  # one byte: a version


def test_tun_never_builds() -> None:
    t = tap(100, tun=True)
    assert t.outcome == "alloc_skb"
    assert t.skb is not None and t.skb.len == 100


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"vnet_hdr_sz": 9}, InputError),
        ({"sndbuf": 0}, InputError),
        ({"vnet_hdr": False, "vnet_hdr_sz": 12}, InputError),
        ({"hdr": bytes(11)}, InputError),
    ],
)
def test_bad_setups(options: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        tap(100, **options)


def test_xdp_needs_4_14() -> None:
    with pytest.raises(UnsupportedError):
        tap(100, lookup("4.13"), xdp="pass")


def test_frag_source_whatif() -> None:
    per = {}
    for source in ("task-frag", "per-queue", "full-page"):
        t = tap(1514, frag_source=source)
        step = next(s for s in t.steps if s.function == "skb_page_frag_refill")
        per[source] = dict(step.values)
    # buflen 1920: 17 per 32 KiB page, 1928 bytes each; full page 4096 each.
    assert per["task-frag"]["packets_per_page"] == 17
    assert per["task-frag"]["bytes_per_packet"] == 1928
    assert per["full-page"]["bytes_per_packet"] == 4096
    assert per["full-page"]["packets_per_page"] == 1


# --- CLI -------------------------------------------------------------------------------------


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_cli_json_shape() -> None:
    code, out = run("trace", "--path", "tap", "--len", "9000", "--kernel", "6.18.44", "--json")
    assert code == 0
    doc = json.loads(out)
    assert (doc["path"], doc["outcome"], doc["errno"]) == ("tap", "alloc_skb", None)
    assert (doc["skb"]["truesize"], doc["skb"]["data_len"], doc["skb"]["nr_frags"]) == (
        12544,
        5288,
        1,
    )
    assert doc["input"]["sndbuf"] == 2**31 - 1


def test_cli_json_error() -> None:
    code, out = run("trace", "--path", "tap", "--len", "13", "--json")
    assert code == 0
    doc = json.loads(out)
    assert (doc["outcome"], doc["errno"], doc["skb"]) == ("error", "EINVAL", None)


def test_cli_virtio_json_has_errno_null() -> None:
    code, out = run("trace", "--len", "1000", "--json")
    assert code == 0 and json.loads(out)["errno"] is None


def test_cli_text() -> None:
    code, out = run("trace", "--path", "tap", "--len", "1000", "--blocking")
    assert code == 0
    assert "tun_can_build_skb" in out and "truesize 2304" in out


@pytest.mark.parametrize(
    "args",
    [
        ("--path", "tap", "--len", "60", "--mergeable"),
        ("--path", "tap", "--len", "60", "--mtu", "9000"),
        ("--len", "60", "--blocking"),
        ("--len", "60", "--frag-source", "task-frag"),
        ("--path", "tap", "--len", "60", "--hdr", "xyz"),
        ("--path", "tap", "--len", "60", "--vnet-hdr-sz", "8"),
        ("--path", "tap", "--len", "60", "--kernel", "3.15"),
    ],
)
def test_cli_usage_errors(args: tuple[str, ...]) -> None:
    code, out = run("trace", *args)
    assert code == 2, out


def test_cli_kernel_running_tap() -> None:
    code, out = run("trace", "--path", "tap", "--len", "1000", "--kernel", "running", "--json")
    doc = json.loads(out)
    if code != 0:
        pytest.skip(f"no profile for the running kernel: {doc.get('error')}")
    assert doc["path"] == "tap" and "running" in doc["kernel"]["source"]


@pytest.mark.parametrize(("kernel", "hdr_len", "errno"), [
    ("6.12", 100, None), ("6.12", 101, "EINVAL"),
    ("6.18", 101, None), ("6.18", 102, None), ("6.18", 103, "EINVAL"),
])
def test_hdr_len_past_the_frame_with_a_12_byte_vnet_hdr(kernel: str, hdr_len: int,
                                                        errno: str | None) -> None:
    """Before 6.15 tun_get_user compares hdr_len with what follows the whole vnet_hdr_sz; from
    2506251e81d1 __tun_vnet_hdr_get compares it with what follows the 10 bytes it read, so with
    vnet_hdr_sz 12 a 100-byte frame takes hdr_len 102 (measured on 6.18.44: 101 and 102
    accepted, 103 EINVAL)."""
    hdr = struct.pack("<BBHHHH", 0, 0, hdr_len, 0, 0, 0)
    t = tap(100, lookup(kernel), vnet_hdr_sz=12, hdr=hdr)
    assert t.errno == errno
