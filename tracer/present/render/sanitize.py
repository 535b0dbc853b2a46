"""Math from a file is data: MathML passes an allow-list, Markdown math cannot open HTML.

A node's ``latex`` and a carried narrative's ``$...$`` spans come from trace
files, which anyone can edit (the digest catches accidents, not intent).
latex2mathml does not escape what ``\\text{...}`` holds, so its output is
not trusted markup: :func:`clean_mathml` re-parses it with an HTML5 parser
(``nh3``, the Python binding of the Rust sanitizer ammonia) and keeps only
MathML Core presentation elements and their layout attributes.  No ``href``,
no ``style``, no ``annotation-xml`` (which may hold HTML), no event handlers:
whatever else the LaTeX smuggled in is dropped (``<script>`` and ``<style>``
with their content, other tags keeping their text).  A parser is used rather
than regular expressions because HTML's own parsing rules (case, entities,
namespace switches between MathML and HTML) are where filters are fooled.

In Markdown, math is written between dollars and read by a math extension,
or, by a viewer without one, as ordinary Markdown, where raw HTML and
``![](url)`` images are live.  :func:`markdown_math` therefore writes ``<``
and ``>`` as ``\\lt``/``\\gt`` (the same symbols to a math renderer), breaks
``![``, ``](`` and ``][`` with an empty group (no image, no link), escapes ``$`` and folds line breaks, so the span
stays one span of math and never becomes markup.
"""

from __future__ import annotations

import re
from functools import lru_cache

TAGS = frozenset(
    {
        "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "mfrac", "msqrt", "mroot", "msub", "msup",
        "msubsup", "munder", "mover", "munderover", "mmultiscripts", "mprescripts", "none", "mtable", "mtr", "mtd",
        "mstyle", "mpadded", "mphantom", "menclose", "merror", "semantics", "annotation",
    }
)  # fmt: skip
"""MathML presentation elements a formula may use (MathML Core, plus ``menclose``)."""

LAYOUT = frozenset(
    {
        "mathvariant", "stretchy", "fence", "separator", "lspace", "rspace", "form", "accent", "accentunder",
        "movablelimits", "largeop", "symmetric", "minsize", "maxsize", "width", "height", "depth", "voffset",
        "linethickness", "displaystyle", "scriptlevel", "columnalign", "rowalign", "columnspan", "rowspan",
        "notation", "mathsize", "encoding",
    }
)  # fmt: skip
"""Attributes that only lay math out; none of them takes a URL, a script or CSS."""

_DROP_WITH_CONTENT = {"script", "style"}


@lru_cache(maxsize=4096)
def clean_mathml(markup: str) -> str:
    """``markup`` with everything that is not allowed MathML removed (see the module docstring)."""
    import nh3

    attributes = {tag: set(LAYOUT) for tag in TAGS}
    attributes["math"] |= {"display", "xmlns"}
    return str(
        nh3.clean(
            markup,
            tags=set(TAGS),
            clean_content_tags=_DROP_WITH_CONTENT,
            attributes=attributes,
            strip_comments=True,
            link_rel=None,
            url_schemes=set(),
        )
    )


_MD_MATH = {"<": r"\lt ", ">": r"\gt ", "$": r"\$", "\r": " ", "\n": " "}
_MD_MATH_RX = re.compile(r"!\[|\]\(|\]\[|[<>$\r\n]")


def markdown_math(latex: str) -> str:
    """LaTeX to put between dollars in Markdown: the same math, never HTML, a link, an image or the span's end."""
    return _MD_MATH_RX.sub(lambda m: _MD_MATH.get(m.group()) or m.group()[0] + "{}" + m.group()[1], latex)
