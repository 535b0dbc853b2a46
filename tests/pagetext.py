"""What a reader of a report page sees as words: its visible text without maths, code, figures and tokens.

:func:`visible` walks the HTML with the standard library's parser and keeps
the text outside ``<math>``, ``<code>``, ``<svg>``, ``<script>``, ``<style>``
and ``<title>``; :func:`words` also removes the page's tokens (the reader's
own words, in any language).  The tests that check a page's wording read it
through these two functions.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

HIDDEN = {"math", "code", "samp", "svg", "script", "style", "title", "head"}
"""Elements whose text is not prose: maths, code and its printed output, figures, the page's machinery."""

NODE_NAMES = (
    re.compile(r"\b[A-Za-z_]+\.[a-z_]+\b"),  # dotted trace names: stable.exp, check.torch, wrap.causal
    re.compile(r"\b\w+\[[a-z](?:,[a-z])*\]"),  # axes in brackets: omega[i,j]
    re.compile(r"\b[A-Za-z]+_[A-Za-z_]+\b"),  # snake_case identifiers: sqrt_dk, W_query, alpha_sum
    re.compile(r"max \|"),  # a check's plain-text formula
)
"""Patterns of internal node names and trace syntax that must never reach a reader."""

PLAIN_MATHS = re.compile(r"[ωαΣ]_|\b[a-z]_\d|\be\^|\b[xz]\([ij]\)")
"""Maths written as plain text (``ω_2j``, ``m_2``, ``e^x``, ``x(j)``) where MathML belongs."""


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in HIDDEN:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in HIDDEN and self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.depth:
            self.parts.append(data)


def visible(html: str) -> str:
    """The page's prose, labels and numbers: everything a reader sees except maths, code and figures."""
    parser = _Text()
    parser.feed(html)
    return re.sub(r"\s+", " ", " ".join(parser.parts))


def words(html: str, tokens: list[str]) -> str:
    """:func:`visible` without the page's tokens (longest first, so ``journey`` goes before ``j``)."""
    text = visible(html)
    for tok in sorted(set(tokens), key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z]){re.escape(tok)}(?![A-Za-z])", " ", text)
    return text
