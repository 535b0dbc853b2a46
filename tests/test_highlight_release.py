"""The highlighted code in a report is the same bytes whichever Pygments release is installed.

Pygments 2.20 escapes quotes in code (``&quot;``, ``&#39;``) and 2.21 does
not; a plain ``pip install`` may pick either.  The report's code blocks are
read back from the committed reports and rendered again with the installed
Pygments, and again with its output turned into the other release's escaping:
both must give the committed bytes.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pygments
import pytest

from tracer.present.render.env import python

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r'<pre class="py"><code>(.*?)</code></pre>', re.S)
COMMITTED = [
    m[1] for page in sorted((ROOT / "reports").glob("*/*/index.html")) for m in BLOCK.finditer(page.read_text("utf-8"))
]


def _source(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]*>", "", markup))


def test_the_committed_code_blocks_quote_strings() -> None:
    assert len(COMMITTED) >= 20 and any("&quot;" in m or "&#39;" in m for m in COMMITTED)


def test_the_installed_release_writes_the_committed_bytes() -> None:
    for markup in COMMITTED:
        assert str(python(_source(markup))) == markup, pygments.__version__


def test_a_release_that_leaves_quotes_alone_writes_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    real = pygments.highlight

    def unquoted(*args: object) -> str:  # what 2.21 writes: quotes in the text left as they are
        return str(real(*args)).replace("&quot;", '"').replace("&#39;", "'").replace("&#x27;", "'")

    monkeypatch.setattr(pygments, "highlight", unquoted)
    shown = [m for m in COMMITTED if "&quot;" in m or "&#39;" in m]
    assert shown and "&quot;" not in unquoted(_source(shown[0]), *_lexer_and_formatter())
    for markup in shown:
        assert str(python(_source(markup))) == markup


def _lexer_and_formatter() -> tuple[object, object]:
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return PythonLexer(), HtmlFormatter(nowrap=True)
