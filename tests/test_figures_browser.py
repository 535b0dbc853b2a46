"""Figures read on a phone: at 390 px every figure's text is 11 CSS px or more, and no label overlaps other text.

Measured in headless Chromium on the committed reports: a text's size on
screen is its font size times the scale the page draws its SVG at
(``getScreenCTM``).  Skipped where Chromium is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import chromium

ROOT = Path(__file__).resolve().parent.parent
GAP = 2.0
"""CSS px: the least room between a token label and any other text beside it."""
PAGES = [f"{lesson}/{lang}" for lesson in ("tutorial", "trainable", "causal", "multihead") for lang in ("en", "zh")]

MEASURE = """(() => {
  const out = [];
  for (const svg of document.querySelectorAll('figure svg')) {
    const scale = svg.getScreenCTM().a;
    for (const t of svg.querySelectorAll('text')) {
      if (!t.textContent.trim()) continue;
      const size = parseFloat(getComputedStyle(t).fontSize) * scale;
      const r = t.getBoundingClientRect(), m = t.getCTM();
      const turned = Math.abs(m.b) > 1e-6 || Math.abs(m.c) > 1e-6;  // a rotated text's box is far larger than it
      out.push([svg.closest('figure').id, t.textContent.trim(), size, turned, r.left, r.top, r.right, r.bottom]);
    }
  }
  return JSON.stringify(out);
})()"""


@pytest.fixture(scope="module")
def browser() -> chromium.Browser:
    if chromium.EXE is None:
        pytest.skip("chromium is not installed")
    b = chromium.Browser()
    yield b
    b.close()


@pytest.mark.parametrize("page", PAGES)
def test_figure_text_is_readable_on_a_phone(browser: chromium.Browser, page: str) -> None:
    import json

    browser.open((ROOT / "reports" / page / "index.html").as_uri(), width=390)
    texts = json.loads(browser.js(MEASURE))
    assert texts, page
    small = [(fig, s, round(size, 1)) for fig, s, size, *_ in texts if size < 11.0]
    assert not small, f"{page}: figure text under 11 px at 390 px wide: {small[:5]}"
    tokens = {"Your", "journey", "starts", "with", "one", "step"}  # the tutorial's, labels at the arrow tips
    inputs = [(s, *box) for fig, s, _, turned, *box in texts if fig == "fig-inputs" and not turned]
    if page.startswith("tutorial"):
        assert sum(s in tokens for s, *_ in inputs) == len(tokens), f"{page}: the inputs figure labels each token"
    for n, (a, *ra) in enumerate(inputs):  # a token label against every other text: labels, ticks, titles
        for b, *rb in inputs[n + 1 :]:
            if a not in tokens and b not in tokens:
                continue  # matplotlib places its own ticks and titles
            # boxes are a glyph's advance and line height: one that ends within 2 px of another touches it
            near = ra[0] < rb[2] + GAP and rb[0] < ra[2] + GAP and ra[1] < rb[3] - 1 and rb[1] < ra[3] - 1
            assert not near, f"{page}: {a!r} and {b!r} touch or overlap in the inputs figure"
