"""Every figure's alt text says what that figure shows, in the page's language, with maths in words.

Read from the committed reports: the ``<title>`` an inlined SVG carries (its
accessible name) in HTML, and ``![alt](…)`` in Markdown.  On a page no two
figures share an alt text; a Chinese page's alt texts are Chinese apart from
tokens and ``softmax``; none writes maths as ``α_2j``, ``x(2)`` or LaTeX.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from tracer.present.views.alts import masked

ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    f"{lesson}/{lang}"
    for lesson in ("tutorial", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache")
    for lang in ("en", "zh")
]
TOKENS = ("Your", "journey", "starts", "with", "one", "step")
PLAIN_MATHS = re.compile(r"[_^$\\]|[α-ωΑ-Ω]|\b[a-zA-Z]\(\d+\)|\b[xz]\([ij]\)")
"""Maths written as text: sub- and superscripts, LaTeX, Greek letters, x(2) or z(j)."""


def _figures(page: str) -> dict[str, str]:
    """Figure id -> alt text (the inlined SVG's title), in page order."""
    html = (ROOT / "reports" / page / "index.html").read_text(encoding="utf-8")
    out = {}
    for m in re.finditer(r'<figure class="fig[^"]*" id="([^"]+)">(.*?)</figure>', html, re.S):
        title = re.search(r"<title[^>]*>(.*?)</title>", m.group(2), re.S)
        assert title, f"{page}: figure {m.group(1)} has no accessible name"
        out[m.group(1)] = title.group(1).replace("&#39;", "'").replace("&amp;", "&")
    return out


def _markdown_alts(page: str) -> list[str]:
    md = (ROOT / "reports" / page / "index.md").read_text(encoding="utf-8")
    return re.findall(r"!\[([^\]]*)\]\(fig-[^)]+\.svg\)", md)


@pytest.mark.parametrize("page", PAGES)
def test_alt_texts_are_distinct_in_the_page_language_and_maths_in_words(page: str) -> None:
    figs = _figures(page)
    assert figs, page
    alts = list(figs.values())
    assert len(set(alts)) == len(alts), f"{page}: figures share an alt text: {alts}"
    assert len(_markdown_alts(page)) == len(alts) and len(set(_markdown_alts(page))) == len(alts), page
    for fig, alt in figs.items():
        assert not PLAIN_MATHS.search(alt), f"{page} {fig}: maths written as text in {alt!r}"
        if page.endswith("zh"):
            words = re.sub("|".join([*TOKENS, r"torch\.softmax", "softmax"]), "", alt)
            assert re.search(r"[\u4e00-\u9fff]", alt) and not re.search(r"[A-Za-z]{2,}", words), f"{page} {fig}: {alt}"
        else:
            assert not re.search(r"[\u3000-\u9fff\uff00-\uffef]", alt), f"{page} {fig}: {alt}"


def _focus(html: str) -> int:
    """The focus query a page's summary names (``x^{(5)}``, in MathML)."""
    found = re.search(r"<dd><math[^>]*><mrow><msup><mi>x</mi><mrow><mo[^>]*>\(</mo><mn>(\d+)</mn>", html)
    assert found, "the page names no focus query"
    return int(found.group(1))


@pytest.mark.parametrize("page", [p for p in PAGES if not p.startswith("tutorial")] + ["tutorial/en", "tutorial/zh"])
def test_heatmap_alt_texts_name_the_focus_row_its_largest_value_and_the_mask(page: str) -> None:
    """The outlined row, the value that stands out in it (as the figure prints it), and masked cells where all are 0."""
    html = (ROOT / "reports" / page / "index.html").read_text(encoding="utf-8")
    heatmaps = {f: a for f, a in _figures(page).items() if f in ("fig-omega", "fig-alpha") or "alpha" in f}
    assert heatmaps, page
    for fig, alt in heatmaps.items():
        svg = re.search(rf'<figure class="fig[^"]*" id="{fig}">(.*?)</figure>', html, re.S)
        assert svg
        cells = [float(v) for v in re.findall(r'font-size="12" fill="#[0-9a-f]+">(-?\d+\.\d+)</text>', svg.group(1))]
        n = math.isqrt(len(cells))  # six tokens, or the three of a KV cache's prompt
        assert n * n == len(cells) and n in (3, 6), (page, fig)
        q = _focus(html)  # the lesson's focus query, as the page's summary names it
        if q <= n:
            row = cells[(q - 1) * n : q * n]  # the focus query's row
            top = f"{max(row):.4f}"
            assert top in alt and (TOKENS[q - 1] in alt), f"{page} {fig}: {alt}"
        else:  # a KV cache's prompt, before the focus token: no row of it is outlined or named
            assert "outlined" not in alt and "方框" not in alt and "边框" not in alt, f"{page} {fig}: {alt}"
        upper = [cells[n * i + j] for i in range(n) for j in range(i + 1, n)]
        said = "masked" in alt or "掩码遮住" in alt
        assert said == all(v == 0 for v in upper), f"{page} {fig}: the alt text and the masked cells disagree"


def test_masked_reads_the_upper_triangle() -> None:
    m = np.tril(np.ones((4, 4)))
    assert masked(m) == "zero" and masked(np.where(m > 0, 1.0, -np.inf)) == "minus"
    assert masked(np.ones((4, 4))) == "" and masked(np.ones((1, 1))) == "" and masked(np.ones((2, 3))) == ""
