"""A matrix as a heatmap in hand-written SVG: query rows, key columns, a number in each cell.

Cells are sized to their longest number, labels to their text (see
:mod:`.marks`), so a 6 x 6 matrix of weights stays about 350 CSS px wide and
its numbers 12 px high on a phone.  Non-finite cells (a mask's ``-inf``)
are drawn grey.  Each cell may link somewhere (``links``) or name the step
it shows (``doors``): each is named by its pair and value (``aria-label``),
and a figure with links or doors is a ``group``, not an ``img``, whose
content assistive technology would skip.
Every number is drawn in white, the page's ink or black, whichever passes
WCAG AA (4.5:1) on its cell (:func:`~.marks.ink_on`).  The focus row is
outlined.  A matrix shown without numbers gets a colour scale instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

import numpy as np

from tracer.present.figures import marks
from tracer.present.figures.marks import SIZE, blues, cut, line, rect, svg, text, width

FOCUS = "#c2410c"
MASKED = "#e2e8f0"
PAD = 4.0
TITLE = 18.0  # room for an axis title, across its line
CELL_H = 24.0


def heatmap(
    name: str,
    values: np.ndarray,
    cells: Sequence[Sequence[str]] | None,
    ticks: Sequence[str] | None,
    focus: int | None,
    links: Sequence[Sequence[str]] | None = None,
    xlabel: str = "",
    ylabel: str = "",
    row_ticks: Sequence[str] | None = None,
    hidden: np.ndarray | None = None,
    doors: Sequence[Sequence[str]] | None = None,
) -> str:
    """SVG of ``values`` (rows: queries, columns: keys); ``cells`` are the numbers written in the cells.

    ``ticks`` label the keys and, unless ``row_ticks`` are given (fewer queries than keys: the newest
    tokens of a key/value cache), the queries too.  ``hidden`` marks the cells of masked keys: drawn
    grey like a ``-inf``, so an exact 0 of a hidden key never looks like a small weight.  ``doors`` are
    the step ids the cells show: each cell carries its id (``data-id``), which the page's script turns
    into a door to the step's panel.
    """
    r, c = values.shape
    finite = values[np.isfinite(values) & (True if hidden is None else ~hidden)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    span = hi - lo if hi > lo else 1.0
    labels = [cut(t, 12) for t in ticks] if ticks is not None else []
    rows = [cut(t, 12) for t in row_ticks] if row_ticks is not None else labels
    num = max((width(s) for row in cells for s in row), default=0) if cells is not None else 0
    cw = max(num + 8.0, 30.0) if cells is not None else max(6.0, min(20.0, 320.0 / c))
    ch = CELL_H if cells is not None else cw
    left = PAD + (TITLE if ylabel else 0.0) + (max(width(t) for t in rows) + 6.0 if rows else 0.0)
    gw, gh = c * cw, r * ch
    below = (max(width(t) for t in labels) * math.sqrt(0.5) + SIZE if labels else 0.0) + 6.0
    body: list[str] = []
    for i in range(r):
        for j in range(c):
            v = float(values[i, j])
            x, y = left + j * cw, PAD + i * ch
            masked = not math.isfinite(v) or (hidden is not None and bool(hidden[i, j]))
            fill = MASKED if masked else blues((v - lo) / span)
            mark = rect(x, y, cw, ch, fill, ' stroke="#ffffff" stroke-width="1"')
            if cells is not None:
                mark += text(x + cw / 2, y + ch / 2 + SIZE * 0.35, cells[i][j], "middle", marks.ink_on(fill))
            href = links[i][j] if links is not None else ""
            door = doors[i][j] if doors is not None else ""
            if href or door:  # a link or a door of its own, named for a screen reader: which pair, and its value
                named = f"{ylabel}: {rows[i]}, {xlabel}: {labels[j]}, {cells[i][j]}" if cells and labels else ""
                attrs = (f' href="{escape(href)}"' if href else "") + (f' data-id="{escape(door)}"' if door else "")
                attrs += f' aria-label="{escape(named)}"' if named else ""
                mark = f"<a{attrs}>{mark}</a>" if href else f"<g{attrs}>{mark}</g>"
            body.append(mark)
    if focus is not None:
        body.append(rect(left, PAD + focus * ch, gw, ch, "none", f' stroke="{FOCUS}" stroke-width="2"'))
    for k in range(max(len(rows), len(labels))):
        if k < r and k < len(rows):
            ink = FOCUS if k == focus else marks.INK
            body.append(text(left - 6, PAD + k * ch + ch / 2 + SIZE * 0.35, rows[k], "end", ink))
        if k < c and k < len(labels):
            t = labels[k]
            x, y = left + k * cw + cw / 2 + SIZE * 0.3, PAD + gh + 8
            body.append(text(x, y, t, "end", marks.INK, rotate=-45))
    y = PAD + gh + below
    if xlabel:
        y += SIZE
        body.append(text(left + gw / 2, y, xlabel, "middle", marks.MUTED))
    if ylabel:
        mid = PAD + gh / 2
        body.append(text(PAD + SIZE, mid, ylabel, "middle", marks.MUTED, rotate=-90))
    if cells is None:
        y = _scale(body, left, y + 8, gw, lo, hi)
    w = max(left + gw, PAD + width(xlabel) if xlabel else 0.0) + PAD
    role = "group" if links is not None and any(h for row in links for h in row) else "img"  # links stay reachable
    return svg(name, math.ceil(w), math.ceil(y + PAD), body, "", role=role)


def _scale(body: list[str], x: float, y: float, w: float, lo: float, hi: float) -> float:
    """A colour scale from ``lo`` to ``hi`` under the grid; returns the new bottom."""
    steps = 32
    for k in range(steps):
        body.append(rect(x + k * w / steps, y, w / steps + 0.5, 10, blues((k + 0.5) / steps)))
    body.append(line(x, y + 10, x + w, y + 10, marks.RULE, 0.5))
    fmt = f"{{:.{_places(lo, hi)}f}}"
    body.append(text(x, y + 12 + SIZE, fmt.format(lo).replace("-", "−"), "start", marks.MUTED))
    body.append(text(x + w, y + 12 + SIZE, fmt.format(hi).replace("-", "−"), "end", marks.MUTED))
    return y + 12 + SIZE


def _places(lo: float, hi: float) -> int:
    span = abs(hi - lo)
    return 2 if span == 0 else max(0, min(6, 2 - math.floor(math.log10(span))))
