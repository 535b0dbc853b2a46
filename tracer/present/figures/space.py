"""A 3-D box drawn flat: the three back panes with their grids, three ticked axes and their titles.

The view is matplotlib's default for a 3-D plot (azimuth -60°, elevation
30°, a 4 x 4 x 3 box), projected orthographically: each data point maps to
the page by two dot products (:meth:`Space.at`), so arrows and labels drawn
on top land exactly where the grid says.  Every axis spans the same range
(the data and 0), so lengths along the three components compare by eye.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import product

import numpy as np

from tracer.present.figures import marks
from tracer.present.figures.marks import SIZE, line, text, tick_text, ticks, width
from tracer.present.figures.place import Room, text_box

Point = tuple[float, float]
Vec = tuple[float, float, float]

AZIM, ELEV = math.radians(-60.0), math.radians(30.0)
BOX = (4.0, 4.0, 3.0)
PANES = ("#f7f7f7", "#efefef", "#f3f3f3")  # the x, y and z back panes
GRID = "#d4d4d4"
RIGHT: Vec = (-math.sin(AZIM), math.cos(AZIM), 0.0)
UP: Vec = (-math.sin(ELEV) * math.cos(AZIM), -math.sin(ELEV) * math.sin(AZIM), math.cos(ELEV))
AXES = (  # for x, y, z: the edge that carries the ticks (which end is hi), and the way out of the box
    ((None, 0, 0), (0.0, -1.0, -1.0)),
    ((1, None, 0), (1.0, 0.0, -1.0)),
    ((1, 1, None), (1.0, 1.0, 0.0)),
)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(p * q for p, q in zip(a, b, strict=True))


class Space:
    """The box for ``x`` (T x 3) fitted into ``wide`` x ``tall`` CSS px; the panes, grid and axes in ``body``.

    ``room`` holds the axes, ticks, tick labels and titles, for labels drawn
    on top to keep clear of (the panes and their grid lie behind, and do not count).
    """

    def __init__(self, x: np.ndarray, wide: float, tall: float, titles: Sequence[str]) -> None:
        finite = x[np.isfinite(x)]
        lo = min(0.0, float(finite.min())) if finite.size else 0.0
        hi = max(0.0, float(finite.max())) if finite.size else 1.0
        self.lo, self.hi = (lo, hi) if hi > lo else (lo, lo + 1.0)
        self.ticks = [v for v in ticks(self.lo, self.hi, 6) if self.lo - 1e-12 <= v <= self.hi + 1e-12]
        step = self.ticks[1] - self.ticks[0] if len(self.ticks) > 1 else 1.0
        self.labels = [tick_text(v, step) for v in self.ticks]
        corners = [self._flat(c) for c in product((self.lo, self.hi), repeat=3)]
        xs, ys = [c[0] for c in corners], [c[1] for c in corners]
        side = max(width(s) for s in self.labels) + 2 * SIZE + 22  # z tick labels and title, on the right
        fit = (wide - 8.0 - side, tall - 8.0 - 2 * SIZE - 26)  # x and y tick labels and titles, below
        self.scale = min(fit[0] / (max(xs) - min(xs)), fit[1] / (max(ys) - min(ys)))
        self.left, self.top = 4.0 + (fit[0] - (max(xs) - min(xs)) * self.scale) / 2, 4.0 + SIZE / 2
        self.x0, self.y1 = min(xs), max(ys)
        self.body: list[str] = []
        self.room = Room((4.0, 4.0, wide - 4.0, tall - 4.0))
        self._panes()
        for k in range(3):
            self._axis(k, titles[k] if k < len(titles) else "")

    def _flat(self, p: Sequence[float]) -> Point:
        """Page-independent 2-D coordinates of data point ``p`` (y up)."""
        u = [(p[k] - self.lo) / (self.hi - self.lo) * BOX[k] - BOX[k] / 2 for k in range(3)]
        return _dot(u, RIGHT), _dot(u, UP)

    def at(self, p: Sequence[float]) -> Point:
        """Where data point ``p`` sits in the figure, in CSS px (y down)."""
        fx, fy = self._flat(p)
        return self.left + (fx - self.x0) * self.scale, self.top + (self.y1 - fy) * self.scale

    def _corner(self, k: int, v: float, rest: tuple[float, float]) -> tuple[float, float, float]:
        """The point with component ``k`` equal to ``v`` and the other two, in order, from ``rest``."""
        p = list(rest)
        p.insert(k, v)
        return p[0], p[1], p[2]

    def _panes(self) -> None:
        """The back panes x=lo, y=hi and z=lo, each with grid lines at the ticks of its two axes."""
        lo, hi = self.lo, self.hi
        self.body.append('<g class="grid">')
        for k, fixed in ((0, lo), (1, hi), (2, lo)):
            ring = [(lo, lo), (hi, lo), (hi, hi), (lo, hi)]
            pts = " ".join(f"{marks.n(a)},{marks.n(b)}" for a, b in (self.at(self._corner(k, fixed, r)) for r in ring))
            self.body.append(f'<polygon points="{pts}" fill="{PANES[k]}" stroke="{PANES[k]}"/>')
            for v in self.ticks:
                for rest in (((v, lo), (v, hi)), ((lo, v), (hi, v))):
                    a, b = (self.at(self._corner(k, fixed, r)) for r in rest)
                    self.body.append(line(a[0], a[1], b[0], b[1], GRID, 0.8))
        self.body.append("</g>")

    def _axis(self, k: int, title: str) -> None:
        """Axis ``k``'s edge, its ticks and their labels pointing out of the box, and its title beyond them."""
        edge, out = AXES[k]
        ends = [tuple(self.lo if e == 0 else self.hi if e == 1 else v for e in edge) for v in (self.lo, self.hi)]
        (ax, ay), (bx, by) = (self.at(p) for p in ends)
        self.body.append(line(ax, ay, bx, by, marks.INK, 0.8))
        self.room.segs.append((ax, ay, bx, by))
        o0, o1 = self.at((0.0, 0.0, 0.0)), self.at(out)
        dx, dy = o1[0] - o0[0], o1[1] - o0[1]
        norm = math.hypot(dx, dy)
        dx, dy = dx / norm, dy / norm
        reach = 0.0
        for v, s in zip(self.ticks, self.labels, strict=True):
            px, py = self.at(tuple(self.lo if e == 0 else self.hi if e == 1 else v for e in edge))
            self.body.append(line(px, py, px + 4 * dx, py + 4 * dy, marks.INK, 0.8))
            self.room.segs.append((px, py, px + 4 * dx, py + 4 * dy))
            half = abs(dx) * width(s) / 2 + abs(dy) * SIZE / 2
            reach = max(reach, 2 * half)
            cx, cy = px + (7 + half) * dx, py + (7 + half) * dy
            self.body.append(text(cx, cy + SIZE * 0.35, s, "middle", marks.MUTED))
            self.room.boxes.append(text_box(cx, cy + SIZE * 0.35, s, "middle"))
        if not title:
            return
        angle = math.degrees(math.atan2(by - ay, bx - ax))
        angle = angle - 180 if angle > 90 else angle + 180 if angle < -90 else angle
        gap = 7 + reach + 4 + SIZE / 2
        cx, cy = (ax + bx) / 2 + gap * dx, (ay + by) / 2 + gap * dy
        self.body.append(text(cx, cy + SIZE * 0.35, title, "middle", marks.MUTED, rotate=angle))
        self.room.boxes.append(text_box(cx, cy + SIZE * 0.35, title, "middle", angle))
