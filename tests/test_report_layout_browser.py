"""Every lesson page, both languages, on a phone (390 px) and a laptop (1280 px): results stay in view.

No page scrolls sideways; every displayed equation (and every line of a
broken one) ends inside the viewport, apart from maths inside a table's
scrolling box; maths is drawn in the same font in both languages; the step
navigator stops only at the walk-through's steps and never covers text.
Full-page screenshots of each lesson, language and width go to
``artifacts/`` (git-ignored) for a person to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chromium import EXE, Browser

pytestmark = [pytest.mark.browser, pytest.mark.skipif(EXE is None, reason="chromium is not installed")]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts"
LESSONS = ("tutorial", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache", "model")

OVERFLOWING_MATH = """(() => {
  const W = document.documentElement.clientWidth, out = [];
  for (const m of document.querySelectorAll('math')) {
    if (m.closest('.scroll')) continue;  // a table's cells scroll inside their box, which shows it
    let right = 0;
    for (const e of m.querySelectorAll('mi, mn, mo, mtext')) right = Math.max(right, e.getBoundingClientRect().right);
    if (right > W + 0.5) out.push(`${m.closest('[id]')?.id}: ${Math.round(right)} px`);
  }
  return out;
})()"""

COVERED = """(() => {
  const nav = document.querySelector('.stepper').getBoundingClientRect(), hit = [];
  for (const e of document.querySelectorAll('p, h2, .eq, .extra, td, th, figcaption, svg, .formula, pre')) {
    if (e.closest('details:not([open])')) continue;  // folded away: its boxes are stale, nothing is drawn
    const r = e.getBoundingClientRect(), box = e.closest('.scroll')?.getBoundingClientRect();  // a table's box clips it
    if (box) { r.x = Math.max(r.left, box.left); r.width = Math.max(0, Math.min(r.right, box.right) - r.x); }
    if (r.width && r.left < nav.right && nav.left < r.right && r.top < nav.bottom && nav.top < r.bottom)
      hit.push(e.closest('[id]')?.id ?? e.tagName);
  }
  return hit;
})()"""


def url(lesson: str, lang: str) -> str:
    return (ROOT / "reports" / lesson / lang / "index.html").as_uri()


@pytest.mark.parametrize("lesson", LESSONS)
@pytest.mark.parametrize("width", [390, 1280])
def test_results_stay_in_view(browser: Browser, lesson: str, width: int) -> None:
    for lang in ("en", "zh"):
        browser.open(url(lesson, lang), width=width, height=900)
        browser.js("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert browser.js(OVERFLOWING_MATH) == [], lang
        assert browser.js("document.documentElement.scrollWidth") <= width, (lang, "the page scrolls sideways")
        # every page writes its focus query's numbers out, and some equation is long enough to break
        assert browser.js("document.querySelectorAll('.eq.broken').length") > 0, "no long equation was broken"
        hinted = browser.js(
            "[...document.querySelectorAll('.scroll')].filter(e => e.scrollWidth > e.clientWidth)"
            ".map(e => getComputedStyle(e).backgroundImage.includes('radial-gradient'))"
        )
        assert all(hinted), "a table that scrolls sideways shows no shadow at its edge"
        if lesson == "tutorial" and width == 390:  # the normalization table is wider than a phone: it scrolls
            norm = "document.querySelector('#norm-table .scroll')"
            assert browser.js(f"{norm}.scrollWidth > {norm}.clientWidth"), lang
            assert "radial-gradient" in browser.js(f"getComputedStyle({norm}).backgroundImage"), lang
        ARTIFACTS.mkdir(exist_ok=True)
        browser.screenshot(str(ARTIFACTS / f"layout-{lesson}-{lang}-{width}.png"), full=True)


@pytest.mark.parametrize("lesson", LESSONS)
def test_maths_font_is_the_same_in_both_languages(browser: Browser, lesson: str) -> None:
    used = {}
    for lang in ("en", "zh"):
        browser.open(url(lesson, lang), width=1280)
        used[lang] = browser.fonts(".eq mn")
        assert not any("CJK" in f for f in used[lang]), (lang, used[lang])
    assert used["en"] == used["zh"]


@pytest.mark.parametrize("lesson", LESSONS)
@pytest.mark.parametrize("width", [390, 1280])
def test_navigator_stops_at_the_walk_through_and_covers_nothing(browser: Browser, lesson: str, width: int) -> None:
    for lang in ("en", "zh"):
        browser.open(url(lesson, lang), width=width, height=800)
        stops = browser.js("document.querySelectorAll('.stop').length")
        assert 10 < stops < 30, (lang, stops)  # the worked results, not every table (43 to 67 before)
        if lesson == "tutorial":  # the 36 pair expansions are folded: the navigator skips them
            assert browser.js("document.querySelectorAll('details.group .step').length") > 0
        assert browser.js("document.querySelector('.stepper .where').textContent") == f"\u2013 / {stops}"
        for n in range(stops):  # every stop, to the last: the buttons never sit on text, the stop is in sight
            browser.js("document.querySelector('.stepper .next').click()")
            assert browser.js(COVERED) == [], (lang, n + 1)
            assert browser.js("document.querySelector('.step.current').closest('details:not([open])')") is None
            assert browser.js("document.querySelector('.step.current').getClientRects().length") > 0
        assert browser.js("document.querySelector('.stepper .where').textContent") == f"{stops} / {stops}"


SCROLLING = "[...document.querySelectorAll('.scroll')].filter(e => e.scrollWidth > e.clientWidth + 0.5)"


@pytest.mark.parametrize("lesson", LESSONS)
def test_only_wide_number_tables_scroll(browser: Browser, lesson: str) -> None:
    """At 1280 px no table scrolls; at 390 px a table of words never does (its words wrap), only wide grids."""
    for lang in ("en", "zh"):
        browser.open(url(lesson, lang), width=1280, height=900)
        assert browser.js(f"{SCROLLING}.map(e => e.closest('[id]').id)") == [], lang
        browser.open(url(lesson, lang), width=390, height=900)
        if lesson in ("trainable", "causal"):  # their tables of single numbers say in words what each is
            assert browser.js("document.querySelectorAll('td.prose').length") > 0
        assert browser.js(f"{SCROLLING}.filter(e => e.querySelector('td.prose')).map(e => e.closest('[id]').id)") == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_absolute_value_bars_sit_tight(browser: Browser, lang: str) -> None:
    """In |x| |y| cos θ each bar touches what it encloses (a bare bar is spaced like a relation, 0.28 em)."""
    browser.open(url("tutorial", lang), width=1280)
    gaps = browser.js(
        """[...document.querySelectorAll('mo[fence="true"]')].map(mo => {
             const r = mo.getBoundingClientRect(), pre = mo.getAttribute('form') === 'prefix';
             const e = pre ? mo.nextElementSibling : mo.previousElementSibling, s = e.getBoundingClientRect();
             return pre ? s.left - r.right : r.left - s.right; })"""
    )
    assert len(gaps) >= 6
    assert all(g < 1.5 for g in gaps), gaps
