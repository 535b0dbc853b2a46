"""The overflow demonstration: the same inputs, scaled until the naive softmax breaks.

The factor is computed, never chosen per example: the smallest power of ten
``c = 10**n`` (n >= 1) for which the focus query's largest score, which grows
``c**2``-fold when the inputs grow ``c``-fold, passes ``ln(max)`` of the
trace's dtype (88.72 for float32, 709.78 for float64), the point past which
``exp`` overflows.  The scaled trace is computed from the trace's own ``x``
tensor, so a report rendered from a saved trace (``--from``) shows the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tracer.core.trace import Trace
from tracer.errors import InputError

MAX_POWER = 12
"""Largest power of ten tried."""


@dataclass(frozen=True)
class Overflow:
    """The scaled trace and why it was scaled so."""

    factor: int
    limit: float  # ln of the dtype's largest value
    top: float  # the focus query's largest score in the scaled trace
    trace: Trace


def limit(dtype: str) -> float:
    """``ln(max)`` of ``dtype``: the largest x whose exp is finite."""
    return math.log(float(np.finfo(np.dtype(dtype)).max))


def factor(trace: Trace) -> int | None:
    """The smallest power of ten that pushes the focus query's largest score past ``limit``, if any."""
    top = float(np.max(trace.tensor("omega")[trace.query - 1].astype(np.float64)))
    lim = limit(trace.dtype)
    if not top > 0:
        return None
    for n in range(1, MAX_POWER + 1):
        if top * 100.0**n > lim:
            return int(10**n)
    return None


def scaled(trace: Trace) -> Overflow | None:
    """Trace ``x * factor`` with the same tokens, query and dtype (None when no factor makes exp overflow)."""
    from tracer.api import trace_self_attention

    c = factor(trace)
    if c is None:
        return None
    x = trace.tensor("x").astype(np.float64) * c
    try:
        st = trace_self_attention(x, trace.tokens, trace.query, trace.dtype)
    except InputError:  # the scaled inputs no longer fit the dtype
        return None
    top = float(np.max(st.tensor("omega")[trace.query - 1]))
    return Overflow(c, limit(trace.dtype), top, st)
