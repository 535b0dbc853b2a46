"""Building blocks of the lessons' pictures: a grid of query rows and key columns, rows of numbers, arrows, legends.

Every lesson draws its own picture (``tracer/lessons/<name>/idea.py``) from
its trace; what several of them draw alike lives here, taking plain arrays
and words, never a lesson's node names.  Sizes are CSS px on a
:class:`~tracer.present.figures.scene.Scene`; a picture is meant to stay
within :data:`WIDTH` px so that a phone shows it at its natural size, its
12 px labels unscaled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tracer.present.board import elide
from tracer.present.figures.marks import INK, MUTED, RULE, SIZE, blues, cut, ink_on, width
from tracer.present.figures.scene import Box, Label, Line, Scene

WIDTH = 360.0
"""The widest a picture is drawn: a 390 px phone's column."""
FOCUS = "#c2410c"
FOCUS_FILL = "#ffedd5"
MASKED = "#e2e8f0"
KEPT = "#eff6ff"
PALETTE = ("#2563eb", "#c2410c", "#15803d", "#7c3aed", "#0e7490", "#b45309", "#be185d", "#4d7c0f")
"""One colour per head or group (dark enough for white text and for lines on white)."""
LINE = SIZE * 1.5
"""One line of labels."""
MOST_CELLS = 8
"""A row of numbers shows at most this many (the rest as an ellipsis), as the board writes sums."""


def short(v: float, places: int = 2) -> str:
    """A number as a picture writes it: few decimals, a true minus sign, ``−∞`` for a masked score."""
    if not np.isfinite(v):
        return "−∞" if v < 0 else ("∞" if v > 0 else "nan")
    text = f"{v:.{places}f}"
    return ("0" if text.strip("-0.") == "" else text).replace("-", "−")


def shades(values: np.ndarray, visible: np.ndarray) -> list[list[str]]:
    """The fill of each cell: the Blues scale over the visible cells' range, grey for a hidden one."""
    seen = values[visible & np.isfinite(values)]
    lo, hi = (float(seen.min()), float(seen.max())) if seen.size else (0.0, 1.0)
    span = hi - lo if hi > lo else 1.0
    return [
        [blues((float(v) - lo) / span) if ok and np.isfinite(v) else MASKED for v, ok in zip(row, on, strict=True)]
        for row, on in zip(values, visible, strict=True)
    ]


def grid(
    sc: Scene,
    x: float,
    y: float,
    values: np.ndarray,
    visible: np.ndarray,
    rows: Sequence[str],
    focus: int,
    cell: float,
    gaps: Sequence[int] = (),
    numbers: bool = True,
    corner: str = "",
) -> tuple[list[float], float]:
    """Query rows by key columns from (``x``, ``y``): visible cells shaded by value, hidden ones grey.

    ``rows`` label the queries at the left, the key numbers head the
    columns; the ``focus`` row (1-based) is outlined.  A small gap is left
    before each column in ``gaps`` (the blocks of a tiled loop).  Cells wide
    enough carry their value; ``corner`` names the columns (``key``) where
    the row labels meet them.  Returns the columns' left edges and the bottom edge drawn.
    """
    r, c = values.shape
    fills = shades(values, visible)
    left = x + max(width(t) for t in [*rows, corner]) * 1.1 + 8  # room for the focus row's label in bold
    xs = [left + j * cell + 4 * sum(1 for g in gaps if g <= j) for j in range(c)]
    top = y + LINE
    if corner:
        sc.add(Label(left - 6, top - 5, corner, "end", MUTED))
    for j in range(c):
        sc.add(Label(xs[j] + cell / 2, top - 5, str(j + 1), "middle", MUTED))
    for i in range(r):
        cy = top + i * cell
        ink = FOCUS if i + 1 == focus else INK
        sc.add(Label(left - 6, cy + cell / 2 + SIZE * 0.35, rows[i], "end", ink, bold=i + 1 == focus))
        for j in range(c):
            sc.add(Box(xs[j], cy, cell, cell, fills[i][j], "#ffffff"))
            if numbers and cell >= width("0.00") + 6:
                v = float(values[i, j])
                text = short(v) if visible[i, j] else ""
                sc.add(Label(xs[j] + cell / 2, cy + cell / 2 + SIZE * 0.35, text, "middle", ink_on(fills[i][j])))
    right = xs[-1] + cell
    if 1 <= focus <= r:
        sc.add(Box(left - 1, top + (focus - 1) * cell, right - left + 2, cell, "none", FOCUS, 2.0))
    return xs, top + r * cell


