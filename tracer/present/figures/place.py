"""Where a label goes: near its point, clear of every line drawn and every other text.

A figure collects what it has drawn in a :class:`Room`: segments (arrow
shafts, the edges of arrow heads, axes, ticks) and text boxes (tick labels,
axis titles).  :meth:`Room.place` then tries positions around a point, the
nearest ring first and, within a ring, the direction the point's arrow
points first (beyond the tip is where its own arrow cannot be), and takes the
first box that no segment crosses and no text touches.  A label placed away
from its point gets a thin leader line back to it, which must not cross
another label either.  Every label placed becomes text the next must avoid.
Deterministic: the same drawing gives the same positions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tracer.present.figures.marks import SIZE, width

Box = tuple[float, float, float, float]
"""left, top, right, bottom in CSS px (y down)."""
Seg = tuple[float, float, float, float]
"""x0, y0, x1, y1."""
Point = tuple[float, float]

GAP = 5.0  # from a point to its label's nearest edge
CLEAR = 2.0  # the least room between a label and a line or another text
LEADER = 8.0  # a label farther than this from its point gets a leader line
TURNS = 16  # directions tried around a point
RINGS = 6  # rings of distance tried, one label height apart


def crosses(seg: Seg, box: Box) -> bool:
    """Whether the segment passes through the inside of ``box`` (Liang-Barsky clipping)."""
    x0, y0, x1, y1 = seg
    left, top, right, bottom = box
    dx, dy = x1 - x0, y1 - y0
    lo, hi = 0.0, 1.0
    for p, q in ((-dx, x0 - left), (dx, right - x0), (-dy, y0 - top), (dy, bottom - y0)):
        if p == 0:
            if q <= 0:
                return False
            continue
        r = q / p
        if p < 0:
            lo = max(lo, r)
        else:
            hi = min(hi, r)
        if lo >= hi:
            return False
    return True


def touches(a: Box, b: Box) -> bool:
    """Whether two boxes overlap (sharing an edge does not count)."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def grow(box: Box, by: float) -> Box:
    """``box`` with ``by`` px more on every side."""
    return box[0] - by, box[1] - by, box[2] + by, box[3] + by


def text_box(x: float, y: float, s: str, anchor: str = "start", rotate: float = 0.0) -> Box:
    """The box a :func:`~tracer.present.figures.marks.text` at baseline ``y`` covers (rotated: its bounding box)."""
    w, h = width(s), SIZE * 1.25
    x0 = x - {"start": 0.0, "middle": w / 2, "end": w}[anchor]
    y0 = y - SIZE * 0.95  # the top of the line box above the baseline
    corners = [(x0, y0), (x0 + w, y0), (x0, y0 + h), (x0 + w, y0 + h)]
    if rotate:
        c, s_ = math.cos(math.radians(rotate)), math.sin(math.radians(rotate))
        corners = [(x + (px - x) * c - (py - y) * s_, y + (px - x) * s_ + (py - y) * c) for px, py in corners]
    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
    return min(xs), min(ys), max(xs), max(ys)


def polygon(points: Sequence[tuple[float, float]]) -> list[Seg]:
    """The edges of a closed polygon."""
    return [(*a, *b) for a, b in zip(points, [*points[1:], points[0]], strict=True)]


class Room:
    """What a figure ``frame`` (a box) already shows, that a label must keep clear of."""

    def __init__(self, frame: Box) -> None:
        self.frame = frame
        self.segs: list[Seg] = []
        self.boxes: list[Box] = []

    def clear(self, box: Box, leader: Seg | None, strict: bool = False) -> bool:
        """Whether ``box`` fits in the frame, touches no text and is crossed by no line, nor its leader any text.

        ``strict``: nor may its leader cross a line (an arrow it could be mistaken for).
        """
        return self._conflicts(box, leader) == 0 and not (strict and self._leader_cuts(leader))

    def place(self, point: Point, toward: Point, w: float, h: float) -> tuple[Box, Seg | None]:
        """A clear box ``w`` x ``h`` near ``point``, preferring direction ``toward``; its leader line, if it needs one.

        The box and leader are recorded, so later labels avoid them.  When no
        position is clear, the one with the fewest conflicts is taken.
        """
        px, py = point
        norm = math.hypot(*toward)
        ux, uy = (toward[0] / norm, toward[1] / norm) if norm > 1e-9 else (1.0, 0.0)
        turns = sorted(range(TURNS), key=lambda k: (-round(math.cos(2 * math.pi * k / TURNS), 9), k))
        best: tuple[int, Box, Seg | None] | None = None
        loose: tuple[Box, Seg | None] | None = None
        for ring in range(RINGS):
            gap = GAP + ring * h
            for k in turns:
                a = math.atan2(uy, ux) + 2 * math.pi * k / TURNS
                cx, cy = math.cos(a), math.sin(a)
                reach = gap + abs(cx) * w / 2 + abs(cy) * h / 2
                mx, my = px + cx * reach, py + cy * reach
                box = (mx - w / 2, my - h / 2, mx + w / 2, my + h / 2)
                leader = _leader(point, box) if gap > LEADER else None
                n = self._conflicts(box, leader)
                if n == 0 and not self._leader_cuts(leader):
                    return self._keep(box, leader)
                if loose is None and n == 0:
                    loose = box, leader
                if best is None or n < best[0]:
                    best = (n, box, leader)
        if loose is not None:
            return self._keep(*loose)
        assert best is not None
        return self._keep(best[1], best[2])

    def _conflicts(self, box: Box, leader: Seg | None) -> int:
        """How much is in the way: 100 for leaving the frame, one per text touched or line crossed."""
        f, room = self.frame, grow(box, CLEAR)
        out = 100 * (box[0] < f[0] or box[1] < f[1] or box[2] > f[2] or box[3] > f[3])
        out += sum(touches(room, b) for b in self.boxes) + sum(crosses(s, room) for s in self.segs)
        return out + (0 if leader is None else sum(crosses(leader, grow(b, CLEAR)) for b in self.boxes))

    def _leader_cuts(self, leader: Seg | None) -> bool:
        """Whether the leader line crosses a line already drawn."""
        return leader is not None and any(_cut(leader, s) for s in self.segs)

    def _keep(self, box: Box, leader: Seg | None) -> tuple[Box, Seg | None]:
        self.boxes.append(box)
        if leader is not None:
            self.segs.append(leader)
        return box, leader


def _cut(a: Seg, b: Seg) -> bool:
    """Whether two segments cross (touching at an end does not count)."""

    def side(p: Seg, x: float, y: float) -> float:
        return (p[2] - p[0]) * (y - p[1]) - (p[3] - p[1]) * (x - p[0])

    return side(a, b[0], b[1]) * side(a, b[2], b[3]) < 0 and side(b, a[0], a[1]) * side(b, a[2], a[3]) < 0


def _leader(point: Point, box: Box) -> Seg:
    """From ``point`` to ``CLEAR`` px short of the nearest point of ``box``."""
    px, py = point
    qx, qy = min(max(px, box[0]), box[2]), min(max(py, box[1]), box[3])
    d = math.hypot(qx - px, qy - py)
    t = max(d - CLEAR, 0.0) / d if d > 0 else 0.0
    return px, py, px + (qx - px) * t, py + (qy - py) * t
