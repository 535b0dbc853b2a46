"""Figures read on a phone: at 390 px every figure's text is 11 CSS px or more, and no two labels overlap.

Measured in headless Chromium on the committed reports: a text's size on
screen is its font size times the scale the page draws its SVG at
(``getScreenCTM``).  Skipped where Chromium is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import chromium

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["tutorial/en", "tutorial/zh", "causal/en", "multihead/zh"]

MEASURE = """(() => {
  const out = [];
  for (const svg of document.querySelectorAll('figure svg')) {
    const scale = svg.getScreenCTM().a;
    for (const t of svg.querySelectorAll('text')) {
      if (!t.textContent.trim()) continue;
      const size = parseFloat(getComputedStyle(t).fontSize) * scale;
      const r = t.getBoundingClientRect();
      out.push([svg.closest('figure').id, t.textContent.trim(), size, r.left, r.top, r.right, r.bottom]);
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
    inputs = [t for t in texts if t[0] == "fig-inputs" and t[1] in tokens]
    boxes = [(s, *box) for _, s, _, *box in inputs]
    for n, (a, *ra) in enumerate(boxes):
        for b, *rb in boxes[n + 1 :]:
            overlap = ra[0] < rb[2] - 1 and rb[0] < ra[2] - 1 and ra[1] < rb[3] - 1 and rb[1] < ra[3] - 1
            assert not overlap, f"{page}: labels {a!r} and {b!r} overlap in the inputs figure"
