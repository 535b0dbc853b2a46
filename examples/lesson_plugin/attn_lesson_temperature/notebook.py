"""The lesson in plain torch, one code cell per stage, each checked against the values attn-trace recorded.

``attn-trace notebook --lesson temperature`` puts these cells after each
stage's prose; the report shows them as code blocks beside the maths.  The
helpers (``check`` prints torch's value beside the traced one and asserts
they agree) are attn-trace's, shared with the built-in lessons.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.notebook.code import Cell, check, inputs_cell, lines


def cells(trace: Trace) -> dict[str, list[Cell]]:
    """Stage -> code cells, for every query at once (the matrix form)."""
    tau = float(trace.meta.get("tau", 2.0))
    return {
        "inputs": [inputs_cell(trace, trace.tensor("x")) + lines(check(trace, "x", "inputs"))],
        "scores": [
            lines(
                "attn_scores = inputs @ inputs.T  # omega_ij = x(i) . x(j)",
                check(trace, "omega", "attn_scores"),
                f"tau = {tau!r}",
                check(trace, "cooled", "attn_scores / tau"),
            )
        ],
        "normalize": [
            lines(
                "attn_weights = torch.softmax(attn_scores / tau, dim=-1)",
                check(trace, "alpha", "attn_weights"),
            )
        ],
        "context": [lines("context_vecs = attn_weights @ inputs", check(trace, "z", "context_vecs"))],
    }
