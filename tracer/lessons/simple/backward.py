"""Lesson ``simple``'s backward pass: x is the query, the key and the value at once.

The output is the context vectors z = softmax(X Xᵀ) X.  From the upstream
gradient dz (by default that of L = ½ Σ z², so dz = z) the gradient flows
back to x along three paths, each recorded as its own node:

* as the value: ``dx.value[j,k] = Σ_i alpha[i,j] dz[i,k]``;
* as the query of the scores: ``dx.query[i,k] = Σ_j domega[i,j] x[j,k]``;
* as the key of the scores: ``dx.key[j,k] = Σ_i domega[i,j] x[i,k]``;

and ``dx`` is their sum.  There is no scale: the tutorial's scores are the
plain dot products.  Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

from tracer.record.blocks import backward as bw
from tracer.record.recorder import Recorder, Var

STAGES = ("dcontext", "dnormalize", "dscores", "dinputs")


def record(rec: Recorder, x: Var, alpha: Var, z: Var, back: bw.Backward) -> dict[str, Any]:
    """Record the gradients of z's loss back to x; returns ``meta["backward"]``."""
    with rec.stage("dcontext"):
        dz = bw.upstream(rec, z, back, r"z^{(<i>)}_{<k>}")
        dalpha, dvalue = bw.through_weighted_sum(rec, dz, alpha, x, (), "dalpha", "dx.value", "x")
    with rec.stage("dnormalize"):
        domega = bw.through_softmax(rec, alpha, dalpha, "domega", r"\omega_{<i,j>}")
    with rec.stage("dscores"):
        dquery, dkey = bw.through_scores(rec, domega, x, x, (), "dx.query", "dx.key", "x", "x")
    with rec.stage("dinputs"):
        dx = bw.sum_paths(rec, "dx", [dquery, dkey, dvalue], r"x^{(<i>)}_{<c>}")
    return bw.meta(z, dz, back, STAGES, [dx.name])
