"""The embedding vectors as arrows from the origin, in hand-written SVG: in 3-D for d=3 (:mod:`.space`), else in 2-D.

Like the bar charts and heatmaps (:mod:`.marks`), the figure is drawn
without matplotlib, sized in CSS pixels: at its natural width of 340 px it
fits a phone's column, so its 12 px text is never scaled down.  Token labels
sit at the arrow tips unless two would overlap: then the later one moves
down, clear of every label placed before it, with a thin line back to its
tip (:func:`spread`).  More than :data:`MANY` tokens: only the query is
labelled, and in 2-D the points are drawn without arrows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tracer.present.figures import marks
from tracer.present.figures.marks import SIZE, cut, line, svg, text, tick_text, ticks, width
from tracer.present.figures.space import Point, Space

FOCUS = "#c2410c"  # the query, wherever it appears
OTHER = "#64748b"
MANY = 24  # more tokens than this: only the query is labelled
WIDE = 340.0  # natural width in CSS px
TALL = 280.0
PAD = 4.0


def vectors(name: str, x: np.ndarray, tokens: Sequence[str], q: int, axis_titles: Sequence[str]) -> str:
    """The vectors ``x`` (T x d) labelled with ``tokens``; ``axis_titles`` name components 1, 2 (and 3)."""
    t, d = x.shape
    if d == 3:
        space = Space(x, WIDE, TALL, axis_titles)
        body, origin = space.body, space.at((0.0, 0.0, 0.0))
        tips = [space.at(tuple(float(v) for v in x[j])) for j in range(t)]
        arrows = True
    else:
        body, origin, tips = _plane(x, axis_titles)
        arrows = t <= MANY
    order = [j for j in range(t) if j != q - 1] + ([q - 1] if 0 < q <= t else [])
    for j in order:
        if arrows:
            body.extend(arrow(origin, tips[j], _color(j, q), 2.2 if j == q - 1 else 1.2))
        if d != 3:
            cx, cy = marks.n(tips[j][0]), marks.n(tips[j][1])
            body.append(f'<circle cx="{cx}" cy="{cy}" r="2.4" fill="{_color(j, q)}"/>')
    body.extend(_labels(tips, tokens, q))
    return svg(name, WIDE, TALL, body)


def _color(j: int, q: int) -> str:
    return FOCUS if j == q - 1 else OTHER


def arrow(start: Point, end: Point, color: str, lw: float) -> list[str]:
    """A line from ``start`` to ``end`` with a filled head at ``end`` (nothing for a zero-length vector)."""
    dx, dy = end[0] - start[0], end[1] - start[1]
    length = math.hypot(dx, dy)
    if length < 1.0:
        return []
    ux, uy = dx / length, dy / length
    head = min(4.0 + 3.0 * lw, length * 0.35)
    half = head * 0.42
    bx, by = end[0] - ux * head, end[1] - uy * head
    pts = [end, (bx - uy * half, by + ux * half), (bx + uy * half, by - ux * half)]
    shaft = line(start[0], start[1], bx + ux * head * 0.2, by + uy * head * 0.2, color, lw)
    tip = " ".join(f"{marks.n(a)},{marks.n(b)}" for a, b in pts)
    return [shaft, f'<polygon points="{tip}" fill="{color}"/>']


def _labels(tips: Sequence[Point], tokens: Sequence[str], q: int) -> list[str]:
    """Token labels beside their tips, moved apart where they would overlap, kept inside the figure."""
    shown = [j for j in range(len(tips)) if len(tips) <= MANY or j == q - 1]
    names = [cut(tokens[j], 18) for j in shown]
    sizes = [(width(s) + 4.0, SIZE * 1.25) for s in names]
    anchors = [(min(tips[j][0] + 5.0, WIDE - PAD - w), tips[j][1]) for j, (w, _) in zip(shown, sizes, strict=True)]
    out = []
    for j, s, (bx, by) in zip(shown, names, spread(anchors, sizes), strict=True):
        c = _color(j, q)
        tx, ty = tips[j]
        if abs(by - ty) > SIZE * 0.6:
            out.append(line(tx, ty, bx, by, c, 0.6))
        out.append(text(bx, by + SIZE * 0.35, s, "start", c))
    return out


def _plane(x: np.ndarray, titles: Sequence[str]) -> tuple[list[str], Point, list[Point]]:
    """Axes for components 1 and 2 (a line for d=1), zero lines, and where the origin and each tip sit."""
    t, d = x.shape
    xs = x[:, 0].astype(np.float64)
    ys = x[:, 1].astype(np.float64) if d > 1 else np.zeros(t)
    (xlo, xhi), (ylo, yhi) = _limits(xs), _limits(ys)
    xt, yt = _inside(xlo, xhi), _inside(ylo, yhi) if d > 1 else []
    ylabels = [tick_text(v, _step(yt)) for v in yt]
    left = PAD + (SIZE + 8 if d > 1 else 0.0) + max((width(s) for s in ylabels), default=0.0) + 8
    top, right = PAD + SIZE / 2, WIDE - PAD - SIZE
    bottom = TALL - PAD - (2 * SIZE + 14)

    def at(u: float, v: float) -> Point:
        return (left + (u - xlo) / (xhi - xlo) * (right - left), bottom - (v - ylo) / (yhi - ylo) * (bottom - top))

    body = [line(*at(0.0, ylo), *at(0.0, yhi), "#cbd5e1", 0.8), line(*at(xlo, 0.0), *at(xhi, 0.0), "#cbd5e1", 0.8)]
    body.append(line(left, bottom, right, bottom, marks.RULE))
    if d > 1:  # for d=1 every point sits on the zero line: no second axis
        body.append(line(left, top, left, bottom, marks.RULE))
    for v in xt:
        px = at(v, ylo)[0]
        s = tick_text(v, _step(xt))
        body += [line(px, bottom, px, bottom + 4), text(px, bottom + 6 + SIZE, s, "middle", marks.MUTED)]
    for v, s in zip(yt, ylabels, strict=True):
        py = at(xlo, v)[1]
        body += [line(left - 4, py, left, py), text(left - 6, py + SIZE * 0.35, s, "end", marks.MUTED)]
    body.append(text((left + right) / 2, bottom + 12 + 2 * SIZE, titles[0], "middle", marks.MUTED))
    if d > 1:
        body.append(text(PAD + SIZE, (top + bottom) / 2, titles[1], "middle", marks.MUTED, rotate=-90))
    return body, at(0.0, 0.0), [at(float(a), float(b)) for a, b in zip(xs, ys, strict=True)]


def _limits(v: np.ndarray) -> tuple[float, float]:
    """The values and 0, with 15% room either side (a unit range when they are all one value)."""
    finite = v[np.isfinite(v)]
    lo = min(0.0, float(finite.min())) if finite.size else 0.0
    hi = max(0.0, float(finite.max())) if finite.size else 0.0
    room = (hi - lo) * 0.15 if hi > lo else 1.0
    return lo - room, hi + room


def _inside(lo: float, hi: float) -> list[float]:
    """Round ticks within [lo, hi]."""
    return [v for v in ticks(lo, hi, 6) if lo - 1e-12 <= v <= hi + 1e-12]


def _step(at: Sequence[float]) -> float:
    return at[1] - at[0] if len(at) > 1 else 1.0


def spread(anchors: Sequence[tuple[float, float]], sizes: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Label positions (left, middle) near ``anchors`` such that no two boxes of ``sizes`` overlap.

    Labels are placed in order; one that would overlap a label already
    placed moves down (then up) by whole label heights until it is clear.
    Deterministic: the same anchors give the same positions.
    """
    placed: list[tuple[float, float, float, float]] = []  # x0, y0, x1, y1
    out = []
    for (x, y), (w, h) in zip(anchors, sizes, strict=True):
        for k in range(0, 4 * len(anchors) + 1):
            dy = (k + 1) // 2 * h * (-1 if k % 2 else 1) if k else 0.0
            box = (x, y + dy - h / 2, x + w, y + dy + h / 2)
            if not any(box[0] < p[2] and p[0] < box[2] and box[1] < p[3] and p[1] < box[3] for p in placed):
                break
        placed.append(box)
        out.append((x, y + dy))
    return out
