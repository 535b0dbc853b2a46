"""Bar charts in hand-written SVG: grouped bars (four normalizations) and stacked bars (a context vector).

Both share one frame (:func:`_frame`): a value axis with round ticks on the
left, a zero line, category labels below, and a legend above the plot in as
many columns as fit, with swatches and 12 px text (see :mod:`.marks`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tracer.present.figures import marks
from tracer.present.figures.marks import SIZE, cut, line, rect, svg, text, tick_text, ticks, width

FOCUS = "#c2410c"
SERIES = ("#94a3b8", "#2563eb", "#0d9488", "#7c3aed")
PALETTE = ("#2563eb", "#0d9488", "#c2410c", "#7c3aed", "#ca8a04", "#db2777", "#475569", "#16a34a")
OTHERS = "#cbd5e1"
PAD = 4.0
WIDE = 340.0  # natural width of a chart: fits a phone's column, so nothing is scaled down
PLOT_H = 150.0
ROW = SIZE + 6  # one legend row
MANY = 24  # more categories than this: lines instead of bars, no per-category labels


def grouped(name: str, tokens: Sequence[str], q: int, series: Sequence[tuple[str, np.ndarray]], ylabel: str) -> str:
    """The weight each normalization gives each token: one group of bars per token, the query's label coloured."""
    t = len(tokens)
    vals = [np.where(np.isfinite(v), v, 0.0) for _, v in series]
    lo = min(0.0, *(float(v.min()) for v in vals)) if t else 0.0
    hi = max(0.0, *(float(v.max()) for v in vals)) if t else 1.0
    legend = [(label, SERIES[k % len(SERIES)]) for k, (label, _) in enumerate(series)]
    cats = [cut(tok, 10) for tok in tokens] if t <= MANY else []
    f = _frame(legend, cats, lo, hi, ylabel, t, focus=q - 1)
    body = f.body
    slot = f.w / max(t, 1)
    for k, v in enumerate(vals):
        color = SERIES[k % len(SERIES)]
        if t <= MANY:
            bw = slot * 0.8 / len(vals)
            for j in range(t):
                x = f.x + j * slot + slot * 0.1 + k * bw
                body.append(_bar(f, x, bw, 0.0, float(v[j]), color))
        else:
            pts = " ".join(f"{marks.n(f.x + (j + 0.5) * slot)},{marks.n(f.y(float(v[j])))}" for j in range(t))
            body.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1"/>')
    return svg(name, f.width, f.height, body)


def stacked(
    name: str,
    terms: np.ndarray,
    z: np.ndarray,
    parts: Sequence[str],
    comps: Sequence[str],
    zlabel: str,
    others: bool = False,
) -> str:
    """For each component, each token's contribution stacked (up if positive, down if negative), and z marked.

    ``others`` says the last row of ``terms`` groups the remaining tokens (drawn grey).
    """
    n, d = terms.shape
    up, down = np.where(terms > 0, terms, 0).sum(axis=0), np.where(terms < 0, terms, 0).sum(axis=0)
    lo, hi = min(0.0, float(down.min()), float(z.min())), max(0.0, float(up.max()), float(z.max()))
    colors = [OTHERS if others and j == n - 1 else PALETTE[j % len(PALETTE)] for j in range(n)]
    legend = [(cut(p, 14), c) for p, c in zip(parts, colors, strict=True)] + [(zlabel, marks.INK)]
    f = _frame(legend, [cut(c, 10) for c in comps], lo, hi, "", d, marker=len(parts))
    body = f.body
    slot = f.w / max(d, 1)
    bw = min(slot * 0.6, 48.0)
    for k in range(d):
        x = f.x + k * slot + (slot - bw) / 2
        pos = neg = 0.0
        for j in range(n):
            v = float(terms[j, k])
            base = pos if v >= 0 else neg
            body.append(_bar(f, x, bw, base, base + v, colors[j], ' stroke="#ffffff" stroke-width="0.5"'))
            if v >= 0:
                pos += v
            else:
                neg += v
        body.append(line(x - 4, f.y(float(z[k])), x + bw + 4, f.y(float(z[k])), marks.INK, 2.5))
    return svg(name, f.width, f.height, body)


