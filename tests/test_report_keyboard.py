"""Keyboard, contrast and screen readers: the page works without a mouse and every label can be read.

* In Chromium (skipped without it): Enter on "Next" advances every time and
  the focus stays on the button; the arrow keys scroll a wide table that has
  the focus instead of moving the navigator; the keys are written on the page.
* Static, on every committed figure: each number drawn in a heatmap cell has
  at least WCAG AA contrast (4.5:1) against its cell, computed from the two
  colours; links in a figure are named and not hidden inside an ``img``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.chromium import EXE, Browser
from tracer.present.figures import marks

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "reports"
CELL = re.compile(
    r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="(#[0-9a-f]{6})"[^>]*/>'
    r'<text x="[\d.]+" y="[\d.]+"[^>]*fill="(#[0-9a-f]{6})"[^>]*>([^<]*)</text>'
)
"""A heatmap cell: its rectangle, then the number drawn on it."""


def heatmaps() -> list[Path]:
    return sorted(p for p in REPORTS.glob("*/*/fig-*.svg") if "<rect" in p.read_text() and CELL.search(p.read_text()))


def test_every_heatmap_number_passes_wcag_aa_on_its_cell() -> None:
    checked = 0
    worst = 21.0
    for path in heatmaps():
        for *_, fill, ink, label in CELL.findall(path.read_text(encoding="utf-8")):
            ratio = marks.contrast(fill, ink)
            worst = min(worst, ratio)
            assert ratio >= marks.AA, f"{path.relative_to(ROOT)}: {label} at {ratio:.2f}:1 on {fill}"
            checked += 1
    assert checked >= 600  # the issue counted 324 labels a language on the committed pages
    assert worst >= 4.5


@pytest.mark.parametrize("v", [k / 256 for k in range(257)])
def test_the_ink_passes_on_every_blue(v: float) -> None:
    fill = marks.blues(v)
    assert marks.contrast(marks.ink_on(fill), fill) >= marks.AA


def test_contrast_is_computed_as_wcag_defines_it() -> None:
    assert marks.contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert marks.contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    assert marks.contrast("#ffffff", "#ffffff") == 1.0


def test_linked_cells_are_named_links_outside_any_img() -> None:
    page = (REPORTS / "tutorial" / "en" / "index.html").read_text(encoding="utf-8")
    omega = re.search(r'<svg role="(\w+)"[^>]*id="fig-omega-svg".*?</svg>', page, re.S)
    assert omega is not None and omega.group(1) == "group"
    links = re.findall(r'<a href="#pair-\d+-\d+" data-id="omega\[\d,\d\]"( aria-label="[^"]+")?>', omega.group(0))
    assert len(links) == 36 and all(links), "every cell link has an accessible name"
    assert 'aria-label="query i: journey, key j: Your, 0.9544"' in omega.group(0)
    for svg in re.findall(r'<svg role="img".*?</svg>', page, re.S):
        assert "<a " not in svg


def key(b: Browser, name: str, code: str, keycode: int, text: str = "") -> None:
    """A real key press (down, then up), as the keyboard sends it; ``text`` is what it types (Enter: a return)."""
    typed = {"text": text} if text else {}
    b.send("Input.dispatchKeyEvent", type="keyDown", key=name, code=code, windowsVirtualKeyCode=keycode, **typed)
    b.send("Input.dispatchKeyEvent", type="keyUp", key=name, code=code, windowsVirtualKeyCode=keycode)


WHERE = "document.querySelector('.stepper .where').textContent"


@pytest.mark.browser
@pytest.mark.skipif(EXE is None, reason="chromium is not installed")
def test_enter_on_next_keeps_going_and_keeps_the_focus(browser: Browser) -> None:
    browser.open((REPORTS / "tutorial" / "en" / "index.html").as_uri())
    browser.js("document.querySelector('.stepper .next').focus()")
    for n in range(1, 5):
        key(browser, "Enter", "Enter", 13, "\r")
        assert browser.js(WHERE).startswith(f"{n} / ")
        assert browser.js("document.activeElement.className") == "next"
    assert "j" in browser.js("document.querySelector('.stepper .keys').textContent")


@pytest.mark.browser
@pytest.mark.skipif(EXE is None, reason="chromium is not installed")
def test_arrows_scroll_a_focused_wide_table_instead_of_stepping(browser: Browser) -> None:
    browser.open((REPORTS / "tutorial" / "en" / "index.html").as_uri(), width=390)
    box = "document.querySelector('#norm-table .scroll')"
    assert browser.js(f"{box}.scrollWidth > {box}.clientWidth")  # the table is wider than a phone
    browser.js(f"{box}.tabIndex = 0; {box}.focus()")
    before = browser.js(WHERE)
    key(browser, "ArrowRight", "ArrowRight", 39)
    assert browser.js(WHERE) == before  # the navigator did not move
    key(browser, "j", "KeyJ", 74)
    assert browser.js(WHERE) != before  # j still steps: it scrolls nothing


def test_every_figure_brings_its_own_white_ground() -> None:
    """Forced dark mode darkens the page behind a transparent figure, and its dark labels and legend vanished.

    Each figure paints its own white ground first, so its labels keep the
    contrast they were drawn for (looked at in Chromium with
    ``--enable-features=WebContentsForceDark``: legend and token labels stay).
    """
    figures = sorted(REPORTS.glob("*/*/fig-*.svg"))
    assert len(figures) >= 28  # every committed report's figures
    for path in figures:
        body = path.read_text(encoding="utf-8").split("<svg", 1)[1].split("\n")
        assert body[1] == marks.PAPER, path.relative_to(ROOT)  # the first thing drawn, under everything else
