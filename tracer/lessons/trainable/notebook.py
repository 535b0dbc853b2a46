"""Notebook code of lesson ``trainable``: the book's scaled dot-product attention, one query, then every query.

The book first follows one query, x(2), through the projections, the scores
and the softmax (``query_2 = x_2 @ W_query`` …), then writes the whole
computation as matrix products.  The notebook does the same for the trace's
focus query, building the weights exactly as the trace's metadata says
(``torch.manual_seed(123)`` and ``torch.rand``, or ``torch.manual_seed(789)``
and bias-free ``nn.Linear`` layers).
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.notebook import autograd
from tracer.present.notebook.code import Cell, check, lines, project
from tracer.present.notebook.projections import one_query, weights_of


def cells(trace: Trace) -> dict[str, list[Cell]]:
    """Stage -> code cells: the focus query step by step, its context vector, then the matrix form."""
    q = trace.query
    kind = weights_of(trace)[0]
    context = lines(
        f"context_vec_{q} = attn_weights_{q} @ values  # z({q}) = sum_j alpha_{q}j v(j)",
        check(trace, f"z[{q}]", f"context_vec_{q}"),
    )
    matrix = lines(
        f"queries = {project(kind, 'inputs', 'W_query')}",
        check(trace, "mat.q", "queries"),
        "attn_scores = queries @ keys.T",
        check(trace, "mat.omega", "attn_scores"),
        "attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)",
        check(trace, "mat.alpha", "attn_weights"),
        "context_vecs = attn_weights @ values",
        check(trace, "mat.z", "context_vecs"),
    )
    forward = [
        *autograd.projected(),
        ("scaled", 't["omega"] / t["k"].shape[-1] ** 0.5'),
        ("alpha", 'torch.softmax(t["scaled"], dim=-1)'),
        ("z", 't["alpha"] @ t["v"]'),
    ]
    grads = autograd.cells(trace, autograd.PROJECTED_LEAVES, forward)
    return {**one_query(trace), "context": [context], "matrix": [matrix], **grads}
