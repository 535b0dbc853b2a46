"""Lesson ``multihead``'s backward pass: both forms, the wrapper of heads and the projections split into heads.

The lesson runs two modules on the same inputs ``x``, so its loss is the sum
of one term per module: L = L_split + L_wrap.  ``split.out[b,i,c]`` (=
``split.proj`` + ``split.b_out``) is the output the backward pass names; its
upstream gradient ``dsplit.out`` is that of L_split = ½ Σ out² (the output
itself) or the one given with ``--grad-output``.  The wrapper's output
``wrap.concat`` (or ``wrap.out`` when the wrapper has an output projection)
adds L_wrap = ½ Σ concat², whose upstream gradient ``dwrap.concat`` is the
concatenation itself (``meta["backward"]["also"]`` names it).  Each module's
weights reach only its own term, so their gradients are those of the module
alone; ``x`` feeds both, so ``dx`` = ``dx.wrap`` + ``dx.split``, each the
module's own gradient of x.

The split form (``dsplit.*``):

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
  batch) and x's paths ``dx.split.query`` …, summed into ``dx.split``.

The wrapper (``dwrap.*``): ``dwrap.z[h,b,i,c]``, the concatenation undone;
each head's attention backward as above (``dwrap.causal.alpha``, ``dwrap.v``,
``dwrap.neg.scaled``, ``dwrap.neg.omega``, ``dwrap.omega``, ``dwrap.q``,
``dwrap.k``); each head's own weights ``dwrap.W_query[h,k,c]`` = Σ_b Σ_i
x[b,i,k]·dwrap.q[h,b,i,c] (``.per`` over the tokens of each entry, then over
the entries); and x's paths through every head, ``dx.wrap.query.per[h,b,i,k]``
= Σ_c dwrap.q[h,b,i,c]·wrap.W_query[h,k,c], summed over the heads into
``dx.wrap.query`` …, then ``dx.wrap``.  Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

from tracer.record.blocks import backprojections
from tracer.record.blocks import backward as bw
from tracer.record.blocks.heads import join, split
from tracer.record.recorder import Recorder, Var

STAGES = ("doutput", "dattention", "dnormalize", "dscores", "dheads", "dprojections", "dinputs")
LEAD = ("h", "b")
"""The axes before a head's rows: the head, then the batch entry."""


def record(rec: Recorder, x: Var, wrap: dict[str, Var], parts: dict[str, Var], back: bw.Backward) -> dict[str, Any]:
    """Record both forms' gradients; ``wrap`` and ``parts`` name their vars (the forms' ``keep``)."""
    out = parts["out"]
    with rec.stage("doutput"):
        dout = bw.upstream(rec, out, back, r"y^{(<i>)}_{<c>}")
        dconcat = _output(rec, "dsplit.", parts, dout)
    dhv, (dhq, dhk) = _heads(rec, "split.", dconcat, parts["alpha"], parts, ("hq", "hk", "hv"))
    with rec.stage("dheads"):
        grads = {n: join(rec, f"dsplit.{n}", g, "h", n) for n, g in (("q", dhq), ("k", dhk), ("v", dhv))}
    w = {name: parts[name] for name in ("W_query", "W_key", "W_value")}
    *split_w, dx_split = backprojections.to_inputs(rec, x, w, grads, ("b",), via="split")
    wout, wup, wrap_w = _wrapper(rec, x, wrap)
    with rec.stage("dinputs"):
        dx = bw.sum_paths(rec, f"d{x.name}", [rec.var(wrap_w.pop()), rec.var(dx_split)], r"x^{(<i>)}_{<k>}")
    leaves = ["dsplit.b_out", "dsplit.W_out", *split_w, *wrap_w, dx.name]
    also = {"output": wout.name, "upstream": wup.name, "loss": bw.HALF_SQUARE}
    return bw.meta(out, dout, back, STAGES, leaves) | {"also": [also]}


def _output(rec: Recorder, pre: str, parts: dict[str, Var], dout: Var) -> Var:
    """Back through ``out = concat · W_out + b_out``: ``<pre>b_out``, ``<pre>W_out`` and ``<pre>concat``."""
    bw.bias(rec, f"{pre}b_out", dout, r"b_{<c>}")
    _gw, dconcat = bw.through_projection(rec, parts["concat"], parts["W_out"], dout, "", "W^{O}", "y", ("b",))
    return dconcat


