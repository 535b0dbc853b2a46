"""Token labels are untrusted: they show literally and execute nothing, in HTML, Markdown and SVG."""

from __future__ import annotations

import html
import re

import pytest

import tracer
from tracer.present import report

EVIL = ["<script>alert(1)</script>", "a|b", "$x$", "**b**", "<img src=x onerror=alert(2)>", "c\\d"]


@pytest.fixture(scope="module")
def evil() -> dict[str, bytes]:
    x = [[0.1 * (i + 1), 0.2, 0.3 * (-1) ** i] for i in range(len(EVIL))]
    t = tracer.trace_self_attention(x, EVIL, query=1)
    return report.build(t, "en")


def test_html_shows_tokens_escaped(evil: dict[str, bytes]) -> None:
    page = evil["index.html"].decode()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    assert page.count("<script>") == 1  # the navigator and the doors, allowed by their hash
    assert page.count("<script") == 2  # and the doors' data, which is not run (nor allowed to: the CSP)
    assert page.count('<script type="application/json" id="attn-trace-doors">') == 1
    assert "a|b" in page


def test_html_forbids_remote_loads(evil: dict[str, bytes]) -> None:
    page = evil["index.html"].decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    policy = html.unescape(csp.group(1))
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy.split("script-src")[1]
    assert not re.search(r'(?:src|href)="(?:https?:)?//', page)
    assert "<link" not in page and "@import" not in page


def test_markdown_table_cells_stay_cells(evil: dict[str, bytes]) -> None:
    md = evil["index.md"].decode()
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and "a" in ln and "b" in ln and "\\|" in ln]
    assert rows, "the a|b token should appear escaped in a table row"
    header = md.splitlines()[md.splitlines().index(next(ln for ln in md.splitlines() if ln.startswith("| $j$ |")))]
    for row in rows[:1]:
        unescaped = len(re.findall(r"(?<!\\)\|", row))
        assert unescaped == len(re.findall(r"(?<!\\)\|", header))
    prose = re.sub(r"^(`{3,})python\n.*?^\1$", "", md, flags=re.S | re.M)  # fenced code shows its text literally
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in prose and "<script>" not in prose
    assert "# '<script>alert(1)</script>'" in md  # the token in the code's comment, inside a fence
    assert r"\$x\$" in md and r"\*\*b\*\*" in md and "c\\\\d" in md


def test_svg_labels_are_text_not_markup(evil: dict[str, bytes]) -> None:
    svg = evil["fig-inputs.svg"].decode()
    assert "<script" not in svg and "&lt;script&gt;" in svg
    assert ">$x$<" in svg  # a dollar pair is a label, not mathtext
    for name in ("fig-omega.svg", "fig-weights.svg"):  # the hand-written figures escape their labels too
        drawn = evil[name].decode()
        assert "<script" not in drawn and "&lt;script&gt;" in drawn
