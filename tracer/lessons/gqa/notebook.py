"""Notebook code of lesson ``gqa``: grouped-query attention as the ``GroupedQueryAttention`` of LLMs-from-scratch.

Queries are split into H heads, keys and values into G groups, and each
group is repeated for its ``H / G`` query heads with ``repeat_interleave``.
The traced head-split tensors are head-first (``[h, b, i, c]``), so the
checks transpose torch's ``(b, heads, T, d)`` layout before comparing.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.notebook.code import Cell, check, inputs_cell, lines


def cells(trace: Trace) -> dict[str, list[Cell]]:
    """Stage -> code cells."""
    heads, groups = int(trace.meta.get("heads", 4)), int(trace.meta.get("groups", 2))
    seed = int(trace.meta.get("modules", {}).get("seed", 123))
    d_out = int(trace.tensor("W_query").shape[-1])
    inputs = inputs_cell(trace, trace.tensor("x")[0]) + lines(
        "batch = torch.stack((inputs, inputs))  # two samples",
        check(trace, "x", "batch"),
    )
    weights = lines(
        f"d_out, heads, groups = {d_out}, {heads}, {groups}",
        "head_dim, group_size = d_out // heads, heads // groups",
        f"torch.manual_seed({seed})",
        "W_query = torch.nn.Linear(d_in, d_out, bias=False).to(dtype)",
        "W_key = torch.nn.Linear(d_in, groups * head_dim, bias=False).to(dtype)",
        "W_value = torch.nn.Linear(d_in, groups * head_dim, bias=False).to(dtype)",
        "out_proj = torch.nn.Linear(d_out, d_out, bias=False).to(dtype)",
        check(trace, "W_query", "W_query.weight.T"),
        check(trace, "W_key", "W_key.weight.T"),
        check(trace, "W_value", "W_value.weight.T"),
    )
    projections = lines(
        "b, T, _ = batch.shape",
        "queries, keys, values = W_query(batch), W_key(batch), W_value(batch)",
        check(trace, "q", "queries"),
        check(trace, "k", "keys"),
        check(trace, "v", "values"),
    )
    split = lines(
        "q_heads = queries.view(b, T, heads, head_dim).transpose(1, 2)  # (b, heads, T, head_dim)",
        "k_groups = keys.view(b, T, groups, head_dim).transpose(1, 2)  # (b, groups, T, head_dim)",
        "v_groups = values.view(b, T, groups, head_dim).transpose(1, 2)",
        "# the traced heads are head-first, [h, b, i, c]: transpose(0, 1) before comparing",
        check(trace, "hq", "q_heads.transpose(0, 1)"),
        check(trace, "hk", "k_groups.transpose(0, 1)"),
        check(trace, "group", "torch.arange(heads) // group_size + 1"),
        "k_shared = k_groups.repeat_interleave(group_size, dim=1)  # group g serves heads (g-1)r+1 .. gr",
        "v_shared = v_groups.repeat_interleave(group_size, dim=1)",
        check(trace, "kh", "k_shared.transpose(0, 1)"),
        check(trace, "vh", "v_shared.transpose(0, 1)"),
    )
    attention = lines(
        "attn_scores = q_heads @ k_shared.transpose(2, 3)",
        check(trace, "omega", "attn_scores.transpose(0, 1)"),
        "mask = torch.triu(torch.ones(T, T), diagonal=1).bool()",
        "masked = attn_scores.masked_fill(mask, -torch.inf)",
        check(trace, "neg.omega", "masked.transpose(0, 1)"),
        "attn_weights = torch.softmax(masked / head_dim**0.5, dim=-1)",
        check(trace, "causal.alpha", "attn_weights.transpose(0, 1)"),
        "context = attn_weights @ v_shared",
        check(trace, "z", "context.transpose(0, 1)"),
    )
    output = lines(
        "merged = context.transpose(1, 2).reshape(b, T, d_out)",
        check(trace, "concat", "merged"),
        "out = out_proj(merged)",
        check(trace, "W_out", "out_proj.weight.T"),
        check(trace, "out", "out"),
    )
    multihead = lines(
        "# multi-head key weights: each group's columns repeated for its heads",
        "W_key_mha = W_key.weight.T.reshape(d_in, groups, head_dim).repeat_interleave(group_size, dim=1)",
        "W_key_mha = W_key_mha.reshape(d_in, d_out)",
        check(trace, "mha.W_key", "W_key_mha"),
        "k_mha = (batch @ W_key_mha).view(b, T, heads, head_dim).transpose(1, 2)",
        check(trace, "mha.hk", "k_mha.transpose(0, 1)"),
        'print("the same keys as the repeated groups:", torch.equal(k_mha, k_shared))',
    )
    cache = lines(
        check(trace, "cache.mha", "2 * heads * head_dim"),
        check(trace, "cache.gqa", "2 * groups * head_dim"),
        check(trace, "cache.ratio", "heads // groups"),  # G divides H: a whole number
    )
    return {
        "inputs": [inputs, weights],
        "projections": [projections],
        "heads": [split],
        "attention": [attention],
        "output": [output],
        "multihead": [multihead],
        "cache": [cache],
    }
