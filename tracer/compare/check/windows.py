"""The catalogue's hypotheses for lesson ``window``: a sliding-window mask that hides the wrong keys.

A correct window lets query i see key j when ``i - w < j <= i``.  Each
hypothesis predicts what the student's masked scores, scaled masked scores
and weights would be under another band ``i - back < j <= i + ahead``
(computed from the reference's own scores, as :mod:`.hypotheses` does) and
looks for them among the student's tensors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tracer.compare.check import variants as V
from tracer.compare.check.context import Context, Hit
from tracer.message import Message


def outside(axes: Sequence[str], shape: Sequence[int], back: float, ahead: int) -> np.ndarray:
    """True where key j is outside the band ``i - back < j <= i + ahead`` (the entries a mask hides)."""
    i, j = axes.index("i"), axes.index("j")
    ii = np.arange(shape[i]).reshape([-1 if d == i else 1 for d in range(len(shape))])
    jj = np.arange(shape[j]).reshape([-1 if d == j else 1 for d in range(len(shape))])
    return np.broadcast_to((jj - ii > ahead) | (ii - jj >= back), shape)


def _band(c: Context, back: float, ahead: int) -> Hit | None:
    """A hit when the student's scores or weights are masked to the band ``(back, ahead)`` instead."""
    omega, axes = c.ref("omega")
    hidden = np.where(outside(axes, omega.shape, back, ahead), -np.inf, omega)
    tries = [hidden, hidden / c.sqrt_dk, V.softmax(hidden / c.sqrt_dk, -1)]
    return c.first(tries, axes, (c.step("masked"), c.step("masked_scaled"), c.step("alpha")))


def _width(c: Context) -> int:
    return int(c.trace.meta.get("window", c.spec.window))


WIDER = Message("word.window_library")
"""What :func:`width_off` adds when the window holds one key too many: a library's convention, not a slip."""


def width_off(c: Context) -> Hit | None:
    """The window holds one key too many (``j >= i - w``) or one too few (``j > i - w + 1``)."""
    if not c.spec.windowed:
        return None
    w = _width(c)
    for seen in (w + 1, w - 1):
        if seen < 1 or seen >= c.tokens:  # a band as wide as the text is the causal mask: not an off-by-one
            continue
        hit = _band(c, seen, 0)
        if hit is not None:
            said = WIDER if seen > w else Message("word.nowhere")
            return Hit(hit.seen, hit.steps, {"seen": str(seen), "width": str(w), "convention": said})
    return None


def not_causal(c: Context) -> Hit | None:
    """Only the window part: ``|i - j| < w``, so each query also sees the w - 1 keys after it."""
    if not c.spec.windowed:
        return None
    w = _width(c)
    return _band(c, w, w - 1) if w > 1 else None


def window_missing(c: Context) -> Hit | None:
    """Only the causal part: every key up to the query is seen, however far back."""
    if not c.spec.windowed or _width(c) >= c.tokens:
        return None
    hit = _band(c, math.inf, 0)
    return None if hit is None else Hit(hit.seen, hit.steps, {"width": str(_width(c))})
