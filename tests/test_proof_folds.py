"""A rounding bound's derivation folds like the other details: its summary says what is inside, print opens it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tracer
from tests.chromium import EXE, Browser
from tracer.present import narrative
from tracer.present.notebook import cells as notebook_cells
from tracer.present.report import build
from tracer.present.strings import Strings

ROOT = Path(__file__).resolve().parent.parent
PROOFS = {"flash": "ordinary", "rope": "shift"}
"""The lessons whose pages derive a rounding bound, and the stage that does."""
SYMBOLS = {"flash": r"\eta", "rope": r"\gamma_n"}


@pytest.mark.parametrize("lesson", sorted(PROOFS))
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_derivation_is_folded_closed_under_its_summary(lesson: str, lang: str) -> None:
    stage = PROOFS[lesson]
    story = narrative.load(lesson, lang).stage(stage)
    assert SYMBOLS[lesson] in story.proof and SYMBOLS[lesson] not in story.text  # the prose says what, the fold how
    page = build(tracer.trace_lesson(lesson), lang, ("html", "md"))
    html = page["index.html"].decode("utf-8")
    folded = rf'<details class="fold" id="{stage}-proof">\s*<summary>(.*?)</summary>(.*?)</details>'
    fold = re.search(folded, html, re.S)
    assert fold is not None, "the derivation sits in a closed fold"
    assert Strings(lang)("fold.proof") in fold.group(1)
    assert "<math" in fold.group(2) and "<p>" in fold.group(2)
    md = page["index.md"].decode("utf-8")
    assert f"<summary>{Strings(lang)('fold.proof')}</summary>" in md


def test_every_lesson_s_narrative_has_its_proof_in_both_languages_or_neither() -> None:
    for lesson in ("simple", "trainable", "causal", "window", "gqa", "rope", "multihead", "flash", "kvcache"):
        en, zh = narrative.load(lesson, "en"), narrative.load(lesson, "zh")
        assert {s for s, v in en.stages.items() if v.proof} == {s for s, v in zh.stages.items() if v.proof}


def test_a_notebook_keeps_the_derivation_in_its_text() -> None:
    cells = notebook_cells(tracer.trace_lesson("flash"), "en")
    text = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert r"\eta = e^{uS}(1+u)^k - 1" in text


@pytest.mark.browser
@pytest.mark.skipif(EXE is None, reason="chromium is not installed")
def test_printing_opens_the_fold(browser: Browser) -> None:
    browser.open((ROOT / "reports" / "flash" / "en" / "index.html").as_uri())
    assert browser.js("document.getElementById('ordinary-proof').open") is False
    browser.js("window.dispatchEvent(new Event('beforeprint'))")
    assert browser.js("document.getElementById('ordinary-proof').open") is True
