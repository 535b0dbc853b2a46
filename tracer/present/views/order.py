"""The order a page walks a trace's stages in, which its notebook follows too.

A lesson lists its stages in ``meta["stages"]`` in the order it records
them.  The generic lesson page (:mod:`.lesson`) shows them in that order.
A lesson with a page of its own may show them in another (the tutorial's
teaches the overflow beside the softmax it motivates, although its pipeline
records it last, from the finished scores): it names that order as its
``order`` (:class:`~tracer.record.lesson.PackagedLesson`).  The notebook
export walks the same order, so the code cells it runs are the code blocks
the page shows, one after the other.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.record import registry


def stage_order(trace: Trace) -> list[str]:
    """The stages in the order the lesson lists them (``meta["stages"]``), else as first recorded."""
    listed = [str(s) for s in trace.meta.get("stages", [])]
    return [s for s in listed if s in trace.stages] + [s for s in trace.stages if s not in listed]


def page_order(trace: Trace) -> list[str]:
    """The stages in the order the trace's page shows them: its lesson's ``order``, else :func:`stage_order`."""
    listed = stage_order(trace)
    lesson = registry.of(trace)
    order = tuple(getattr(lesson, "order", ())) if lesson is not None else ()
    return [s for s in order if s in listed] + [s for s in listed if s not in order]
