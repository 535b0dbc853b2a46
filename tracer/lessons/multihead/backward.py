"""Lesson ``multihead``'s backward pass, on its split form: heads split and joined back, the bias summed.

The output is ``split.out[b,i,c]`` = ``split.proj`` + ``split.b_out``.  From
its upstream gradient ``dsplit.out`` (by default that of L = ½ Σ out², so
it is the output itself):

* the bias's gradient ``dsplit.b_out`` (over the tokens of each batch entry,
  ``dsplit.b_out.per``, then over the entries); the addition passes
  ``dsplit.out`` to ``split.proj`` unchanged;
* ``dsplit.W_out`` and ``dsplit.concat``; ``dsplit.z[h,b,i,c]``: the join of
  the heads undone (the gradient of a concatenation is its split);
* per head, as in lesson causal: ``dsplit.causal.alpha``, ``dsplit.hv``,
  the softmax (``dsplit.neg.scaled``, its row sum its own step), the scale
  (``dsplit.neg.omega``), the mask (``dsplit.omega``, exactly 0 above the
  diagonal), ``dsplit.hq``, ``dsplit.hk``;
* ``dsplit.q``, ``dsplit.k``, ``dsplit.v``: the heads joined back to full
  width (the gradient of a view as heads is the join);
* ``dsplit.W_query``, ``dsplit.W_key``, ``dsplit.W_value`` (summed over the
  batch) and ``dx``.

The wrapper form (``wrap.*``) computes the same output from other weights;
its gradients are not traced.  Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

from tracer.record.blocks import backprojections
from tracer.record.blocks import backward as bw
from tracer.record.blocks.heads import join, split
from tracer.record.recorder import Recorder, Var

STAGES = ("doutput", "dattention", "dnormalize", "dscores", "dheads", "dprojections", "dinputs")


def record(rec: Recorder, x: Var, parts: dict[str, Var], back: bw.Backward) -> dict[str, Any]:
    """Record the gradients of the split form; ``parts`` names its vars (split_form's ``keep``)."""
    out, hq, alpha = parts["out"], parts["hq"], parts["alpha"]
    heads, lead = int(hq.data.shape[0]), ("h", "b")
    with rec.stage("doutput"):
        dout = bw.upstream(rec, out, back, r"y^{(<i>)}_{<c>}")
        bw.bias(rec, "dsplit.b_out", dout, r"b_{<c>}")
        _gw, dconcat = bw.through_projection(rec, parts["concat"], parts["W_out"], dout, "", "W^{O}", "y", ("b",))
    with rec.stage("dattention"):
        dz = split(rec, "dsplit.z", dconcat, heads, r"\bar{z}")
        dalpha, dhv = bw.through_weighted_sum(rec, dz, alpha, parts["hv"], lead, "dsplit.causal.alpha", "dsplit.hv")
    domega = backprojections.masked_scores(rec, parts["root"], parts["up"], alpha, dalpha, "split.")
    with rec.stage("dscores"):
        dhq, dhk = bw.through_scores(rec, domega, hq, parts["hk"], lead, "dsplit.hq", "dsplit.hk")
    with rec.stage("dheads"):
        grads = {n: join(rec, f"dsplit.{n}", g, "h", n) for n, g in (("q", dhq), ("k", dhk), ("v", dhv))}
    w = {name: parts[name] for name in ("W_query", "W_key", "W_value")}
    leaves = backprojections.to_inputs(rec, x, w, grads, ("b",))
    return bw.meta(out, dout, back, STAGES, ["dsplit.b_out", "dsplit.W_out", *leaves])
