"""Pure parts of ``vnetrx verify tap``: length lists, trace_pipe lines, predictions, comparison."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.errors import InputError
from vnetrx.kernel.build import BuildConfig
from vnetrx.kernel.registry import lookup
from vnetrx.live import tap as live_tap
from vnetrx.live.parse import parse_event, parse_lengths, parse_marker
from vnetrx.live.tap import frame_bytes
from vnetrx.live.verify import (
    DEFAULT_LENGTHS,
    build_cases,
    compare,
    observed_of,
    predict,
    variants,
)
from vnetrx.observed.rx_event import RxEvent
from vnetrx.observed.tap_write import WriteCase, WriteResult

# A line as 6.18.44's trace_pipe prints it (recorded on the reference machine).
LINE = (
    "          python-11864   [003] b..1.  1517.377131: netif_receive_skb_entry: dev=vnx11864 "
    "napi_id=0x0 queue_mapping=1 skbaddr=00000000a1b2c3d4 vlan_tagged=0 vlan_proto=0x0000 "
    "vlan_tci=0x0000 protocol=0x88b5 ip_summed=0 hash=0x00000000 l4_hash=0 len=8986 "
    "data_len=5288 truesize=12544 mac_header_valid=1 mac_header=-14 nr_frags=1 gso_size=0 "
    "gso_type=0"
)
K = lookup("6.18.44", BuildConfig(config="minimal", max_header=32, small_head_observed=576))


def test_parse_event() -> None:
    assert parse_event(LINE) == RxEvent("vnx11864", 8986, 5288, 12544, 1, 0, 0, protocol=0x88B5,
                                        queue_mapping=1, event="netif_receive_skb_entry")


def test_parse_event_gso_hex() -> None:
    line = LINE.replace("gso_size=0 gso_type=0", "gso_size=1448 gso_type=0x1")
    event = parse_event(line)
    assert event is not None and (event.gso_size, event.gso_type) == (1448, 1)


@pytest.mark.parametrize(
    "line",
    [
        "",
        "# tracer: nop",
        LINE.replace("netif_receive_skb_entry", "netif_rx_entry"),
        LINE.replace("truesize=12544", "truesize=x"),
    ],
)
def test_parse_event_ignores_other_lines(line: str) -> None:
    assert parse_event(line) is None


def test_parse_marker() -> None:
    line = "  python-1 [000] ..... 12.5: tracing_mark_write: vnetrx-12-3"
    assert parse_marker(line) == "vnetrx-12-3"
    assert parse_marker(LINE) is None


def test_parse_lengths() -> None:
    assert parse_lengths("60,1000,3400-3500:8")[:4] == (60, 1000, 3400, 3408)
    assert parse_lengths("3400-3500:8")[-2:] == (3496, 3500)
    assert parse_lengths("5, 5,6-7") == (5, 6, 7)
    assert len(parse_lengths(DEFAULT_LENGTHS)) >= 40


@pytest.mark.parametrize("text", ["", "a", "10-5", "1-9:0", "70000", "1-70000"])
def test_parse_lengths_rejects(text: str) -> None:
    with pytest.raises(InputError):
        parse_lengths(text)


def test_default_lengths_span() -> None:
    lengths = parse_lengths(DEFAULT_LENGTHS)
    assert min(lengths) <= 14 and max(lengths) == 65535
    assert {3455, 3456, 3457} <= set(lengths)


def test_variants_and_cases() -> None:
    shapes = variants(WriteCase(0))
    assert len(shapes) == 5
    assert build_cases((60, 100), WriteCase(0), True)[2] == WriteCase(60, blocking=True)


def test_frame_bytes() -> None:
    assert len(frame_bytes(13)) == 13
    assert frame_bytes(60)[12:14] == b"\x88\xb5" and len(frame_bytes(60)) == 60


def test_predict_and_compare() -> None:
    predicted = predict(K, WriteCase(9000))
    assert predicted["ret"] == 9010 and predicted["truesize"] == 12544
    good = WriteResult(9010, None, (RxEvent("vnx1", 8986, 5288, 12544, 1, 0, 0),))
    fields = compare(predicted, observed_of(good))
    assert all(fields.values())
    bad = WriteResult(9010, None, (RxEvent("vnx1", 8986, 0, 16640, 0, 0, 0),))
    fields = compare(predicted, observed_of(bad))
    assert not fields["truesize"] and not fields["data_len"] and fields["len"]


def test_predict_error_expects_no_event() -> None:
    predicted = predict(K, WriteCase(13))
    assert predicted["errno"] == "EINVAL"
    assert all(compare(predicted, observed_of(WriteResult(None, "EINVAL", ()))).values())
    stray = WriteResult(None, "EINVAL", (RxEvent("vnx1", 0, 0, 0, 0, 0, 0),))
    assert not compare(predicted, observed_of(stray))["events"]


def test_predict_no_vnet_hdr_return_value() -> None:
    assert predict(K, WriteCase(1000, vnet_hdr=False))["ret"] == 1000
    assert predict(K, WriteCase(1000, vnet_hdr_sz=12))["ret"] == 1012


def test_verify_without_requirements_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_tap, "missing_requirements", lambda: ["root (run as uid 0)"])
    result = CliRunner().invoke(cli, ["verify", "tap", "--len", "60"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == ["vnetrx: error: verify tap needs root (run as uid 0)"]


def test_verify_without_requirements_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_tap, "missing_requirements", lambda: ["tracefs"])
    result = CliRunner().invoke(cli, ["verify", "tap", "--len", "60", "--json"])
    assert result.exit_code == 1
    doc = json.loads(result.output.splitlines()[-1])
    assert doc["exit_code"] == 1 and "tracefs" in doc["error"]


@pytest.mark.parametrize(
    "args",
    [
        ["--len", "x"],
        ["--len", "60", "--no-vnet-hdr", "--hdr", "00"],
        ["--len", "60", "--hdr", "zz"],
        # --tunnels writes its own frames and headers; one matrix at a time
        ["--tunnels", "--len", "60"],
        ["--tunnels", "--offloads"],
        # --tunnel wraps a TCP/UDP frame: without --l4 there is none
        ["--len", "60", "--vnet-hdr-sz", "24", "--tunnel", "ipv4"],
    ],
)
def test_verify_bad_requests_fail_before_setup(
    monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    def boom() -> list[str]:
        raise AssertionError("setup must not be reached")

    monkeypatch.setattr(live_tap, "missing_requirements", boom)
    result = CliRunner().invoke(cli, ["verify", "tap", *args])
    assert result.exit_code == 2, result.output


def test_json_verify_does_not_import_rich() -> None:
    import subprocess
    import sys

    code = (
        "import sys, io, contextlib\n"
        "from vnetrx.live import tap\n"
        "tap.missing_requirements = lambda: ['root']\n"
        "sys.argv = ['vnetrx', 'verify', 'tap', '--len', '60', '--json']\n"
        "from vnetrx.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    try:\n        main()\n    except SystemExit:\n        pass\n"
        "print('rich' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
