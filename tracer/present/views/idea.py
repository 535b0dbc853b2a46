"""The picture of a lesson's idea, which its page shows before the numbers.

The anchors a reader compares a page with (the Illustrated Transformer,
Transformer Explainer) draw the data flow first and the numbers after; so a
page opens with one picture of what its lesson does (the triangle of keys a
causal mask leaves, the cache growing a row per token), drawn from the
trace's own sizes and values.  The lesson draws it, from its own folder: its
``idea`` page part returns a :class:`~tracer.present.figures.scene.Picture`,
and this module turns it into the page's figure.  The engine asks the
lesson and never names one.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.figures import scene
from tracer.present.figures.scene import Picture
from tracer.present.strings import Strings
from tracer.present.views.model import Figure, Para
from tracer.record import registry
from tracer.record.lesson import page_part

NAME = "fig-idea"
"""The picture's file name beside a Markdown report, and its anchor on the page."""


def picture(trace: Trace, s: Strings) -> Picture | None:
    """The picture the lesson of ``trace`` draws of its idea, in ``s``'s language; ``None`` when it draws none."""
    lesson = registry.of(trace)
    if lesson is None:
        return None
    draw = page_part(lesson, "idea")
    if draw is None:
        return None
    drawn = draw(trace, s)
    if not isinstance(drawn, Picture):
        raise TypeError(f"lesson {lesson.name!r}'s idea returned {type(drawn).__name__}, not a Picture")
    return drawn


def figure(trace: Trace, s: Strings) -> Figure | None:
    """The page's figure of the lesson's idea (its SVG, alt text and caption), or ``None``."""
    drawn = picture(trace, s)
    if drawn is None:
        return None
    svg = scene.svg(drawn.scene, NAME, drawn.title, drawn.alt)
    return Figure(NAME, NAME, svg, drawn.title + s("alt.stop") + drawn.alt, Para(drawn.caption, math=True))
