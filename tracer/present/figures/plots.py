"""The report's figures, drawn from prepared numbers and labels (no trace access here).

Every function returns SVG text (see :mod:`.svg`); the caller supplies a
unique ``name`` per figure, which salts hashes and prefixes ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tracer.present.figures.svg import drawing, label, to_svg

FOCUS = "#c2410c"  # the query, wherever it appears
OTHER = "#64748b"
SERIES = ("#94a3b8", "#2563eb", "#0d9488", "#7c3aed")
PALETTE = ("#2563eb", "#0d9488", "#c2410c", "#7c3aed", "#ca8a04", "#db2777", "#475569", "#16a34a")
CMAP = "Blues"
MANY = 24  # more tokens than this: no per-token labels


def _figure(w: float, h: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), layout="constrained")


def vectors(name: str, x: np.ndarray, tokens: Sequence[str], q: int, axis_label: str) -> str:
    """The embedding vectors: arrows in 3-D for d=3, else a 2-D view of components 1 and 2."""
    t, d = x.shape
    with drawing(name):
        fig = _figure(5.2, 4.2)
        if d == 3:
            ax = fig.add_subplot(projection="3d")
            for j in range(t):
                c = FOCUS if j == q - 1 else OTHER
                ax.quiver(0, 0, 0, *x[j], color=c, arrow_length_ratio=0.08, linewidth=2.2 if j == q - 1 else 1.2)
                if t <= MANY or j == q - 1:
                    ax.text(*x[j], " " + label(tokens[j]), color=c, fontsize=9)
            lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
            for setter in (ax.set_xlim, ax.set_ylim, ax.set_zlim):
                setter(lo, hi)
            ax.set_xlabel(axis_label % {"k": 1})
            ax.set_ylabel(axis_label % {"k": 2})
            ax.set_zlabel(axis_label % {"k": 3})
        else:
            ax = fig.add_subplot()
            xs = x[:, 0]
            ys = x[:, 1] if d > 1 else np.zeros(t)
            for j in range(t):
                c = FOCUS if j == q - 1 else OTHER
                if t <= MANY:
                    ax.annotate("", (xs[j], ys[j]), (0, 0), arrowprops={"arrowstyle": "->", "color": c, "lw": 1.4})
                    ax.text(xs[j], ys[j], " " + label(tokens[j]), color=c)
            ax.scatter(xs, ys, s=10, c=[FOCUS if j == q - 1 else OTHER for j in range(t)], zorder=3)
            ax.axhline(0, color="#cbd5e1", lw=0.8)
            ax.axvline(0, color="#cbd5e1", lw=0.8)
            ax.set_xlabel(axis_label % {"k": 1})
            if d > 1:
                ax.set_ylabel(axis_label % {"k": 2})
            ax.margins(0.15)
        return to_svg(fig, name)


def weights(name: str, tokens: Sequence[str], q: int, series: Sequence[tuple[str, np.ndarray]], ylabel: str) -> str:
    """Grouped bars: the weight each normalization gives each token (lines when there are many tokens)."""
    t = len(tokens)
    with drawing(name):
        fig = _figure(6.4, 3.2)
        ax = fig.add_subplot()
        pos = np.arange(t)
        width = 0.8 / len(series)
        for n, (text, vals) in enumerate(series):
            shown = np.where(np.isfinite(vals), vals, 0.0)
            if t <= MANY:
                ax.bar(pos + (n - (len(series) - 1) / 2) * width, shown, width, label=text, color=SERIES[n % 4])
            else:
                ax.plot(pos + 1, shown, label=text, color=SERIES[n % 4], lw=1)
        if t <= MANY:
            ax.set_xticks(pos, [label(tok, 12) for tok in tokens])
            ax.get_xticklabels()[q - 1].set_color(FOCUS)
        ax.set_ylabel(ylabel)
        ax.legend(frameon=False, fontsize=8, ncols=2)
        return to_svg(fig, name)


def context(
    name: str,
    terms: np.ndarray,
    z: np.ndarray,
    parts: Sequence[str],
    comps: Sequence[str],
    zlabel: str,
    others: bool = False,
) -> str:
    """Stacked bars: for each component, the contributions of each token, and the sum z marked.

    ``others`` says the last row of ``terms`` groups the remaining tokens (drawn grey).
    """
    n, d = terms.shape
    with drawing(name):
        fig = _figure(6.4, 3.4)
        ax = fig.add_subplot()
        pos = np.arange(d)
        up = np.zeros(d)
        down = np.zeros(d)
        for j in range(n):
            vals = terms[j]
            base = np.where(vals >= 0, up, down)
            color = "#cbd5e1" if others and j == n - 1 else PALETTE[j % len(PALETTE)]
            ax.bar(pos, vals, 0.6, bottom=base, label=label(parts[j], 14), color=color, edgecolor="white", lw=0.5)
            up += np.where(vals >= 0, vals, 0)
            down += np.where(vals < 0, vals, 0)
        ax.scatter(pos, z, marker="_", s=500, color="#0f172a", zorder=4, label=zlabel)
        ax.set_xticks(pos, list(comps))
        ax.axhline(0, color="#94a3b8", lw=0.8)
        ax.legend(frameon=False, fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
        return to_svg(fig, name)


def heatmap(
    name: str,
    values: np.ndarray,
    cells: Sequence[Sequence[str]] | None,
    ticks: Sequence[str] | None,
    focus: int | None,
    links: Sequence[Sequence[str]] | None = None,
) -> str:
    """A matrix as a heatmap; ``cells`` annotates each cell, ``links`` makes each a link, ``focus`` outlines a row."""
    from matplotlib.patches import Rectangle

    r, c = values.shape
    with drawing(name):
        size = 4.6 if cells is not None else 4.2
        fig = _figure(size + 0.8, size)
        ax = fig.add_subplot()
        finite = np.where(np.isfinite(values), values, np.nan)
        mesh = ax.pcolormesh(np.arange(c + 1) - 0.5, np.arange(r + 1) - 0.5, finite, cmap=CMAP, shading="flat")
        ax.set_xlim(-0.5, c - 0.5)
        ax.set_ylim(r - 0.5, -0.5)
        ax.set_aspect("equal")
        fig.colorbar(mesh, ax=ax, shrink=0.8)
        lo, hi = float(np.nanmin(finite)), float(np.nanmax(finite))
        mid = (lo + hi) / 2
        if cells is not None:
            for i in range(r):
                for j in range(c):
                    dark = np.isfinite(values[i, j]) and values[i, j] > mid
                    ax.text(
                        j, i, cells[i][j], ha="center", va="center", fontsize=7.5, color="white" if dark else "black"
                    )
        if links is not None:
            for i in range(r):
                for j in range(c):
                    if links[i][j]:
                        # transparent but painted, above the labels, so the whole cell takes the click
                        cell = Rectangle(
                            (j - 0.5, i - 0.5), 1, 1, facecolor=(1, 1, 1, 0.001), edgecolor="none", zorder=5
                        )
                        cell.set_url(links[i][j])
                        ax.add_patch(cell)
        if focus is not None:
            ax.add_patch(Rectangle((-0.5, focus - 0.5), c, 1, fill=False, edgecolor=FOCUS, lw=2))
        if ticks is not None:
            ax.set_xticks(np.arange(c), [label(s, 10) for s in ticks], rotation=45, ha="right")
            ax.set_yticks(np.arange(r), [label(s, 10) for s in ticks])
        ax.spines[:].set_visible(False)
        ax.tick_params(length=0)
        return to_svg(fig, name)