def _heads(
    rec: Recorder, pre: str, dconcat: Var, alpha: Var, parts: dict[str, Var], qkv: tuple[str, str, str]
) -> tuple[Var, tuple[Var, Var]]:
    """Each head's attention backward from the gradient of the heads side by side: dv, then (dq, dk).

    ``qkv`` names the heads' queries, keys and values among ``parts``
    (``hq`` … in the split form, ``q`` … in the wrapper, whose heads are
    computed apart).
    """
    q, k, v = (parts[n] for n in qkv)
    g = f"d{pre}"
    with rec.stage("dattention"):
        dz = split(rec, f"{g}z", dconcat, int(q.data.shape[0]), r"\bar{z}")
        dalpha, dv = bw.through_weighted_sum(rec, dz, alpha, v, LEAD, f"{g}causal.alpha", f"{g}{qkv[2]}")
    domega = backprojections.masked_scores(rec, parts["root"], parts["up"], alpha, dalpha, pre)
    with rec.stage("dscores"):
        return dv, bw.through_scores(rec, domega, q, k, LEAD, f"{g}{qkv[0]}", f"{g}{qkv[1]}")


def _wrapper(rec: Recorder, x: Var, wrap: dict[str, Var]) -> tuple[Var, Var, list[str]]:
    """The wrapper's gradients of L_wrap = ½ Σ out²: its output, its upstream gradient and its leaves' gradients
    (each head's weights, then ``dx.wrap``)."""
    out = wrap["out"]
    with rec.stage("doutput"):
        dout = bw.upstream(rec, out, bw.Backward(), r"z^{(<i>)}_{<o>}")  # its own term of L: always ½ Σ out²
        dconcat = _output(rec, "dwrap.", wrap, dout) if "W_out" in wrap else dout
    dv, (dq, dk) = _heads(rec, "wrap.", dconcat, wrap["alpha"], wrap, ("q", "k", "v"))
    grads = {"q": dq, "k": dk, "v": dv}
    paths = []
    with rec.stage("dprojections"):
        for path, wname, letter, wsym in backprojections.PATHS:
            paths.append(_head_projection(rec, x, wrap[wname], grads[letter], path, wsym))
    with rec.stage("dinputs"):
        dx = bw.sum_paths(rec, f"d{x.name}.wrap", paths, r"x^{(<i>)\,\mathrm{wrap}}_{<k>}")
    named = ["dwrap.b_out", "dwrap.W_out"] if "W_out" in wrap else []
    return out, dout, [*named, *(f"d{wrap[w].name}" for _, w, _, _ in backprojections.PATHS), dx.name]


def _head_projection(rec: Recorder, x: Var, w: Var, dq: Var, path: str, wsym: str) -> Var:
    """For each head's ``q[h,b,i,c] = Σ_k x[b,i,k] W[h,k,c]`` (its own weights, the same inputs):

    ``dW[h,k,c] = Σ_b Σ_i x[b,i,k] dq[h,b,i,c]`` (over the tokens of each
    batch entry, ``dW.per[h,b,k,c]``, then over the entries), and x's path
    through every head, ``dx.wrap.<path>.per[h,b,i,k] = Σ_c dq[h,b,i,c]
    W[h,k,c]``, then summed over the heads into ``dx.wrap.<path>``.
    Returns the path.
    """
    sup = wsym.removeprefix("W^{").removesuffix("}")
    wbar = rf"\bar{{W}}^{{{sup}\,(<h>)}}_{{<k,c>}}"
    per_sym = rf"\bar{{W}}^{{{sup}\,(<h>,<b>)}}_{{<k,c>}}"
    per = bw.products(
        rec, f"d{w.name}.per", x("b", "i", "k"), dq(*LEAD, "i", "c"), (*LEAD, "k", "c", "i"), "i", per_sym
    )
    bw.summed(rec, f"d{w.name}", per, (*LEAD, "k", "c"), (*LEAD, "k", "c"), "b", wbar)
    name, xsym = f"d{x.name}.wrap.{path}", rf"\bar{{x}}^{{(<i>)\,\mathrm{{wrap.{path}}}}}_{{<k>}}"
    head_sym = rf"\bar{{x}}^{{(<i>)\,\mathrm{{wrap.{path}}}\,(<h>)}}_{{<k>}}"
    heads = bw.products(
        rec, f"{name}.per", dq(*LEAD, "i", "c"), w("h", "k", "c"), (*LEAD, "i", "k", "c"), "c", head_sym
    )
    return bw.summed(rec, name, heads, (*LEAD, "i", "k"), ("b", "i", "k", "h"), "h", xsym)
