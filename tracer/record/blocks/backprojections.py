"""The backward pass of the projected lessons' shared part: from the scores' gradient to the weights and inputs.

Lessons ``trainable``, ``causal``, ``window`` and ``gqa`` all compute
``omega = q·k`` from ``q = x W_query``, ``k = x W_key``, ``v = x W_value``.
:func:`masked_scores` passes a masked softmax's gradient back to the raw
scores; :func:`scores_to_inputs` records ``dq``, ``dk`` and then, through
:func:`to_inputs`, the three weight gradients ``dW_query``, ``dW_key``,
``dW_value`` and the inputs' gradient ``dx``, the sum of the paths through
the query, the key and the value.
"""

from __future__ import annotations

from tracer.record.blocks import backward as bw
from tracer.record.recorder import Recorder, Var

PATHS = (("query", "W_query", "q", "W^{Q}"), ("key", "W_key", "k", "W^{K}"), ("value", "W_value", "v", "W^{V}"))
"""Each projection: the path's name, its weight, the letter of its result, the weight's LaTeX."""


def masked_scores(rec: Recorder, root: Var, hidden: Var, weights: Var, dweights: Var, pre: str = "") -> Var:
    """From the gradient of masked softmax weights (``masks.masked_softmax``: ``neg.omega``, ``neg.scaled``)
    back to the raw scores: the softmax (``dneg.scaled``), the scale (``dneg.omega``), the mask (``domega``:
    a hidden score's gradient is exactly 0).  ``pre`` is the forward's prefix (``split.``: ``dsplit.omega``)."""
    with rec.stage("dnormalize"):
        soft = r"\tilde\omega^{-\infty}_{<i,j>}"
        dscaled = bw.through_softmax(rec, weights, dweights, f"d{pre}neg.scaled", soft)
    with rec.stage("dscores"):
        why = r"\bar{\tilde\omega}^{-\infty}_{<i,j>} / \sqrt{d_k}"
        dneg = bw.rescaled(rec, f"d{pre}neg.omega", dscaled, root, "div", r"\omega^{-\infty}_{<i,j>}", why)
        return bw.masked_out(rec, f"d{pre}omega", dneg, hidden, r"\omega_{<i,j>}")


def scores_to_inputs(rec: Recorder, x: Var, w: dict[str, Var], qk: tuple[Var, Var], domega: Var, dv: Var) -> list[str]:
    """``dq``, ``dk`` (stage ``dscores``), then :func:`to_inputs`.  Returns the leaves' gradients' names."""
    q, k = qk
    with rec.stage("dscores"):
        dq, dk = bw.through_scores(rec, domega, q, k, (), "dq", "dk")
    return to_inputs(rec, x, w, {"q": dq, "k": dk, "v": dv})


def to_inputs(
    rec: Recorder, x: Var, w: dict[str, Var], grads: dict[str, Var], lead: tuple[str, ...] = (), via: str = ""
) -> list[str]:
    """The weights' and inputs' gradients (stages ``dprojections``, ``dinputs``) from ``grads`` of q, k, v.

    Returns the names of the gradients of the leaves (weights, then ``dx``).
    ``via`` names a module when x feeds more than one (lesson multihead's
    ``split``): its paths are ``dx.split.query`` …, summed into
    ``dx.split``, its share of ``dx``.
    """
    pre = f"{via}." if via else ""
    paths = []
    with rec.stage("dprojections"):
        for path, wname, letter, wsym in PATHS:
            _gw, gx = bw.through_projection(rec, x, w[wname], grads[letter], pre + path, wsym, letter, lead)
            paths.append(gx)
    with rec.stage("dinputs"):
        sym = rf"x^{{(<i>)\,\mathrm{{{via}}}}}_{{<k>}}" if via else r"x^{(<i>)}_{<k>}"
        dx = bw.sum_paths(rec, f"d{x.name}.{via}" if via else f"d{x.name}", paths, sym)
    return [f"d{w[wname].name}" for _, wname, _, _ in PATHS] + [dx.name]
