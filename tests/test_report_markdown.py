"""The Markdown reports read well where they are published: rows that fit, folded expansions, one caption style.

Checked on the committed reports of every lesson in both languages (the
golden tests keep those current), and on small hand-made pages for the
template rules (alignment from the cells, ``|`` in a formula cell, ``lang``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tracer.present.render.html import render_html
from tracer.present.render.markdown import render_markdown
from tracer.present.render.mdmath import ROW
from tracer.present.strings import Strings
from tracer.present.views.layout import width
from tracer.present.views.model import Num, Page, Para, Row, Section, Table

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ("tutorial", "trainable", "causal", "multihead")
GITHUB = 72
"""Characters of display maths that fit GitHub's text column (about 830 px)."""


def markdown(lesson: str, lang: str) -> str:
    return (ROOT / "reports" / lesson / lang / "index.md").read_text(encoding="utf-8")


def display_rows(md: str) -> list[str]:
    """Every row of every ``$$`` block (an ``aligned`` block's rows one by one)."""
    out = []
    for block in re.findall(r"^\$\$\n(.*?)\n\$\$$", md, re.S | re.M):
        rows = block.replace(r"\begin{aligned}", "").replace(r"\end{aligned}", "").split("\\\\\n")
        out += [r.replace("&", "").strip() for r in rows if r.strip()]
    return out


@pytest.mark.parametrize("lesson", LESSONS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_worked_equations_fit_githubs_column(lesson: str, lang: str) -> None:
    md = markdown(lesson, lang)
    assert r"\begin{aligned}" in md
    wide = [r for r in display_rows(md) if width(r) > GITHUB and r"\sum" not in r[:1]]
    assert wide == []


def test_rows_of_a_broken_equation_are_cut_at_the_terms() -> None:
    md = markdown("multihead", "en")
    rows = [r for r in display_rows(md) if r.startswith(r"\quad +")]
    assert rows, "a long sum continues on a row of its own"
    assert all(width(r) <= ROW + 4 for r in rows)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_pair_expansions_fold_and_clicking_is_not_mentioned(lang: str) -> None:
    md = markdown("tutorial", lang)
    folded = re.search(r'<details markdown="1">\n<summary>[^<]+</summary>\n\n(.*?)</details>', md, re.S)
    assert folded is not None and folded.group(1).count(r"\begin{aligned}") == 36
    click = Strings(lang)("pairs.click")
    assert click not in md and click in (ROOT / "reports" / "tutorial" / lang / "index.html").read_text("utf-8")


@pytest.mark.parametrize("lesson", LESSONS)
def test_captions_sit_under_tables_and_figures_italic_only_in_english(lesson: str) -> None:
    for lang in ("en", "zh"):
        lines = markdown(lesson, lang).splitlines()
        for n, line in enumerate(lines):
            if line.startswith("|") and not lines[n + 1].startswith("|"):  # a table's last row
                caption = lines[n + 2]
                assert caption and not caption.startswith(("|", "$", "#")), (lang, caption)
                assert caption.startswith("*") == (lang == "en"), (lang, caption)
            if line.startswith("!["):
                assert lines[n + 2].startswith("*") == (lang == "en")
            if line.startswith("|") and n and lines[n - 1].strip() and not lines[n - 1].startswith("|"):
                pytest.fail(f"a caption or text right above a table: {lines[n - 1]!r}")


def page_with(table: Table, lang: str = "en") -> Page:
    ui = {k: k for k in ("nav_prev", "nav_next", "nav_label", "contents")}
    return Page(lang, "t", "s", (), (Section("a", "A", (Para("p"), table)),), "f", strings=ui)


def test_alignment_comes_from_the_cells_not_their_position() -> None:
    label = Num("1", cls="label")
    grid = Table(
        "w",
        "W",
        (Num("k"), Num("c=1"), Num("c=2")),
        (Row((label, Num("0.1"), Num("0.2"))), Row(elided="…"), Row((Num("2", cls="label"), Num("-1"), Num("3")))),
    )
    assert grid.align == ("left", "right", "right")
    assert "| :--- | ---: | ---: |" in render_markdown(page_with(grid))
    tokens = Table("t", "T", (Num("j"), Num("token"), Num("x")), (Row((label, Num("a", cls="label"), Num("1"))),))
    assert tokens.align == ("left", "left", "right")
    values = Table("v", "V", (Num("what"), Num("value")), (Row((Num("The scale $s$", math=True), Num("2.0000"))),))
    assert values.align == ("left", "right")
    gaps = Table("g", "G", (Num("a"),), (Row((Num("⋯"),)), Row((Num("-inf"),)), Row((Num("1.19e-07"),))))
    assert gaps.align == ("right",)


def test_a_bar_in_a_formula_cell_does_not_end_it() -> None:
    table = Table("n", "N", (Num(r"\lVert x \rVert", latex=True), Num(r"|x_{j}|", latex=True)), ())
    md = render_markdown(page_with(table))
    assert r"| $\lVert x \rVert$ | $\|x_{j}\|$ |" in md


def test_a_bar_in_the_maths_or_code_of_a_prose_cell_does_not_end_it() -> None:
    """A values table says what each number is in words with maths, e.g. a check's formula from its trace."""
    row = Row((Num(r"the check $\max |a - b|$ of `x|y`", math=True), Num("0.0000")))
    md = render_markdown(page_with(Table("v", "V", (Num("what"), Num("value")), (row,))))
    assert r"| the check $\max \|a - b\|$ of `x\|y` | 0.0000 |" in md


def test_focus_and_total_rows_are_bold_cell_by_cell() -> None:
    rows = (Row((Num("2", cls="label"), Num(""), Num("0.5")), focus=True), Row((Num("Σ"), Num("1.0")), total=True))
    assert rows[0].strong == (True, False, True) and rows[1].strong == (True, True)
    md = render_markdown(page_with(Table("t", "T", (Num("j"), Num("a"), Num("b")), rows)))
    assert "| **2** |  | **0.5** |" in md


@pytest.mark.parametrize(("lang", "attr"), [("en", "en"), ("zh", "zh-Hans")])
def test_the_pages_language_is_set_by_the_view_model(lang: str, attr: str) -> None:
    page = page_with(Table("t", "T", (Num("j"),), ()), lang)
    assert page.html_lang == attr
    assert f'<html lang="{attr}">' in render_html(page)


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_stage_has_its_code_fenced_and_highlighted(lesson: str) -> None:
    md = markdown(lesson, "zh")
    stages = md.count("\n## ")
    assert md.count("\n```python\n") >= stages - 1  # the tutorial's recap has no code of its own
    assert md.count("\n```text\n") >= stages - 1 and "tensor([" in md and "  traced: " not in md  # as PyTorch prints
    page = (ROOT / "reports" / lesson / "zh" / "index.html").read_text("utf-8")
    assert page.count('<pre class="py"><code>') == md.count("\n```python\n")
    assert '<span class="nb">' in page or '<span class="n">torch</span>' in page  # Pygments' classes, no script
