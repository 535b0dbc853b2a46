"""The tutorial's walk-through: lesson ``simple``'s own page part, every number formatted once.

The lesson names :func:`page` as its page part.  Each of its sections has
its own builder, in the order the page teaches them: :mod:`.scores` (the
inputs, and the focus query's scores written out), :mod:`.weights` (four
normalizations side by side, and the overflow the stable one avoids),
:mod:`.context` (the focus query's context vector) and :mod:`.pairs` (every
query at once, and the recap).  :func:`build` hands them, with the page's
heading, to the one page builder
(:func:`tracer.present.views.lesson.assemble`), which finishes every page
alike (the backward section, footnotes, stops, doors, the idea's picture).
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.lessons.simple.context import context
from tracer.lessons.simple.pairs import pairs, recap
from tracer.lessons.simple.scores import inputs, scores
from tracer.lessons.simple.weights import normalize, overflow
from tracer.present.facts import fill
from tracer.present.narrative import Narrative
from tracer.present.overflow import Overflow
from tracer.present.strings import Strings
from tracer.present.views.code import blocks, with_code
from tracer.present.views.common import Ctx
from tracer.present.views.lesson import Heading, assemble, summary_rows
from tracer.present.views.lessonctx import LessonCtx
from tracer.present.views.model import Page

__all__ = ["build", "page"]

READS = ("x", "omega", "omega.p", "omega.s", "alpha", "z", "mat.omega", "mat.alpha", "mat.z")
"""Nodes the walk-through cannot do without (the file check of :mod:`tracer.core.validate` names them all)."""


def page(trace: Trace, story: Narrative, decimals: int = 4) -> Page:
    """The walk-through page of ``trace`` in ``story``'s language, with its overflow section: the page part
    lesson ``simple`` names (the same call as the generic :func:`tracer.present.views.lesson.build`)."""
    from tracer.present import overflow as scaled_copy

    return build(trace, story.lang, decimals, scaled_copy.scaled(trace), story)


def build(
    trace: Trace, lang: str = "en", decimals: int = 4, scaled: Overflow | None = None, story: Narrative | None = None
) -> Page:
    """The report's view model for ``trace`` in ``lang``; ``scaled`` feeds the overflow section.

    It reads the nodes the tutorial's lesson records (``x``, ``omega``,
    ``alpha``, ``z`` and their parts): a trace without them is refused.
    ``story``, the lesson's narrative, tells the backward section of a trace
    recorded with its backward pass (without it, the shared texts do).
    """
    have = {node.name for node in trace.nodes}
    missing = [name for name in READS if name not in have]
    if missing:
        lesson = trace.meta.get("lesson")
        raise InputError(f"this walk-through reads node {missing[0]!r}, which the trace of {lesson!r} does not have")
    s = Strings(lang)
    ctx = Ctx(trace, s, decimals)
    q = trace.query
    summary = summary_rows(s, trace, str(ctx.d), decimals)
    builders = {  # in the page's order, which the lesson names as its ``order`` for its notebook too
        "inputs": inputs,
        "scores": scores,
        "normalize": normalize,
        "overflow": lambda c: overflow(c, scaled),
        "context": context,
        "matrix": pairs,
    }
    shown = (*(build_section(ctx) for build_section in builders.values()), recap(ctx))
    code = blocks(trace, s)
    heading = Heading(s("page.title"), s("page.subtitle", q=q, token=trace.tokens[q - 1]), summary)
    told = LessonCtx(trace, s, decimals, story=fill(trace, story) if story is not None else None)
    return assemble(told, heading, with_code(shown, code), code)
