"""Attention as people write it, in our own words: the styles real projects use, each with a runner.

Every runner takes no arguments, seeds, builds its module and inputs, runs
them and returns the output tensor (what ``--torch FILE.py:FN`` wants).
``HEADS`` says how many attentions of how many heads each computes, and
``TOKENS`` how many tokens each attends over, for the tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

T, D, H = 5, 8, 2


def _x(batch: int = 1, t: int = T, d: int = D) -> torch.Tensor:
    return torch.rand(batch, t, d)


@dataclass
class Config:
    """A model's sizes in one object, the way GPT-style projects pass them."""

    n_embd: int = D
    n_head: int = H
    block_size: int = 16
    dropout: float = 0.0
    bias: bool = True


class FusedCausal(nn.Module):
    """One projection makes q, k and v (``c_attn``); split along features, heads by view/transpose."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        self.n_head, self.n_embd = cfg.n_head, cfg.n_embd
        causal = torch.tril(torch.ones(cfg.block_size, cfg.block_size))
        self.register_buffer("bias", causal.view(1, 1, cfg.block_size, cfg.block_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T_, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T_, :T_] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T_, C)
        return self.resid_dropout(self.c_proj(y))


class FusedFlash(FusedCausal):
    """The same module on the fused kernel: SDPA with ``is_causal``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T_, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T_, C)
        return self.c_proj(y)


class PackedHeads(nn.Module):
    """``qkv`` viewed as (b, t, 3, heads, d) and permuted so the q/k/v axis comes first, then unbound."""

    def __init__(self, dim: int = D, heads: int = H, how: str = "unbind") -> None:
        super().__init__()
        self.heads, self.how = heads, how
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        if self.how == "unbind":
            q, k, v = qkv.unbind(0)
        else:
            q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(x)


class Chunked(nn.Module):
    """``chunk`` of a fused projection, heads by ``unflatten``; an einsum with its own letters."""

    def __init__(self, dim: int = D, heads: int = H) -> None:
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.unflatten(-1, (self.heads, -1)) for t in (q, k, v))  # b n h d
        sim = torch.einsum("bnhd,bmhd->bhnm", q, k) / math.sqrt(q.shape[-1])
        weights = sim.softmax(dim=-1)
        out = torch.einsum("bhnm,bmhd->bnhd", weights, v)
        return self.to_out(out.flatten(-2))


class MaskedSDPA(nn.Module):
    """SDPA with a mask passed in: boolean (True = may attend) or additive float."""

    def __init__(self, dim: int = D, heads: int = H, kind: str = "bool", p: float = 0.0) -> None:
        super().__init__()
        self.heads, self.kind, self.p = heads, kind, p
        self.wq, self.wk, self.wv = (nn.Linear(dim, dim, bias=False) for _ in range(3))
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q = self.wq(x).view(b, t, self.heads, -1).transpose(1, 2)
        k = self.wk(x).view(b, t, self.heads, -1).transpose(1, 2)
        v = self.wv(x).view(b, t, self.heads, -1).transpose(1, 2)
        allowed = torch.ones(t, t, dtype=torch.bool).tril()
        mask = allowed if self.kind == "bool" else torch.zeros(t, t).masked_fill(~allowed, float("-inf"))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.p if self.training else 0.0)
        return self.wo(out.transpose(1, 2).reshape(b, t, d))


class SlidingWindow(nn.Module):
    """Each token sees itself and the ``window - 1`` tokens before it."""

    def __init__(self, dim: int = D, window: int = 2) -> None:
        super().__init__()
        self.window = window
        self.q, self.k, self.v = (nn.Linear(dim, dim, bias=False) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        pos = torch.arange(t)
        dist = pos[:, None] - pos[None, :]
        blocked = (dist < 0) | (dist >= self.window)
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.shape[-1])
        scores = scores.masked_fill(blocked, float("-inf"))
        return torch.softmax(scores, dim=-1) @ self.v(x)


