"""Notebook code of lesson ``rope``: rotary position embeddings as today's code writes them, both conventions.

The main line is the half-split convention of Hugging Face's Llama
(``rotate_half``, ``cos`` and ``sin`` tables repeated over both halves); the
interleaved one is Meta's original Llama (``torch.polar`` and
``torch.view_as_complex``: each pair a complex number, turned by a
multiplication).  torch's own ``cos`` and ``sin`` may differ from the traced,
correctly rounded ones in the last bit, which the checks allow and the
4-decimal prints never show.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.notebook import autograd
from tracer.present.notebook.code import (
    Cell,
    check,
    definitions,
    inputs_cell,
    lines,
    projections_cell,
    weights_cell,
)
from tracer.present.notebook.projections import weights_of

ROTATE_HALF = '''def rotate_half(x):
    """(x1, x2) -> (-x2, x1): the second half of the components, negated, then the first."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)'''

APPLY_ROPE = '''def apply_rope(x, positions, base):
    """Rotate pair (x_p, x_{p+d/2}) of the token at position m by m * theta_p (the half-split convention)."""
    d = x.shape[-1]
    theta = 1.0 / base ** (torch.arange(0, d, 2, dtype=dtype) / d)
    angles = positions.to(dtype)[:, None] * theta[None, :]
    cos = torch.cat((angles.cos(), angles.cos()), dim=-1)
    sin = torch.cat((angles.sin(), angles.sin()), dim=-1)
    return x * cos + rotate_half(x) * sin'''

APPLY_ROPE_COMPLEX = '''def apply_rope_complex(x, positions, base):
    """Rotate pair (x_{2p-1}, x_{2p}), read as one complex number, by m * theta_p (the interleaved convention)."""
    d = x.shape[-1]
    theta = 1.0 / base ** (torch.arange(0, d, 2, dtype=dtype) / d)
    angles = positions.to(dtype)[:, None] * theta[None, :]
    turn = torch.polar(torch.ones_like(angles), angles)  # cos + i sin
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(pairs * turn).flatten(-2)'''


def cells(trace: Trace) -> dict[str, list[Cell]]:
    """Stage -> code cells."""
    kind, seed, d_out = weights_of(trace)
    info = trace.meta.get("rope", {})
    base, offset = float(info.get("base", 10000.0)), int(info.get("offset", 100))
    half_main = info.get("style", "half") == "half"
    main, alt = ("apply_rope", "apply_rope_complex") if half_main else ("apply_rope_complex", "apply_rope")
    defs, alt_defs = ((ROTATE_HALF, APPLY_ROPE), (APPLY_ROPE_COMPLEX,))[:: 1 if half_main else -1]
    inputs = inputs_cell(trace, trace.tensor("x")) + lines(check(trace, "x", "inputs"))
    projections = projections_cell(trace, kind)
    rope = definitions(*defs) + lines(
        f"base = {base!r}",
        "positions = torch.arange(context_length)  # token i sits at position m = i - 1",
        "theta = 1.0 / base ** (torch.arange(0, d_out, 2, dtype=dtype) / d_out)",
        check(trace, "rope.theta", "theta"),
        "angles = positions.to(dtype)[:, None] * theta[None, :]  # phi[m, p] = m * theta_p",
        check(trace, "rope.angle", "angles"),
        check(trace, "rope.cos", "angles.cos()"),
        check(trace, "rope.sin", "angles.sin()"),
        f"queries_rot = {main}(queries, positions, base)",
        f"keys_rot = {main}(keys, positions, base)  # the values are not rotated",
        check(trace, "rope.q", "queries_rot"),
        check(trace, "rope.k", "keys_rot"),
    )
    scores = lines(
        "attn_scores = queries_rot @ keys_rot.T  # omega_ij = rotated q(i) . rotated k(j)",
        check(trace, "omega", "attn_scores"),
        "d_k = keys.shape[-1]",
        check(trace, "sqrt_dk", "d_k**0.5"),
    )
    normalize = lines(
        "future = torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()",
        "masked = attn_scores.masked_fill(future, -torch.inf)",
        check(trace, "neg.omega", "masked"),
        "attn_weights = torch.softmax(masked / d_k**0.5, dim=-1)",
        check(trace, "causal.alpha", "attn_weights"),
    )
    context = lines("context_vecs = attn_weights @ values", check(trace, "z", "context_vecs"))
    shift = lines(
        f"offset = {offset}",
        "moved = positions + offset  # every token moved by the same number of places",
        f"shifted_scores = {main}(queries, moved, base) @ {main}(keys, moved, base).T",
        check(trace, "shift.omega", "shifted_scores"),
    )
    other = definitions(*alt_defs) + lines(
        f"queries_other = {alt}(queries, positions, base)",
        f"keys_other = {alt}(keys, positions, base)",
        check(trace, "other.q", "queries_other"),
        check(trace, "other.omega", "queries_other @ keys_other.T"),
    )
    to_il = "torch.stack((torch.arange(half), torch.arange(half) + half), dim=1).flatten()"
    to_half = "torch.cat((torch.arange(0, d_out, 2), torch.arange(1, d_out, 2)))"
    wq, wk = ("W_query", "W_key") if kind != "linear" else ("W_query.weight.T", "W_key.weight.T")
    perm = lines(
        "half = d_out // 2",
        f"perm = {to_il if half_main else to_half}  # 1, 3, 2, 4 when d_out = 4",
        check(trace, "perm.W_query", f"{wq}[:, perm]"),
        f"queries_p = {alt}(inputs @ {wq}[:, perm], positions, base)",
        f"keys_p = {alt}(inputs @ {wk}[:, perm], positions, base)",
        check(trace, "perm.rq", "queries_p"),
        "back = torch.argsort(perm)",
        check(trace, "perm.back.q", "queries_p[:, back]"),
        check(trace, "perm.omega", "queries_p @ keys_p.T"),
    )
    return {
        "inputs": [inputs, weights_cell(trace, kind, seed, d_out)],
        "projections": [projections],
        "rope": [rope],
        "scores": [scores],
        "normalize": [normalize],
        "context": [context],
        "shift": [shift],
        "other": [other],
        "perm": [perm],
        **autograd.cells(trace, autograd.PROJECTED_LEAVES, backward(main)),
    }


def backward(rotate: str) -> list[tuple[str, str]]:
    """The forward autograd runs again: queries and keys turned by ``rotate`` (the notebook's main convention)."""
    return [
        *autograd.projected(),
        ("rope.q", f'{rotate}(t["q"], positions, base)'),
        ("rope.k", f'{rotate}(t["k"], positions, base)'),
        ("omega", 't["rope.q"] @ t["rope.k"].T'),
        *autograd.masked("mask.triu", "causal.alpha"),
        ("z", 't["causal.alpha"] @ t["v"]'),
    ]
