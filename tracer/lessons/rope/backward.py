"""Lesson ``rope``'s backward pass: the rotation transposed.

From ``dz`` (by default the gradient of L = ½ Σ z², so dz = z) as in lesson
causal: ``dcausal.alpha``, ``dv``, the softmax (``dneg.scaled``, its row sum
its own step), the scale (``dneg.omega``), the mask (``domega``, exactly 0
above the diagonal); then the rotated queries' and keys' gradients
``drope.q[i,c] = Σ_j domega[i,j] rope.k[j,c]`` and ``drope.k``; and through
the rotation: a rotation's transpose is the rotation by −φ, so pair p of
``dq`` is ``x' = x cos φ + y sin φ``, ``y' = y cos φ − x sin φ`` on the
pair of ``drope.q`` (``dq.x``, ``dq.y`` … ``dq.rx``, ``dq.ry``, then ``dq``
in the lesson's layout), the same for ``dk``.  The values are never
rotated, so ``dv`` goes straight to ``dW_value``.  Then the three weights'
gradients and ``dx``.  Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

from tracer.lessons.rope.rotary import rotate
from tracer.record.blocks import backprojections
from tracer.record.blocks import backward as bw
from tracer.record.recorder import Recorder, Var

STAGES = ("dcontext", "dnormalize", "dscores", "drope", "dprojections", "dinputs")


def record(
    rec: Recorder, x: Var, w: dict[str, Var], parts: dict[str, Var], style: str, back: bw.Backward
) -> dict[str, Any]:
    """Record the gradients; ``parts`` names rq, rk, v, cos, sin, root, up, alpha and z of the forward."""
    z, alpha = parts["z"], parts["alpha"]
    with rec.stage("dcontext"):
        dz = bw.upstream(rec, z, back, r"z^{(<i>)}_{<c>}")
        dalpha, dv = bw.through_weighted_sum(rec, dz, alpha, parts["v"], (), "dcausal.alpha", "dv")
    domega = backprojections.masked_scores(rec, parts["root"], parts["up"], alpha, dalpha)
    with rec.stage("dscores"):
        drq, drk = bw.through_scores(
            rec, domega, parts["rq"], parts["rk"], (), "drope.q", "drope.k", r"\hat q", r"\hat k"
        )
    with rec.stage("drope"):
        grads = {
            letter: rotate(
                rec, f"d{letter}", g, parts["cos"], parts["sin"], style, rf"\bar{{\hat {letter}}}", rf"\bar {letter}"
            )
            for letter, g in (("q", drq), ("k", drk))
        }
    leaves = backprojections.to_inputs(rec, x, w, grads | {"v": dv})
    return bw.meta(z, dz, back, STAGES, leaves)
