"""More attention as projects write it, in our own words: minGPT's three projections and the
Annotated Transformer's ``attention()`` function behind ``MultiHeadedAttention`` (its ``attention``
and ``clones`` are the check corpus's, ``tests/check_corpus/multihead_annotated.py``).

Runners as in :mod:`tests.capture_corpus` (no arguments, seeded, return the
output tensor).  ``HEADS``: runner -> (attentions it computes, heads each).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.capture_corpus import Config, D, H, T, _x
from tests.check_corpus.multihead_annotated import attention, clones  # the free function and the cloned layers


class ThreeProjections(nn.Module):
    """minGPT's style: separate ``key``, ``query`` and ``value`` layers, a causal mask buffer, dropouts."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.key = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.query = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.value = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.attn_drop = nn.Dropout(cfg.dropout)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.n_head = cfg.n_head
        mask = torch.tril(torch.ones(cfg.block_size, cfg.block_size))
        self.register_buffer("mask", mask.view(1, 1, cfg.block_size, cfg.block_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T_, C = x.size()
        k = self.key(x).view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
        q = self.query(x).view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
        v = self.value(x).view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T_, :T_] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_drop(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T_, C)
        return self.proj(y)


class MultiHeaded(nn.Module):
    """Four cloned linear layers; queries, keys and values made in one list comprehension over ``zip``."""

    def __init__(self, h: int = H, d_model: int = D, dropout: float = 0.0) -> None:
        super().__init__()
        self.d_k, self.h = d_model // h, h
        self.linears = clones(nn.Linear(d_model, d_model), 4)
        self.attn: torch.Tensor | None = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(
        self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        if mask is not None:
            mask = mask.unsqueeze(1)
        nbatches = query.size(0)
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value), strict=False)
        ]
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1](x)


class CachedHeads(nn.Module):
    """Multi-head attention with a key/value cache kept per head (``cat`` along the tokens, dim 2)."""

    def __init__(self, dim: int = D, heads: int = H) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.k_cache: torch.Tensor | None = None
        self.v_cache: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.k_cache is None or self.v_cache is None:
            self.k_cache, self.v_cache = k, v
        else:
            self.k_cache = torch.cat([self.k_cache, k], dim=2)
            self.v_cache = torch.cat([self.v_cache, v], dim=2)
        w = torch.softmax(q @ self.k_cache.transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1)
        return self.out((w @ self.v_cache).transpose(1, 2).reshape(b, t, d))


def mingpt() -> torch.Tensor:
    torch.manual_seed(11)
    return ThreeProjections(Config())(_x())


def annotated() -> torch.Tensor:
    torch.manual_seed(12)
    mha = MultiHeaded()
    x = _x()
    causal = torch.tril(torch.ones(1, T, T))
    return mha(x, x, x, mask=causal)


def mha_batch_padding() -> torch.Tensor:
    torch.manual_seed(13)
    attn = nn.MultiheadAttention(D, H, batch_first=True)
    x = _x(batch=2)
    padding = torch.tensor([[False] * T, [False] * (T - 2) + [True] * 2])  # the second sequence is shorter
    out, weights = attn(x, x, x, key_padding_mask=padding)
    return out + weights.sum() * 0


def generate_heads() -> torch.Tensor:
    torch.manual_seed(14)
    attn = CachedHeads()
    x = _x()
    return torch.cat([attn(x[:, i : i + 1]) for i in range(T)], dim=1)


RUNNERS = ("mingpt", "annotated", "mha_batch_padding", "generate_heads")
HEADS = {"mingpt": (1, H), "annotated": (1, H), "mha_batch_padding": (1, H), "generate_heads": (T, H)}
MASKED = {"mingpt", "annotated", "mha_batch_padding"}
"""The runners whose attention masks its scores (a generation step's one query sees every cached key)."""
