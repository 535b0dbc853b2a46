"""Hypotheses for mistakes seen in published code and homework, beside :mod:`.hypotheses` (the book's).

A result in another layout (``output_layout``), a boolean mask whose True SDPA
reads the other way (``mask_inverted``), no dropout (``dropout_missing``),
the weights returned (``returns_weights``), lesson simple scaled
(``scale_extra``), the weights transposed in the context
(``context_transposed``), a sliding window (``mask_window``).  Each takes
the check's :class:`~tracer.compare.check.context.Context` and returns a
:class:`Hit` when a student tensor holds the mistake's prediction.
"""

from __future__ import annotations

import math

import numpy as np

from tracer.compare.check import align
from tracer.compare.check import variants as V
from tracer.compare.check.context import Context, Hit


def layout(c: Context) -> Hit | None:
    """The result holds the lesson's values, but in another shape or axis order than the lesson's."""
    last = [q for q in c.spec.quantities if q.run == "eval"][-1]
    if c.final is None:
        return None
    ref, axes = c.ref(last.key)
    got = c.final.value
    if align.same_layout(got, ref, c.spec.batch):
        return None
    if align.find(ref, axes, [c.final]) is None:
        return None
    return Hit(c.final, (last.step,), {"shape": _shape(got.shape), "lesson": _shape(ref.shape)})


def _shape(t: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in t) + ")"


def mask_inverted(c: Context) -> Hit | None:
    """The mask hides the past and keeps the future: a boolean ``triu`` mask passed to SDPA, True read as "attend"."""
    if not c.causal:
        return None
    omega, axes = c.ref("omega")
    past = ~V.future(axes, omega.shape, 1)  # the diagonal and the past: what True-means-masked hides when inverted
    hidden = np.where(past, -np.inf, omega)
    tries = [hidden, hidden / c.sqrt_dk, V.softmax(hidden / c.sqrt_dk, -1)]
    return c.first(tries, axes, (c.step("masked"), c.step("alpha")))


def dropout_missing(c: Context) -> Hit | None:
    """No dropout at all: in training mode the weights are the eval-mode weights."""
    if not c.has("dropped") or not c.spec.dropout:
        return None
    alpha, axes = c.ref("alpha")
    z, z_axes = c.ref("z")
    if c.holds(alpha, axes, c.train) is None or c.holds(z, z_axes, c.train) is None:
        return None
    return c.first([alpha], axes, (c.step("dropped"),), {"p": f"{c.spec.dropout:g}"}, c.train)


def returns_weights(c: Context) -> Hit | None:
    """The result is the attention weights, not the context vectors."""
    if c.final is None:
        return None
    alpha, axes = c.ref("alpha")
    if c.holds(alpha, axes, [c.final]) is None:
        return None
    return Hit(c.final, (c.step("alpha"), c.step("z")))


def scale_extra(c: Context) -> Hit | None:
    """A lesson without scaling divides by √d before its softmax (the scaling of the lessons with weights)."""
    if c.spec.scaled:
        return None
    omega, axes = c.ref("omega")
    return c.first([V.softmax(omega / math.sqrt(c.spec.d_in), -1)], axes, (c.step("alpha"),))


def context_transposed(c: Context) -> Hit | None:
    """The context mixes the inputs with the weights transposed (``inputs.T @ w``, or ``w.T @ inputs``)."""
    if not c.has("z") or c.spec.is_class:  # the values are the inputs themselves
        return None
    alpha, _ = c.ref("alpha")
    x = np.asarray(c.trace.node("x").value, dtype=np.float64)
    z, axes = c.ref("z")
    wrong = alpha.T @ x
    if np.allclose(wrong, z):
        return None
    return c.first([wrong], axes, (c.step("alpha"), c.step("z")))


def mask_window(c: Context) -> Hit | None:
    """A sliding window: besides the future, keys ``w`` or more tokens back are hidden too (for some ``w``)."""
    if not c.causal:
        return None
    omega, axes = c.ref("omega")
    tokens = omega.shape[axes.index("j")]
    for w in range(1, tokens - 1):
        old = V.future(axes, omega.shape, 1) | np.swapaxes(
            V.future(axes, omega.shape, w), axes.index("i"), axes.index("j")
        )
        hidden = np.where(old, -np.inf, omega)
        hit = c.first([V.softmax(hidden / c.sqrt_dk, -1), hidden / c.sqrt_dk, hidden], axes, (c.step("masked"),))
        if hit is not None:
            return Hit(hit.seen, hit.steps, {"w": str(w)})
    return None
