"""Notebook code of lesson ``window``: a sliding-window causal mask, built from its two parts, all queries at once.

The weights are the causal lesson's (``torch.manual_seed(789)``, bias-free
``nn.Linear`` layers), so the scores are the same numbers; the mask hides
the keys after the query (``j > i``, ``torch.triu(..., diagonal=1)``) and
the keys ``w`` or more places back (``j <= i - w``,
``torch.tril(..., diagonal=-w)``).  The last stage runs the causal lesson's
mask on the same scores and compares.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.notebook import autograd
from tracer.present.notebook.code import Cell, check, inputs_cell, lines, projections_cell, weights_cell
from tracer.present.notebook.projections import weights_of


def cells(trace: Trace) -> dict[str, list[Cell]]:
    """Stage -> code cells."""
    w = int(trace.meta.get("window", 3))
    kind, seed, d_out = weights_of(trace)
    inputs = inputs_cell(trace, trace.tensor("x")) + lines(check(trace, "x", "inputs"))
    projections = projections_cell(trace, kind)
    scores = lines(
        "attn_scores = queries @ keys.T  # omega_ij = q(i) . k(j)",
        check(trace, "omega", "attn_scores"),
        "d_k = keys.shape[-1]",
        check(trace, "sqrt_dk", "d_k**0.5"),
    )
    mask = lines(
        f"window = {w}  # each query sees itself and the window - 1 keys before it",
        "ones = torch.ones(context_length, context_length)",
        "future = torch.triu(ones, diagonal=1).bool()  # j > i: after the query (the causal part)",
        "far = torch.tril(ones, diagonal=-window).bool()  # j <= i - window: too far back (the window part)",
        check(trace, "mask.future", "future"),
        check(trace, "mask.far", "far"),
        "hide = future | far  # the two parts never overlap",
        check(trace, "mask.hide", "hide"),
        'print("keys each query sees:", (~hide).sum(dim=-1).tolist())',
    )
    normalize = lines(
        "masked = attn_scores.masked_fill(hide, -torch.inf)",
        check(trace, "neg.omega", "masked"),
        "attn_weights = torch.softmax(masked / d_k**0.5, dim=-1)",
        check(trace, "window.alpha", "attn_weights"),
        'print("row sums:", [round(s, 4) for s in attn_weights.sum(dim=-1).tolist()])',
    )
    context = lines(
        "context_vecs = attn_weights @ values",
        check(trace, "z", "context_vecs"),
    )
    causal = lines(
        "causal_weights = torch.softmax(attn_scores.masked_fill(future, -torch.inf) / d_k**0.5, dim=-1)",
        check(trace, "causal.alpha", "causal_weights"),
        check(trace, "diff.alpha", "attn_weights - causal_weights"),
        "causal_context = causal_weights @ values",
        check(trace, "causal.z", "causal_context"),
        "same = (attn_weights == causal_weights).all(dim=-1)",
        'print("rows equal to the causal lesson:", [i + 1 for i in range(context_length) if same[i]])',
    )
    backward = [
        *autograd.projected(),
        *autograd.masked("mask.hide", "window.alpha"),
        ("z", 't["window.alpha"] @ t["v"]'),
    ]
    return {
        "inputs": [inputs, weights_cell(trace, kind, seed, d_out)],
        "projections": [projections],
        "scores": [scores],
        "mask": [mask],
        "normalize": [normalize],
        "context": [context],
        "causal": [causal],
        **autograd.cells(trace, autograd.PROJECTED_LEAVES, backward),
    }
