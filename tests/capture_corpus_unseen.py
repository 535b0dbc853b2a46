"""Attention styles the other corpora do not have, written as their projects write them (in our own words).

Hugging Face's Llama (rotary embedding, ``repeat_kv``, an additive float
mask of ``finfo.min``, softmax in float32), its GPT-2 (``Conv1D`` through
``torch.addmm``, ``_split_heads``/``_merge_heads``, ``torch.where`` with a
mask value), BLOOM (``baddbmm`` with an ALiBi bias on (b·h, T, d) layouts),
T5 (a learned relative position bias, no scaling), cross-attention with
fewer queries than keys, in-place ``masked_fill_`` with the ``softmax``
method, SDPA with ``scale=`` and with ``enable_gqa=True``,
``F.multi_head_attention_forward`` called directly, ``F.linear`` on slices
of one packed weight, attention computed a chunk of queries at a time, and
a padding mask made from token ids.

The Hugging Face layouts are in :mod:`tests.capture_corpus_unseen_hf`.  Runners as in
:mod:`tests.capture_corpus`: no arguments, seeded, return the
output tensor.  ``HEADS``: runner -> (attentions it computes, heads each);
``QUERIES``: runner -> the number of query rows when it differs from ``T``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.capture_corpus import D, H, T, _x
from tests.capture_corpus_unseen_hf import BloomStyle, GPT2Style, LlamaStyle, T5Style


class CrossAttention(nn.Module):
    """Three decoder queries read five encoder keys: the weights are 3 × 5, not square."""

    def __init__(self, dim: int = D, heads: int = H) -> None:
        super().__init__()
        self.heads = heads
        self.to_q, self.to_kv = nn.Linear(dim, dim, bias=False), nn.Linear(dim, 2 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q = self.to_q(x).view(b, n, self.heads, -1).transpose(1, 2)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        k = k.view(b, context.shape[1], self.heads, -1).transpose(1, 2)
        v = v.view(b, context.shape[1], self.heads, -1).transpose(1, 2)
        dots = torch.matmul(q, k.transpose(-1, -2)) * (d // self.heads) ** -0.5
        attn = dots.softmax(dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(b, n, d)
        return self.to_out(out)


class InPlaceMask(nn.Module):
    """The mask written in place (``masked_fill_``), scaled in place (``div_``), weights by the method."""

    def __init__(self, dim: int = D, heads: int = H) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).unbind(dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        att = q @ k.transpose(-2, -1)
        att.div_(math.sqrt(d // self.heads))
        att.masked_fill_(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        att = att.softmax(-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))


class ScaledSDPA(nn.Module):
    """SDPA with its own ``scale=``, or with fewer key/value heads than query heads (``enable_gqa=True``)."""

    def __init__(self, dim: int = D, heads: int = H, kv_heads: int = H) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.wq, self.wo = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.wk, self.wv = (nn.Linear(dim, kv_heads * self.hd, bias=False) for _ in range(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q = self.wq(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.wk(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.wv(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        if self.kv_heads == self.heads:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, d))


class SlicedWeight(nn.Module):
    """One packed (3d, d) weight; q, k and v by ``F.linear`` on its row slices."""

    def __init__(self, dim: int = D) -> None:
        super().__init__()
        self.dim = dim
        self.in_proj_weight = nn.Parameter(torch.randn(3 * dim, dim) / math.sqrt(dim))
        self.in_proj_bias = nn.Parameter(torch.randn(3 * dim) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d, w, bias = self.dim, self.in_proj_weight, self.in_proj_bias
        q = F.linear(x, w[:d], bias[:d])
        k = F.linear(x, w[d : 2 * d], bias[d : 2 * d])
        v = F.linear(x, w[2 * d :], bias[2 * d :])
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1)
        return weights @ v


class QueryChunks(nn.Module):
    """Memory-efficient form: the queries two at a time, the chunks' outputs joined with ``torch.cat``."""

    def __init__(self, dim: int = D, chunk: int = 2) -> None:
        super().__init__()
        self.chunk = chunk
        self.q, self.k, self.v = (nn.Linear(dim, dim, bias=False) for _ in range(3))
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.q(x), self.k(x), self.v(x)
        outs = []
        for start in range(0, q.shape[1], self.chunk):
            q_chunk = q[:, start : start + self.chunk]
            s = torch.bmm(q_chunk, k.transpose(1, 2)) * q.shape[-1] ** -0.5
            p = s.softmax(dim=-1)
            outs.append(torch.bmm(p, v))
        return self.out(torch.cat(outs, dim=1))


