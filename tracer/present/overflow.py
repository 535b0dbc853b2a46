"""The overflow demonstration as the report reads it: from the trace's own ``overflow`` stage.

Lesson ``simple`` records the inputs scaled until the naive softmax breaks
(:mod:`tracer.record.blocks.overflow`, nodes ``scaled.*``) and says what it
recorded in ``meta["overflow"]``.  This module only reads: a report, a
notebook or a Jupyter display needs nothing but the trace, and rendering a
saved trace (``report --from``) imports no torch.

A trace file of format version 1 predates the recording; its report says
that the section needs a re-trace rather than recomputing it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracer.core import overflow
from tracer.core.trace import Trace

MAX_POWER = overflow.MAX_POWER


@dataclass(frozen=True)
class Overflow:
    """What the report shows: the factor, the limit it beats, and the scaled largest score."""

    factor: int
    limit: float  # ln of the dtype's largest value
    top: float  # the focus query's largest score after scaling


def recorded(trace: Trace) -> bool:
    """True when the trace says whether its inputs were scaled (format 2 on); False for older traces."""
    info = trace.meta.get("overflow")
    return isinstance(info, dict) and "factor" in info


def scaled(trace: Trace) -> Overflow | None:
    """The recorded demonstration, or None when no factor made exp overflow (or nothing was recorded)."""
    info = trace.meta.get("overflow")
    if not recorded(trace) or not isinstance(info, dict) or info.get("factor") is None:
        return None
    if not all(f"scaled.{n}" in trace for n in ("c", "omega", "naive.exp", "alpha")):
        return None
    c = int(trace["scaled.c"].value)
    top = float(np.max(trace.tensor("scaled.omega")[trace.query - 1]))
    return Overflow(c, overflow.limit(trace.dtype), top)
