"""The Markdown report: ``$...$`` and ``$$...$$`` math, escaped table cells, figures as SVG files beside it."""

from __future__ import annotations

from tracer.present.render.env import render
from tracer.present.strings import Strings
from tracer.present.views.model import Page


def render_markdown(page: Page) -> str:
    """The report as Markdown text; figures are linked as ``<name>.svg`` in the same folder."""
    return render("report.md.j2", Strings(page.lang), page=page)