class _Frame:
    """Where the plot area sits and how values map to y; the marks drawn so far in ``body``."""

    def __init__(self, x: float, top: float, w: float, lo: float, hi: float) -> None:
        self.x, self.top, self.w, self.lo, self.hi = x, top, w, lo, hi
        self.body: list[str] = []
        self.width = 0
        self.height = 0

    def y(self, v: float) -> float:
        """The y coordinate of value ``v``."""
        return self.top + (self.hi - v) / (self.hi - self.lo) * PLOT_H


def _bar(f: _Frame, x: float, w: float, a: float, b: float, fill: str, extra: str = "") -> str:
    y1, y2 = f.y(max(a, b)), f.y(min(a, b))
    return rect(x, y1, w, max(y2 - y1, 0.0), fill, extra)


def _frame(
    legend: Sequence[tuple[str, str]],
    cats: Sequence[str],
    lo: float,
    hi: float,
    ylabel: str,
    count: int,
    focus: int | None = None,
    marker: int | None = None,
) -> _Frame:
    """Legend, value axis, zero line and category labels; the plot area for the marks."""
    if not hi > lo:  # every value zero (or one value): a unit range around it
        lo, hi = min(lo, 0.0), max(hi, 0.0) + 1.0
    marks_at = ticks(lo, hi, 5)
    step = marks_at[1] - marks_at[0] if len(marks_at) > 1 else 1.0
    lo, hi = min(lo, marks_at[0]), max(hi, marks_at[-1])
    labels = [tick_text(v, step) for v in marks_at]
    left = PAD + (SIZE + 6 if ylabel else 0.0) + max(width(s) for s in labels) + 6
    body: list[str] = []
    # the legend: as many columns as fit in WIDE
    col = max(width(s) for s, _ in legend) + SIZE + 14
    per_row = max(1, int((WIDE - PAD) // col))
    rows = math.ceil(len(legend) / per_row)
    for k, (s, color) in enumerate(legend):
        x, y = PAD + (k % per_row) * col, PAD + (k // per_row) * ROW
        if k == marker:
            body.append(line(x, y + ROW / 2, x + SIZE, y + ROW / 2, color, 2.5))
        else:
            body.append(rect(x, y + 3, SIZE, SIZE, color))
        body.append(text(x + SIZE + 4, y + SIZE + 1, s))
    top = PAD + rows * ROW + SIZE / 2
    f = _Frame(left, top, WIDE - left - PAD, lo, hi)
    f.body = body
    for v, s in zip(marks_at, labels, strict=True):
        body.append(line(left - 3, f.y(v), left, f.y(v)))
        body.append(text(left - 5, f.y(v) + SIZE * 0.35, s, "end", marks.MUTED))
    body.append(line(left, f.y(0.0), left + f.w, f.y(0.0), marks.RULE, 1))
    body.append(line(left, top, left, top + PLOT_H, marks.RULE, 1))
    if ylabel:
        body.append(text(PAD + SIZE, top + PLOT_H / 2, ylabel, "middle", marks.MUTED, rotate=-90))
    slot = f.w / max(count, 1)
    below = 0.0
    tilt = any(width(c) > slot - 2 for c in cats)
    for k, c in enumerate(cats):
        ink = FOCUS if k == focus else marks.INK
        x = left + (k + 0.5) * slot
        if tilt:
            body.append(text(x + SIZE * 0.3, top + PLOT_H + 8, c, "end", ink, rotate=-45))
            below = max(below, width(c) * math.sqrt(0.5) + SIZE)
        else:
            body.append(text(x, top + PLOT_H + 6 + SIZE, c, "middle", ink))
            below = max(below, SIZE + 6)
    f.width = math.ceil(WIDE)
    f.height = math.ceil(top + PLOT_H + below + PAD + 4)
    return f
