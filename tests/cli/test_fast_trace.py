"""`vnetrx trace ... --json` served before click is imported (vnetrx/fast_trace.py, issue 28's
start-up goal): its option table is the click command's, it accepts exactly what click parses
to the same values (everything else goes to click), and what it prints, and its exit status,
are byte for byte what the click command prints."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from vnetrx.cli import cli
from vnetrx.cli.fast_options import generated_path, module_text
from vnetrx.cli.trace import trace
from vnetrx.fast_trace import serve_trace, trace_request
from vnetrx.fast_trace_options import OPTIONS


def test_the_table_is_what_the_click_command_derives() -> None:
    assert generated_path().read_text() == module_text(), (
        "vnetrx/fast_trace_options.py is stale: run python -m vnetrx.cli.fast_options")


def test_the_table_holds_the_virtio_options_and_none_that_click_must_check() -> None:
    # the options of the virtio receive path a JSON trace is asked with (README's examples)
    for spelling in ("--len", "--mergeable", "--big", "--guest-gso", "--mtu", "--kernel",
                     "--l4", "--csum", "--gso", "--xdp", "--xdp-frags", "--buffer-index",
                     "--json", "--check", "--max-skb-frags", "--page-size", "--arch"):
        assert spelling in OPTIONS
    # other paths, GRO, saved traces, pictures, and values with converters of their own
    for spelling in ("--path", "--gro", "--segments", "--load", "--svg", "--html", "--hdr",
                     "--frame", "--blocking", "--sndbuf", "--vnet-hdr-sz", "--tun", "--zcopy",
                     "--iff-napi", "--vlan", "--help", "-h"):
        assert spelling not in OPTIONS


def _click_params(args: list[str]) -> dict[str, object] | None:
    """What click parses ``args`` to, or None when it refuses them (or prints help)."""
    try:
        with trace.make_context("trace", list(args)) as ctx:
            return dict(ctx.params)
    except (click.exceptions.ClickException, click.exceptions.Exit):
        return None


@pytest.mark.parametrize("args", [
    ["--len", "1000", "--mergeable", "--json"],
    ["--json", "--len=1000", "--big", "--kernel=6.1.0-57-amd64"],
    ["--len", "9014", "--mtu", "9000", "--xdp", "pass", "--xdp-frags", "--json"],
    ["--len", "1000", "--xdp", "tx", "--xdp-adjust-head", "-14", "--json", "--check"],
    ["--len", "0", "--json"], ["--len", "65535", "--json"], ["--len", "0065", "--json"],
    ["--len", "1514", "--l4", "tcp4", "--gso", "tcpv4:1448", "--csum", "partial", "--json"],
    ["--len", "100", "--ring-size", "32768", "--buf-len", "2147483648", "--json"],
    ["--len", "100", "--config", "ubuntu", "--arch", "arm64", "--page-size", "64k", "--json"],
])
def test_accepted_lines_parse_as_click_parses_them(args: list[str]) -> None:
    params = trace_request(["trace", *args])
    assert params is not None
    assert params == _click_params(args)


@pytest.mark.parametrize("args", [
    ["--len", "1000", "--mergeable"],  # text: rich renders it, through click
    ["--len", "1000", "--json", "--help"], ["-h"], ["--len", "1000", "--json", "-h"],
    ["--path", "tap", "--len", "1000", "--json"], ["--path", "virtio", "--len", "1", "--json"],
    ["--len", "1514", "--l4", "tcp4", "--gro", "--json"], ["--load", "t.json", "--json"],
    ["--len", "1000", "--json", "--svg", "x.svg"], ["--len", "64", "--hdr", "01", "--json"],
    ["--frame", "f.bin", "--json"], ["--len", "1000", "--blocking", "--json"],
    ["--len", "0x10", "--json"], ["--len", "+5", "--json"], ["--len", " 5", "--json"],
    ["--len", "-1", "--json"], ["--len", "65536", "--json"], ["--len", "", "--json"],
    ["--len", "1000", "--ring-size", "3", "--json"], ["--len", "1000", "--ring-size", "0",
                                                       "--json"],
    ["--len", "1", "--len", "2", "--json"], ["--len", "1", "--big", "--guest-gso", "--json"],
    ["--len", "1000", "--mergeable=1", "--json"], ["--len", "1000", "--json", "--len"],
    ["--len", "1000", "--xdp", "--json"],  # --xdp alone is --xdp pass: click's call
    ["--len", "1000", "--kernel", "--json"], ["--len", "1000", "--xdp", "PASS", "--json"],
    ["--len", "1000", "--json", "extra"], ["--len", "1000", "--json", "--"],
    ["--len", "1000", "--json", "--mergable"], ["--len", "1000", "--xdp-adjust-head", "+4",
                                               "--json"],
    ["--len", "1000", "--max-skb-frags", "16", "--json"],
    ["--len", "١٠٠٠", "--json"],  # digits, but not ASCII ones
])
def test_everything_else_goes_to_click(args: list[str]) -> None:
    assert trace_request(["trace", *args]) is None


def test_other_commands_and_group_options_go_to_click() -> None:
    for argv in ([], ["sweep", "--len", "1", "--json"], ["--color", "never", "trace", "--len",
                                                         "1", "--json"], ["TRACE", "--json"]):
        assert trace_request(argv) is None


# A command line drawn from every kind of token: the table's options with good, boundary and
# bad values, options the fast path leaves to click, stray words.
_VALUES = st.sampled_from(["0", "1", "3", "16", "17", "45", "46", "64", "67", "68", "256",
                           "1000", "32767", "32768", "65535", "65536", "2147483648",
                           "2147483649", "-1", "-14", "0x10", "+5", " 5", "", "007", "tcp4",
                           "pass", "tx", "PASS", "partial", "ubuntu", "64k", "4k", "arm64",
                           "128", "6.1", "5.12", "12", "24", "--json", "-h", "gso"])
_TOKENS = st.one_of(
    st.sampled_from(sorted(OPTIONS)),
    st.sampled_from(["--help", "-h", "--path", "--gro", "--hdr", "--svg", "--mergable", "x",
                     "--", "--json=1", "--len="]),
    st.builds(lambda o, v: f"{o}={v}", st.sampled_from(sorted(OPTIONS)), _VALUES),
    _VALUES,
).map(lambda token: [token])


def _in_range(spelling: str) -> st.SearchStrategy[list[str]]:
    """The option with a value its table entry allows (click is the judge of the result)."""
    _name, kind, low, high, choices = OPTIONS[spelling]
    if kind == "flag":
        return st.just([spelling])
    values = (st.sampled_from(choices) if kind == "choice" else
              st.sampled_from(["6.1", "5.12", "6.18.44", "running"]) if kind == "text" else
              st.integers(-100, 100).map(str) if kind == "int" else
              st.sampled_from([low, high, low + 1, high - 1, 1 << (high.bit_length() - 1)]
                              ).map(str))
    return values.flatmap(lambda v: st.sampled_from([[spelling, v], [f"{spelling}={v}"]]))


_GOOD = st.sampled_from(sorted(OPTIONS)).flatmap(_in_range)
_PIECES = st.one_of(_GOOD, _TOKENS)


def _name(piece: list[str]) -> str:
    return OPTIONS[piece[0].split("=")[0]][0]


@given(st.lists(_GOOD.filter(lambda piece: _name(piece) != "as_json"), max_size=6,
                unique_by=_name))
def test_a_line_of_good_values_is_served_as_click_parses_it(pieces: list[list[str]]) -> None:
    tokens = ["--json", *(token for piece in pieces for token in piece)]
    assert trace_request(["trace", *tokens]) == _click_params(tokens)


@given(st.lists(_PIECES, max_size=6), st.integers(0, 6) | st.none())
def test_a_line_is_served_only_as_click_parses_it(pieces: list[list[str]], json_at: int | None
                                                  ) -> None:
    tokens = [token for piece in pieces for token in piece]
    if json_at is not None:  # the lines the fast path serves have --json somewhere
        tokens.insert(min(json_at, len(tokens)), "--json")
    params = trace_request(["trace", *tokens])
    if params is None:
        return
    assert params == _click_params(tokens)
    assert params["as_json"] is True


# The same trace through both: documented examples and a spread of modes, kernels, offloads,
# XDP verdicts and builds; some the core refuses (the fast path prints nothing and leaves them
# to click, which reports them).
SERVED = [
    "--len 1000 --mergeable", "--len 1000 --mergeable --kernel 5.12", "--len 1000 --mtu 9000 "
    "--kernel 6.1", "--len 1400 --mergeable", "--len 1514 --mergeable --buffer-index 20 "
    "--kernel 6.1", "--len 1000 --mergeable --arch arm64 --page-size 64k --kernel 6.1",
    "--len 9014 --guest-gso --l4 tcp4 --gso tcpv4:1448 --kernel 6.1",
    "--len 1514 --mergeable --l4 tcp4 --csum valid", "--len 1000 --xdp pass",
    "--len 1000 --mergeable --xdp pass --kernel 6.1",
    "--len 9014 --mergeable --mtu 9000 --xdp pass --xdp-frags --kernel 6.12",
    "--len 60 --kernel 4.19", "--len 0", "--len 65535 --big --mtu 65535",
    "--len 1514 --mergeable --l4 udp6 --csum partial --kernel 6.6.44 --check",
    "--len 1000 --xdp drop --check", "--len 1000 --xdp tx --xdp-adjust-head -14",
    "--len 1000 --mergeable --xdp pass --xdp-meta 32 --kernel 6.18",
    "--len 1500 --mergeable --hdr-len 20 --ewma 1500 --ring-size 1024",
    "--len 3000 --mergeable --buf-len 1536 --kernel 5.15",
    "--len 1514 --mergeable --l4 tcp4 --gso tcpv4:1448 --tunnel ipv4 --udp-tunnel gso "
    "--kernel 6.18",
    "--len 200 --kernel 6.1.0-57-amd64", "--len 200 --kernel 6.8.0-45-generic --config ubuntu",
    "--len 1000 --mergeable --max-skb-frags 45 --kernel 6.12", "--len 1000 --cache-line 128",
    "--len 1000 --mergeable --xdp-posted-before --xdp pass --kernel 6.1",
]
REFUSED = [
    "--len 10 --l4 tcp4",  # too short for its headers
    "--len 1000 --kernel 2.6", "--len 1000 --max-skb-frags 20 --kernel 6.1",
    "--len 1000 --page-size 64k", "--mergeable", "--len 1000 --gso tcpv4:x",
    "--len 1000 --tcp-options 12",
]


def _served(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | None, str]:
    params = trace_request(argv)
    assert params is not None, argv
    capsys.readouterr()
    code = serve_trace(params, argv)
    return code, capsys.readouterr().out


@pytest.mark.parametrize("line", SERVED)
def test_a_served_trace_is_what_the_cli_prints(line: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["trace", *line.split(), "--json"]
    code, out = _served(argv, capsys)
    by_click = CliRunner().invoke(cli, argv)
    assert code == by_click.exit_code
    assert out == by_click.stdout
    assert '"schema": "vnetrx.trace/1"' in out


def test_check_exits_3_when_the_frame_is_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    # an XDP_DROP verdict: no skb reaches the stack (README, "Exit status")
    assert _served(["trace", "--len", "1000", "--xdp", "drop", "--json", "--check"],
                   capsys)[0] == 3
    assert _served(["trace", "--len", "1000", "--xdp", "drop", "--json"], capsys)[0] == 0


@pytest.mark.parametrize("line", REFUSED)
def test_a_refused_trace_prints_nothing_and_goes_to_click(
        line: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["trace", *line.split(), "--json"]
    assert _served(argv, capsys) == (None, "")
    assert CliRunner().invoke(cli, argv).exit_code in (1, 2)


def test_the_process_serves_a_json_trace_without_click() -> None:
    """The reason the fast path exists: the vnetrx script's JSON trace imports no click (or
    rich) and prints what the CLI prints."""
    argv = ["trace", "--len", "1000", "--mergeable", "--json"]
    code = ("import atexit, sys\n"
            "atexit.register(lambda: sys.stderr.write(' '.join(\n"
            "    m for m in sys.modules if m.split('.')[0] in ('click', 'rich'))))\n"
            "sys.argv = ['vnetrx', *sys.argv[1:]]\nfrom vnetrx.main import main\nmain()\n")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0
    assert done.stderr == ""
    assert done.stdout == CliRunner().invoke(cli, argv).stdout


def test_an_error_still_reaches_click_through_the_process() -> None:
    argv = ["trace", "--len", "10", "--l4", "tcp4", "--json"]  # too short for its headers
    done = subprocess.run([sys.executable, "-m", "vnetrx", *argv], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("vnetrx: error: --len 10 is too short")
    by_click = CliRunner().invoke(cli, argv)
    assert (done.returncode, done.stdout) == (by_click.exit_code, by_click.stdout)
    assert '"exit_code": 2' in done.stdout
