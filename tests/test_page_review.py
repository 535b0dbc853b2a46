"""The defects a bilingual review of the lesson pages found, each held at its cause.

Column headers come from how the trace splits a node (groups, not heads);
a narrative's summary is prose with maths; counts and sums of 0/1 masks
print as whole numbers; weights of hidden keys are marked as masked, in
tables and heatmaps; a check's value is as precise as the decimals asked;
and a lesson's focus rule picks the one query its page follows.
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np
import pytest

import tracer
from tracer.core import fmt, portable
from tracer.present import narrative
from tracer.present.explain import value_text
from tracer.present.render.html import render_html
from tracer.present.render.markdown import render_markdown
from tracer.present.strings import Strings
from tracer.present.views import lesson
from tracer.present.views.lessonctx import LessonCtx
from tracer.present.views.model import Equation, Figure, Page, Table
from tracer.present.views.nodes import head_labels


@cache
def trace(name: str, **options: object) -> tracer.Trace:
    return tracer.trace_lesson(name, **options)


@cache
def page(name: str, lang: str = "en") -> Page:
    return lesson.build(trace(name), narrative.load(name, lang))


def tables(p: Page) -> list[Table]:
    return [b for s in p.sections for b in s.blocks if isinstance(b, Table)]


def table(p: Page, anchor: str) -> Table:
    return next(t for t in tables(p) if t.anchor == anchor)


@pytest.mark.parametrize(("lang", "word"), [("en", "group"), ("zh", "组")])
def test_gqa_key_and_value_columns_are_headed_by_group(lang: str, word: str) -> None:
    """The keys are G·d_h wide: their columns are the groups' components, 1 · group 1 … 4 · group 2."""
    p = page("gqa", lang)
    for name in ("projections-k", "projections-v"):
        head = [c.text for c in table(p, name).head[2:]]
        assert len(head) == 4 and all(word in h for h in head), head
        groups = [re.findall(r"\d+", h)[1] for h in head]
        assert groups == ["1", "1", "2", "2"], head  # d_h = 2 components per group


def test_gqa_queries_joined_back_are_still_headed_by_head() -> None:
    tr = trace("gqa")
    ctx = LessonCtx(tr, Strings("en"), 4)
    for name in ("q", "concat"):  # split into H heads, and joined back from them
        head = head_labels(ctx, tr.node(name), tr.node(name).axes[-1])
        assert len(head) == 8 and all("head" in h for h in head) and head[-1].endswith("head 4"), head


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_summary_with_maths_is_maths_in_html_and_markdown(lang: str) -> None:
    html = render_html(page("gqa", lang))
    md = render_markdown(page("gqa", lang))
    assert "$H = 4$" not in html.split("<body", 1)[1]  # typeset, not dollars
    assert "<title>" in html and "$" not in html.split("<title>", 1)[1].split("</title>")[0]
    assert r"\$H" not in md and "$H = 4$" in md


def test_counts_print_as_whole_numbers_on_the_page_and_in_its_code() -> None:
    values = table(page("gqa"), "cache-values")  # the stage's scalars
    assert [r.cells[1].text for r in values.rows] == ["16", "8", "2"]
    assert "16.0000" not in render_markdown(page("gqa"))


def test_the_sum_of_two_masks_prints_as_they_do() -> None:
    """H = U + F: 0 and 1 like its parts, never 1.0000 beside them."""
    p = page("window")
    for name in ("mask-mask-future", "mask-mask-far", "mask-mask-hide"):
        cells = {c.text for r in table(p, name).rows for c in r.cells[2:] if not r.elided}
        assert cells <= {"0", "1", "⋯"}, (name, cells)
    sums = [b for s in p.sections for b in s.blocks if isinstance(b, Equation) and b.lhs.startswith("H_")]
    assert sums and all(b.rhs[-1][-1] in ("= 0", "= 1") for b in sums), [b.rhs[-1] for b in sums]
    weights = {c.text for r in table(p, "normalize-window-alpha").rows for c in r.cells}
    assert "1.0000" in weights  # a weight is a weight: its decimals stay


