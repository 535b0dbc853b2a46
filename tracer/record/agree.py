"""Bounds of ``|library form − loop form|`` for a lesson's matrix forms, taken from the loop form's vars.

A pipeline that checks a library result (``X @ X.T``, ``torch.softmax``,
the book's module) against its own loops passes one of these as the
``bound`` of :meth:`Recorder.maxabsdiff`; the maths is in
:mod:`tracer.core.bounds`.  Each takes the loop form's vars (the same bits on
every machine) and the bounds of the library's operands (``0`` for given data).
"""

from __future__ import annotations

import numpy as np

from tracer.core import bounds
from tracer.record.recorder import Var

Bound = np.ndarray | float


def values(v: Var) -> np.ndarray:
    """A var's values in float64."""
    return np.asarray(v.data.detach().numpy(), dtype=np.float64)


def _u(v: Var) -> float:
    return bounds.unit(str(v.data.dtype).removeprefix("torch."))


def matmul(spec: str, a: Var, ea: Bound, b: Var, eb: Bound) -> np.ndarray:
    """Bound for a library product ``einsum(spec, A, B)`` against the loop form's ``a``, ``b`` sums."""
    return bounds.matmul(spec, values(a), np.asarray(ea, float), values(b), np.asarray(eb, float), _u(a))


def scaled(x: Var, e: Bound, s: Var) -> np.ndarray:
    """Bound after both forms divide by the constant ``s`` (``x`` is the loop form's quotient)."""
    return bounds.scaled(values(x), np.asarray(e, float), float(values(s)), _u(x))


def softmax(c: Var, x: Var, e: Bound) -> np.ndarray:
    """Bound for a library softmax over the last axis of inputs within ``e`` of ``x`` (loop result ``c``)."""
    return bounds.softmax(values(c), values(x), np.asarray(e, float), -1, _u(c))
