"""Lesson ``causal``'s backward pass: through dropout, the causal mask and the scale, back to weights and inputs.

The forward part of this lesson ends at the dropped-out weights; with a
backward pass its output is the context vectors those weights give,
``dropout.z[i,c] = Σ_j dropout.alpha[i,j] v[j,c]`` (the book's causal
attention in training mode), recorded in stage ``output``.  Then, from
``ddropout.z`` (by default the gradient of L = ½ Σ z², so it is z itself):

* ``ddropout.alpha``, ``dv``: through the weighted sum;
* ``ddropout.kept = ddropout.alpha × 1/(1−p)`` and ``dcausal.alpha =
  ddropout.kept × dropout.keep``: dropout passes back the same mask and
  the same scale, so a dropped weight's gradient is 0;
* ``dneg.scaled``: through the softmax, the row sum ``dneg.scaled.dot`` its
  own step; a masked weight is exactly 0, so its score's gradient is 0 too;
* ``dneg.omega = dneg.scaled / sqrt(d_k)``, then ``domega`` =
  ``dneg.omega`` with every masked entry set to exactly 0: a masked score
  was replaced by the constant −∞, which does not depend on it;
* ``dq``, ``dk``, ``dW_query``, ``dW_key``, ``dW_value`` and ``dx``.

Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

from tracer.record.blocks import backprojections
from tracer.record.blocks import backward as bw
from tracer.record.blocks.attention import context
from tracer.record.recorder import Recorder, Var

STAGES = ("output", "dcontext", "ddropout", "dnormalize", "dscores", "dprojections", "dinputs")


def record(rec: Recorder, x: Var, w: dict[str, Var], core: tuple[Var, ...], back: bw.Backward) -> dict[str, Any]:
    """Record the output and its gradients; ``core`` is q, k, v, sqrt_dk, mask.triu, causal.alpha, dropout.keep,
    dropout.scale, dropout.alpha.  Returns ``meta["backward"]``."""
    q, k, v, root, up, causal, keep, scale, dropped = core
    with rec.stage("output"):
        z = context(rec, "dropout.z", dropped, v, ())
    with rec.stage("dcontext"):
        dz = bw.upstream(rec, z, back, r"z^{(<i>)}_{<c>}")
        dalpha, dv = bw.through_weighted_sum(rec, dz, dropped, v, (), "ddropout.alpha", "dv")
    with rec.stage("ddropout"):
        dkept = bw.rescaled(
            rec,
            "ddropout.kept",
            dalpha,
            scale,
            "mul",
            r"\alpha^{\mathrm{kept}}_{<i,j>}",
            r"\bar\alpha^{\mathrm{drop}}_{<i,j>} / (1-p)",
        )
        dcausal = bw.rescaled(
            rec,
            "dcausal.alpha",
            dkept,
            keep,
            "mul",
            r"\alpha^{\mathrm{causal}}_{<i,j>}",
            r"\bar\alpha^{\mathrm{kept}}_{<i,j>} B_{<i,j>}",
        )
    domega = backprojections.masked_scores(rec, root, up, causal, dcausal)
    leaves = backprojections.scores_to_inputs(rec, x, w, (q, k), domega, dv)
    return bw.meta(z, dz, back, STAGES, leaves)
