"""Notebook code of lesson ``flash``: FlashAttention's online softmax as a loop over blocks of keys, all rows at once.

The weights are the causal lesson's (``torch.manual_seed(789)``, bias-free
``nn.Linear`` layers).  The keys and values are cut into blocks of ``block``
(``torch.cat`` with zero rows, then ``reshape``), each query keeps a running
max ``m``, a running sum ``l`` and an accumulator ``o``, rescaled by
``c = exp(m_old - m_new)`` whenever a block raises the max; the context
vectors are ``o / l`` at the end.  The ordinary causal softmax follows for
comparison, then the same loop from the last block back to the first.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.notebook import autograd
from tracer.present.notebook.code import Cell, check, inputs_cell, lines, projections_cell, weights_cell
from tracer.present.notebook.projections import weights_of

STATE = (
    "m = torch.full((context_length,), -torch.inf, dtype=dtype)  # running max, -inf before any key",
    "l = torch.zeros(context_length, dtype=dtype)  # running sum of exponentials",
    "o = torch.zeros(context_length, values.shape[1], dtype=dtype)  # accumulator of exponential-weighted values",
    "ms, cs, ls = [None] * n_blocks, [None] * n_blocks, [None] * n_blocks",
)
"""The loop's state before the first block, and where each block's values are kept to look at."""


def _loop(order: str, safe: bool) -> tuple[str, ...]:
    """One pass over the blocks in ``order``; with ``safe``, a block where no key is seen yet leaves all at 0."""
    top = "safe" if safe else "m_new"
    guard = (
        ("    safe = torch.where(m_new == -torch.inf, 0.0, m_new)  # no key seen yet: shift by 0, not by -inf",)
        if safe
        else ()
    )
    return (
        f"for u in {order}:",
        "    m_new = torch.maximum(m, s[:, u].max(dim=-1).values)  # the running max after block u",
        *guard,
        f"    p = torch.exp(s[:, u] - {top}[:, None])  # this block's exponentials",
        f"    c = torch.exp(m - {top})  # rescale factor of what came before",
        "    l = l * c + p.sum(dim=-1)",
        "    o = o * c[:, None] + p @ value_blocks[u]",
        "    m = m_new",
        "    ms[u], cs[u], ls[u] = m, c, l",
    )


def _pass(trace: Trace, pre: str, order: str, out: str, note: str = "") -> Cell:
    """The loop over the blocks in ``order`` from a fresh state, its result ``out``, and its checks of ``<pre>*``."""
    return lines(
        *STATE,
        *_loop(order, safe=pre == "rev."),
        f"{out} = o / l[:, None]{note}",
        *(check(trace, f"{pre}{n}", f"torch.stack({n}s, dim=1)") for n in ("m", "c", "l")),
        check(trace, f"{pre}z", out),
    )


def cells(trace: Trace) -> dict[str, list[Cell]]:
    """Stage -> code cells."""
    b = int(trace.meta.get("block", 2))
    kind, seed, d_out = weights_of(trace)
    inputs = inputs_cell(trace, trace.tensor("x")) + lines(check(trace, "x", "inputs"))
    projections = projections_cell(trace, kind)
    blocks = lines(
        f"block = {b}  # keys per block",
        "n_blocks = -(-context_length // block)  # the last block may be shorter: ceil(T / B)",
        "pad = torch.zeros(n_blocks * block - context_length, keys.shape[1], dtype=dtype)  # keys past the end",
        "key_blocks = torch.cat((keys, pad)).reshape(n_blocks, block, -1)",
        "value_blocks = torch.cat((values, pad)).reshape(n_blocks, block, -1)",
        check(trace, "flash.k", "key_blocks"),
        "d_k = keys.shape[-1]",
        check(trace, "sqrt_dk", "d_k**0.5"),
        "key_no = torch.arange(n_blocks * block).reshape(n_blocks, block)  # 0-based key of each place",
        "hide = key_no[None] > torch.arange(context_length)[:, None, None]  # after the query, or past the end",
        check(trace, "flash.hide[5]", "hide[4].to(dtype)"),  # query 5: blocks 1 to 3
        'block_scores = torch.einsum("ic,ujc->iuj", queries, key_blocks)  # omega of query i, block u, place j',
        check(trace, "flash.omega[5]", "block_scores[4]"),
        "s = block_scores.masked_fill(hide, -torch.inf) / d_k**0.5",
        check(trace, "flash.s[5]", "s[4]"),
    )
    online = _pass(trace, "flash.", "range(n_blocks)", "context_vecs", "  # the one division, after the last block")
    bound = trace.node("check.flash").attrs.get("bound", 0.0)
    ordinary = lines(
        "causal = torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()",
        "attn_scores = queries @ keys.T",
        "attn_weights = torch.softmax(attn_scores.masked_fill(causal, -torch.inf) / d_k**0.5, dim=-1)",
        check(trace, "causal.alpha", "attn_weights"),
        "ordinary = attn_weights @ values",
        check(trace, "causal.z", "ordinary"),
        f'print("within the bound:", (context_vecs - ordinary).abs().max().item() <= {bound!r})',
    )
    reverse = _pass(trace, "rev.", "reversed(range(n_blocks))", "backwards")
    reverse += f'print("within the bound:", (backwards - ordinary).abs().max().item() <= {bound!r})\n'
    return {
        "inputs": [inputs, weights_cell(trace, kind, seed, d_out)],
        "projections": [projections],
        "blocks": [blocks],
        "online": [online],
        "ordinary": [ordinary],
        "reverse": [reverse],
        **autograd.cells(trace, autograd.PROJECTED_LEAVES, BACKWARD),
    }


BACKWARD = [
    *autograd.projected(),
    *autograd.masked("mask.triu", "causal.alpha"),
    ("flash.z", 't["causal.alpha"] @ t["v"]'),
]
"""What autograd differentiates: the ordinary causal attention, whose output is the flash loop's mathematically.

Its gradients of the queries, keys, values, weights and inputs are shown beside the flash backward's own:
torch's autograd has no blocks, so the checks also show the two computations agree."""
