"""The HTML report: one self-contained page, or a class-scoped fragment to paste into another page.

The page has inline CSS, inline SVG figures and MathML; its only script (the
step navigator) is allowed by hash in a Content-Security-Policy that forbids
every remote load.  The fragment is a single ``<section>`` whose styles are
scoped under its class, with figures as ``data:`` URIs and no script.
"""

from __future__ import annotations

import base64
import hashlib
import re

from markupsafe import Markup, escape

from tracer.present.render.env import render
from tracer.present.strings import Strings, templates_dir
from tracer.present.views.model import Figure, Page

ROOT = "attn-trace-report"
"""The class every style is scoped under."""


def asset(name: str) -> str:
    """A CSS or JS file from the templates folder."""
    return (templates_dir() / name).read_text(encoding="utf-8")


def inline_svg(fig: Figure) -> Markup:
    """The figure's SVG for inlining, labelled for assistive technology by its alt text.

    A figure with links or doors (a heatmap whose cells open their steps) is
    a ``group``: an ``img`` would hide its controls from a screen reader.
    """
    title = f"{fig.name}-title"
    role = "group" if "<a " in fig.svg or " data-id=" in fig.svg else "img"
    head = f'<svg role="{role}" aria-labelledby="{title}" class="figure-svg"'
    svg = re.sub(r'(<svg\b[^>]*?)\s+role="[^"]*"', r"\1", fig.svg, count=1)  # ours replaces the figure's own
    svg = svg.replace("<svg", head, 1)
    label = f'\n <title id="{title}">{escape(fig.alt)}</title>'
    svg = re.sub(r"(<svg[^>]*>)", lambda m: m.group(1) + label, svg, count=1)
    return Markup(svg)


def data_uri(fig: Figure) -> Markup:
    """The figure as an ``<img>`` with a ``data:`` URI (for fragments)."""
    b64 = base64.b64encode(fig.svg.encode("utf-8")).decode("ascii")
    return Markup(f'<img class="figure-img" alt="{escape(fig.alt)}" src="data:image/svg+xml;base64,{b64}">')


def csp(script: str) -> str:
    """The page's Content-Security-Policy: nothing remote, only our own script (by hash)."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src 'none'; "
        f"script-src 'sha256-{digest}'; connect-src 'none'; base-uri 'none'; form-action 'none'"
    )


def render_html(page: Page, fragment: bool = False) -> str:
    """The report as HTML text: a whole page, or the ``<section>`` fragment."""
    strings = Strings(page.lang)
    css = asset("report.css") + asset("doors.css")
    script = asset("report.js") + asset("doors.js")
    figure = data_uri if fragment else inline_svg
    context = {"page": page, "root": ROOT, "css": css, "figure": figure, "fragment": fragment}
    if fragment:
        return render("fragment.html.j2", strings, **context)
    return render("report.html.j2", strings, script=script, csp=csp(script), **context)
