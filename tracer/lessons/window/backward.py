"""Lesson ``window``'s backward pass: a key outside the window gets no gradient, exactly as a future key does.

From ``dz`` (by default the gradient of L = ½ Σ z², so dz = z) through the
weighted sum (``dwindow.alpha``, ``dv``), the softmax (``dneg.scaled``, its
row sum ``dneg.scaled.dot`` its own step), the scale (``dneg.omega``) and
the window's mask (``domega``: every entry ``mask.hide`` hides, future or too
far back, exactly 0), then ``dq``, ``dk``, the three weights and ``dx``.
Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

from tracer.record.blocks import backprojections
from tracer.record.blocks import backward as bw
from tracer.record.recorder import Recorder, Var

STAGES = ("dcontext", "dnormalize", "dscores", "dprojections", "dinputs")


def record(
    rec: Recorder,
    x: Var,
    w: dict[str, Var],
    qkv: tuple[Var, Var, Var],
    root: Var,
    hide: Var,
    alpha: Var,
    z: Var,
    back: bw.Backward,
) -> dict[str, Any]:
    """Record the gradients of the window's context vectors; returns ``meta["backward"]``."""
    with rec.stage("dcontext"):
        dz = bw.upstream(rec, z, back, r"z^{(<i>)}_{<c>}")
        dalpha, dv = bw.through_weighted_sum(rec, dz, alpha, qkv[2], (), "dwindow.alpha", "dv")
    domega = backprojections.masked_scores(rec, root, hide, alpha, dalpha)
    leaves = backprojections.scores_to_inputs(rec, x, w, qkv[:2], domega, dv)
    return bw.meta(z, dz, back, STAGES, leaves)
