"""Hugging Face's attention layouts, in our own words: Llama, GPT-2, BLOOM and T5 (runners in
:mod:`tests.capture_corpus_unseen`).

Llama: ``q_proj``/``k_proj``/``v_proj``/``o_proj``, rotary positions from
cached cos/sin tables with ``rotate_half``, ``repeat_kv`` by ``expand`` then
``reshape``, an additive causal mask of ``finfo.min``, softmax in float32.
GPT-2: ``Conv1D`` (one ``torch.addmm``), ``split(split_size, dim=2)``,
``_split_heads``/``_merge_heads``, ``torch.where(causal_mask, w, mask_value)``.
BLOOM: ``baddbmm`` with an ALiBi bias on (batch · heads, T, d) layouts, ``bmm``.
T5: a learned relative position bias added to unscaled scores.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.capture_corpus import D, H


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """The second half of the features, negated, in front of the first (Llama's rotary helper)."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(hidden: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(b, kv heads, T, d) -> (b, kv heads · n_rep, T, d) by ``expand`` then ``reshape``, as Llama does."""
    b, kv, t, d = hidden.shape
    if n_rep == 1:
        return hidden
    hidden = hidden[:, :, None, :, :].expand(b, kv, n_rep, t, d)
    return hidden.reshape(b, kv * n_rep, t, d)


class LlamaStyle(nn.Module):
    """Four query heads over two key/value heads, rotary positions from cached cos/sin tables."""

    def __init__(self, dim: int = D, heads: int = 4, kv_heads: int = 2, base: float = 10000.0) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, dim, bias=False)
        inv_freq = 1.0 / (base ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        freqs = torch.outer(torch.arange(16).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.kv_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.cos_cached[:q_len][None, None], self.sin_cached[:q_len][None, None]
        query_states = (query_states * cos) + (rotate_half(query_states) * sin)
        key_states = (key_states * cos) + (rotate_half(key_states) * sin)
        key_states = repeat_kv(key_states, self.heads // self.kv_heads)
        value_states = repeat_kv(value_states, self.heads // self.kv_heads)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        min_value = torch.finfo(attn_weights.dtype).min
        causal_mask = torch.full((q_len, q_len), min_value).triu(1)[None, None]
        attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)


class Conv1D(nn.Module):
    """GPT-2's transposed linear layer: ``weight`` is (in, out) and the product is one ``addmm``."""

    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size_out = x.size()[:-1] + (self.nf,)  # noqa: RUF005  (as GPT-2's code writes it)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2Style(nn.Module):
    """``c_attn``/``c_proj`` as ``Conv1D``; heads split and merged by helper methods; ``torch.where`` masks."""

    def __init__(self, dim: int = D, heads: int = H, block: int = 16) -> None:
        super().__init__()
        self.num_heads, self.head_dim, self.split_size = heads, dim // heads, dim
        self.c_attn, self.c_proj = Conv1D(3 * dim, dim), Conv1D(dim, dim)
        self.register_buffer("bias", torch.tril(torch.ones(block, block, dtype=torch.bool)).view(1, 1, block, block))

    def _split_heads(self, tensor: torch.Tensor) -> torch.Tensor:
        new_shape = tensor.size()[:-1] + (self.num_heads, self.head_dim)  # noqa: RUF005  (as GPT-2's code writes it)
        return tensor.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.num_heads * self.head_dim,))  # noqa: RUF005  (as GPT-2's code writes it)

    def _attn(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
        mask_value = torch.full([], torch.finfo(attn_weights.dtype).min, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        attn_output = self._merge_heads(self._attn(query, key, value))
        return self.c_proj(attn_output)


def alibi_slopes(heads: int) -> torch.Tensor:
    """ALiBi's geometric slopes for a power-of-two head count: 2^(-8/heads), its square, …"""
    start = 2 ** (-(2 ** -(math.log2(heads) - 3)))
    return torch.tensor([start ** (i + 1) for i in range(heads)])


class BloomStyle(nn.Module):
    """Scores as ``baddbmm(alibi, q, k, beta=1, alpha=1/sqrt(d))`` on (batch · heads, T, d); weights by ``bmm``."""

    def __init__(self, dim: int = D, heads: int = H) -> None:
        super().__init__()
        self.num_heads, self.head_dim = heads, dim // heads
        self.query_key_value = nn.Linear(dim, 3 * dim)
        self.dense = nn.Linear(dim, dim)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        b, q_length, _ = hidden_states.shape
        fused = self.query_key_value(hidden_states).view(b, q_length, self.num_heads, 3, self.head_dim)
        query_layer = fused[..., 0, :].transpose(1, 2).reshape(b * self.num_heads, q_length, self.head_dim)
        key_layer = fused[..., 1, :].permute(0, 2, 3, 1).reshape(b * self.num_heads, self.head_dim, q_length)
        value_layer = fused[..., 2, :].transpose(1, 2).reshape(b * self.num_heads, q_length, self.head_dim)
        positions = torch.arange(q_length).float()
        alibi = (alibi_slopes(self.num_heads)[:, None] * positions[None, :])[:, None, :].repeat(b, 1, 1)
        matmul_result = alibi.baddbmm(batch1=query_layer, batch2=key_layer, beta=1.0, alpha=self.head_dim**-0.5)
        attention_scores = matmul_result.view(b, self.num_heads, q_length, q_length)
        causal = torch.ones(q_length, q_length, dtype=torch.bool).triu(1)
        attn_weights = torch.masked_fill(attention_scores, causal, torch.finfo(attention_scores.dtype).min)
        attention_probs = F.softmax(attn_weights, dim=-1, dtype=torch.float32)
        attention_probs_reshaped = attention_probs.view(b * self.num_heads, q_length, q_length)
        context_layer = torch.bmm(attention_probs_reshaped, value_layer)
        context_layer = context_layer.view(b, self.num_heads, q_length, self.head_dim).permute(0, 2, 1, 3)
        return self.dense(context_layer.reshape(b, q_length, self.num_heads * self.head_dim))


class T5Style(nn.Module):
    """No scaling: a learned bias per head and clipped relative distance is added to the scores."""

    def __init__(self, dim: int = D, heads: int = H, max_distance: int = 3) -> None:
        super().__init__()
        self.n_heads, self.key_value_proj_dim, self.max_distance = heads, dim // heads, max_distance
        self.q, self.k, self.v = (nn.Linear(dim, dim, bias=False) for _ in range(3))
        self.o = nn.Linear(dim, dim, bias=False)
        self.relative_attention_bias = nn.Embedding(2 * max_distance + 1, heads)

    def compute_bias(self, query_length: int, key_length: int) -> torch.Tensor:
        context_position = torch.arange(query_length, dtype=torch.long)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        buckets = relative_position.clamp(-self.max_distance, self.max_distance) + self.max_distance
        values = self.relative_attention_bias(buckets)  # (q, k, heads)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        batch_size, seq_length = hidden_states.shape[:2]

        def shape(states: torch.Tensor) -> torch.Tensor:
            return states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

        query_states, key_states = shape(self.q(hidden_states)), shape(self.k(hidden_states))
        value_states = shape(self.v(hidden_states))
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        position_bias = self.compute_bias(seq_length, seq_length)
        scores += position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_output = torch.matmul(attn_weights, value_states)
        inner_dim = self.n_heads * self.key_value_proj_dim
        attn_output = attn_output.transpose(1, 2).contiguous().view(batch_size, -1, inner_dim)
        return self.o(attn_output)
