"""A picture as a list of marks, drawn twice: as SVG for the page and as a matplotlib figure for slides.

A lesson's picture of its idea (:mod:`tracer.present.views.idea`) is a few
boxes, lines, arrows, circles and labels placed from the trace's own sizes and
values.  Building it as a :class:`Scene`, plain data in CSS pixels (y down),
lets one drawing serve both forms: :func:`svg` writes the hand-made SVG the
page inlines (text stays text, sized in CSS px, so a phone keeps it
readable), and :func:`tracer.canvas.drawn` the ``matplotlib.figure.Figure``
that ``tracer.plot.idea`` and ``attn-trace figures`` save.  The two are drawn from
the same numbers, so the slide and the page cannot disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

from tracer.present.figures.marks import INK, PAPER, SIZE, n
from tracer.present.figures.svg import FONT_STACK

HEAD = 7.0
"""Length of an arrow's head, in px."""


@dataclass(frozen=True)
class Box:
    """A rectangle, filled and optionally outlined (``dash`` draws its outline dashed)."""

    x: float
    y: float
    w: float
    h: float
    fill: str
    stroke: str = ""
    width: float = 1.0
    dash: bool = False


@dataclass(frozen=True)
class Line:
    """A straight line; ``arrow`` puts a head at its end (``x2``, ``y2``)."""

    x1: float
    y1: float
    x2: float
    y2: float
    stroke: str = INK
    width: float = 1.0
    arrow: bool = False
    dash: bool = False


@dataclass(frozen=True)
class Ring:
    """A circle (unfilled unless ``fill``)."""

    cx: float
    cy: float
    r: float
    stroke: str
    fill: str = "none"
    dash: bool = False


@dataclass(frozen=True)
class Arc:
    """An arc about (``cx``, ``cy``) from angle ``a1`` to ``a2`` (radians, counter-clockwise as in maths)."""

    cx: float
    cy: float
    r: float
    a1: float
    a2: float
    stroke: str
    width: float = 1.5


@dataclass(frozen=True)
class Label:
    """Text whose baseline is at ``y``; ``anchor`` as SVG's ``text-anchor``."""

    x: float
    y: float
    text: str
    anchor: str = "start"
    fill: str = INK
    size: float = SIZE
    bold: bool = False


Mark = Box | Line | Ring | Arc | Label


@dataclass
class Scene:
    """The marks of one picture and its natural size in CSS px."""

    w: float
    h: float
    marks: list[Mark] = field(default_factory=list)

    def add(self, *marks: Mark) -> None:
        """Draw ``marks`` over what is there."""
        self.marks.extend(marks)


def head(line: Line) -> list[tuple[float, float]]:
    """The three corners of ``line``'s arrow head (a narrow triangle at its end)."""
    a = math.atan2(line.y2 - line.y1, line.x2 - line.x1)
    side = HEAD * 0.45
    bx, by = line.x2 - HEAD * math.cos(a), line.y2 - HEAD * math.sin(a)
    return [
        (line.x2, line.y2),
        (bx - side * math.sin(a), by + side * math.cos(a)),
        (bx + side * math.sin(a), by - side * math.cos(a)),
    ]


def _dash(on: bool) -> str:
    return ' stroke-dasharray="4 3"' if on else ""


def arc_points(arc: Arc, steps: int = 24) -> list[tuple[float, float]]:
    return [
        (arc.cx + arc.r * math.cos(t), arc.cy - arc.r * math.sin(t))
        for t in (arc.a1 + (arc.a2 - arc.a1) * k / steps for k in range(steps + 1))
    ]


def _svg_mark(m: Mark) -> str:
    if isinstance(m, Box):
        edge = f' stroke="{m.stroke}" stroke-width="{n(m.width)}"{_dash(m.dash)}' if m.stroke else ""
        return f'<rect x="{n(m.x)}" y="{n(m.y)}" width="{n(m.w)}" height="{n(m.h)}" fill="{m.fill}"{edge}/>'
    if isinstance(m, Line):
        out = (
            f'<line x1="{n(m.x1)}" y1="{n(m.y1)}" x2="{n(m.x2)}" y2="{n(m.y2)}" stroke="{m.stroke}" '
            f'stroke-width="{n(m.width)}"{_dash(m.dash)}/>'
        )
        if m.arrow:
            corners = " ".join(f"{n(x)},{n(y)}" for x, y in head(m))
            out += f'<polygon points="{corners}" fill="{m.stroke}"/>'
        return out
    if isinstance(m, Ring):
        return (
            f'<circle cx="{n(m.cx)}" cy="{n(m.cy)}" r="{n(m.r)}" fill="{m.fill}" stroke="{m.stroke}"{_dash(m.dash)}/>'
        )
    if isinstance(m, Arc):
        pts = " ".join(f"{n(x)},{n(y)}" for x, y in arc_points(m))
        return f'<polyline points="{pts}" fill="none" stroke="{m.stroke}" stroke-width="{n(m.width)}"/>'
    bold = ' font-weight="bold"' if m.bold else ""
    return (
        f'<text x="{n(m.x)}" y="{n(m.y)}" text-anchor="{m.anchor}" font-size="{n(m.size)}" fill="{m.fill}"{bold}>'
        f"{escape(m.text)}</text>"
    )


def svg(scene: Scene, name: str, title: str, desc: str = "") -> str:
    """The scene as an ``<svg>`` image named by ``title`` (``<title>``) and described by ``desc`` (``<desc>``).

    The page inlines it labelled by its figure's alt text
    (:func:`tracer.present.render.html.inline_svg`); the file beside a
    Markdown report is read on its own, where these two speak for it.
    """
    said = f"<title>{escape(title)}</title>" + (f"<desc>{escape(desc)}</desc>" if desc else "")
    head_ = (
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{escape(name)}-svg" width="{n(scene.w)}" height="{n(scene.h)}" '
        f'viewBox="0 0 {n(scene.w)} {n(scene.h)}" font-family="{escape(FONT_STACK)}" role="img">'
    )
    return head_ + said + "\n" + PAPER + "\n" + "\n".join(_svg_mark(m) for m in scene.marks) + "\n</svg>\n"


@dataclass(frozen=True)
class Picture:
    """What a lesson's ``idea`` page part returns: the scene, its name, what it shows in plain words, its caption.

    ``title`` names the picture in a few words; ``alt`` is read to a screen
    reader in place of the drawing (no ``$...$``), so it names what the
    picture shows with the trace's numbers; ``caption`` is the text under it
    and may hold ``$...$`` maths.
    """

    scene: Scene
    title: str
    alt: str
    caption: str
