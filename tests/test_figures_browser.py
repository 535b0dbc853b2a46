"""Figures read on a phone: at 390 px every figure's text is 11 CSS px or more; no label overlaps text or a line.

Also, in the prose around them, maths keeps the punctuation after it on its own line.

Measured in headless Chromium on the committed reports: a text's size on
screen is its font size times the scale the page draws its SVG at
(``getScreenCTM``).  Skipped where Chromium is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import chromium
from tracer.present.figures.place import crosses

ROOT = Path(__file__).resolve().parent.parent
GAP = 2.0
"""CSS px: the least room between a token label and any other text beside it."""
PAGES = [
    f"{lesson}/{lang}"
    for lesson in ("tutorial", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache", "model")
    for lang in ("en", "zh")
]

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


CROSSINGS = """(() => {
  // every token label of the inputs figure against every drawn line and polygon edge but the back panes' grid
  const svg = document.querySelector('#fig-inputs svg');
  const at = (el, x, y) => {
    const p = svg.createSVGPoint();
    p.x = x;
    p.y = y;
    return p.matrixTransform(el.getScreenCTM());
  };
  const segs = [];
  for (const el of svg.querySelectorAll('line, polygon')) {
    if (el.closest('.grid')) continue;
    let pts;
    if (el.tagName === 'line') {
      pts = [at(el, el.x1.baseVal.value, el.y1.baseVal.value), at(el, el.x2.baseVal.value, el.y2.baseVal.value)];
    } else {
      pts = Array.from(el.points, p => at(el, p.x, p.y));
      pts.push(pts[0]);
    }
    for (let k = 0; k + 1 < pts.length; k++) segs.push([el.tagName, pts[k].x, pts[k].y, pts[k + 1].x, pts[k + 1].y]);
  }
  const labels = [];
  for (const t of svg.querySelectorAll('text')) {
    const m = t.getCTM();
    if (Math.abs(m.b) > 1e-6 || Math.abs(m.c) > 1e-6) continue;
    const r = t.getBoundingClientRect();
    labels.push([t.textContent.trim(), r.left, r.top, r.right, r.bottom]);
  }
  return JSON.stringify({segs, labels});
})()"""


@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("tutorial")])
def test_no_line_or_arrow_crosses_a_token_label(browser: chromium.Browser, page: str, width: int) -> None:
    """No arrow (shaft or head), leader line, axis or tick runs through a token label of the inputs figure."""
    import json

    browser.open((ROOT / "reports" / page / "index.html").as_uri(), width=width)
    got = json.loads(browser.js(CROSSINGS))
    tokens = {"Your", "journey", "starts", "with", "one", "step"}
    labels = [(s, box) for s, *box in got["labels"] if s in tokens]
    assert len(labels) == len(tokens), page
    for s, (left, top, right, bottom) in labels:
        inner = (left + 0.5, top + 1.0, right - 0.5, bottom - 1.0)  # a glyph box's edge may touch a line
        hit = [(tag, [round(v) for v in seg]) for tag, *seg in got["segs"] if crosses(tuple(seg), inner)]
        assert not hit, f"{page} at {width} px: the label {s!r} is crossed by {hit[:3]}"


GLUE = """JSON.stringify(Array.from(document.querySelectorAll('.glue'), g => g.getClientRects().length))"""


@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("page", ["trainable/zh", "multihead/zh", "causal/en"])
def test_maths_and_its_punctuation_share_a_line(browser: chromium.Browser, page: str, width: int) -> None:
    """Each glued span (maths, then the punctuation after it) is drawn on one line."""
    import json

    browser.open((ROOT / "reports" / page / "index.html").as_uri(), width=width)
    lines = json.loads(browser.js(GLUE))
    assert lines and all(n == 1 for n in lines), f"{page} at {width} px: a glued span breaks: {lines}"
