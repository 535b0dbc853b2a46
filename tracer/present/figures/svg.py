"""What every figure's SVG shares: the font stack the browser draws its text from, and the file form.

Figures are written as ``<svg>`` elements (:func:`tracer.present.figures.marks.svg`)
that the HTML report inlines; the Markdown report links them as files of
their own (:func:`standalone`).  Text stays text, so the browser draws
Chinese glyphs from the first font of :data:`FONT_STACK` that has them.
"""

from __future__ import annotations

FONT_STACK = (
    "'DejaVu Sans', 'Noto Sans', 'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', 'Microsoft YaHei', sans-serif"
)
XML_HEAD = '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n'


def standalone(svg: str) -> str:
    """An SVG element as a file of its own."""
    return XML_HEAD + svg
