"""The embedding vectors as arrows from the origin: in 3-D for d=3 (matplotlib), else in 2-D.

The figure has a fixed layout (the axes' place is set, no layout engine
measures text), and its size and fonts are chosen so that, scaled into a
phone's 350 px column, its text is still 11 CSS px or more.  Token labels
sit at the arrow tips unless two would overlap: then the later one moves
down, clear of every label placed before it, with a thin line back to its
tip (:func:`spread`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tracer.present.figures.marks import width
from tracer.present.figures.svg import drawing, label, to_svg

FOCUS = "#c2410c"  # the query, wherever it appears
OTHER = "#64748b"
MANY = 24  # more tokens than this: only the query is labelled
W, H = 4.0, 3.4  # inches: 288 x 245 pt, 384 x 326 CSS px at natural size
FONT = 10.0  # pt: 13.3 CSS px at natural size, about 11.6 px in a 350 px column
PX_PER_PT = 4 / 3


def vectors(name: str, x: np.ndarray, tokens: Sequence[str], q: int, axis_titles: Sequence[str]) -> str:
    """The vectors ``x`` (T x d) labelled with ``tokens``; ``axis_titles`` name components 1, 2 (and 3)."""
    from matplotlib.figure import Figure

    d = x.shape[1]
    with drawing(name):
        fig = Figure(figsize=(W, H))
        if d == 3:
            _three(fig, x, tokens, q, axis_titles)
        else:
            _two(fig, x, tokens, q, axis_titles)
        return to_svg(fig, name)


def _color(j: int, q: int) -> str:
    return FOCUS if j == q - 1 else OTHER


def _three(fig: Any, x: np.ndarray, tokens: Sequence[str], q: int, titles: Sequence[str]) -> None:
    from matplotlib.ticker import MaxNLocator
    from mpl_toolkits.mplot3d import proj3d  # type: ignore[import-untyped]

    t = x.shape[0]
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0), projection="3d")
    for j in range(t):
        lw = 2.2 if j == q - 1 else 1.2
        ax.quiver(0, 0, 0, *x[j], color=_color(j, q), arrow_length_ratio=0.08, linewidth=lw)
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    for setter in (ax.set_xlim, ax.set_ylim, ax.set_zlim):
        setter(lo, hi)
    for setter, title in zip((ax.set_xlabel, ax.set_ylabel, ax.set_zlabel), titles, strict=False):
        setter(title, fontsize=FONT, labelpad=2)
    ax.tick_params(labelsize=FONT, pad=0)
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_major_locator(MaxNLocator(4))
    ax.set_box_aspect(None, zoom=0.8)  # room for the axis titles inside the figure
    fig.draw_without_rendering()  # fixes the projection; no text is measured for layout
    tips = []
    for j in range(t):
        px, py, _ = proj3d.proj_transform(*x[j], ax.get_proj())
        tips.append(tuple(fig.transFigure.inverted().transform(ax.transData.transform((px, py)))))
    _label(fig, tips, tokens, q)


def _two(fig: Any, x: np.ndarray, tokens: Sequence[str], q: int, titles: Sequence[str]) -> None:
    from matplotlib.ticker import MaxNLocator

    t, d = x.shape
    ax = fig.add_axes((0.17, 0.15, 0.78, 0.8))
    xs = x[:, 0]
    ys = x[:, 1] if d > 1 else np.zeros(t)
    for j in range(t):
        if t <= MANY:
            ax.annotate("", (xs[j], ys[j]), (0, 0), arrowprops={"arrowstyle": "->", "color": _color(j, q), "lw": 1.4})
    ax.scatter(xs, ys, s=10, c=[_color(j, q) for j in range(t)], zorder=3)
    ax.axhline(0, color="#cbd5e1", lw=0.8)
    ax.axvline(0, color="#cbd5e1", lw=0.8)
    ax.set_xlabel(titles[0], fontsize=FONT)
    if d > 1:
        ax.set_ylabel(titles[1], fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    ax.xaxis.set_major_locator(MaxNLocator(5))
    ax.yaxis.set_major_locator(MaxNLocator(5))
    ax.margins(0.15)
    fig.draw_without_rendering()
    tips = [tuple(fig.transFigure.inverted().transform(ax.transData.transform((xs[j], ys[j])))) for j in range(t)]
    _label(fig, tips, tokens, q)


def _label(fig: Any, tips: list[tuple[float, float]], tokens: Sequence[str], q: int) -> None:
    """Token labels beside their tips (figure fractions), moved apart where they would overlap."""
    shown = [j for j in range(len(tips)) if len(tips) <= MANY or j == q - 1]
    sizes = [(width(label(tokens[j]), FONT * PX_PER_PT) / PX_PER_PT + 4, FONT * 1.25) for j in shown]
    wide, high = W * 72, H * 72
    boxes = spread([(tips[j][0] * wide + 4, tips[j][1] * high) for j in shown], sizes)
    for j, (bx, by), (tx, ty) in zip(
        shown, boxes, [(tips[j][0] * wide, tips[j][1] * high) for j in shown], strict=True
    ):
        c = _color(j, q)
        fig.text(bx / wide, by / high, label(tokens[j]), color=c, fontsize=FONT, va="center", ha="left")
        if abs(by - ty) > FONT * 0.6:
            fig.add_artist(_leader(fig, (tx / wide, ty / high), (bx / wide, by / high), c))


def _leader(fig: Any, tip: tuple[float, float], box: tuple[float, float], color: str) -> Any:
    from matplotlib.lines import Line2D

    return Line2D([tip[0], box[0]], [tip[1], box[1]], transform=fig.transFigure, color=color, lw=0.6, alpha=0.7)


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
