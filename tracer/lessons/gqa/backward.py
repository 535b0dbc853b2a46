"""Lesson ``gqa``'s backward pass: a key/value group's gradient is the sum over the query heads that read it.

The output is ``out[b,i,c]`` (the heads joined, then ``W_out``).  From its
upstream gradient ``dout`` (by default that of L = ½ Σ out², so dout = out):

* ``dW_out`` (summed over the tokens of each batch entry, ``dW_out.per``,
  then over the entries) and ``dconcat[b,i,k] = Σ_c dout[b,i,c] W_out[k,c]``;
* ``dz[h,b,i,c]``: the join of the heads undone, a copy of ``dconcat``'s
  entry (the gradient of a concatenation is its split);
* per head, as in lesson causal: ``dcausal.alpha``, ``dvh``, the softmax
  (``dneg.scaled``, its row sum its own step), the scale (``dneg.omega``), the
  mask (``domega``, exactly 0 above the diagonal), ``dhq``, ``dkh``;
* the groups: ``dhk[g,b,j,c] = Σ_h member[g,h] · dkh[h,b,j,c]`` and the same
  for ``dhv``, where ``group.member[g,h]`` is 1 when head h reads group g:
  the heads that share a group add their gradients (the other heads' terms
  are exact zeros), the backward of ``repeat_interleave``;
* ``dq``, ``dk``, ``dv``: the heads (or groups) joined back to full width;
* ``dW_query``, ``dW_key``, ``dW_value`` (summed over the batch) and ``dx``.

Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

import torch

from tracer.record.blocks import backprojections
from tracer.record.blocks import backward as bw
from tracer.record.blocks.heads import join, split
from tracer.record.recorder import Recorder, Var

STAGES = ("doutput", "dattention", "dnormalize", "dscores", "dgroups", "dprojections", "dinputs")


def record(rec: Recorder, x: Var, w: dict[str, Var], parts: dict[str, Var], back: bw.Backward) -> dict[str, Any]:
    """Record the gradients; ``parts`` names the forward's vars (hq, kh, vh, alpha, root, up, concat, out)."""
    hq, kh, vh, alpha, out = parts["hq"], parts["kh"], parts["vh"], parts["alpha"], parts["out"]
    heads, groups = int(hq.data.shape[0]), int(parts["hk"].data.shape[0])
    lead = ("h", "b")
    with rec.stage("doutput"):
        dout = bw.upstream(rec, out, back, r"y^{(<i>)}_{<c>}")
        _gw, dconcat = bw.through_projection(rec, parts["concat"], w["W_out"], dout, "", "W^{O}", "y", ("b",))
    with rec.stage("dattention"):
        dz = split(rec, "dz", dconcat, heads, r"\bar{z}")
        dalpha, dvh = bw.through_weighted_sum(rec, dz, alpha, vh, lead, "dcausal.alpha", "dvh")
    domega = backprojections.masked_scores(rec, parts["root"], parts["up"], alpha, dalpha)
    with rec.stage("dscores"):
        dhq, dkh = bw.through_scores(rec, domega, hq, kh, lead, "dhq", "dkh")
    with rec.stage("dgroups"):
        r = heads // groups
        member = (torch.arange(heads)[None, :] // r == torch.arange(groups)[:, None]).to(torch.float64)
        text = f"1 if head <h> reads group <g> (⌈<h>/{r}⌉ = <g>) else 0"
        m = rec.input("group.member", member, "gh", symbol=r"M_{<g,h>}", text=text)
        shared = {}
        for letter, grad in (("k", dkh), ("v", dvh)):
            sym = bw.bar(rf"{letter}^{{(<j>)}}_{{<g>,<c>}}")
            shared[letter] = bw.products(
                rec, f"dh{letter}", m("g", "h"), grad("h", "b", "j", "c"), ("g", "b", "j", "c", "h"), "h", sym
            )
    with rec.stage("dheads"):
        grads = {"q": join(rec, "dq", dhq, "h", "q"), "k": join(rec, "dk", shared["k"], "g", "k")}
        grads["v"] = join(rec, "dv", shared["v"], "g", "v")
    leaves = backprojections.to_inputs(rec, x, w, grads, ("b",))
    stages = (*STAGES[:5], "dheads", *STAGES[5:])
    return bw.meta(out, dout, back, stages, ["dW_out", *leaves])
