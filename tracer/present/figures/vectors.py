"""The embedding vectors as arrows from the origin, in hand-written SVG: in 3-D for d=3 (:mod:`.space`), else in 2-D.

Like the bar charts and heatmaps (:mod:`.marks`), the figure is drawn
without matplotlib, sized in CSS pixels: at its natural width of 340 px it
fits a phone's column, so its 12 px text is never scaled down.  Token labels
sit beside their arrow's tip, beyond it where there is room; a label goes
elsewhere around the tip (farther out, with a thin leader line) where an
arrow, an axis, a tick or another text would cross it (:mod:`.place`).  The
query's label is placed first.  More than :data:`MANY` tokens: only the
query is labelled, and in 2-D the points are drawn without arrows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tracer.present.figures import marks
from tracer.present.figures.marks import SIZE, cut, line, svg, text, tick_text, ticks, width
from tracer.present.figures.place import Room, Seg, polygon, text_box
from tracer.present.figures.space import Point, Space

FOCUS = "#c2410c"  # the query, wherever it appears
OTHER = "#64748b"
LABEL = {FOCUS: "#9a3412", OTHER: marks.MUTED}
"""Each arrow colour's text: a shade darker, so a token label keeps 4.5:1 on the grey panes of the 3-D box."""
MANY = 24  # more tokens than this: only the query is labelled
WIDE = 340.0  # natural width in CSS px
TALL = 280.0
PAD = 4.0


def vectors(name: str, x: np.ndarray, tokens: Sequence[str], q: int, axis_titles: Sequence[str]) -> str:
    """The vectors ``x`` (T x d) labelled with ``tokens``; ``axis_titles`` name components 1, 2 (and 3)."""
    t, d = x.shape
    if d == 3:
        space = Space(x, WIDE, TALL, axis_titles)
        body, room, origin = space.body, space.room, space.at((0.0, 0.0, 0.0))
        tips = [space.at(tuple(float(v) for v in x[j])) for j in range(t)]
        arrows = True
    else:
        body, room, origin, tips = _plane(x, axis_titles)
        arrows = t <= MANY
    order = [j for j in range(t) if j != q - 1] + ([q - 1] if 0 < q <= t else [])
    for j in order:
        if arrows:
            drawn, outline = arrow(origin, tips[j], _color(j, q), 2.2 if j == q - 1 else 1.2)
            body.extend(drawn)
            room.segs += outline
        if d != 3:
            cx, cy = marks.n(tips[j][0]), marks.n(tips[j][1])
            body.append(f'<circle cx="{cx}" cy="{cy}" r="2.4" fill="{_color(j, q)}"/>')
    body.extend(_labels(room, origin, tips, tokens, q))
    return svg(name, WIDE, TALL, body)


def _color(j: int, q: int) -> str:
    return FOCUS if j == q - 1 else OTHER


def arrow(start: Point, end: Point, color: str, lw: float) -> tuple[list[str], list[Seg]]:
    """A line from ``start`` to ``end`` with a filled head at ``end``, and its outline: the shaft and the head's edges.

    Labels must not cross the outline.  A zero-length vector draws nothing.
    """
    dx, dy = end[0] - start[0], end[1] - start[1]
    length = math.hypot(dx, dy)
    if length < 1.0:
        return [], []
    ux, uy = dx / length, dy / length
    head = min(4.0 + 3.0 * lw, length * 0.35)
    half = head * 0.42
    bx, by = end[0] - ux * head, end[1] - uy * head
    pts = [end, (bx - uy * half, by + ux * half), (bx + uy * half, by - ux * half)]
    shaft = (start[0], start[1], bx + ux * head * 0.2, by + uy * head * 0.2)
    tip = " ".join(f"{marks.n(a)},{marks.n(b)}" for a, b in pts)
    return [line(*shaft, color, lw), f'<polygon points="{tip}" fill="{color}"/>'], [shaft, *polygon(pts)]


def _labels(room: Room, origin: Point, tips: Sequence[Point], tokens: Sequence[str], q: int) -> list[str]:
    """Token labels near their tips, the query's first, each clear of every line and text (see :mod:`.place`)."""
    shown = [j for j in range(len(tips)) if len(tips) <= MANY or j == q - 1]
    shown.sort(key=lambda j: j != q - 1)
    out = []
    for j in shown:
        s, c = cut(tokens[j], 18), _color(j, q)
        (tx, ty), w = tips[j], width(s) + 4.0
        box, leader = room.place((tx, ty), (tx - origin[0], ty - origin[1]), w, SIZE * 1.25)
        if leader is not None:
            out.append(line(*leader, c, 0.6))
        out.append(text(box[0] + 2.0, (box[1] + box[3]) / 2 + SIZE * 0.35, s, "start", LABEL[c]))
    return out


def _plane(x: np.ndarray, titles: Sequence[str]) -> tuple[list[str], Room, Point, list[Point]]:
    """Axes for components 1 and 2 (a line for d=1), zero lines, and where the origin and each tip sit.

    The room holds the axes, ticks and their labels, and the titles (the zero lines lie behind, like a grid).
    """
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

    zero = (line(*at(0.0, ylo), *at(0.0, yhi), "#cbd5e1", 0.8), line(*at(xlo, 0.0), *at(xhi, 0.0), "#cbd5e1", 0.8))
    body = [f'<g class="grid">{zero[0]}{zero[1]}</g>']
    room = Room((PAD, PAD, WIDE - PAD, TALL - PAD))
    segs: list[Seg] = [(left, bottom, right, bottom)] + ([(left, top, left, bottom)] if d > 1 else [])  # d=1: no y axis
    texts: list[tuple[float, float, str, str, float]] = []
    for v in xt:
        px = at(v, ylo)[0]
        segs.append((px, bottom, px, bottom + 4))
        texts.append((px, bottom + 6 + SIZE, tick_text(v, _step(xt)), "middle", 0.0))
    for v, s in zip(yt, ylabels, strict=True):
        py = at(xlo, v)[1]
        segs.append((left - 4, py, left, py))
        texts.append((left - 6, py + SIZE * 0.35, s, "end", 0.0))
    texts.append(((left + right) / 2, bottom + 12 + 2 * SIZE, titles[0], "middle", 0.0))
    if d > 1:
        texts.append((PAD + SIZE, (top + bottom) / 2, titles[1], "middle", -90.0))
    body += [line(*seg) for seg in segs]
    body += [text(tx, ty, s, anchor, marks.MUTED, rotate=turn) for tx, ty, s, anchor, turn in texts]
    room.segs += segs
    room.boxes += [text_box(tx, ty, s, anchor, turn) for tx, ty, s, anchor, turn in texts]
    return body, room, at(0.0, 0.0), [at(float(a), float(b)) for a, b in zip(xs, ys, strict=True)]


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
