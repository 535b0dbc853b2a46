"""Minus infinity reads as one quantity, and a superscript over a subscript keeps clear of it, on screen and on paper.

latex2mathml writes ``\\infty`` as an operator, which a browser spaces as
one (``= − ∞``); and Chromium, with the math font the page falls back to,
set the ``−∞`` of ``ω^{−∞}_{511}`` (lesson flash) right on the subscript's
digits, worst in print.  :func:`tracer.present.render.env.infinity` and the
report's style fix the two causes; these tests hold them, the second by
measuring the rendered boxes in Chromium.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chromium import EXE, Browser
from tracer.present.render.env import infinity, mathml

ROOT = Path(__file__).resolve().parent.parent


def test_infinity_is_a_quantity_and_its_minus_a_sign() -> None:
    assert "<mo>∞</mo>" not in mathml(r"e^{-\infty} = 0") and '<mi mathvariant="normal">∞</mi>' in mathml(r"\infty")
    assert '<mo form="prefix">−</mo><mi mathvariant="normal">∞</mi>' in mathml(r"s = -\infty")
    assert '<mo form="prefix">−</mo>' in mathml(r"\omega^{-\infty}_{511}")
    assert '<mo form="prefix">−</mo>' in mathml(r"({-\infty})")


def test_a_minus_after_an_operand_stays_a_subtraction() -> None:
    out = mathml(r"m - \infty")
    assert '<mi>m</mi><mo>−</mo><mi mathvariant="normal">∞</mi>' in out and "prefix" not in out
    assert infinity("<mi>x</mi>") == "<mi>x</mi>"  # nothing else is touched


GAP = """(() => [...document.querySelectorAll('msubsup')].filter(m => m.lastElementChild.textContent.includes('∞'))
  .map(m => {
    const sub = m.children[1].getBoundingClientRect(), sup = m.lastElementChild.getBoundingClientRect();
    const ink = document.createRange(); ink.selectNodeContents(m.lastElementChild.querySelector('mo, mi'));
    return sub.top - ink.getBoundingClientRect().bottom;
  }))()"""


@pytest.mark.browser
@pytest.mark.skipif(EXE is None, reason="chromium is not installed")
@pytest.mark.parametrize("media", ["screen", "print"])
def test_the_minus_infinity_superscript_clears_its_subscript(browser: Browser, media: str) -> None:
    browser.open((ROOT / "reports" / "flash" / "en" / "index.html").as_uri())
    browser.send("Emulation.setEmulatedMedia", media=media)
    browser.js("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    gaps = browser.js(GAP)
    assert gaps, "the flash page writes ω with −∞ over its indices"
    assert min(gaps) >= 1.0, gaps  # the minus sign's box ends above the digits' box