def legend(sc: Scene, x: float, y: float, items: Sequence[tuple[str, str]]) -> float:
    """Swatches and their words, one a line from baseline ``y``; returns the baseline after the last."""
    for fill, words in items:
        stroke = FOCUS if fill == "none" else RULE
        sc.add(Box(x, y - SIZE * 0.85, SIZE, SIZE, fill, stroke, 2.0 if fill == "none" else 0.5))
        sc.add(Label(x + SIZE + 6, y, words, "start", INK))
        y += LINE
    return y


def cells(
    sc: Scene, x: float, y: float, values: Sequence[float], cell: float, fill: str = "#f8fafc", ink: str = INK
) -> float:
    """A vector as a row of numbered boxes from (``x``, ``y``), long ones elided; returns its right edge."""
    h = SIZE * 2
    for k in elide(len(values), keep=MOST_CELLS, head=3, tail=2):
        text = "…" if k is None else short(float(values[k]))
        sc.add(Box(x, y, cell, h, "#ffffff" if k is None else fill, RULE, 0.5))
        sc.add(Label(x + cell / 2, y + h / 2 + SIZE * 0.35, text, "middle", ink))
        x += cell
    return x


def cell_width(values: Sequence[float]) -> float:
    """Wide enough for every number of ``values`` as :func:`cells` writes it."""
    return max([width(short(float(v))) + 10.0 for v in values] + [30.0])


def arrow(sc: Scene, x1: float, y1: float, x2: float, y2: float, colour: str = MUTED, w: float = 1.2) -> None:
    """An arrow from the first point to the second."""
    sc.add(Line(x1, y1, x2, y2, colour, w, arrow=True))


def names(tokens: Sequence[str], most: int = 9) -> list[str]:
    """Row labels: each token cut to ``most`` characters."""
    return [cut(t, most) for t in tokens]


def fit(n: int, room: float, most: float, least: float = 8.0) -> float:
    """The side of ``n`` cells sharing ``room`` px: at most ``most``, at least ``least``."""
    return max(least, min(most, room / max(n, 1)))


def masked(values: np.ndarray, visible: np.ndarray, tokens: Sequence[str], focus: int, words: Words) -> Scene:
    """The weights of every query (rows) for every key (columns), the masked ones grey, with a legend.

    What a mask leaves is the picture: a triangle for a causal mask, a band
    for a sliding window.  ``words`` gives the legend's three entries
    (visible, masked, the focus query).
    """
    t = values.shape[1]
    labels = names(tokens)
    room = WIDTH - max(width(x) for x in labels) - 16
    sc = Scene(WIDTH, 0.0)
    cell = fit(t, room, 44.0)
    xs, bottom = grid(sc, 4, 4, values, visible, labels, focus, cell, corner=words[3])
    right = xs[-1] + cell
    end = legend(sc, 4, bottom + LINE, [(blues(0.6), words[0]), (MASKED, words[1]), ("none", words[2])])
    sc.w, sc.h = min(WIDTH, max(right, *(width(w) + 30 for w in words[:3])) + 4), end - SIZE * 0.5
    return sc


Words = tuple[str, str, str, str]
"""A legend's words: for the visible cells, the masked ones, and the outlined focus row; then the columns' name."""


def legend_words(s: Callable[..., str]) -> Words:
    """The legend of :func:`masked` in the language of ``s`` (the string tables' ``idea`` words)."""
    return s("idea.seen"), s("idea.masked"), s("idea.focus"), s("idea.key")
