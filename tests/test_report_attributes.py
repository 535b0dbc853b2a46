"""HTML reports repeat no attribute on any tag (a parse error); golden tests hold committed ones to fresh output."""

from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tracer.present.render.html import inline_svg
from tracer.present.views.model import Figure

REPORTS = sorted((Path(__file__).resolve().parent.parent / "reports").glob("*/*/index.html"))


class _Repeats(HTMLParser):
    """Collects every tag that names one attribute twice."""

    def __init__(self) -> None:
        super().__init__()
        self.repeats: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        twice = [name for name, n in Counter(name for name, _ in attrs).items() if n > 1]
        if twice:
            self.repeats.append(f"<{tag}> repeats {', '.join(twice)}")


def repeats(html: str) -> list[str]:
    """The tags of ``html`` that repeat an attribute."""
    parser = _Repeats()
    parser.feed(html)
    return parser.repeats


def test_the_parser_sees_a_repeat() -> None:
    assert repeats('<svg role="img" x="1" role="img"></svg>') == ["<svg> repeats role"]


def test_an_inlined_figure_has_one_role() -> None:
    fig = Figure(
        anchor="x",
        name="fig-x",
        caption="c",
        svg='<svg xmlns="http://www.w3.org/2000/svg" role="img"><g/></svg>',
        alt="a <b>",
    )
    html = str(inline_svg(fig))
    assert repeats(html) == []
    assert html.count('role="img"') == 1 and 'aria-labelledby="fig-x-title"' in html


@pytest.mark.parametrize("page", REPORTS, ids=lambda p: f"{p.parent.parent.name}-{p.parent.name}")
def test_committed_reports_repeat_no_attribute(page: Path) -> None:
    assert repeats(page.read_text(encoding="utf-8")) == []
