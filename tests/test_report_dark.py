"""Forced dark mode, in Chromium: every label of every figure keeps WCAG AA contrast (4.5:1) on screen.

A browser's forced dark mode (Chromium's auto dark mode, which
``Emulation.setAutoDarkModeOverride`` turns on as ``--force-dark-mode`` and
the "Auto Dark Mode for Web Contents" flag do) recolours a page as it paints
it.  Styles read back from the page do not show that, so these tests look at
the pixels: each figure is captured at twice its size, each of its texts (the
heatmaps' numbers, the token labels, the axis titles, the legends) is cut
out, and the contrast of its ink against the ground it sits on is computed
with WCAG 2's relative luminance.  The page itself must come out dark, or the
test would prove nothing.
"""

from __future__ import annotations

import base64
import io
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.chromium import EXE, Browser

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "reports"
PAGES = sorted(REPORTS.glob("*/*/index.html"))
AA = 4.5
SCALE = 2

pytestmark = [pytest.mark.browser, pytest.mark.skipif(EXE is None, reason="chromium is not installed")]


def luminance(rgb: tuple[int, ...]) -> float:
    """WCAG 2 relative luminance of an sRGB colour."""
    lin = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def ratio(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def ink_contrast(pixels: list[tuple[int, ...]]) -> float:
    """The contrast of a text's ink with its ground: the commonest colour against the one farthest from it."""
    ground = Counter(pixels).most_common(1)[0][0]
    return max(ratio(p, ground) for p in pixels)


def dark(browser: Browser) -> None:
    browser.send("Emulation.setAutoDarkModeOverride", enabled=True)
    browser.send("Emulation.setEmulatedMedia", features=[{"name": "prefers-color-scheme", "value": "dark"}])
    browser.js("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def capture(browser: Browser, box: dict[str, float]) -> Any:
    from PIL import Image

    clip = {**box, "scale": SCALE}
    data = browser.send("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)["data"]
    return Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")


FIGURES = """(() => [...document.querySelectorAll('figure.fig svg')].map(svg => {
  const r = svg.getBoundingClientRect();
  const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim()).map(t => {
    const b = t.getBoundingClientRect();
    return {text: t.textContent.trim(), x: b.x - r.x, y: b.y - r.y, w: b.width, h: b.height};
  });
  return {id: svg.id, x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height, texts};
}))()"""


@pytest.mark.parametrize("path", PAGES, ids=lambda p: f"{p.parent.parent.name}-{p.parent.name}")
def test_every_figure_label_keeps_aa_contrast_in_forced_dark_mode(browser: Browser, path: Path) -> None:
    browser.open(path.as_uri(), width=1280, height=900)
    dark(browser)
    page = capture(browser, {"x": 0, "y": 0, "width": 40, "height": 40})
    assert luminance(page.getpixel((4, 4))) < 0.05, "forced dark mode did not darken the page"
    figures = browser.js(FIGURES)
    assert figures, path
    poor = []
    labels = 0
    for fig in figures:
        shot = capture(browser, {k: fig[k] for k in ("x", "y", "width", "height")})
        for t in fig["texts"]:
            left, top = max(0, int(t["x"] * SCALE)), max(0, int(t["y"] * SCALE))
            right = min(shot.width, int((t["x"] + t["w"]) * SCALE) + 1)
            bottom = min(shot.height, int((t["y"] + t["h"]) * SCALE) + 1)
            if right - left < 2 or bottom - top < 2:
                continue
            crop = np.asarray(shot.crop((left, top, right, bottom))).reshape(-1, 3)
            pixels = [tuple(int(v) for v in p) for p in crop]
            labels += 1
            c = ink_contrast(pixels)
            if c < AA:
                poor.append(f"{fig['id']} {t['text']!r}: {c:.2f}:1")
    assert labels >= 10, labels  # numbers, token labels, axis titles, legends were all looked at
    assert poor == [], poor


def test_the_contrast_measure_sees_poor_ink() -> None:
    """Grey on white reads 2.3:1 and black on white 21:1: the measure cannot pass everything."""
    white, grey, black = (255, 255, 255), (150, 150, 150), (0, 0, 0)
    assert ink_contrast([white] * 20 + [grey] * 3) < AA
    assert ink_contrast([white] * 20 + [black] * 3) == pytest.approx(21.0)
