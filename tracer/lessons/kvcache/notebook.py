"""Notebook code of lesson ``kvcache``: generation with a key/value cache, then causal attention over the whole text.

The weights are the causal lesson's (``torch.manual_seed(789)``, bias-free
``nn.Linear`` layers).  Step 1 feeds the prompt at once; every later step
projects one new token, appends its key and value to the cache with
``torch.cat``, and attends with the causal mask's row at the token's own
position (``mask[pos:pos + 1, :pos + 1]``).  The last cells compute the
full causal attention, compare, and count the work both ways.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.notebook import autograd
from tracer.present.notebook.code import Cell, check, inputs_cell, lines, weights_cell
from tracer.present.notebook.projections import weights_of


def cells(trace: Trace) -> dict[str, list[Cell]]:
    """Stage -> code cells."""
    kind, seed, d_out = weights_of(trace)
    steps = [tuple(s) for s in trace.meta["steps"]]
    p, last = int(trace.meta["prompt"]), len(steps)
    tok = trace.tokens
    inputs = inputs_cell(trace, trace.tensor("x")) + lines(
        check(trace, "x", "inputs"),
        "mask = torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()  # 1: key after query",
        check(trace, "mask.triu", "mask.float()"),
    )
    prompt = lines(
        f"prompt = {p}  # {' '.join(tok[:p])!r}, fed at once",
        "x_new = inputs[:prompt]",
        "queries, keys, values = W_query(x_new), W_key(x_new), W_value(x_new)",
        check(trace, "step1.q", "queries"),
        check(trace, "step1.k", "keys"),
        check(trace, "step1.v", "values"),
        "cache_k, cache_v = keys, values  # the cache starts with the prompt's keys and values",
        check(trace, "step1.mask", "mask[:prompt, :prompt].float()"),
        "attn_scores = queries @ cache_k.T",
        check(trace, "step1.omega", "attn_scores"),
        "d_k = cache_k.shape[-1]",
        "attn_weights = torch.softmax(attn_scores.masked_fill(mask[:prompt, :prompt], -torch.inf) / d_k**0.5, dim=-1)",
        check(trace, "step1.causal.alpha", "attn_weights"),
        "context = attn_weights @ cache_v",
        check(trace, "step1.z", "context"),
        "generated = [context]  # the context rows, step by step",
    )
    step = lines(
        f"pos = prompt  # the new token's 0-based position: token {p + 1}, {tok[p]!r}",
        "x_new = inputs[pos : pos + 1]  # only the new token goes in",
        "q, k, v = W_query(x_new), W_key(x_new), W_value(x_new)",
        check(trace, "step2.q", "q"),
        check(trace, "step2.k", "k"),
        check(trace, "step2.v", "v"),
        "cache_k = torch.cat((cache_k, k))  # append first: the new token must see itself",
        "cache_v = torch.cat((cache_v, v))",
        check(trace, "step2.cache.k", "cache_k"),
        check(trace, "step2.cache.v", "cache_v"),
        "row_mask = mask[pos : pos + 1, : pos + 1]  # the mask's row at the token's own position, not row 0",
        check(trace, "step2.mask", "row_mask.float()"),
        "attn_scores = q @ cache_k.T  # one row: the new query against every cached key",
        check(trace, "step2.omega", "attn_scores"),
        "attn_weights = torch.softmax(attn_scores.masked_fill(row_mask, -torch.inf) / d_k**0.5, dim=-1)",
        check(trace, "step2.causal.alpha", "attn_weights"),
        "context = attn_weights @ cache_v",
        check(trace, "step2.z", "context"),
        "generated.append(context)",
    )
    later = lines(
        "for pos in range(prompt + 1, context_length):  # the other tokens, one call each",
        "    x_new = inputs[pos : pos + 1]",
        "    q, k, v = W_query(x_new), W_key(x_new), W_value(x_new)",
        "    cache_k, cache_v = torch.cat((cache_k, k)), torch.cat((cache_v, v))",
        "    scores = (q @ cache_k.T).masked_fill(mask[pos : pos + 1, : pos + 1], -torch.inf)",
        "    weights = torch.softmax(scores / d_k**0.5, dim=-1)",
        "    generated.append(weights @ cache_v)",
        check(trace, f"step{last}.cache.k", "cache_k"),
        check(trace, f"step{last}.cache.v", "cache_v"),
        check(trace, "gen.z", "torch.cat(generated)"),
    )
    full = lines(
        "all_q, all_k, all_v = W_query(inputs), W_key(inputs), W_value(inputs)",
        "full_scores = (all_q @ all_k.T).masked_fill(mask, -torch.inf)",
        "full_weights = torch.softmax(full_scores / d_k**0.5, dim=-1)",
        check(trace, "full.causal.alpha", "full_weights"),
        "full_context = full_weights @ all_v",
        check(trace, "full.z", "full_context"),
        check(trace, "check.full", "(torch.cat(generated) - full_context).abs().max()"),
    )
    cost = lines(
        f"steps = {steps!r}  # the first and last token of each call (1-based)",
        "cached = [3 * (b - a + 1) * d_in * d_out + 2 * (b - a + 1) * b * d_out for a, b in steps]",
        "recomputed = [3 * b * d_in * d_out + 2 * b * b * d_out for a, b in steps]",
        check(trace, "cost.step.cached", "torch.tensor(cached, dtype=dtype)"),
        check(trace, "cost.step.full", "torch.tensor(recomputed, dtype=dtype)"),
        check(trace, "cost.ratio", "sum(recomputed) / sum(cached)"),
        "layers = 1",
        "bytes_per_token = 2 * layers * d_out * torch.finfo(dtype).bits // 8",
        check(trace, "cache.bytes", "bytes_per_token"),
    )
    grads = autograd.cells(trace, autograd.PROJECTED_LEAVES, backward(steps))
    return {
        "inputs": [inputs, weights_cell(trace, kind, seed, d_out)],
        "prompt": [prompt],
        "step": [step],
        "later": [later],
        "full": [full],
        "cost": [cost],
        **grads,
    }


def backward(steps: list[tuple[int, ...]]) -> list[tuple[str, str]]:
    """The generation again for autograd, step by step: each step's tensors, the cache grown with ``torch.cat``."""
    out: list[tuple[str, str]] = []
    for s, (a, b) in enumerate(steps, start=1):
        pre, prev = f"step{s}.", f"step{s - 1}."
        out += [(f"{pre}x", f't["x"][{a - 1}:{b}]')]
        out += [
            (f"{pre}{n}", f't["{pre}x"] @ t["{w}"]') for n, w in (("q", "W_query"), ("k", "W_key"), ("v", "W_value"))
        ]
        for n in "kv":
            grown = f't["{pre}{n}"]' if s == 1 else f'torch.cat((t["{prev}cache.{n}"], t["{pre}{n}"]))'
            out.append((f"{pre}cache.{n}", grown))
        out += [(f"{pre}omega", f't["{pre}q"] @ t["{pre}cache.k"].T')]
        out += autograd.masked(f"{pre}mask", f"{pre}causal.alpha", pre=pre, key=f"{pre}q")
        out += [(f"{pre}z", f't["{pre}causal.alpha"] @ t["{pre}cache.v"]')]
    joined = ", ".join(f't["step{s}.z"]' for s in range(1, len(steps) + 1))
    return [*out, ("gen.z", f"torch.cat(({joined}))")]
