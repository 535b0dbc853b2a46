"""The picture of the RoPE lesson's idea: a pair of a query's and a key's components turned by their positions.

Drawn from the trace: the first pair (the fastest angle, $\\theta_1$) of the
focus query and of the first key, before (dashed) and after (solid) the
rotation, with the query's angle $m\\theta$ marked; the angle between them
changes by the distance times $\\theta$ alone.
"""

from __future__ import annotations

import math

import numpy as np

from tracer.core.trace import Trace
from tracer.present.figures.ideas import FOCUS, LINE, PALETTE, WIDTH, arrow, legend, short
from tracer.present.figures.marks import MUTED, RULE, SIZE, sup, width
from tracer.present.figures.scene import Arc, Label, Line, Picture, Ring, Scene
from tracer.present.strings import Strings

PAIR = 0
"""The pair drawn (0-based): the first turns fastest, by one radian a position."""
KEY = 0
"""The key drawn (0-based): the first token's."""


def _pair(trace: Trace, who: str, row: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """A vector's pair ``PAIR`` at ``row``: before the rotation and after it."""
    before = (float(trace.tensor(f"rope.{who}.x")[row, PAIR]), float(trace.tensor(f"rope.{who}.y")[row, PAIR]))
    after = (float(trace.tensor(f"rope.{who}.rx")[row, PAIR]), float(trace.tensor(f"rope.{who}.ry")[row, PAIR]))
    return before, after


def idea(trace: Trace, s: Strings) -> Picture:
    """The query's and the key's pair as arrows from a centre, before and after turning, the query's angle marked."""
    q = trace.query
    pos = np.asarray(trace.tensor("rope.pos"), dtype=np.float64)
    theta = float(np.asarray(trace.tensor("rope.theta"))[PAIR])
    phi, psi = float(trace.tensor("rope.angle")[q - 1, PAIR]), float(trace.tensor("rope.angle")[KEY, PAIR])
    qb, qa = _pair(trace, "q", q - 1)
    kb, ka = _pair(trace, "k", KEY)
    reach = max(math.hypot(*v) for v in (qb, qa, kb, ka)) or 1.0
    r = 96.0
    cx, cy = 4 + r + 34, 4 + r + LINE
    scale = r / reach
    sc = Scene(WIDTH, 2 * r + 2 * LINE + 12)
    sc.add(Ring(cx, cy, r, RULE, dash=True))
    sc.add(Line(cx - r - 8, cy, cx + r + 8, cy, RULE, 0.6), Line(cx, cy - r - 8, cx, cy + r + 8, RULE, 0.6))
    names = {"q": f"q{sup(f'({q})')}", "k": f"k{sup(f'({KEY + 1})')}"}
    for who, (b, a), colour in (("q", (qb, qa), FOCUS), ("k", (kb, ka), PALETTE[0])):
        bx, by = cx + b[0] * scale, cy - b[1] * scale
        ax, ay = cx + a[0] * scale, cy - a[1] * scale
        sc.add(Line(cx, cy, bx, by, colour, 1.2, arrow=True, dash=True))
        arrow(sc, cx, cy, ax, ay, colour, 2.2)
        length = math.hypot(ax - cx, ay - cy) or 1.0
        tx, ty = ax + (ax - cx) / length * 10, ay + (ay - cy) / length * 10 + SIZE * 0.35
        sc.add(Label(tx, ty, names[who], "start" if tx >= cx else "end", colour, bold=True))
    start = math.atan2(qb[1], qb[0])
    sc.add(Arc(cx, cy, r * 0.3, start, start + phi, FOCUS, 1.5))
    mid = start + phi / 2
    said = s("idea.angle", m=short(float(pos[q - 1]), 0), phi=short(phi))
    lx = 4 + 2 * r + 34 + 22
    sc.add(Label(lx, cy - LINE, said, "start", FOCUS))
    sc.add(Line(cx + r * 0.3 * math.cos(mid), cy - r * 0.3 * math.sin(mid), lx - 4, cy - LINE - 4, FOCUS, 0.6))
    end = legend(sc, lx, cy + LINE, [])
    sc.add(Line(lx, end - 4, lx + SIZE * 1.5, end - 4, MUTED, 1.2, dash=True))
    sc.add(Label(lx + SIZE * 1.5 + 6, end, s("idea.before"), "start", MUTED))
    sc.w = min(WIDTH, max(lx + width(said), lx + SIZE * 1.5 + 6 + width(s("idea.before"))) + 4)
    alt = s(
        "idea.rotation_alt", p=PAIR + 1, q=q, j=KEY + 1, phi=short(phi), psi=short(psi),
        m=short(float(pos[q - 1]), 0), theta=short(theta), diff=short(phi - psi),
    )  # fmt: skip
    return Picture(sc, s("idea.rotation_title"), alt, s("idea.rotation_caption"))
