"""The HTML report in headless Chromium: clean console, no requests, MathML, navigator, no-JS completeness.

Skipped where Chromium is not installed.  Screenshots at 390 and 1280 px go
to ``artifacts/`` (git-ignored) for a person to look at.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.chromium import EXE, Browser

pytestmark = [pytest.mark.browser, pytest.mark.skipif(EXE is None, reason="chromium is not installed")]

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory, tutorial_report: Callable[..., dict[str, bytes]]) -> dict[str, str]:
    out = {}
    for lang in ("en", "zh"):
        folder = tmp_path_factory.mktemp(f"report-{lang}")
        for name, data in tutorial_report(lang).items():
            (folder / name).write_bytes(data)
        out[lang] = (folder / "index.html").as_uri()
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [390, 1280])
def test_loads_cleanly_and_renders_math(browser: Browser, pages: dict[str, str], lang: str, width: int) -> None:
    browser.open(pages[lang], width=width)
    assert browser.errors() == []
    assert [u for u in browser.requests() if u != pages[lang] and not u.startswith("data:")] == []
    # MathML is laid out: a fraction's numerator sits above its denominator
    stacked = browser.js(
        "(() => { const f = document.querySelector('mfrac');"
        " const [a, b] = f.children; return a.getBoundingClientRect().bottom <= b.getBoundingClientRect().top + 1; })()"
    )
    assert stacked is True
    # nothing wider than the screen except inside the scrolling boxes
    assert browser.js("document.documentElement.scrollWidth") <= width
    ARTIFACTS.mkdir(exist_ok=True)
    browser.screenshot(str(ARTIFACTS / f"report-{lang}-{width}.png"))


def test_navigator_walks_the_steps(browser: Browser, pages: dict[str, str]) -> None:
    browser.open(pages["en"])
    ids = browser.js("[...document.querySelectorAll('.stop')].map(e => e.id)")
    assert len(ids) > 10  # the worked results; the folded expansions are reached from the heatmap
    current = "document.querySelector('.step.current')?.id ?? null"
    assert browser.js(current) is None
    browser.js("document.querySelector('.stepper .next').click()")
    assert browser.js(current) == ids[0]
    browser.js("document.querySelector('.stepper .next').click()")
    assert browser.js(current) == ids[1]
    browser.js("document.querySelector('.stepper .prev').click()")
    assert browser.js(current) == ids[0]
    assert browser.js("location.hash") == "#" + ids[0]
    assert browser.js("document.querySelector('.stepper .where').textContent") == f"1 / {len(ids)}"


def test_heatmap_cell_opens_its_expansion(browser: Browser, pages: dict[str, str]) -> None:
    browser.open(pages["en"])
    assert browser.js("document.querySelector('details.group').open") is False  # folded once JS runs
    box = browser.js(
        "(() => { const a = [...document.querySelectorAll('#fig-omega a')]"
        ".find(a => a.getAttribute('xlink:href') === '#pair-3-4' || a.getAttribute('href') === '#pair-3-4');"
        " a.scrollIntoView({block: 'center'}); const r = a.getBoundingClientRect();"
        " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
    )
    browser.click(*box)
    browser.js("new Promise(r => setTimeout(r, 100))")
    # the cell is a door: it opens the score's panel (its link still leads to the expansion without script)
    assert browser.js("document.querySelector('dialog.door-panel .door-title').textContent") == "omega[3,4]"
    browser.js("document.querySelector('dialog.door-panel').close(); location.hash = '#pair-3-4'")
    browser.js("new Promise(r => setTimeout(r, 100))")
    assert browser.js("location.hash") == "#pair-3-4"
    assert browser.js("document.querySelector('details.group').open") is True
    assert browser.js("document.getElementById('pair-3-4').classList.contains('current')") is True
    # the expansion is not a stop: Next goes on to the first stop after it, Previous back to the one before
    near = browser.js(
        "(() => { const el = document.getElementById('pair-3-4'), all = [...document.querySelectorAll('.stop')];"
        " const n = all.findIndex(s => el.compareDocumentPosition(s) & Node.DOCUMENT_POSITION_FOLLOWING);"
        " return [all[n - 1].id, all[n].id]; })()"
    )
    browser.js("document.querySelector('.stepper .next').click()")
    assert browser.js("document.querySelector('.step.current').id") == near[1]
    browser.js("document.getElementById('pair-3-4').scrollIntoView(); location.hash = '#pair-1-1'")
    browser.js("new Promise(r => setTimeout(r, 100))")
    browser.js("document.querySelector('.stepper .prev').click()")
    assert browser.js("document.querySelector('.step.current').id") == near[0]


def test_every_step_is_there_without_javascript(
    browser: Browser, pages: dict[str, str], tutorial_report: Callable[..., dict[str, bytes]]
) -> None:
    html = tutorial_report("en")["index.html"].decode()
    expected = len(re.findall(r'class="[^"]*\bstep\b', html))
    browser.open(pages["en"], script=False)
    try:
        assert browser.js("document.querySelectorAll('.stepper').length") == 0
        assert browser.js("document.querySelectorAll('.step').length") == expected
        hidden = browser.js("[...document.querySelectorAll('.step')].filter(e => !e.getClientRects().length).length")
        assert hidden == 0
        assert browser.errors() == []
    finally:
        browser.open("about:blank", script=True)
