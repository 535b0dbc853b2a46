"""The committed lesson pages read as a teacher hands them out: maths as maths, and each thing said once.

Read from ``reports/`` (all four lessons, en and zh):

* outside maths, code and figures, no text writes a symbol as ``x(2)``,
  ``z(2)``, ``α_2j`` or ``ω₂ⱼ`` (titles, the summary, prose, captions,
  table cells); in HTML those are MathML, in Markdown ``$…$``;
* the tutorial's section 4 title holds its symbol as MathML (HTML) and as
  ``$z^{(2)}$`` (Markdown), while ``<title>`` keeps a plain form;
* the note on what a bounded check (``≤ 5e-07``) means is said once per
  page, in the caption of the first table that holds such a check.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [f"{lesson}/{lang}" for lesson in ("tutorial", "trainable", "causal", "multihead") for lang in ("en", "zh")]
PLAIN_MATHS = re.compile(r"(?<![\w`])[a-zA-Zα-ωΑ-Ω]\(\d+\)|[a-zα-ω]_[0-9a-z{]|[a-zα-ω][₀-₉ⱼᵢ]")
"""A symbol written as text: x(2), z(2), α_2j, ω₂ⱼ."""


class Text(HTMLParser):
    """The text a reader sees outside maths, code, figures and the head."""

    SKIP = ("math", "code", "pre", "script", "style", "svg", "title", "samp")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.out: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.depth += tag in self.SKIP

    def handle_endtag(self, tag: str) -> None:
        self.depth -= tag in self.SKIP

    def handle_data(self, data: str) -> None:
        if not self.depth and data.strip():
            self.out.append(data.strip())


def _html(page: str) -> str:
    return (ROOT / "reports" / page / "index.html").read_text(encoding="utf-8")


def _md(page: str) -> str:
    return (ROOT / "reports" / page / "index.md").read_text(encoding="utf-8")


def _md_prose(text: str) -> list[str]:
    """Markdown lines outside code fences and display maths, with ``$…$`` maths and inline code taken out."""
    out, fenced, display = [], False, False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if line.strip() == "$$":
            display = not display
            continue
        if not fenced and not display and not line.startswith("![") and not line.startswith("<"):
            out.append(re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", "", line))
    return out


@pytest.mark.parametrize("page", PAGES)
def test_no_symbol_is_written_as_plain_text(page: str) -> None:
    seen = Text()
    seen.feed(_html(page))
    bad = [t for t in seen.out if PLAIN_MATHS.search(t)]
    assert not bad, f"{page}: maths written as text in HTML: {bad[:5]}"
    bad = [line for line in _md_prose(_md(page)) if PLAIN_MATHS.search(line)]
    assert not bad, f"{page}: maths written as text in Markdown: {bad[:5]}"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_title_with_a_symbol_has_it_as_maths(lang: str) -> None:
    html, md = _html(f"tutorial/{lang}"), _md(f"tutorial/{lang}")
    h2 = re.search(r'<section class="part" id="context">\s*<h2>(.*?)</h2>', html, re.S)
    assert h2 and "<math" in h2.group(1) and "<mn>2</mn>" in h2.group(1)
    toc = re.search(r'<li><a href="#context">(.*?)</a></li>', html, re.S)
    assert toc and "<math" in toc.group(1)
    assert re.search(r"^## 4\. .*\$z\^\{\(2\)\}\$$", md, re.M)
    title = re.search(r"<title>(.*?)</title>", html, re.S)
    assert title and "<" not in title.group(1) and "$" not in title.group(1)
    focus = re.search(r"<dd>(<math.*?</math>)</dd>", html, re.S)
    assert focus and "<mi>x</mi>" in focus.group(1)  # the focus query's symbol, its token on the next line
    assert "journey" in html.split(focus.group(1), 1)[1].split("</dl>", 1)[0]


@pytest.mark.parametrize("page", [p for p in PAGES if not p.startswith(("tutorial", "multihead"))])
def test_what_a_bounded_check_means_is_said_once_where_one_is_shown(page: str) -> None:
    html = _html(page)
    long = r"written (≤ [\d.e+-]+) is a bound" if page.endswith("en") else r"写作 (≤ [\d.e+-]+) 的检查"
    tables = re.findall(r'<figure class="table step[^"]*" id="[^"]*values">(.*?)</figure>', html, re.S)
    assert len(tables) >= 2, page
    saying = [t for t in tables if re.search(long, t.split("<figcaption>", 1)[1])]
    assert len(saying) == 1, f"{page}: the bound is explained {len(saying)} times"
    first = next(t for t in tables if re.search(r"<td[^>]*>≤ ", t))
    assert saying[0] is first, f"{page}: the explanation is not where the first bounded check is"
    quoted = re.search(long, first.split("<figcaption>", 1)[1])
    assert quoted is not None and f">{quoted.group(1)}<" in first  # it quotes a bound its own table shows
    assert 'role="doc-noteref"' in first.split("<figcaption>", 1)[1]  # why it varies by machine: a footnote


@pytest.mark.parametrize("page", [p for p in PAGES if not p.startswith("tutorial")])
def test_a_heatmap_follows_the_table_of_its_matrix(page: str) -> None:
    """The shaded matrix comes right after its numbers (head by head), not after the stage's last table."""
    figures = re.findall(r'<figure class="(table|fig) step[^"]*" id="([^"]+)">', _html(page))
    heat = [n for n, (kind, fid) in enumerate(figures) if kind == "fig" and "alpha" in fid]
    assert heat, page
    for n in heat:
        node = re.sub(r"-h\d+$", "", figures[n][1].removeprefix("fig-"))
        table = next(fid for kind, fid in reversed(figures[:n]) if kind == "table")
        assert re.search(rf"-{re.escape(node)}(-h\d+)?$", table), f"{page}: {figures[n][1]} follows table {table}"


