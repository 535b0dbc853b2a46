"""The pages of a class checked at once (``check DIR:NAME --format html -o OUT``): its index, and a page for trouble.

Rendered from ``templates/classpage.html.j2`` with Jinja2's autoescape:
every name, verdict and printed output there is the students' text, and
reaches the page escaped.  The page carries the report's style and a
Content-Security-Policy that forbids every remote load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracer.core.fmt import printable
from tracer.present.render.env import render
from tracer.present.render.html import asset, csp
from tracer.present.strings import Strings, html_lang


@dataclass(frozen=True)
class Row:
    """One student in the index: the page's file, the name shown, its status (a CSS class) and its line."""

    page: str
    label: str
    status: str
    said: str


def _page(title: str, lang: str, **body: object) -> str:
    return render(
        "classpage.html.j2",
        Strings(lang),
        html_lang=html_lang(lang),
        csp=csp(""),
        css=asset("report.css"),
        title=printable(title),
        **body,
    )


def index(title: str, summary: Sequence[str], rows: Sequence[Row], lang: str) -> str:
    """The class's index: the summary's lines, then one row per student linking their page."""
    return _page(title, lang, summary=list(summary), rows=list(rows))


def trouble(label: str, said: str, output_title: str, output: str, lang: str) -> str:
    """The page of a student whose check did not run: why, and what their code printed (if anything)."""
    return _page(label, lang, said=said, output_title=output_title, output=output)
