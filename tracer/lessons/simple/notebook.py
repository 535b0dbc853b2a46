"""Notebook code of lesson ``simple``: the tutorial's loops for one query, then the matrix form."""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.notebook import autograd
from tracer.present.notebook.code import Cell, check, inputs_cell, lines


def cells(trace: Trace) -> dict[str, list[Cell]]:
    """Stage -> code cells, written the way the tutorial writes them."""
    q = trace.query
    inputs = inputs_cell(trace, trace.tensor("x")) + lines(
        f"query = inputs[{q - 1}]  # x({q})", check(trace, "x", "inputs")
    )
    scores = (
        f"attn_scores_{q} = torch.empty(inputs.shape[0], dtype=dtype)\n"
        "for i, x_i in enumerate(inputs):\n"
        f"    attn_scores_{q}[i] = torch.dot(x_i, query)\n"
        f"{check(trace, f'omega[{q}]', f'attn_scores_{q}')}\n"
    )
    normalize = [
        f"attn_weights_{q}_tmp = attn_scores_{q} / attn_scores_{q}.sum()\n"
        f"{check(trace, f'div.alpha[{q}]', f'attn_weights_{q}_tmp')}\n",
        "def softmax_naive(x):\n"
        "    return torch.exp(x) / torch.exp(x).sum(dim=0)\n\n\n"
        f"attn_weights_{q}_naive = softmax_naive(attn_scores_{q})\n"
        f"{check(trace, f'naive.alpha[{q}]', f'attn_weights_{q}_naive')}\n",
        f"m = attn_scores_{q}.max()  # subtract the largest score first: nothing can overflow\n"
        f"attn_weights_{q}_stable = torch.exp(attn_scores_{q} - m) / torch.exp(attn_scores_{q} - m).sum()\n"
        f"{check(trace, f'alpha[{q}]', f'attn_weights_{q}_stable')}\n",
        f"attn_weights_{q} = torch.softmax(attn_scores_{q}, dim=0)\n"
        f"{check(trace, f'torch.alpha[{q}]', f'attn_weights_{q}')}\n"
        f'print("sum of the weights:", round(attn_weights_{q}.sum().item(), 4))\n',
    ]
    context = (
        f"context_vec_{q} = torch.zeros(query.shape, dtype=dtype)\n"
        "for i, x_i in enumerate(inputs):\n"
        f"    context_vec_{q} += attn_weights_{q}[i] * x_i\n"
        f"{check(trace, f'z[{q}]', f'context_vec_{q}')}\n"
    )
    matrix = [
        "attn_scores = torch.empty(inputs.shape[0], inputs.shape[0], dtype=dtype)\n"
        "for i, x_i in enumerate(inputs):\n"
        "    for j, x_j in enumerate(inputs):\n"
        "        attn_scores[i, j] = torch.dot(x_i, x_j)\n"
        f"{check(trace, 'omega', 'attn_scores')}\n",
        f"attn_scores = inputs @ inputs.T\n{check(trace, 'mat.omega', 'attn_scores')}\n",
        f"attn_weights = torch.softmax(attn_scores, dim=-1)\n{check(trace, 'mat.alpha', 'attn_weights')}\n",
        f"all_context_vecs = attn_weights @ inputs\n{check(trace, 'mat.z', 'all_context_vecs')}\n",
    ]
    out = {"inputs": [inputs], "scores": [scores], "normalize": normalize, "context": [context], "matrix": matrix}
    if "overflow" in trace.stages:
        out["overflow"] = [_overflow(trace)]
    forward = [
        ("omega", 't["x"] @ t["x"].T'),
        ("alpha", 'torch.softmax(t["omega"], dim=-1)'),
        ("z", 't["alpha"] @ t["x"]'),
    ]
    return out | autograd.cells(trace, ("x",), forward)


def _overflow(trace: Trace) -> Cell:
    """The scaled inputs: the naive softmax breaks (inf / inf), the stable one does not."""
    q, c = trace.query, int(trace["scaled.c"].value)
    return (
        f"c = {c}  # the smallest power of ten that pushes the largest score past ln(max) of the dtype\n"
        "scaled = inputs * c\n"
        f"scores_scaled = torch.empty(scaled.shape[0], dtype=dtype)\n"
        "for i, x_i in enumerate(scaled):\n"
        f"    scores_scaled[i] = torch.dot(x_i, scaled[{q - 1}])\n"
        f"{check(trace, f'scaled.omega[{q}]', 'scores_scaled')}\n"
        f"{check(trace, f'scaled.naive.alpha[{q}]', 'softmax_naive(scores_scaled)')}  # exp overflows: nan\n"
        f"{check(trace, f'scaled.alpha[{q}]', 'torch.softmax(scores_scaled, dim=0)')}\n"
    )
