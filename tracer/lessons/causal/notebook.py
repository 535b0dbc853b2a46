"""Notebook code of lesson ``causal``: the book's causal masks, dropout, and the compact module on a batch.

The first stages are the ``trainable`` walk for the focus query on the
``nn.Linear`` weights (seed 789).  Then, as the book does, every query at
once: mask the weights with ``torch.tril`` and renormalize, or fill the
scores above the diagonal with ``-inf`` before the softmax; dropout with
``torch.manual_seed(123)``; and ``CausalAttention`` on two stacked copies of
the inputs.

Dropout draws its mask from torch's random generator, which need not give
the same numbers on every platform or torch version.  The notebook draws the
mask again where it runs and checks what dropout *does* with it (keep a
weight and double it, or zero it); it compares with the traced mask, which
was drawn where the notebook was built, only when the two masks agree, and
otherwise compares the traced result with the traced mask applied here.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.notebook import autograd
from tracer.present.notebook.code import CAUSAL_ATTENTION, Cell, check, definitions, lines
from tracer.present.notebook.projections import one_query


def masks(trace: Trace) -> Cell:
    """Both masks of the book: the lower triangle to keep, the strict upper triangle to fill."""
    return lines(
        "mask_simple = torch.tril(torch.ones(context_length, context_length))",
        check(trace, "mask.tril", "mask_simple"),
        "mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)",
        check(trace, "mask.triu", "mask"),
    )


def dropout(trace: Trace) -> Cell:
    """Dropout of the causal weights, checked here against its own mask and against the traced one if it agrees."""
    p = float(trace.meta.get("dropout", {}).get("p", 0.5))
    seed = int(trace.meta.get("dropout", {}).get("seed", 123))
    return lines(
        f"torch.manual_seed({seed})",
        f"dropout = torch.nn.Dropout({p})  # a new module is in training mode: it drops",
        "keep = dropout(torch.ones_like(attn_weights)) != 0  # the mask torch draws on this machine",
        f"torch.manual_seed({seed})",
        "dropped = dropout(attn_weights)  # the same seed, so the same mask",
        f"assert torch.equal(dropped, attn_weights * keep / (1 - {p})), 'dropout keeps and rescales, or zeroes'",
        'if not torch.equal(keep.to(dtype), torch.tensor(TRACED["dropout.keep"], dtype=dtype)):',
        "    # the traced mask was drawn by torch on the machine that built this notebook",
        '    print("torch drew another dropout mask here; applying the traced mask instead")',
        '    keep = torch.tensor(TRACED["dropout.keep"], dtype=dtype) != 0',
        f"    dropped = attn_weights * keep / (1 - {p})",
        check(trace, "dropout.keep", "keep.to(dtype)"),  # 1 kept, 0 dropped
        check(trace, "dropout.alpha", "dropped"),
    )


def cells(trace: Trace) -> dict[str, list[Cell]]:
    """Stage -> code cells."""
    q = trace.query
    everyone = lines(
        "queries = W_query(inputs)",
        "attn_scores = queries @ keys.T",
        "attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)",
        check(trace, "alpha", "attn_weights"),
    )
    renormalized = lines(
        "masked_simple = attn_weights * mask_simple",
        check(trace, "masked.w", "masked_simple"),
        "row_sums = masked_simple.sum(dim=-1, keepdim=True)",
        "masked_simple_norm = masked_simple / row_sums",
        check(trace, f"masked.alpha[{q}]", f"masked_simple_norm[{q - 1}]"),
    )
    infinity = lines(
        "masked = attn_scores.masked_fill(mask.bool(), -torch.inf)",
        check(trace, "neg.omega", "masked"),
        "attn_weights = torch.softmax(masked / d_k**0.5, dim=-1)",
        check(trace, "causal.alpha", "attn_weights"),
        'print("the two ways agree:", torch.allclose(attn_weights, masked_simple_norm))',
    )
    module = lines(
        definitions(CAUSAL_ATTENTION),
        "batch = torch.stack((inputs, inputs), dim=0)",
        "torch.manual_seed(123)",
        "ca = CausalAttention(d_in, d_out, context_length, 0.0).to(dtype)",
        check(trace, "batch.W_query", "ca.W_query.weight.T"),
        "context_vecs = ca(batch)",
        check(trace, "batch.z", "context_vecs"),
    )
    return {
        **one_query(trace),
        "mask": [everyone, masks(trace), renormalized, infinity],
        "dropout": [dropout(trace)],
        "batch": [module],
        **autograd.cells(trace, autograd.PROJECTED_LEAVES, backward(trace)),
    }


def backward(trace: Trace) -> list[tuple[str, str]]:
    """The forward autograd runs again: masked softmax, dropout with the traced mask, and the output it feeds."""
    p = float(trace.meta.get("dropout", {}).get("p", 0.5))
    keep = autograd.constant("dropout.keep")
    return [
        *autograd.projected(),
        *autograd.masked("mask.triu", "causal.alpha"),
        ("dropout.alpha", f't["causal.alpha"] * {keep} / (1 - {p})'),
        ("dropout.z", 't["dropout.alpha"] @ t["v"]'),
    ]
