"""Lesson ``temperature`` as ``attn-trace check`` sees it: what a student writes, and three mistakes of its own.

The student writes ``attention(inputs)``, the tutorial's self-attention with
the scores divided by the lesson's default temperature (τ = 2) before the
softmax; ``solution.py`` beside this package is one.  :data:`CHECK` is the
lesson's check description (``tracer.compare.check.lessons.Spec``): how the
code is called (once, on the tutorial's six tokens), which of the lesson's
steps the student's tensors must hold, in order, and the mistakes this lesson
knows.  A stage is one of the check's own (``scores``, ``weights``,
``context``, ...: ``docs/check.md``) or, like ``cooling`` here, the
lesson's, named in its tables.  Each mistake predicts the tensor a student who made it would hold,
computed from the lesson's own values, and asks whether the student's run
holds it; its sentence is ``diagnosis.<code>`` in this package's
``messages.<lang>.toml``, filled with the details the test returns.

The check imports this module when it first checks code for the lesson (not
when ``attn-trace lessons`` lists it), so numpy here costs a listing nothing.
"""

from __future__ import annotations

import numpy as np

from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.compare.check.lessons import FUNCTION, Q, Spec


def _softmax(scores: np.ndarray, axis: int) -> np.ndarray:
    """The softmax of ``scores`` over ``axis`` (largest subtracted first, as the lesson's own does)."""
    e = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _tried(c: Context, wrong: np.ndarray) -> Hit | None:
    """A hit when one of the student's tensors holds ``wrong``, laid out as the scores are."""
    _, axes = c.ref("omega")
    tau = float(c.trace.meta["tau"])
    return c.first([wrong], axes, (c.step("cooled"), c.step("alpha")), {"tau": f"{tau:g}"})


def after_softmax(c: Context) -> Hit | None:
    """The weights of the raw scores divided by τ: the temperature applied after the softmax, not before."""
    omega, axes = c.ref("omega")
    return _tried(c, _softmax(omega, axes.index("j")) / float(c.trace.meta["tau"]))


def multiplied(c: Context) -> Hit | None:
    """The scores times τ: the temperature used the wrong way round (a high one sharpens instead of flattening)."""
    omega, _ = c.ref("omega")
    return _tried(c, omega * float(c.trace.meta["tau"]))


def missing(c: Context) -> Hit | None:
    """The weights of the raw scores: no temperature at all (the tutorial's weights, whatever τ is)."""
    omega, axes = c.ref("omega")
    return _tried(c, _softmax(omega, axes.index("j")))


STAGES = ("cooling", "weights")
"""Where a wrong temperature shows first: the cooled scores (a stage of this lesson's own, named in its
message tables under ``stage.cooling``), or the weights when no cooled scores exist."""

CHECK = Spec(
    "temperature",
    ("inputs",),
    (),
    123,
    3,
    3,
    1,
    False,
    (
        Q("omega", "scores", "omega", True, "s"),  # optional: (x / τ) xᵀ never holds the raw scores
        Q("cooled", "cooling", "cooled", False, "s"),
        Q("alpha", "weights", "alpha"),
        Q("z", "context", "z"),
    ),
    driver=FUNCTION,
    scaled=False,
    mistakes=(
        # tried in this order, after the catalogue's: the weights of the raw scores are a step on the way to
        # dividing them after the softmax, so that mistake is asked about before the one it contains
        Entry("tau_after_softmax", STAGES, after_softmax),
        Entry("tau_multiplied", STAGES, multiplied),
        Entry("tau_missing", STAGES, missing),
    ),
)
