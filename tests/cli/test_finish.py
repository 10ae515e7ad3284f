"""The finish of issue 7: --color, --version with the profiles, shell completion, and the
--svg/--html pictures of trace, diff and headroom (rich's recorder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli

ESC = "\x1b["


def test_color_always_forces_ansi_into_a_pipe_even_with_no_color() -> None:
    runner = CliRunner(env={"COLUMNS": "100", "NO_COLOR": "1"})
    result = runner.invoke(cli, ["--color", "always", "trace", "--len", "1000"])
    assert result.exit_code == 0
    assert "\x1b[1mSummary: \x1b[0m\x1b[1;32mbuild_skb\x1b[0m" in result.stdout  # bold green


def test_color_never_and_auto_without_a_terminal_print_no_escapes() -> None:
    runner = CliRunner(env={"COLUMNS": "100", "NO_COLOR": None, "FORCE_COLOR": None})
    for args in (["--color", "never"], ["--color", "auto"], []):
        result = runner.invoke(cli, [*args, "trace", "--len", "1000"])
        assert result.exit_code == 0
        assert ESC not in result.stdout, args


def test_color_choice_does_not_leak_into_the_next_invocation() -> None:
    runner = CliRunner(env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert ESC in runner.invoke(cli, ["--color", "always", "headroom"]).stdout
    assert ESC not in runner.invoke(cli, ["headroom"]).stdout


def test_color_applies_to_decode_diff_and_headroom() -> None:
    runner = CliRunner(env={"COLUMNS": "100"})
    for args in (["decode", "00" * 10], ["diff", "--", "--len", "100", "--", "--len", "200"],
                 ["headroom"]):
        assert ESC in runner.invoke(cli, ["--color", "always", *args]).stdout, args


def test_bad_color_value_is_a_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["--color", "sometimes", "kernels"])
    assert result.exit_code == 2
    assert result.stderr.startswith("vnetrx: error: Invalid value for '--color'")


def test_version_lists_the_profiles(runner: CliRunner) -> None:
    from vnetrx import __version__
    from vnetrx.compiled import compiled_modules

    result = runner.invoke(cli, ["--version"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    modules = compiled_modules()
    assert lines[0] == f"vnetrx {__version__}: " + (
        f"{len(modules)} modules compiled with mypyc (the per-frame path; setup.py)" if modules
        else "plain Python (no module compiled)")
    assert "  3.15  3.15.0    headroom" in lines
    assert "  6.1   6.1.192   headroom, tap, virtio" in lines
    assert "  4.13  4.13.0    headroom, tap" in lines


def test_bash_completion_script_and_completions(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    script = runner.invoke(cli, [], prog_name="vnetrx", env={"_VNETRX_COMPLETE": "bash_source"})
    assert "_vnetrx_completion()" in script.stdout
    assert "complete -o nosort -F _vnetrx_completion vnetrx" in script.stdout
    words = runner.invoke(
        cli, [], prog_name="vnetrx",
        env={"_VNETRX_COMPLETE": "bash_complete", "COMP_WORDS": "vnetrx de", "COMP_CWORD": "1"},
    )
    assert words.stdout.split() == ["plain,decode"]
    opts = runner.invoke(
        cli, [], prog_name="vnetrx",
        env={"_VNETRX_COMPLETE": "bash_complete", "COMP_WORDS": "vnetrx --col",
             "COMP_CWORD": "1"},
    )
    assert opts.stdout.split() == ["plain,--color"]


# --- pictures ------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["trace", "--len", "1000", "--mergeable", "--kernel", "6.1"],
    ["diff", "--kernel", "5.12", "--kernel", "5.13", "--", "--len", "1000", "--mergeable"],
    ["headroom", "--kernel", "3.16", "--compare", "3.15"],
])
def test_svg_and_html_pictures(runner: CliRunner, tmp_path: Path, args: list[str]) -> None:
    svg, html = tmp_path / "p.svg", tmp_path / "p.html"
    command, rest = args[0], args[1:]
    result = runner.invoke(cli, [command, "--svg", str(svg), "--html", str(html), *rest])
    assert result.exit_code == 0, result.output
    picture = svg.read_text()
    assert picture.startswith("<svg") and picture.rstrip().endswith("</svg>")
    assert "Generated with Rich" in picture
    page = html.read_text()
    assert "<!DOCTYPE html>" in page
    # The picture holds the text the terminal shows (HTML keeps spaces as spaces).
    import html as html_module
    import re

    shown = html_module.unescape(re.sub(r"<[^>]+>", "", page))
    first_line = result.stdout.splitlines()[0].split("  ")[0]
    assert first_line and first_line in shown
    assert "<span style=\"color:" in page  # coloured even though stdout is not a terminal


def test_trace_picture_shows_the_summary(runner: CliRunner, tmp_path: Path) -> None:
    html = tmp_path / "t.html"
    runner.invoke(cli, ["trace", "--len", "1000", "--mergeable", "--html", str(html)])
    assert "truesize 1792" in html.read_text()


def test_picture_with_json_keeps_stdout_json(runner: CliRunner, tmp_path: Path) -> None:
    svg = tmp_path / "t.svg"
    result = runner.invoke(cli, ["trace", "--len", "1000", "--json", "--svg", str(svg)])
    assert json.loads(result.stdout)["schema"] == "vnetrx.trace/1"
    assert svg.read_text().startswith("<svg")


def test_unwritable_picture_is_a_one_line_error(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["headroom", "--svg", "/nonexistent-dir/x.svg"])
    assert result.exit_code == 1
    assert result.stderr == (
        "vnetrx: error: cannot write /nonexistent-dir/x.svg: No such file or directory\n"
    )


def test_svg_text_helper_is_reusable() -> None:
    from rich.text import Text

    from vnetrx.render.export import html_text, svg_text

    assert "sweep" in html_text(Text("sweep 129–1204"))
    assert svg_text(Text("x"), title="t").startswith("<svg")


# --- issue 17's finish: widths ---------------------------------------------------------------

COMMANDS = [
    ["trace", "--len", "1000", "--mergeable"],
    ["trace", "--path", "tap", "--len", "9000"],
    ["headroom"],
    ["sweep", "--len", "60-9000", "--mergeable"],
    ["diff", "--kernel", "5.12", "--kernel", "5.13", "--", "--len", "1000", "--mergeable"],
    ["xdp", "check", "--mergeable", "--mtu", "9000"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_a_narrow_terminal_never_cuts_a_cell(args: list[str]) -> None:
    result = CliRunner(env={"COLUMNS": "60"}).invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout  # cells fold; prose is soft-wrapped by the terminal


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_a_file_gets_unsqueezed_tables_without_trailing_spaces(args: list[str]) -> None:
    result = CliRunner(env={"COLUMNS": None}).invoke(cli, args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "…" not in result.stdout
    assert not any(line.endswith(" ") for line in lines)


def test_a_file_gets_the_sweep_table_on_one_line_per_range() -> None:
    result = CliRunner(env={"COLUMNS": None}).invoke(cli, ["sweep", "--len", "60-9000",
                                                           "--mergeable", "--kernel", "6.1"])
    rows = [words for words in (line.split() for line in result.stdout.splitlines())
            if words and "–" in words[0] and words[0][0].isdigit()]
    # every range row carries its count, truesize, frags, allocs and buffers on the same line:
    # nothing wrapped at 80 columns
    assert len(rows) > 10 and all(len(r) >= 6 and r[-1].isdigit() for r in rows)


def test_bars_scale_with_the_width() -> None:
    wide = CliRunner(env={"COLUMNS": "120"}).invoke(cli, ["trace", "--len", "1000"])
    narrow = CliRunner(env={"COLUMNS": "40"}).invoke(cli, ["trace", "--len", "1000"])
    bar = next(line for line in wide.stdout.splitlines() if line.startswith("["))
    small = next(line for line in narrow.stdout.splitlines() if line.startswith("["))
    assert len(bar) == 66 and len(small) <= 40  # BAR_WIDTH 64 cells + brackets, or fewer


def test_sweep_json_with_svg_writes_the_picture(tmp_path: Path) -> None:
    picture = tmp_path / "sweep.svg"
    result = CliRunner().invoke(cli, ["sweep", "--len", "60-2000", "--json", "--svg",
                                      str(picture)])
    assert result.exit_code == 0 and json.loads(result.stdout)["schema"] == "vnetrx.sweep/1"
    assert picture.read_text().startswith("<svg")


def test_sweep_stream_with_svg_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["sweep", "--len", "60-2000", "--csv", "--svg",
                                      str(tmp_path / "x.svg")])
    assert result.exit_code == 2 and "do not combine with --jsonl, --csv" in result.output
    assert not (tmp_path / "x.svg").exists()


def test_svg_fetches_no_font_from_the_network(tmp_path: Path) -> None:
    picture = tmp_path / "t.svg"
    result = CliRunner().invoke(cli, ["trace", "--len", "1000", "--svg", str(picture)])
    assert result.exit_code == 0
    svg = picture.read_text()
    assert "@font-face" not in svg and "cdnjs" not in svg and 'url("http' not in svg
    assert "textLength" in svg  # rich pins each run's width, so any monospace font aligns
