"""Every number a door, in Chromium, on every committed page (one browser for the module).

A number in a table, a worked equation's result or a heatmap cell is a
button; it opens a modal panel with the step's equation, operation and
inputs; an input opens its own panel with a trail back; Escape closes it
and the focus returns to the number; nothing loads from the network and
nothing is wider than a phone's 390 px, with a panel open or not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chromium import EXE, Browser
from tests.test_report_keyboard import key

pytestmark = [pytest.mark.browser, pytest.mark.skipif(EXE is None, reason="chromium is not installed")]

REPORTS = Path(__file__).resolve().parent.parent / "reports"
PAGES = sorted(REPORTS.glob("*/*/index.html"))

NUMBERS = """(() => {
  const cells = [...document.querySelectorAll('figure.table td:not(.label)')]
    .filter(td => /^[-+\u2212]?(\\d|inf|nan)/.test(td.textContent.trim()));
  return [cells.length, cells.filter(td => td.querySelector(':scope > button.door')).length];
})()"""
"""How many table cells hold a number, and how many of them are doors."""
PANEL = "document.querySelector('dialog.door-panel')"


def _open(b: Browser, selector: str) -> str:
    """Focus and press the first door matching ``selector`` with a real key; the id it shows."""
    b.js(f"document.querySelector({selector!r}).focus()")
    key(b, "Enter", "Enter", 13, "\r")
    return str(b.js(f"{PANEL}.querySelector('.door-title').textContent"))


def test_pages_exist() -> None:
    assert len(PAGES) >= 18  # nine lessons, two languages


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.parent.name}-{p.parent.name}")
def test_every_table_number_is_a_door_to_its_formula_and_inputs(browser: Browser, page: Path) -> None:
    url = page.as_uri()
    browser.open(url)
    total, doors = browser.js(NUMBERS)
    assert total > 20 and doors >= 0.95 * total, f"{doors} of {total} numbers are doors"
    assert browser.js("[...document.querySelectorAll('.door')].every(d => d.tabIndex >= 0)")
    assert not browser.js(f"!!{PANEL}")  # nothing is built before a number is opened

    shown = _open(browser, "td button.door")
    assert browser.js(f"{PANEL}.open && {PANEL}.matches(':modal')")
    assert browser.js(f"{PANEL}.getAttribute('aria-labelledby') === 'door-title'")
    assert browser.js(f"{PANEL}.contains(document.activeElement)")  # the focus moved into the panel
    assert shown == browser.js("document.querySelector('td button.door').parentElement.dataset.id")

    key(browser, "Escape", "Escape", 27)
    assert not browser.js(f"{PANEL}.open")
    assert browser.js("document.activeElement === document.querySelector('td button.door')")  # focus came back

    # a computed number: its inputs are doors, and the trail leads back
    start = browser.js(
        "[...document.querySelectorAll('td[data-id]')].find(td => /omega|alpha|z|q\\b|scores/.test("
        "td.dataset.id) && td.querySelector('button.door')).querySelector('button.door').click()"
    )
    assert start is None
    first = browser.js(f"{PANEL}.querySelector('.door-title').textContent")
    facts = browser.js(f"{PANEL}.querySelector('.door-facts').innerText")
    assert "=" in facts  # the equation with its numbers put in
    inputs = browser.js(f"[...{PANEL}.querySelectorAll('.door-inputs button.door')].map(b => b.dataset.go)")
    assert inputs, f"{first} lists no inputs"
    browser.js(f"{PANEL}.querySelector('.door-inputs button.door').click()")
    assert browser.js(f"{PANEL}.querySelector('.door-title').textContent") == inputs[0]
    trail = browser.js(f"[...{PANEL}.querySelectorAll('.door-trail [data-back]')].map(b => b.dataset.go)")
    assert trail == [first]
    browser.js(f"{PANEL}.querySelector('.door-trail [data-back]').click()")  # the trail leads back
    assert browser.js(f"{PANEL}.querySelector('.door-title').textContent") == first

    key(browser, "Escape", "Escape", 27)
    assert not browser.js(f"{PANEL}.open")
    assert browser.errors() == []
    assert [u for u in browser.requests() if u != url] == []


def test_tab_moves_from_door_to_door(browser: Browser) -> None:
    browser.open((REPORTS / "tutorial" / "en" / "index.html").as_uri())
    browser.js("document.querySelector('td button.door').focus()")
    before = browser.js("document.activeElement.parentElement.dataset.id")
    key(browser, "Tab", "Tab", 9)
    assert browser.js("document.activeElement.classList.contains('door')")
    assert browser.js("document.activeElement.parentElement.dataset.id") != before


def test_heatmap_cells_and_worked_results_open_the_same_panel(browser: Browser) -> None:
    browser.open((REPORTS / "tutorial" / "en" / "index.html").as_uri())
    cell = '#fig-omega-svg a[data-id="omega[2,1]"]'
    assert _open(browser, cell) == "omega[2,1]"
    assert "0.9544" in browser.js(f"{PANEL}.innerText")
    key(browser, "Escape", "Escape", 27)
    assert browser.js("document.activeElement.dataset.id") == "omega[2,1]"
    assert _open(browser, ".equation[data-id] .lhs button.door") == browser.js(
        "document.querySelector('.equation[data-id]').dataset.id"
    )
    key(browser, "Escape", "Escape", 27)
    browser.open((REPORTS / "causal" / "en" / "index.html").as_uri())  # a lesson's heatmap: SVG groups as buttons
    assert browser.js("document.querySelectorAll('svg g.door[role=button][tabindex=\"0\"]').length") >= 36
    assert _open(browser, "svg g.door[role=button]").startswith(("alpha", "causal"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_phone_gets_a_sheet_and_nothing_wider_than_the_screen(browser: Browser, lang: str) -> None:
    browser.open((REPORTS / "multihead" / lang / "index.html").as_uri(), width=390, height=800)
    assert browser.js("document.documentElement.scrollWidth") <= 390
    _open(browser, "td button.door")
    box = browser.js(f"(r => [r.left, r.right, r.bottom])({PANEL}.getBoundingClientRect())")
    assert box[0] == 0 and box[1] == 390 and abs(box[2] - 800) < 2  # a sheet along the bottom edge
    assert browser.js("document.documentElement.scrollWidth") <= 390
    assert browser.js(f"{PANEL}.scrollWidth <= {PANEL}.clientWidth")
    words = browser.js(f"{PANEL}.querySelector('.door-close').textContent")
    assert words == {"en": "Close", "zh": "关闭"}[lang]


def test_a_door_looks_like_the_number_it_holds(browser: Browser) -> None:
    """No button frame or grey fill: the door rule applies (a stray brace in report.css once dropped it)."""
    browser.open((REPORTS / "causal" / "en" / "index.html").as_uri())
    style = "getComputedStyle(document.querySelector('td button.door'))"
    assert browser.js(f"{style}.borderTopStyle") == "none"
    assert browser.js(f"{style}.backgroundColor") == "rgba(0, 0, 0, 0)"
    assert "dotted" in browser.js(f"{style}.textDecorationStyle")


def test_printing_hides_the_panel_and_the_door_styling(browser: Browser) -> None:
    browser.open((REPORTS / "tutorial" / "en" / "index.html").as_uri())
    _open(browser, "td button.door")
    browser.send("Emulation.setEmulatedMedia", media="print")
    try:
        assert browser.js(f"getComputedStyle({PANEL}).display") == "none"
        line = browser.js("getComputedStyle(document.querySelector('td button.door')).textDecorationLine")
        assert line == "none"
    finally:
        browser.send("Emulation.setEmulatedMedia", media="")


LENGTH = """(() => { document.querySelectorAll('details').forEach(d => d.open = false);
  return document.documentElement.scrollHeight; })()"""


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.parent.name}-{p.parent.name}")
def test_a_page_with_its_folds_closed_is_at_most_twelve_screens(browser: Browser, page: Path) -> None:
    browser.open(page.as_uri(), width=1280, height=900)
    screens = browser.js(LENGTH) / 900
    assert screens <= 12, f"{screens:.1f} screens of 900 px"
    summaries = browser.js("[...document.querySelectorAll('details.fold > summary')].map(s => s.innerText.trim())")
    assert summaries and all(len(s) > 12 for s in summaries)  # each says what is inside
    assert browser.js("document.querySelectorAll('section.part > figure.table').length") >= 3  # a stage's first table


def test_printing_opens_every_fold(browser: Browser) -> None:
    browser.open((REPORTS / "gqa" / "en" / "index.html").as_uri())
    assert browser.js("document.querySelectorAll('details.fold:not([open])').length") > 10
    browser.send("Page.printToPDF")
    assert browser.js("document.querySelectorAll('details:not([open])').length") == 0
