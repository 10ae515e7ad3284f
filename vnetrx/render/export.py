"""Pictures of the text output: the same rich renderable, recorded and exported as SVG or HTML
(rich's ``Console(record=True)``, ``export_svg`` / ``export_html``; nothing hand-drawn).

Shared by ``trace``, ``diff``, ``headroom`` and ``sweep``: build the renderable, then
``write_pictures(renderable, svg=…, html=…, title=…)``.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console, RenderableType
from rich.terminal_theme import MONOKAI

from vnetrx.errors import VnetrxError

PICTURE_WIDTH = 110  # columns: wide enough for the steps table and the maps side by side


def record(renderable: RenderableType, width: int = PICTURE_WIDTH) -> Console:
    """A recording console that has printed ``renderable`` (into memory, not stdout)."""
    console = Console(
        record=True,
        width=width,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        soft_wrap=False,
    )
    console.print(renderable)
    return console


def _offline_svg_format() -> str:
    """rich's SVG template without its @font-face blocks, which fetch Fira Code from a CDN: the
    picture uses the viewer's own monospace font (every text run carries a textLength, so the
    columns still line up) and renders the same offline."""
    import re

    from rich._export_format import CONSOLE_SVG_FORMAT  # rich's default SVG template

    without = re.sub(r"\s*@font-face \{\{.*?\}\}", "", CONSOLE_SVG_FORMAT, flags=re.S)
    return without.replace("font-family: Fira Code, monospace;",
                           "font-family: 'DejaVu Sans Mono', 'Liberation Mono', Menlo, Consolas, "
                           "monospace;")


def svg_text(renderable: RenderableType, title: str, width: int = PICTURE_WIDTH) -> str:
    return record(renderable, width).export_svg(title=title, theme=MONOKAI,
                                                code_format=_offline_svg_format())


def html_text(renderable: RenderableType, width: int = PICTURE_WIDTH) -> str:
    return record(renderable, width).export_html(theme=MONOKAI, inline_styles=True)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise VnetrxError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_pictures(
    renderable: RenderableType, *, svg: str | None, html: str | None, title: str
) -> None:
    """Write the SVG and/or HTML picture of ``renderable`` (either may be None)."""
    if svg is not None:
        _write(svg, svg_text(renderable, title))
    if html is not None:
        _write(html, html_text(renderable))
