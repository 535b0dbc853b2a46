"""The lessons' pictures that are diagrams, not grids: a flow of numbers, a fan of projections, heads, stores.

Like :mod:`.ideas`, these take plain arrays and words, never a lesson's node
names: each lesson's ``idea.py`` reads its trace and calls one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tracer.present.board import elide
from tracer.present.figures.ideas import (
    FOCUS,
    FOCUS_FILL,
    KEPT,
    LINE,
    MOST_CELLS,
    PALETTE,
    WIDTH,
    arrow,
    cell_width,
    cells,
    fit,
    legend,
    names,
    short,
)
from tracer.present.figures.marks import INK, MUTED, RULE, SIZE, blues, cut, ink_on, width
from tracer.present.figures.scene import Box, Label, Line, Scene

RAISED = 11.0
"""A raised letter's size (``W^Q``): the least a phone shows a figure's text at."""


def flow(
    scores: np.ndarray, weights: np.ndarray, context: np.ndarray, tokens: Sequence[str], heads: Sequence[str]
) -> Scene:
    """One query's attention from left to right: its score with each key, their softmax, the weighted sum.

    One row per key (long rows elided as the board elides sums), the
    weights shaded on the Blues scale, and a line from each weight to the
    context vector, drawn as a column of its components.  ``heads`` names
    the three columns.
    """
    keep = elide(len(tokens), keep=MOST_CELLS, head=4, tail=3)
    labels = names(tokens)
    cell = max(cell_width(list(scores)), cell_width(list(weights)), 44.0)
    x0 = 4 + max(width(t) for t in labels) + 8
    gap = max(64.0, (width(heads[0]) - cell) / 2 + width("softmax") + (width(heads[1]) - cell) / 2 + 16)
    xa = x0 + cell + gap  # the weights' column, after the softmax's arrow, its word clear of both headings
    xz = xa + cell + 56
    top, h = LINE + 6, SIZE * 2 + 4
    peak = float(np.max(weights)) or 1.0
    sc = Scene(WIDTH, top + len(keep) * h + 8)
    for x, word in ((x0, heads[0]), (xa, heads[1])):
        sc.add(Label(x + cell / 2, LINE - 2, word, "middle", MUTED))
    zc = cell_width(list(context))
    sc.add(Label(xz + zc / 2, LINE - 2, heads[2], "middle", MUTED))
    rows_h = len(keep) * h
    comps = elide(len(context), keep=MOST_CELLS, head=3, tail=2)
    zy = top + (rows_h - len(comps) * SIZE * 2) / 2
    for n, k in enumerate(keep):
        y = top + n * h
        mid = y + SIZE
        if k is None:
            sc.add(Label(x0 + cell / 2, mid + 4, "⋮", "middle", MUTED))
            continue
        sc.add(Label(x0 - 6, mid + SIZE * 0.35, labels[k], "end"))
        cells(sc, x0, y, [float(scores[k])], cell)
        fill = blues(float(weights[k]) / peak)
        cells(sc, xa, y, [float(weights[k])], cell, fill, ink_on(fill))
        arrow(sc, x0 + cell + 4, mid, xa - 4, mid, RULE, 0.8)
        sc.add(Line(xa + cell, mid, xz - 2, zy + len(comps) * SIZE, blues(0.35 + 0.6 * float(weights[k]) / peak), 1.4))
    sc.add(Label((x0 + cell + xa) / 2, LINE - 2, "softmax", "middle", INK))
    for n, k in enumerate(comps):
        text = "…" if k is None else short(float(context[k]))
        sc.add(Box(xz, zy + n * SIZE * 2, zc, SIZE * 2, "#f8fafc", INK, 1.0))
        sc.add(Label(xz + zc / 2, zy + n * SIZE * 2 + SIZE + SIZE * 0.35, text, "middle"))
    sc.w = min(WIDTH, max(xz + zc, xz + zc / 2 + width(heads[2]) / 2) + 4)
    return sc


Branch = tuple[str, str, Sequence[float], str]
"""One projection of :func:`fan`: the matrix's name, its size, the vector it gives, and that vector's name."""


def fan(source: str, values: Sequence[float], branches: Sequence[Branch]) -> Scene:
    """A vector (a column of its components) multiplied by several matrices, each giving a vector of its own.

    Each branch is drawn as an arrow to a box naming the matrix (``W^Q``:
    what follows ``^`` is raised) and its size, then the resulting vector
    as a row of numbers under its name.
    """
    comps = elide(len(values), keep=MOST_CELLS, head=3, tail=2)
    cw = cell_width(values)
    step = LINE * 2 + SIZE * 2 + 8  # one branch: its vector's name and its numbers, and room
    tall = max(len(branches) * step, len(comps) * SIZE * 2 + LINE)
    sc = Scene(WIDTH, tall + 8)
    top = LINE + 4
    sc.add(Label(4 + cw / 2, LINE - 2, source, "middle", INK, bold=True))
    y0 = top + (tall - LINE - len(comps) * SIZE * 2) / 2
    for n, k in enumerate(comps):
        text = "…" if k is None else short(float(values[k]))
        sc.add(Box(4, y0 + n * SIZE * 2, cw, SIZE * 2, "#f8fafc", INK, 1.0))
        sc.add(Label(4 + cw / 2, y0 + n * SIZE * 2 + SIZE + SIZE * 0.35, text, "middle"))
    mid = y0 + len(comps) * SIZE
    bx, bw = 4 + cw + 46, 58.0
    for n, (matrix, size, out, name) in enumerate(branches):
        colour = PALETTE[n % len(PALETTE)]
        cy = top + n * step + step / 2
        arrow(sc, 4 + cw + 4, mid, bx - 3, cy, colour, 1.4)
        sc.add(Box(bx, cy - SIZE * 1.6, bw, SIZE * 3.2, "#ffffff", colour, 1.5))
        base, _, raised = matrix.partition("^")  # W^Q: a raised letter, which Unicode has no capital for
        wide = width(base) * 1.1  # bold
        bw0 = wide + 4 + width(raised, RAISED)
        sc.add(Label(bx + (bw - bw0) / 2, cy - 2, base, "start", colour, bold=True))
        sc.add(Label(bx + (bw - bw0) / 2 + wide + 4, cy - 7, raised, "start", colour, RAISED, True))
        sc.add(Label(bx + bw / 2, cy + SIZE, size, "middle", MUTED))
        ox = bx + bw + 34
        arrow(sc, bx + bw + 3, cy, ox - 4, cy, colour, 1.4)
        sc.add(Label(ox, cy - SIZE - 4, name, "start", colour, bold=True))
        right = cells(sc, ox, cy - SIZE + 2, out, cell_width(out))
        sc.w = max(sc.w if n else 0.0, right + 4)
    sc.w = min(sc.w, WIDTH)
    return sc


def split_join(source: str, values: Sequence[float], heads: Sequence[tuple[str, Sequence[float]]], joined: str,
               whole: Sequence[float]) -> Scene:  # fmt: skip
    """A vector sent to several heads, each head's result under its name, and the results joined end to end.

    ``whole`` is the joined vector as the trace holds it; each head's part
    of it is outlined in that head's colour, so the reader sees where each
    head's numbers land.
    """
    cw = max(cell_width(values), cell_width(whole), *(cell_width(v) for _, v in heads))
    n = len(heads)
    per = max(len(v) for _, v in heads)
    cw = min(cw, (WIDTH - 8) / max(len(whole), 1), (WIDTH - 8 - 10 * n) / max(n * per, 1))
    sc = Scene(WIDTH, 0.0)
    xs_w = (WIDTH - len(values) * cw) / 2
    sc.add(Label(xs_w - 6, LINE + SIZE * 1.35, source, "end", INK, bold=True))
    cells(sc, xs_w, LINE, values, cw)
    hy = LINE * 4 + SIZE * 2
    slot = (WIDTH - 8) / n
    jy = hy + LINE * 3 + SIZE * 2
    jx = (WIDTH - len(whole) * cw) / 2
    at = 0
    for k, (name, out) in enumerate(heads):
        colour = PALETTE[k % len(PALETTE)]
        x = 4 + k * slot + (slot - len(out) * cw) / 2
        arrow(sc, WIDTH / 2, LINE + SIZE * 2 + 2, x + len(out) * cw / 2, hy - LINE - 2, colour, 1.2)
        sc.add(Label(x + len(out) * cw / 2, hy - 5, name, "middle", colour, bold=True))
        cells(sc, x, hy, out, cw)
        sc.add(Box(x - 2, hy - 2, len(out) * cw + 4, SIZE * 2 + 4, "none", colour, 1.5))
        seg = jx + at * cw
        arrow(sc, x + len(out) * cw / 2, hy + SIZE * 2 + 4, seg + len(out) * cw / 2, jy - 4, colour, 1.2)
        sc.add(Box(seg, jy, len(out) * cw, SIZE * 2, "none", colour, 3.0))
        at += len(out)
    cells(sc, jx, jy, whole, cw)
    for k, (_, out) in enumerate(heads):  # the heads' outlines again, over the joined numbers' boxes
        start = sum(len(v) for _, v in heads[:k])
        sc.add(Box(jx + start * cw, jy, len(out) * cw, SIZE * 2, "none", PALETTE[k % len(PALETTE)], 2.5))
    sc.add(Label(jx - 6, jy + SIZE * 1.35, joined, "end", INK, bold=True))
    sc.h = jy + SIZE * 2 + 8
    return sc


def shared(
    top: Sequence[str],
    bottom: Sequence[tuple[str, str]],
    reads: Sequence[int],
    focus: int | None = None,
    heading: str = "",
) -> Scene:
    """A row of boxes over a row of boxes they share: top box ``k`` joined by a line to bottom box ``reads[k]``.

    Each bottom box (a name and a second line) has its colour; the top
    boxes take the colour of the box they read, so a reader sees which of
    them share one.  Top box ``focus``, if given, is outlined; ``heading``,
    if given, is a line of words above the top row.
    """
    n, g = len(top), len(bottom)
    bw = fit(n, WIDTH - 8 - 6 * n, 84.0, 30.0)
    gw = fit(g, WIDTH - 8 - 12 * g, 110.0, 30.0)
    h = SIZE * 2.4
    ty = 4.0 + (LINE if heading else 0.0)
    by = ty + h + LINE * 4
    sc = Scene(WIDTH, by + h * 1.3 + 8)
    if heading:
        sc.add(Label(4, LINE - 4, heading, "start", MUTED))
    tslot, bslot = (WIDTH - 8) / n, (WIDTH - 8) / g
    for k, (name, sub) in enumerate(bottom):
        colour = PALETTE[k % len(PALETTE)]
        x = 4 + k * bslot + (bslot - gw) / 2
        sc.add(Box(x, by, gw, h * 1.3, "#ffffff", colour, 2.0))
        sc.add(Label(x + gw / 2, by + SIZE * 1.3, name, "middle", colour, bold=True))
        sc.add(Label(x + gw / 2, by + SIZE * 2.7, sub, "middle", MUTED))
    for k, name in enumerate(top):
        colour = PALETTE[reads[k] % len(PALETTE)]
        x = 4 + k * tslot + (tslot - bw) / 2
        gx = 4 + reads[k] * bslot + bslot / 2
        arrow(sc, x + bw / 2, ty + h + 2, gx, by - 3, colour, 1.4)
        sc.add(Box(x, ty, bw, h, "#ffffff", colour, 1.5))
        if k == focus:
            sc.add(Box(x - 3, ty - 3, bw + 6, h + 6, "none", FOCUS, 2.5))
        sc.add(Label(x + bw / 2, ty + h / 2 + SIZE * 0.35, name, "middle", colour, bold=True))
    return sc


Column = tuple[str, Sequence[str], int]
"""One column of :func:`stacks`: its name, its rows' labels, how many of the last rows are new."""


