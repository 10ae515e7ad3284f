"""``--svg FILE`` and ``--html FILE``: a picture of the text output (render/export.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click


def export_options(f: Any) -> Any:
    f = click.option(
        "--html",
        "html",
        metavar="FILE",
        default=None,
        help="Also write the text output as HTML (rich's export_html) to FILE.",
    )(f)
    return click.option(
        "--svg",
        "svg",
        metavar="FILE",
        default=None,
        help="Also write the text output as an SVG picture (rich's export_svg) to FILE.",
    )(f)


def export_pictures(
    make_renderable: Callable[[], Any], svg: str | None, html: str | None, title: str
) -> None:
    """Build the renderable only when a picture was asked for (the JSON path stays rich-free)."""
    if svg is None and html is None:
        return
    from vnetrx.render.export import write_pictures

    write_pictures(make_renderable(), svg=svg, html=html, title=title)