class PaddedLM(nn.Module):
    """Token ids with padding: ``ids == pad_id`` broadcast to (b, 1, 1, T) hides the pad keys from every query."""

    def __init__(self, vocab: int = 9, dim: int = D, heads: int = H, pad_id: int = 0) -> None:
        super().__init__()
        self.pad_id, self.heads = pad_id, heads
        self.embed = nn.Embedding(vocab, dim, padding_idx=pad_id)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim, bias=False), nn.Linear(dim, dim)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(input_ids)
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        pad = (input_ids == self.pad_id)[:, None, None, :]  # (b, 1, 1, T)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(pad, float("-inf"))
        weights = F.softmax(scores, dim=-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(b, t, d))


# -- runners -------------------------------------------------------------------------------------------------


def _run(seed: int, module: type[nn.Module]) -> torch.Tensor:
    torch.manual_seed(seed)
    return module()(_x())


def llama() -> torch.Tensor:
    return _run(21, LlamaStyle)


def gpt2() -> torch.Tensor:
    return _run(22, GPT2Style)


def bloom() -> torch.Tensor:
    return _run(23, BloomStyle)


def t5() -> torch.Tensor:
    return _run(24, T5Style)


def cross() -> torch.Tensor:
    torch.manual_seed(25)
    attn = CrossAttention()
    context = _x()  # the encoder's five tokens
    x = _x(t=3)  # the decoder's three
    return attn(x, context)


def inplace() -> torch.Tensor:
    return _run(26, InPlaceMask)


def sdpa_scale() -> torch.Tensor:
    return _run(27, ScaledSDPA)


def sdpa_gqa() -> torch.Tensor:
    torch.manual_seed(28)
    return ScaledSDPA(heads=4, kv_heads=2)(_x())


def mha_functional() -> torch.Tensor:
    torch.manual_seed(29)
    w_in, b_in = torch.randn(3 * D, D) / math.sqrt(D), torch.zeros(3 * D)
    w_out, b_out = torch.randn(D, D) / math.sqrt(D), torch.zeros(D)
    x = _x().transpose(0, 1)  # (T, batch, D): the function is sequence-first
    causal = torch.ones(T, T, dtype=torch.bool).triu(1)
    out, _ = F.multi_head_attention_forward(
        x, x, x, D, H, w_in, b_in, None, None, False, 0.0, w_out, b_out, training=False, attn_mask=causal
    )
    return out


def sliced() -> torch.Tensor:
    return _run(30, SlicedWeight)


def query_chunks() -> torch.Tensor:
    return _run(31, QueryChunks)


def padded() -> torch.Tensor:
    torch.manual_seed(32)
    ids = torch.tensor([[5, 3, 8, 0, 0], [2, 7, 1, 4, 6]])  # the first sequence ends in two pads
    return PaddedLM()(ids)


RUNNERS = (
    "llama", "gpt2", "bloom", "t5", "cross", "inplace", "sdpa_scale", "sdpa_gqa", "mha_functional", "sliced",
    "query_chunks", "padded",
)  # fmt: skip
HEADS = {
    "llama": (1, 4), "gpt2": (1, H), "bloom": (1, H), "t5": (1, H), "cross": (1, H), "inplace": (1, H),
    "sdpa_scale": (1, H), "sdpa_gqa": (1, 4), "mha_functional": (1, H), "sliced": (1, 1),
    "query_chunks": (T // 2 + 1, 1), "padded": (1, H),
}  # fmt: skip
QUERIES = {"cross": 3}
"""The runners whose attention has fewer queries than keys."""
