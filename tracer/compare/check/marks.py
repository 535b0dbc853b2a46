"""How each stage's status is settled once the student's tensors are aligned with the lesson's quantities.

The result must be what the code returns, in the lesson's layout
(:func:`returned`); train-mode dropout is compared only where the code draws
its mask as the lesson does (:func:`other_draws`); quantities inside a call
recorded whole are not compared when the result matches
(:func:`inside_opaque`); an optional quantity is skipped when a later one
proves it was computed another way (:func:`mark_optional`).
"""

from __future__ import annotations

import numpy as np

from tracer.compare.check import align
from tracer.compare.check.catalogue import diagnose
from tracer.compare.check.context import Context
from tracer.compare.check.model import Seen, StageResult


def returned(ctx: Context, stages: list[StageResult], final: Seen) -> None:
    """The last quantity must be what the student's code returns, in the lesson's shape and axis order.

    A tensor made on the way is not the result (``returned``); a result that
    holds the right values in another layout (``.T``, a ``(b, d_out, T)``
    tensor, an extra ``unsqueeze``) is a mistake of its own (``layout``).
    """
    last = [s for s in stages if s.quantity.run == "eval"][-1]
    node = ctx.trace.node(last.quantity.step)
    ref, axes = np.asarray(node.value, dtype=np.float64), node.axes
    if last.status != "match":
        return
    if align.find(ref, axes, [final]) is None:
        last.status, last.match = "differs", None
        last.nearest = align.nearest(ref, axes, [final])
        last.note = "returned"
    elif not align.same_layout(final.value, ref, ctx.spec.batch):
        last.status, last.match = "differs", None
        last.nearest = align.nearest(ref, axes, [final])
        last.note = "layout"


def other_draws(ctx: Context, stages: list[StageResult]) -> None:
    """Train-mode dropout is compared only where the student's code draws its mask as the lesson does."""
    from tracer.compare.check.variants import dropped_like

    for s in stages:
        if s.quantity.run != "train" or s.status != "differs" or diagnose(ctx, ["dropout"]) is not None:
            continue
        alpha, _ = ctx.ref("alpha")
        first = alpha[(0,) * (alpha.ndim - 2)]
        scale = 1 / (1 - ctx.spec.dropout)
        if any(t.value.ndim >= 2 and dropped_like(t.value[(0,) * (t.value.ndim - 2)], first, scale) for t in ctx.train):
            s.status = "not compared"
            s.note = "draws"
        elif s.nearest is None:  # no tensor of the weights' shape: the dropout ran inside a library call
            s.status = "not compared"
            s.note = "hidden"


def inside_opaque(ctx: Context, stages: list[StageResult]) -> None:
    """Quantities computed inside a call the capture records whole are not compared, when the result matches.

    ``nn.MultiheadAttention`` (or any opaque library call) holds the
    projections, scores and weights inside one call: no tensor of the
    student's run holds them, but when the returned result equals the
    lesson's (in its layout, computed with the student's weights) they are
    not wrong, only unseen.
    """
    if ctx.captured is None or not ctx.captured.meta.get("opaque"):
        return
    evals = [s for s in stages if s.quantity.run == "eval"]
    if not evals or evals[-1].status != "match":
        return
    for s in evals[:-1]:
        if s.status == "differs":
            s.status, s.note, s.nearest = "not compared", "inside", None


def mark_optional(stages: list[StageResult]) -> None:
    """An optional quantity nothing holds is skipped when a later one that proves it was not needed matches.

    Those are the later quantities of its group, or only the keys in its
    ``after`` when it names them; they are looked at from the last stage
    backwards, so a skip can rest on another skip.
    """
    for n in range(len(stages) - 1, -1, -1):
        s = stages[n]
        if s.status == "differs" and s.quantity.optional:
            later = stages[n + 1 :]
            if s.quantity.after:
                later = [t for t in later if t.quantity.key in s.quantity.after]
            else:
                later = [t for t in later if t.quantity.group == s.quantity.group]
            if any(t.status in ("match", "skipped") for t in later):
                s.status = "skipped"