class GroupedQuery(nn.Module):
    """Four query heads share two key/value heads: keys and values repeated with ``repeat_interleave``."""

    def __init__(self, dim: int = D, heads: int = 4, kv_heads: int = 2) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wkv = nn.Linear(dim, 2 * kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q = self.wq(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k, v = self.wkv(x).view(b, t, 2, self.kv_heads, self.hd).permute(2, 0, 3, 1, 4)
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        weights = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
        return self.wo((weights @ v).transpose(1, 2).reshape(b, t, d))


class CachedAttention(nn.Module):
    """Single-head attention with a key/value cache, fed one token at a time during generation."""

    def __init__(self, dim: int = D) -> None:
        super().__init__()
        self.q, self.k, self.v = (nn.Linear(dim, dim, bias=False) for _ in range(3))
        self.cache_k: torch.Tensor | None = None
        self.cache_v: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k_new, v_new = self.k(x), self.v(x)
        if self.cache_k is None or self.cache_v is None:
            self.cache_k, self.cache_v = k_new, v_new
        else:
            self.cache_k = torch.cat([self.cache_k, k_new], dim=1)
            self.cache_v = torch.cat([self.cache_v, v_new], dim=1)
        scores = self.q(x) @ self.cache_k.transpose(1, 2) / math.sqrt(x.shape[-1])
        weights = torch.softmax(scores, dim=-1)
        return weights @ self.cache_v


class PreNormBlock(nn.Module):
    """A full pre-LayerNorm transformer block around torch's ``nn.MultiheadAttention``."""

    def __init__(self, dim: int = D, heads: int = H) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=causal, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    """Token ids through an embedding, positions added, one fused causal block, logits."""

    def __init__(self, vocab: int = 11, cfg: Config | None = None) -> None:
        super().__init__()
        cfg = cfg or Config()
        self.wte, self.wpe = nn.Embedding(vocab, cfg.n_embd), nn.Embedding(cfg.block_size, cfg.n_embd)
        self.attn = FusedCausal(cfg)
        self.head = nn.Linear(cfg.n_embd, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1])
        x = self.wte(idx) + self.wpe(pos)
        return self.head(x + self.attn(x))


# -- runners -------------------------------------------------------------------------------------------------


def _apply(seed: int, make: Callable[[], nn.Module]) -> torch.Tensor:
    """Seed, build the module, run it on a fresh (1, T, D) input."""
    torch.manual_seed(seed)
    return make()(_x())


def fused() -> torch.Tensor:
    return _apply(1, lambda: FusedCausal(Config()))


def flash() -> torch.Tensor:
    return _apply(1, lambda: FusedFlash(Config()))


def packed() -> torch.Tensor:
    return _apply(2, PackedHeads)


def packed_index() -> torch.Tensor:
    return _apply(2, lambda: PackedHeads(how="index"))


def einsum() -> torch.Tensor:
    return _apply(3, Chunked)


def sdpa_bool() -> torch.Tensor:
    return _apply(4, lambda: MaskedSDPA(kind="bool").eval())


def sdpa_float() -> torch.Tensor:
    return _apply(4, lambda: MaskedSDPA(kind="float").eval())


def sdpa_dropout() -> torch.Tensor:
    return _apply(4, lambda: MaskedSDPA(kind="bool", p=0.25).train())


def window() -> torch.Tensor:
    return _apply(6, SlidingWindow)


def gqa() -> torch.Tensor:
    return _apply(7, GroupedQuery)


def block() -> torch.Tensor:
    return _apply(9, PreNormBlock)


def mha_plain() -> torch.Tensor:
    torch.manual_seed(5)
    attn = nn.MultiheadAttention(D, H, batch_first=True)
    x = _x()
    out, _ = attn(x, x, x)
    return out


def mha_masks() -> torch.Tensor:
    torch.manual_seed(5)
    attn = nn.MultiheadAttention(D, H)  # sequence first
    x = _x(batch=2).transpose(0, 1)
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    padding = torch.tensor([[False] * T, [False] * (T - 1) + [True]])
    out, weights = attn(x, x, x, attn_mask=causal, key_padding_mask=padding)
    return out + weights.sum() * 0


def mha_float_mask() -> torch.Tensor:
    torch.manual_seed(5)
    attn = nn.MultiheadAttention(D, H, batch_first=True, dropout=0.1)
    x = _x()
    bias = torch.zeros(T, T).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    out, _ = attn(x, x, x, attn_mask=bias)
    return out


def generate() -> torch.Tensor:
    torch.manual_seed(8)
    attn = CachedAttention()
    x = _x()
    outs = [attn(x[:, i : i + 1]) for i in range(x.shape[1])]
    return torch.cat(outs, dim=1)


def lm() -> torch.Tensor:
    torch.manual_seed(10)
    model = TinyLM()
    idx = torch.tensor([[3, 1, 4, 1, 5]])
    return model(idx)


RUNNERS = (
    "fused", "flash", "packed", "packed_index", "einsum", "sdpa_bool", "sdpa_float", "sdpa_dropout", "mha_plain",
    "mha_masks", "mha_float_mask", "window", "gqa", "generate", "block", "lm",
)  # fmt: skip
