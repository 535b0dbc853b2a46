"""The order a page walks a trace's stages in, which its notebook follows too.

A lesson lists its stages in ``meta["stages"]`` in the order it records
them.  The generic lesson page (:mod:`.lesson`) shows them in that order.
The tutorial's page (:mod:`tracer.present.views`) teaches the overflow
beside the softmax it motivates, although the pipeline records it last,
from the finished scores: :data:`TUTORIAL` is that page's order.  The
notebook export walks the same order, so the code cells it runs are the
code blocks the page shows, one after the other.
"""

from __future__ import annotations

from tracer.core.trace import Trace

TUTORIAL = ("inputs", "scores", "normalize", "overflow", "context", "matrix")
"""The stages of lesson ``simple`` in the order its page shows them (``matrix`` is the page's "pairs")."""


def stage_order(trace: Trace) -> list[str]:
    """The stages in the order the lesson lists them (``meta["stages"]``), else as first recorded."""
    listed = [str(s) for s in trace.meta.get("stages", [])]
    return [s for s in listed if s in trace.stages] + [s for s in trace.stages if s not in listed]


def page_order(trace: Trace) -> list[str]:
    """The stages in the order the trace's page shows them: the tutorial's own, else :func:`stage_order`."""
    listed = stage_order(trace)
    if trace.meta.get("lesson", "simple") != "simple":  # the rule by which a report picks the tutorial's page
        return listed
    return [s for s in TUTORIAL if s in listed] + [s for s in listed if s not in TUTORIAL]
