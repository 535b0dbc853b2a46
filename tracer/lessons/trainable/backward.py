"""Lesson ``trainable``'s backward pass: from the context vectors' gradient to every weight and input.

``dz`` (by default the gradient of L = ½ Σ z², so dz = z) flows back through
the weighted sum (``dalpha``, ``dv``), the softmax (``dscaled``, with the
row sum ``dscaled.dot`` as its own step), the scale (``domega = dscaled /
sqrt(d_k)``: the forward divided, so the backward divides by the same
constant), the scores (``dq``, ``dk``), the projections (``dW_query``,
``dW_key``, ``dW_value``) and into the inputs (``dx``, three paths summed).
Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

from tracer.record.blocks import backprojections
from tracer.record.blocks import backward as bw
from tracer.record.recorder import Recorder, Var

STAGES = ("dcontext", "dnormalize", "dscores", "dprojections", "dinputs")


def record(
    rec: Recorder, x: Var, w: dict[str, Var], core: tuple[Var, ...], z: Var, back: bw.Backward
) -> dict[str, Any]:
    """Record the gradients; ``core`` is what ``attention_core`` returned.  Returns ``meta["backward"]``."""
    q, k, v, _omega, root, _scaled, alpha = core
    with rec.stage("dcontext"):
        dz = bw.upstream(rec, z, back, r"z^{(<i>)}_{<c>}")
        dalpha, dv = bw.through_weighted_sum(rec, dz, alpha, v, (), "dalpha", "dv")
    with rec.stage("dnormalize"):
        dscaled = bw.through_softmax(rec, alpha, dalpha, "dscaled", r"\tilde\omega_{<i,j>}")
    with rec.stage("dscores"):
        domega = bw.rescaled(
            rec, "domega", dscaled, root, "div", r"\omega_{<i,j>}", r"\bar{\tilde\omega}_{<i,j>} / \sqrt{d_k}"
        )
    leaves = backprojections.scores_to_inputs(rec, x, w, (q, k), domega, dv)
    return bw.meta(z, dz, back, STAGES, leaves)
