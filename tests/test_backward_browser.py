"""A backward page in Chromium: its gradients' numbers are doors to their chain-rule step, on a phone too."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracer
from tests.chromium import EXE, Browser
from tracer.present import report

pytestmark = [pytest.mark.browser, pytest.mark.skipif(EXE is None, reason="chromium is not installed")]

PANEL = "document.querySelector('dialog.door-panel')"


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The causal lesson's backward page in both languages, written into a temporary folder."""
    folder = tmp_path_factory.mktemp("backward-pages")
    t = tracer.trace_lesson("causal", backward=True)
    out = {}
    for lang in ("en", "zh"):
        (folder / lang).mkdir()
        for name, data in report.build(t, lang, ("html",)).items():
            (folder / lang / name).write_bytes(data)
        out[lang] = folder / lang / "index.html"
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [390, 1280])
def test_a_gradient_opens_its_chain_rule_step(browser: Browser, pages: dict[str, Path], lang: str, width: int) -> None:
    browser.open(pages[lang].as_uri(), width=width, height=900)
    assert browser.js("document.documentElement.scrollWidth") <= width
    door = "#dnormalize td[data-id^='dneg.scaled['] button.door"
    assert browser.js(f"document.querySelectorAll({door!r}).length") == 36  # every entry of dS a door
    browser.js("document.querySelector(\"#dnormalize td[data-id='dneg.scaled[3,2]'] button.door\").click()")
    assert browser.js(f"{PANEL}.open")
    assert browser.js(f"{PANEL}.querySelector('.door-title').textContent") == "dneg.scaled[3,2]"
    inputs = browser.js(f"[...{PANEL}.querySelectorAll('.door-inputs button.door')].map(b => b.dataset.go)")
    assert inputs == ["causal.alpha[3,2]", "dneg.scaled.shift[3,2]"]  # P and dP − row sum: the chain rule's step
    assert "=" in browser.js(f"{PANEL}.querySelector('.door-facts').innerText")
    browser.js(f"[...{PANEL}.querySelectorAll('.door-inputs button.door')][1].click()")
    assert browser.js(f"{PANEL}.querySelector('.door-title').textContent") == "dneg.scaled.shift[3,2]"
    assert browser.js("document.documentElement.scrollWidth") <= width
    assert browser.errors() == []
