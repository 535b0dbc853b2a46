"""Every committed page printed to PDF loses nothing: no clipped column, no cut code line, nothing off the paper.

Chromium prints each page (``--print-to-pdf``, Letter, default margins) and
``pdftotext`` (poppler-utils) reads the PDF back.  What the page holds must
be in the PDF: every row of every table, its cells in order, and every line
of code and of printed output, each as one run of text once spaces and line
breaks are set aside (a line that wraps on paper still reads whole; one that
is cut at the edge of a scroll box does not).  Every word must lie inside the
paper's width.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import pytest

from tests.chromium import EXE, FLAGS

ROOT = Path(__file__).resolve().parent.parent
PDFTOTEXT = shutil.which("pdftotext")
PAGES = sorted(p.relative_to(ROOT / "reports").parent.as_posix() for p in (ROOT / "reports").glob("*/*/index.html"))

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(EXE is None, reason="chromium is not installed"),
    pytest.mark.skipif(PDFTOTEXT is None, reason="pdftotext (poppler-utils) is not installed"),
]


PDFS = tempfile.TemporaryDirectory(prefix="attn-trace-print-")
"""Where the printed pages go: one folder for the module, removed when the test process ends."""


@cache
def printed(page: str) -> Path:
    """The page printed to PDF by headless Chromium."""
    out = Path(PDFS.name) / page.replace("/", "-") / "page.pdf"
    out.parent.mkdir(parents=True)
    profile = tempfile.mkdtemp(prefix="attn-trace-chromium-")
    flags = [f for f in FLAGS if f != "--remote-debugging-pipe"]
    url = (ROOT / "reports" / page / "index.html").as_uri()
    try:
        subprocess.run(
            [str(EXE), *flags, f"--user-data-dir={profile}", "--no-pdf-header-footer", f"--print-to-pdf={out}", url],
            capture_output=True,
            timeout=180,
            check=True,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert out.stat().st_size > 10_000
    return out


def pdf_text(pdf: Path, *args: str) -> str:
    return subprocess.run([str(PDFTOTEXT), *args, str(pdf), "-"], capture_output=True, text=True, check=True).stdout


def squeeze(text: str) -> str:
    """Text without any white space (wrapping on paper moves line breaks, never characters)."""
    return re.sub(r"\s+", "", text)


def plain(fragment: str) -> str:
    """The text of an HTML fragment (tags dropped, entities read)."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def expected_runs(page: str) -> list[str]:
    """Runs of text that must come out of the PDF whole: table rows and lines of code and output."""
    source = (ROOT / "reports" / page / "index.html").read_text(encoding="utf-8")
    body = re.sub(r"<(script|style|math)\b.*?</\1>", "", source, flags=re.S)
    runs = []
    for pre in re.findall(r"<pre\b[^>]*>(.*?)</pre>", body, re.S):
        runs += [line for line in plain(pre).split("\n") if line.strip()]
    for row in re.findall(r"<tr\b[^>]*>(.*?)</tr>", body, re.S):
        cells = re.findall(r"<td\b([^>]*)>(.*?)</td>", row, re.S)
        if not cells:
            continue
        if any("prose" in attrs for attrs, _ in cells):  # words that wrap: their numbers must be there
            runs += [plain(c) for attrs, c in cells if "prose" not in attrs and plain(c).strip()]
        else:
            runs.append("".join(plain(c) for _, c in cells))
    return [r for r in runs if squeeze(r)]


@pytest.mark.parametrize("page", PAGES)
def test_printed_page_keeps_every_row_and_line(page: str) -> None:
    pdf = printed(page)
    text = squeeze(pdf_text(pdf, "-layout"))
    runs = expected_runs(page)
    assert len(runs) > 50
    missing = [r for r in runs if squeeze(r) not in text]
    assert not missing, f"{page}: {len(missing)} of {len(runs)} runs not on paper, e.g. {missing[:3]}"


WORD = re.compile(r'<word xMin="([\d.-]+)" yMin="[\d.-]+" xMax="([\d.-]+)"[^>]*>(.*?)</word>')
"""A word of ``pdftotext -bbox``: its left and right edges, then the word."""


@pytest.mark.parametrize("page", PAGES)
def test_printed_words_stay_on_the_paper(page: str) -> None:
    boxes = pdf_text(printed(page), "-bbox")
    pages = re.findall(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', boxes, re.S)
    assert pages
    for width, _, words in pages:
        for x_min, x_max, word in WORD.findall(words):
            assert float(x_min) >= -0.5 and float(x_max) <= float(width) + 0.5, f"{page}: {word!r} runs off the paper"


def test_the_print_stylesheet_lets_nothing_scroll_or_clip() -> None:
    """The rules the checks above rely on: no scroll boxes, code wraps, blocks are not split, the navigator hides."""
    css = (ROOT / "templates" / "report.css").read_text(encoding="utf-8")
    rules = css[css.index("@media print") :]
    # pre.out is named: its screen rule's max-height is more specific than a plain pre
    assert re.search(r"\.scroll, [^{]*pre\.out \{\s*overflow: visible; max-height: none", rules)
    assert "white-space: pre-wrap" in rules and "break-inside: avoid" in rules
    assert re.search(r"\.stepper[^{]*\{ display: none", rules)
