"""Notebook cells every lesson with trainable weights shares: the weights the trace used, one query's first steps.

The book follows one query, x(2), through the projections, the scores and
the softmax (``query_2 = x_2 @ W_query`` …) before it writes the whole
computation as matrix products; lessons that build on it start the same way.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.notebook.code import Cell, check, inputs_cell, lines, project, weights_cell


def weights_of(trace: Trace) -> tuple[str, int, int]:
    """The kind of weights (``rand``, ``linear``, ``file``), their seed and ``d_out``, from the metadata."""
    info = trace.meta.get("weights", {})
    return str(info.get("kind", "rand")), int(info.get("seed", 0)), int(trace.tensor("W_query").shape[-1])


def one_query(trace: Trace) -> dict[str, list[Cell]]:
    """Stages ``inputs`` to ``normalize`` for the focus query, as the book writes them before the matrix form."""
    q = trace.query
    kind, seed, d_out = weights_of(trace)
    inputs = inputs_cell(trace, trace.tensor("x")) + lines(check(trace, "x", "inputs"))
    projections = lines(
        f"x_{q} = inputs[{q - 1}]  # the focus query's input, x({q})",
        f"query_{q} = {project(kind, f'x_{q}', 'W_query')}",
        check(trace, f"q[{q}]", f"query_{q}"),
        f"keys = {project(kind, 'inputs', 'W_key')}",
        f"values = {project(kind, 'inputs', 'W_value')}",
        check(trace, "k", "keys"),
        check(trace, "v", "values"),
    )
    scores = lines(
        f"attn_scores_{q} = query_{q} @ keys.T  # omega_{q}j = q({q}) . k(j)",
        check(trace, f"omega[{q}]", f"attn_scores_{q}"),
        "d_k = keys.shape[-1]",
        check(trace, "sqrt_dk", "d_k**0.5"),
        check(trace, f"scaled[{q}]", f"attn_scores_{q} / d_k**0.5"),
    )
    normalize = lines(
        f"attn_weights_{q} = torch.softmax(attn_scores_{q} / d_k**0.5, dim=-1)",
        check(trace, f"alpha[{q}]", f"attn_weights_{q}"),
        f'print("sum of the weights:", round(attn_weights_{q}.sum().item(), 4))',
    )
    return {
        "inputs": [inputs, weights_cell(trace, kind, seed, d_out)],
        "projections": [projections],
        "scores": [scores],
        "normalize": [normalize],
    }