def test_hidden_keys_are_marked_masked_and_small_weights_are_not() -> None:
    p = page("window")
    alpha, tr = table(p, "normalize-window-alpha"), trace("window")
    w, t = int(tr.meta["window"]), len(tr.tokens)
    for i, r in enumerate(x for x in alpha.rows if not x.elided):
        for j, c in enumerate(r.cells[2:]):
            hidden = j > i or j <= i - w
            assert (c.cls == "masked") == hidden, (i + 1, j + 1, c)
    assert t > w  # the lesson's rows beyond the window hide keys on both sides
    svg = next(b.svg for s in p.sections for b in s.blocks if isinstance(b, Figure) and "window-alpha" in b.anchor)
    assert svg.count('fill="#e2e8f0"') == sum(1 for i in range(t) for j in range(t) if j > i or j <= i - w)


def test_check_values_are_fixed_when_large_and_as_precise_as_asked() -> None:
    assert fmt.difference(2.32) == "2.3200"
    assert fmt.difference(2.98e-8) == "2.98e-08"
    assert fmt.difference(2.9802322387695312e-08, 12) == "2.9802322388e-08"
    assert fmt.difference(0.0) == "0"
    tr = trace("causal")
    check = next(n for n in tr.nodes if n.op == portable.CHECK and portable.bound(n) is None and float(n.value) != 0)
    short, long = value_text(tr, check.name, 4), value_text(tr, check.name, 12)
    assert len(long) > len(short) and float(long) == pytest.approx(float(check.value), rel=1e-9)


def test_wide_tables_are_marked_and_small_ones_keep_their_width_in_print() -> None:
    p = page("gqa")
    assert not table(p, "cache-values").wide and table(p, "output-W-out").wide
    html = render_html(p)
    assert 'class="wide"' in html and "table.wide { width: 100%" in html
    assert "table { width: auto; max-width: 100%" in html[html.index("@media print") :]


def test_the_keyboard_hint_is_hidden_on_phones_and_touch_screens() -> None:
    html = render_html(page("window"))
    assert "@media (hover: none) and (pointer: coarse)" in html
    phone = html[html.index("@media (max-width: 40rem)") :]
    assert ".stepper .keys { display: none; }" in phone[: phone.index("\n}")]


@pytest.mark.parametrize(("name", "query"), [("window", 6), ("flash", 5), ("kvcache", 4)])
def test_a_lesson_s_focus_rule_picks_the_query_its_page_follows(name: str, query: int) -> None:
    tr = trace(name)
    assert tr.query == query
    p = page(name)
    focus_rows = {r.cells[0].text for t in tables(p) for r in t.rows if r.focus}
    assert focus_rows <= {str(query)}, focus_rows
    worked = [b for s in p.sections for b in s.blocks if isinstance(b, Equation)]
    assert worked and all(f"-{query}-" in b.anchor or f"_{{{query}" in b.lhs or f"{query}" in b.step for b in worked)


def test_a_query_the_user_names_wins_over_the_rule() -> None:
    assert trace("causal").query == 2  # no rule: the tutorial's second token
    assert tracer.trace_lesson("window", query=3).query == 3
    assert tracer.trace_lesson("flash", block=6).query == 6  # one block: the last query


def test_the_kvcache_summary_names_the_worked_token() -> None:
    summary = dict(page("kvcache").summary)
    assert any("x^{(4)}" in str(v) for v in summary.values()), summary
    np.testing.assert_array_equal(trace("kvcache").tensor("gen.z"), trace("kvcache").tensor("full.z"))


def test_flash_writes_out_every_accumulator_of_its_focus_query() -> None:
    """o^{(5,1)} and o^{(5,2)} are worked out before z^{(5)} divides o^{(5,3)}: no accumulator is skipped."""
    lhs = {b.lhs for s in page("flash").sections for b in s.blocks if isinstance(b, Equation)}
    assert {r"o^{(5,1)}_{1}", r"o^{(5,2)}_{1}", r"o^{(5,3)}_{2}"} <= lhs, sorted(lhs)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_rope_indexes_every_angle_by_token_and_writes_one_distance(lang: str) -> None:
    """The prose's φ is the tables' φ_{i,p} = m_i θ_p, and the distance is m_j − m_i wherever it is named."""
    story = narrative.load("rope", lang)
    text = " ".join(s.text for s in story.stages.values())
    assert r"\phi_{m,p}" not in text and r"\phi_{i,p} = m_i" in text
    assert "m_i - m_j" not in text and "m_j - m_i" in text
    assert all(r"\phi_{i,p}" in story.node(n).caption for n in ("rope.angle",))
