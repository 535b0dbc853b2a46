"""Worked equations for Markdown: one ``$$`` line when short, an ``aligned`` block of rows when long.

GitHub, MkDocs (arithmatex), Jupyter, Quarto and MyST all render
``\\begin{aligned}`` inside ``$$``.  A long step of a broken equation
(:attr:`~tracer.present.views.model.Equation.broken`) is cut at its chunks
into rows at most :data:`ROW` characters wide, continuation rows indented,
so no row is wider than GitHub's text column.
"""

from __future__ import annotations

from tracer.present.render.sanitize import markdown_math
from tracer.present.views.layout import width
from tracer.present.views.model import Equation

ROW = 44
"""Widest right-hand side of one row, in characters as shown (GitHub's column holds about 70 beside the lhs)."""


def rows(chunks: tuple[str, ...]) -> list[str]:
    """``chunks`` grouped greedily into rows no wider than :data:`ROW` (a chunk is never cut)."""
    out: list[list[str]] = [[]]
    used = 0
    for c in chunks:
        w = width(c)
        if out[-1] and used + w > ROW:
            out.append([])
            used = 0
        out[-1].append(c)
        used += w
    return [" ".join(r) for r in out]


def aligned(eq: Equation) -> str:
    """The display LaTeX of ``eq`` for a ``$$`` block (each piece through :func:`markdown_math`)."""
    if not eq.broken:
        return markdown_math(eq.latex)
    lines = []
    for n, part in enumerate(eq.rhs):
        first, *more = (markdown_math(r) for r in rows(part))
        lines.append(f"{markdown_math(eq.lhs) if n == 0 else ''} &{first}")
        lines += [rf"&\quad {r}" for r in more]
    body = " \\\\\n".join(lines)
    return f"\\begin{{aligned}}\n{body}\n\\end{{aligned}}"
