"""Trace -> page view model: the walk-through's sections, every number formatted once.

:func:`build` is the one entry point; each section has its own builder
(:mod:`.early`: inputs and scores; :mod:`.normalize`: weights and overflow;
:mod:`.late`: context vector, all pairs, recap).  Renderers receive the
:class:`~.model.Page` and never the trace.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.message import Message
from tracer.present.overflow import Overflow
from tracer.present.strings import Strings
from tracer.present.views import code, doors, idea
from tracer.present.views.code import with_code
from tracer.present.views.common import Ctx, focus, unfollowed
from tracer.present.views.early import inputs, scores
from tracer.present.views.late import context, pairs, recap
from tracer.present.views.model import Page
from tracer.present.views.normalize import normalize, overflow
from tracer.present.views.notes import number
from tracer.present.views.stops import stops
from tracer.version import __version__

__all__ = ["Page", "build", "page"]

READS = ("x", "omega", "omega.p", "omega.s", "alpha", "z", "mat.omega", "mat.alpha", "mat.z")
"""Nodes the walk-through cannot do without (the file check of :mod:`tracer.core.validate` names them all)."""


def page(trace: Trace, lang: str = "en", decimals: int = 4) -> Page:
    """The walk-through page of ``trace`` with its overflow section: the page part a lesson names to use it."""
    from tracer.present import overflow as scaled_copy

    return build(trace, lang, decimals, scaled_copy.scaled(trace))


def build(trace: Trace, lang: str = "en", decimals: int = 4, scaled: Overflow | None = None) -> Page:
    """The report's view model for ``trace`` in ``lang``; ``scaled`` feeds the overflow section.

    It reads the nodes the tutorial's lesson records (``x``, ``omega``,
    ``alpha``, ``z`` and their parts): a trace without them is refused.
    """
    have = {node.name for node in trace.nodes}
    missing = [name for name in READS if name not in have]
    if missing:
        lesson = trace.meta.get("lesson")
        raise InputError(Message("page.walk_through_reads_node", missing=repr(missing[0]), lesson=repr(lesson)))
    s = Strings(lang)
    ctx = Ctx(trace, s, decimals)
    q = trace.query
    summary = (
        (s("page.summary_tokens"), str(ctx.t)),
        (s("page.summary_dim"), str(ctx.d)),
        *focus(s, q, trace.tokens[q - 1]),
        (s("page.summary_dtype"), trace.dtype),
        (s("page.summary_decimals"), s("page.decimals", n=decimals)),
        *unfollowed(trace, s),
    )
    builders = {  # in the page's order, which the lesson names as its ``order`` for its notebook too
        "inputs": inputs,
        "scores": scores,
        "normalize": normalize,
        "overflow": lambda c: overflow(c, scaled),
        "context": context,
        "matrix": pairs,
    }
    shown = (*(build_section(ctx) for build_section in builders.values()), recap(ctx))
    sections = number(with_code(shown, code.blocks(trace, s)))
    ui = {k: s(f"page.{k}") for k in ("nav_prev", "nav_next", "nav_label", "nav_keys", "contents")}
    return Page(
        lang=lang,
        title=s("page.title"),
        subtitle=s("page.subtitle", q=q, token=trace.tokens[q - 1]),
        summary=summary,
        sections=sections,
        footer=s("page.footer", version=__version__),
        strings=ui,
        stops=stops(sections),
        doors=doors.embedded(trace, sections, decimals, s),
        idea=idea.figure(trace, s),
    )
