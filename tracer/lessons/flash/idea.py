"""The picture of the FlashAttention lesson's idea: blocks of keys swept left to right, a running max and sum."""

from __future__ import annotations

import numpy as np

from tracer.core.trace import Trace
from tracer.present.facts import join
from tracer.present.figures.ideas import FOCUS, LINE, WIDTH, arrow, fit, grid, legend_words, names, short
from tracer.present.figures.marks import MUTED, SIZE, width
from tracer.present.figures.scene import Label, Picture, Scene
from tracer.present.strings import Strings


def idea(trace: Trace, s: Strings) -> Picture:
    """The scores of every query cut into the loop's blocks of keys; under them, the focus query's ``m`` and ``ℓ``."""
    q, t = trace.query, len(trace.tokens)
    scores = np.asarray(trace.tensor("flash.s"), dtype=np.float64)  # (i, u, j), scaled: -inf where a key is hidden
    u, b = scores.shape[1], scores.shape[2]
    flat = scores.reshape(t, u * b)[:, :t]
    seen = (np.asarray(trace.tensor("flash.hide")).reshape(t, u * b) == 0)[:, :t]
    m = np.asarray(trace.tensor("flash.m")[q - 1], dtype=np.float64)
    ell = np.asarray(trace.tensor("flash.l")[q - 1], dtype=np.float64)
    labels = names(trace.tokens)
    words = legend_words(s)
    sc = Scene(WIDTH, 0.0)
    room = WIDTH - max(width(x) for x in labels) * 1.1 - 20 - 4 * u
    cell = fit(t, room, 40.0)
    gaps = [k * b for k in range(1, u)]
    xs, bottom = grid(sc, 4, 4, flat, seen, labels, q, cell, gaps, corner=words[3])
    y = bottom + LINE
    label_x = xs[0] - 6
    for name, row, yy in (("idea.running_max", m, y), ("idea.running_sum", ell, y + LINE)):
        sc.add(Label(label_x, yy, f"{s(name)}{_sub(q)}", "end", FOCUS, bold=True))
        for k in range(u):
            first, last = k * b, min(k * b + b, t) - 1
            if first >= t:
                break
            centre = (xs[first] + xs[last] + cell) / 2
            sc.add(Label(centre, yy, short(float(row[k])), "middle", FOCUS))
    ay = y + LINE + 10
    arrow(sc, xs[0], ay, xs[-1] + cell, ay, MUTED, 1.2)
    sc.h, sc.w = ay + SIZE * 0.5 + 4, min(WIDTH, xs[-1] + cell + 4)
    said = {
        "t": t, "u": u, "b": b, "q": q,
        "m": join([short(float(v)) for v in m], s.lang), "l": join([short(float(v)) for v in ell], s.lang),
    }  # fmt: skip
    return Picture(sc, s("idea.tiles_title"), s("idea.tiles_alt", **said), s("idea.tiles_caption", q=q))


def _sub(n: int) -> str:
    """The query's number lowered, as the page writes ``m₅``."""
    from tracer.present.figures.marks import sub

    return sub(str(n))
