"""The untraced part of the model: the layers before the traced head, and the rest up to the next token.

Everything here runs in float64, one layer's weights in memory at a time.
The residual stream that enters the traced layer is then rounded to float32:
that rounded stream is the recorded input of the traced part.  A BLAS
kernel's summation order changes a float64 result in its last bits, far
below float32's rounding step, so the recorded numbers, and every digit
the page prints, are the same on every CPU, kernel and thread count (the
chance that a float64 difference straddles a float32 rounding boundary is
about one in 2^29 per number).

Conventions (Llama): RMSNorm ``x / sqrt(mean(x²) + ε) · w``; rotary
position embedding with angle ``p · base^(−2c/d_h)`` for pair ``c`` of the
token at position ``p`` (from 0); ``√d_h``-scaled causal attention in which
query head ``h`` reads key/value group ``⌊h / (H/G)⌋``; SwiGLU feed-forward
``down(silu(gate x) · up x)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tracer.lessons.model.checkpoint import Checkpoint, Config


@dataclass(frozen=True)
class Run:
    """What the untraced forward pass hands the lesson."""

    x: torch.Tensor
    """The residual stream entering the traced layer, ``(tokens, width)``, float32 numbers held as float64."""
    weights: torch.Tensor
    """Every head's attention weights in the traced layer, ``(heads, tokens, tokens)``, float64."""
    next_id: int
    """The greedy next token (the most probable after the last token)."""
    next_p: float
    """Its probability."""


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """``x / sqrt(mean(x²) + ε) · w`` over the last axis."""
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def angles(cfg: Config, tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos`` and ``sin`` of ``p · base^(−2c/d_h)``: ``(tokens, d_h/2)``, float64."""
    half = cfg.head_dim // 2
    freq = cfg.rope_base ** (-torch.arange(half, dtype=torch.float64) * 2 / cfg.head_dim)
    a = torch.arange(tokens, dtype=torch.float64)[:, None] * freq[None, :]
    return torch.cos(a), torch.sin(a)


def pair_index(cfg: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """The two numbers of each rotated pair within a head: ``(2c, 2c+1)`` interleaved, ``(c, c+d_h/2)`` half."""
    half = cfg.head_dim // 2
    c = torch.arange(half)
    return (2 * c, 2 * c + 1) if cfg.pairs == "interleaved" else (c, c + half)


def rotate(cfg: Config, x: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding of ``x`` (``(heads, tokens, d_h)``), each pair by its angle."""
    cos, sin = angles(cfg, int(x.shape[1]))
    first, second = pair_index(cfg)
    a, b = x[..., first], x[..., second]
    out = x.clone()
    out[..., first] = a * cos - b * sin
    out[..., second] = a * sin + b * cos
    return out


def attention(cfg: Config, ck: Checkpoint, layer: int, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention block of ``layer`` on the residual stream ``x``: its output and every head's weights."""
    t, dh, r = int(x.shape[0]), cfg.head_dim, cfg.heads // cfg.kv_heads
    w = {n: torch.from_numpy(ck.weight(f"{layer}.{n}")) for n in ("attn_norm", "q", "k", "v", "o")}
    h = rms_norm(x, w["attn_norm"], cfg.eps)
    q = rotate(cfg, (h @ w["q"].T).reshape(t, cfg.heads, dh).transpose(0, 1))
    k = rotate(cfg, (h @ w["k"].T).reshape(t, cfg.kv_heads, dh).transpose(0, 1))
    v = (h @ w["v"].T).reshape(t, cfg.kv_heads, dh).transpose(0, 1)
    k, v = k.repeat_interleave(r, dim=0), v.repeat_interleave(r, dim=0)
    s = q @ k.transpose(1, 2) / dh**0.5
    s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    a = torch.softmax(s, dim=-1)
    z = (a @ v).transpose(0, 1).reshape(t, cfg.width)
    return z @ w["o"].T, a


def feed_forward(cfg: Config, ck: Checkpoint, layer: int, x: torch.Tensor) -> torch.Tensor:
    """The SwiGLU feed-forward block of ``layer`` on ``x`` (its own RMSNorm first)."""
    w = {n: torch.from_numpy(ck.weight(f"{layer}.{n}")) for n in ("ffn_norm", "gate", "up", "down")}
    h = rms_norm(x, w["ffn_norm"], cfg.eps)
    return (torch.nn.functional.silu(h @ w["gate"].T) * (h @ w["up"].T)) @ w["down"].T


def run(ck: Checkpoint, ids: list[int], layer: int) -> Run:
    """Embed ``ids``, run layers ``0 … layer−1``, round the stream to float32, then the rest to the next token.

    On one thread: the products are a few tokens wide, and a pool of
    threads waiting for work costs more than they save (most of all on a
    busy machine).  The numbers do not depend on it (module docstring).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(ck, ids, layer)
    finally:
        torch.set_num_threads(threads)


def _run(ck: Checkpoint, ids: list[int], layer: int) -> Run:
    cfg = ck.config
    x = torch.from_numpy(ck.weight("embed", ids))
    for i in range(layer):
        x = x + attention(cfg, ck, i, x)[0]
        x = x + feed_forward(cfg, ck, i, x)
    x = x.to(torch.float32).to(torch.float64)
    entering = x
    for i in range(layer, cfg.layers):
        out, a = attention(cfg, ck, i, x)
        if i == layer:
            weights = a
        x = x + out
        x = x + feed_forward(cfg, ck, i, x)
    last = rms_norm(x[-1], torch.from_numpy(ck.weight("norm")), cfg.eps)
    logits = torch.from_numpy(ck.weight("head")) @ last
    p = torch.softmax(logits, dim=0)
    best = int(torch.argmax(p))
    return Run(entering, weights, best, float(p[best]))