def stacks(columns: Sequence[Column], foot: Callable[[int], str], words: tuple[str, str]) -> Scene:
    """Columns of rows side by side, each under its name, its last ``new`` rows in orange: a store growing.

    Each column is ``(name, row labels, new)``; ``foot(n)`` writes the
    count under a column of ``n`` rows, and ``words`` the legend (new rows,
    rows kept from before).  A tall column shows its first and last rows
    around an ellipsis; many columns, the first two and the last two.
    """
    keep = elide(len(columns), keep=5, head=2, tail=2)
    most = max(len(rows) for _, rows, _ in columns)
    shown = min(most, MOST_CELLS)
    cw = fit(len(keep), WIDTH - 8 - 8 * len(keep), 84.0, 40.0)
    h = SIZE * 1.8
    sc = Scene(WIDTH, 0.0)
    for n, k in enumerate(keep):
        x = 4 + n * (cw + 8)
        if k is None:
            sc.add(Label(x + cw / 2, LINE + h * 2, "…", "middle", MUTED))
            continue
        name, rows, new = columns[k]
        sc.add(Label(x + cw / 2, LINE - 2, name, "middle", INK, bold=True))
        picks = elide(len(rows), keep=shown, head=shown - 4, tail=3) if len(rows) > shown else list(range(len(rows)))
        for r, at in enumerate(picks):
            y = LINE + 4 + r * h
            if at is None:
                sc.add(Label(x + cw / 2, y + h * 0.7, "⋮", "middle", MUTED))
                continue
            fresh = at >= len(rows) - new
            fill, edge = (FOCUS_FILL, FOCUS) if fresh else (KEPT, RULE)
            sc.add(Box(x, y, cw, h, fill, edge, 1.5 if fresh else 0.5))
            sc.add(Label(x + cw / 2, y + h / 2 + SIZE * 0.35, cut(rows[at], 9), "middle", INK))
        sc.add(Label(x + cw / 2, LINE + 4 + (shown + 0.2) * h + SIZE, foot(len(rows)), "middle", MUTED))
    end = legend(sc, 4, LINE + 4 + (shown + 1.4) * h + SIZE, [(FOCUS_FILL, words[0]), (KEPT, words[1])])
    sc.h = end - SIZE * 0.5
    return sc
