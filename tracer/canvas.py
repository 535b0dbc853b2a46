"""Blank matplotlib figures, and a picture's scene drawn on one: what ``tracer.plot`` draws its figures on.

matplotlib is imported when a figure is made, never at import time, so
``--help`` and the reports do not pay for it.  Every figure made here (by
:func:`blank`) is a :func:`sheet`: whenever it is drawn (saved in any
format, shown in Jupyter, measured for its layout) its texts fall back to a
Chinese font for the glyphs their own font lacks, so a Chinese label prints
the same through ``tracer.plot`` as through ``attn-trace figures``, a label
added after the figure was made included.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from tracer.errors import InputError
from tracer.present.figures.scene import Arc, Box, Line, Ring, Scene, arc_points, head

if TYPE_CHECKING:
    from matplotlib.figure import Figure


CJK = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei", "PingFang SC", "Microsoft YaHei")
"""Fonts with Chinese glyphs, tried in this order after a text's own font (the page's font stack has the same)."""


def with_cjk(fig: Figure) -> Figure:
    """``fig`` with every text falling back to the first installed font of :data:`CJK` for the glyphs it lacks.

    matplotlib draws a text in one family and a glyph that family lacks as a
    box (a Chinese label in DejaVu Sans); since matplotlib 3.6 a text's
    family may be a list, each glyph taken from the first that has it.
    Without any of these fonts installed nothing changes.
    """
    from matplotlib import font_manager
    from matplotlib.text import Text

    installed = {f.name for f in font_manager.fontManager.ttflist}
    extra = [name for name in CJK if name in installed][:1]
    if extra:
        for text in fig.findobj(Text):
            own = [f for f in text.get_fontfamily() if f not in extra]
            text.set_fontfamily([*own, *extra])
    return fig


@functools.cache
def sheet() -> type[Figure]:
    """The class of the figures made here: a matplotlib ``Figure`` that applies :func:`with_cjk` as it draws.

    Drawing is the one moment every text is final and about to be measured
    and rendered, so this is the one place the fallback is applied.
    """
    from matplotlib.figure import Figure

    class Sheet(Figure):
        """A figure whose texts fall back to a Chinese font whenever it is drawn."""

        def draw(self, renderer: Any) -> None:
            with_cjk(self)
            super().draw(renderer)

    Sheet.__module__, Sheet.__qualname__ = __name__, "Sheet"  # pickled by name: found by this module's __getattr__
    return Sheet


def __getattr__(name: str) -> Any:
    """``tracer.canvas.Sheet``, the class :func:`sheet` makes (matplotlib imported only when it is asked for)."""
    if name == "Sheet":
        return sheet()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def blank(w: float, h: float) -> Figure:
    """A new white figure ``w`` x ``h`` inches with constrained layout; a clear error when matplotlib cannot start."""
    try:
        made = sheet()
    except ImportError:  # pragma: no cover - the package's test extra installs it
        raise InputError("figures need matplotlib: pip install 'attn-trace[plot]'") from None
    except ValueError as e:  # matplotlib refuses its settings on import (MPLBACKEND=bogus, a bad matplotlibrc)
        raise InputError(f"matplotlib cannot start: {str(e).partition('; supported values')[0]}") from None
    fig = made(figsize=(w, h), layout="constrained")
    fig.patch.set_facecolor("#ffffff")
    return fig


PX = 96.0
"""CSS px per inch: a matplotlib figure of the scene is the page's size at this resolution."""


def drawn(scene: Scene) -> Figure:
    """The scene as a matplotlib figure (no pyplot state), the same marks at the same places."""
    from matplotlib.patches import Circle, Polygon, Rectangle

    fig = blank(scene.w / PX, scene.h / PX)
    fig.set_layout_engine("none")
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, scene.w)
    ax.set_ylim(scene.h, 0)
    ax.set_axis_off()
    pt = 72.0 / PX  # a CSS px in points
    for m in scene.marks:
        style: dict[str, Any] = {"linestyle": (0, (4, 3)) if getattr(m, "dash", False) else "-"}
        if isinstance(m, Box):
            edge = {"edgecolor": m.stroke, "linewidth": m.width * pt} if m.stroke else {"linewidth": 0}
            ax.add_patch(Rectangle((m.x, m.y), m.w, m.h, facecolor=m.fill, **edge, **style))
        elif isinstance(m, Line):
            ax.plot([m.x1, m.x2], [m.y1, m.y2], color=m.stroke, linewidth=m.width * pt, **style)
            if m.arrow:
                ax.add_patch(Polygon(head(m), closed=True, facecolor=m.stroke, linewidth=0))
        elif isinstance(m, Ring):
            face = "none" if m.fill == "none" else m.fill
            ax.add_patch(Circle((m.cx, m.cy), m.r, facecolor=face, edgecolor=m.stroke, linewidth=pt, **style))
        elif isinstance(m, Arc):
            xs, ys = zip(*arc_points(m), strict=True)
            ax.plot(xs, ys, color=m.stroke, linewidth=m.width * pt)
        else:
            ha = {"start": "left", "middle": "center", "end": "right"}[m.anchor]
            ax.text(
                m.x, m.y, m.text, ha=ha, va="baseline", color=m.fill, fontsize=m.size * pt,
                fontweight="bold" if m.bold else "normal",
            )  # fmt: skip
    return fig
