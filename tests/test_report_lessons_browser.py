"""Each lesson's committed report in headless Chromium: clean console, no request, MathML laid out."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chromium import EXE, Browser

pytestmark = [pytest.mark.browser, pytest.mark.skipif(EXE is None, reason="chromium is not installed")]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts"


@pytest.mark.parametrize(
    "lesson", ["trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache", "model"]
)
def test_lesson_report_loads_cleanly(lesson: str) -> None:
    b = Browser()
    try:
        for lang in ("en", "zh"):
            url = (ROOT / "reports" / lesson / lang / "index.html").as_uri()
            b.open(url, width=1280)
            assert b.errors() == []
            assert [u for u in b.requests() if u != url and not u.startswith("data:")] == []
            assert b.js("document.querySelectorAll('math').length") > 10
            figures = "svg[role=img] title, svg[role=group] title"  # a heatmap with doors is a group of buttons
            assert b.js(f"document.querySelectorAll('{figures}').length") >= 2  # alt text on figures
            ARTIFACTS.mkdir(exist_ok=True)
            b.screenshot(str(ARTIFACTS / f"report-{lesson}-{lang}-1280.png"))
    finally:
        b.close()