@pytest.mark.parametrize("page", PAGES)
def test_punctuation_after_maths_is_kept_with_it(page: str) -> None:
    """``$z^{(2)}$：`` never leaves the colon at the start of the next line: the two sit in one unbreakable span."""
    html = _html(page)
    after = [m for m in re.finditer(r"</math>([，。：；、,.:;])", html)]
    assert after, page
    loose = [
        html[m.start() - 60 : m.end() + 10]
        for m in after
        if not html[m.end() :].lstrip("，。：；、,.:;)").startswith("</span>")
    ]
    assert not loose, f"{page}: punctuation after maths may start a line: {loose[:2]}"


STANDALONE_IN_PARENS = re.compile(r"=\s*\(\{-[\d.]+\}\)\s*(?:$|\\\\|\$)", re.MULTILINE)
"""A whole right-hand side in parentheses: ``&= ({-0.5874})`` or ``s_{1} = ({-0.2184})$``."""


@pytest.mark.parametrize("page", PAGES)
def test_a_negative_result_stands_without_parentheses(page: str) -> None:
    # parentheses keep a negative term apart from the + before it; a total or a running sum has no + before it
    text = _md(page)
    assert not STANDALONE_IN_PARENS.findall(text)
    if page.startswith("multihead"):
        assert r"&= {-0.5874}" in text  # z⁽²⁾ of head 1, component 1: a negative total, written as one
        assert r"&= ({-0.2184}) + ({-0.3690})" in text  # its negative terms keep their parentheses


def test_alone_drops_only_the_parentheses() -> None:
    from tracer.present.views.common import alone, tex

    assert tex("-0.5874") == "({-0.5874})"
    assert alone("-0.5874") == "{-0.5874}"
    assert alone("0.5874") == "0.5874"
    assert alone("-inf") == r"{-\infty}"
    assert alone("nan") == r"\mathrm{nan}"
