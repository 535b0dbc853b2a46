"""When the naive softmax overflows: the arithmetic behind the overflow demonstration.

``exp(s)`` is finite only while ``s <= ln(max)`` of the dtype (88.72 for
float32, 709.78 for float64).  The demonstration scales the inputs by the
smallest power of ten ``c = 10**n`` (n >= 1) that pushes the focus query's
largest score past that limit; a score grows ``c**2``-fold when both of its
vectors grow ``c``-fold.  The factor is computed, never chosen per example.

The lesson records the scaled computation in the trace (stage ``overflow``,
nodes ``scaled.*``, and ``meta["overflow"]``); the report reads it from
there.  numpy only.
"""

from __future__ import annotations

import math

import numpy as np

MAX_POWER = 12
"""Largest power of ten tried."""


def limit(dtype: str) -> float:
    """``ln(max)`` of ``dtype``: the largest x whose exp is finite."""
    return math.log(float(np.finfo(np.dtype(dtype)).max))


def factor(top: float, dtype: str) -> int | None:
    """The smallest ``10**n`` (1 <= n <= MAX_POWER) with ``top * 100**n > limit(dtype)``, if any.

    ``top`` is the focus query's largest score; a score that is not positive
    never overflows however far it is scaled.
    """
    lim = limit(dtype)
    if not top > 0:
        return None
    for n in range(1, MAX_POWER + 1):
        if top * 100.0**n > lim:
            return int(10**n)
    return None
