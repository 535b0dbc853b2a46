"""Notebook code of lesson ``multihead``: the book's two multi-head modules on two stacked copies of the inputs.

(a) ``MultiHeadAttentionWrapper``: ``torch.manual_seed(123)`` once, then one
    ``CausalAttention`` per head (head 1's query, key, value layers, then head
    2's); the heads' outputs side by side.
(b) ``MultiHeadAttention``: ``torch.manual_seed(123)``, full-width query, key
    and value layers, then ``out_proj`` with a bias; its forward pass is
    written out line by line so that every intermediate can be checked.

The traced ids put the head first (``[h, b, i, …]``) while torch keeps the
batch first (``[b, h, i, …]``), so the checks transpose the first two axes.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.notebook import autograd
from tracer.present.notebook.code import CAUSAL_ATTENTION, Cell, check, definitions, inputs_cell, lines

WRAPPER = '''class MultiHeadAttentionWrapper(torch.nn.Module):
    """Several causal heads side by side."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = torch.nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)'''

SPLIT = '''class MultiHeadAttention(torch.nn.Module):
    """One set of projections, split into heads."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = torch.nn.Linear(d_out, d_out)
        self.dropout = torch.nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))'''


def focus(trace: Trace, node: str, expr: str, heads: int) -> list[str]:
    """Checks of the focus query's row of ``node`` in batch 1, one per head (torch's ``expr`` is ``[b, h, i, j]``)."""
    q = trace.query
    return [check(trace, f"{node}[{h + 1},1,{q}]", f"{expr}[0, {h}, {q - 1}]") for h in range(heads)]


def cells(trace: Trace) -> dict[str, list[Cell]]:
    """Stage -> code cells."""
    heads, _, d_out = trace.tensor("wrap.W_query").shape
    inputs = inputs_cell(trace, trace.tensor("x")[0]) + lines(
        "batch = torch.stack((inputs, inputs), dim=0)  # a batch of two copies",
        check(trace, "x", "batch"),
        "mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)",
        check(trace, "mask.triu", "mask"),
    )
    wrapper = lines(
        definitions(CAUSAL_ATTENTION, WRAPPER),
        f"num_heads, d_out = {heads}, {d_out}",
        "torch.manual_seed(123)",
        "mha = MultiHeadAttentionWrapper(d_in, d_out, context_length, 0.0, num_heads).to(dtype)",
        check(trace, "wrap.W_query", "torch.stack([head.W_query.weight.T for head in mha.heads])"),
        check(trace, "wrap.W_value", "torch.stack([head.W_value.weight.T for head in mha.heads])"),
        *(check(trace, f"wrap.z[{h + 1}]", f"mha.heads[{h}](batch)") for h in range(heads)),
        "context_vecs = mha(batch)",
        check(trace, "wrap.concat", "context_vecs"),
    )
    split = lines(
        definitions(SPLIT),
        f"d_out = {trace.tensor('split.W_query').shape[-1]}",
        "torch.manual_seed(123)",
        "mha = MultiHeadAttention(d_in, d_out, context_length, 0.0, num_heads).to(dtype)",
        check(trace, "split.W_query", "mha.W_query.weight.T"),
        check(trace, "split.W_out", "mha.out_proj.weight.T"),
        check(trace, "split.b_out", "mha.out_proj.bias"),
    )
    forward = lines(
        "# MultiHeadAttention.forward, line by line",
        "b, num_tokens, _ = batch.shape",
        "queries = mha.W_query(batch)",
        "keys = mha.W_key(batch)",
        "values = mha.W_value(batch)",
        check(trace, "split.q", "queries"),
        "queries = queries.view(b, num_tokens, mha.num_heads, mha.head_dim).transpose(1, 2)",
        "keys = keys.view(b, num_tokens, mha.num_heads, mha.head_dim).transpose(1, 2)",
        "values = values.view(b, num_tokens, mha.num_heads, mha.head_dim).transpose(1, 2)",
        "# queries, keys and values are now [b, h, i, c]: the head axis second, after the batch",
        "# torch keeps the batch first ([b, h, i, c]); the traced ids put the head first ([h, b, i, c])",
        check(trace, "split.hq", "queries.transpose(0, 1)"),
        "attn_scores = queries @ keys.transpose(2, 3)",
        *focus(trace, "split.omega", "attn_scores", heads),
        "attn_scores.masked_fill_(mha.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
        "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
        *focus(trace, "split.causal.alpha", "attn_weights", heads),
        "attn_weights = mha.dropout(attn_weights)",
        "context_vec = (attn_weights @ values).transpose(1, 2)",
        check(trace, "split.z", "context_vec.permute(2, 0, 1, 3)"),
        "context_vec = context_vec.contiguous().view(b, num_tokens, mha.d_out)",
        check(trace, "split.concat", "context_vec"),
        "context_vec = mha.out_proj(context_vec)",
        check(trace, "split.out", "context_vec"),
    )
    weights = [f"wrap.{w}" for w in ("W_query", "W_key", "W_value")]
    leaves = ("x", *weights, *(f"split.{w}" for w in ("W_query", "W_key", "W_value", "W_out", "b_out")))
    grads = autograd.cells(trace, leaves, [*wrapped(), *backward(trace)])
    return {"inputs": [inputs], "wrapper": [wrapper], "split": [split, forward], **grads}


def wrapped() -> list[tuple[str, str]]:
    """The wrapper's forward, which autograd runs again: every head at once (its weights stacked head first)."""
    heads = [
        (f"wrap.{n}", f't["x"] @ t["wrap.{w}"][:, None]')
        for n, w in (("q", "W_query"), ("k", "W_key"), ("v", "W_value"))
    ]
    return [
        *heads,
        ("wrap.omega", 't["wrap.q"] @ t["wrap.k"].transpose(-1, -2)'),
        *autograd.masked("mask.triu", "wrap.causal.alpha", pre="wrap.", key="wrap.q"),
        ("wrap.z", 't["wrap.causal.alpha"] @ t["wrap.v"]'),
        autograd.joined("wrap.concat", "wrap.z"),
    ]


def backward(trace: Trace) -> list[tuple[str, str]]:
    """The split form's forward, which autograd runs again: heads, the causal softmax, joined, W_out and the bias."""
    h = int(trace.tensor("split.hq").shape[0])
    full = [(f"split.{n}", f't["x"] @ t["split.{w}"]') for n, w in (("q", "W_query"), ("k", "W_key"), ("v", "W_value"))]
    return [
        *full,
        *(autograd.heads(f"split.h{n}", f"split.{n}", h) for n in "qkv"),
        ("split.omega", 't["split.hq"] @ t["split.hk"].transpose(-1, -2)'),
        *autograd.masked("mask.triu", "split.causal.alpha", pre="split.", key="split.hq"),
        ("split.z", 't["split.causal.alpha"] @ t["split.hv"]'),
        autograd.joined("split.concat", "split.z"),
        ("split.proj", 't["split.concat"] @ t["split.W_out"]'),
        ("split.out", 't["split.proj"] + t["split.b_out"]'),
    ]
