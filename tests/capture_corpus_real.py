"""Attention from fifteen public projects' styles, third pass, in our own words (runners for the capture tests).

Each class follows how its project lays the computation out, not its text:
Hugging Face's BERT (``transpose_for_scores``, an additive mask of the
dtype's minimum), GPT-2's upcast path (batch and heads merged for one
``baddbmm``, split again), Whisper (q and k each scaled by d^-1/4, keys
permuted, cross-attention over audio frames), gpt-fast and Llama 2 (a
preallocated cache written by index, keys read back as a slice, rotary
positions in complex numbers), llama2.c (rotary on pairs in real numbers),
nanochat (RMS-normed q and k, ``enable_gqa``), timm's ViT (one ``qkv``
permuted to (3, B, H, N, d)), a lecture's GPT (one ``Head`` per head,
concatenated), a decoder block with LayerNorm and GELU.  The sequence-first
and merged-heads styles are in :mod:`tests.capture_corpus_real_more`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

T, D, H = 5, 8, 2


def _x(t: int = T, d: int = D) -> torch.Tensor:
    return torch.rand(1, t, d)


class BertSelf(nn.Module):
    """Query, key and value with biases; heads by ``transpose_for_scores``; padding hidden by an additive mask."""

    def __init__(self, hidden: int = D, heads: int = H) -> None:
        super().__init__()
        self.heads, self.size = heads, hidden // heads
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))

    def transpose_for_scores(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(*x.size()[:-1], self.heads, self.size).permute(0, 2, 1, 3)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.size)
        extended = (1.0 - attention_mask[:, None, None, :]) * torch.finfo(scores.dtype).min
        probs = nn.functional.softmax(scores + extended, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return context.view(*context.size()[:-2], -1)


class GPT2Upcast(nn.Module):
    """GPT-2's reordered attention: (B·H, T, d) operands for one ``baddbmm`` (beta 0, alpha the scale), split back."""

    def __init__(self, dim: int = D, heads: int = H) -> None:
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.c_attn = nn.Linear(dim, 3 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, self.hd).permute(0, 2, 1, 3) for z in (q, k, v))
        scratch = torch.empty(b * self.heads, t, t, dtype=torch.float32)
        qm, km = q.reshape(-1, t, self.hd), k.transpose(-1, -2).reshape(-1, self.hd, t)
        w = torch.baddbmm(scratch, qm.float(), km.float(), beta=0, alpha=1.0 / math.sqrt(self.hd))
        w = w.reshape(b, self.heads, t, t)
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min))
        w = nn.functional.softmax(w, dim=-1).type(v.dtype)
        return torch.matmul(w, v).permute(0, 2, 1, 3).reshape(b, t, c)


class WhisperStyle(nn.Module):
    """Self-attention, then cross-attention over audio frames: q and k each scaled by d^-1/4, keys permuted."""

    def __init__(self, n_state: int = D, n_head: int = H) -> None:
        super().__init__()
        self.n_head = n_head
        self.query, self.key = nn.Linear(n_state, n_state), nn.Linear(n_state, n_state, bias=False)
        self.value, self.out = nn.Linear(n_state, n_state), nn.Linear(n_state, n_state)

    def qkv_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        n_state = q.shape[-1]
        scale = (n_state // self.n_head) ** -0.25
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3) * scale
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 3, 1) * scale
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        qk = q @ k
        w = F.softmax(qk.float(), dim=-1).to(q.dtype)
        return (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2)

    def forward(self, x: torch.Tensor, xa: torch.Tensor) -> torch.Tensor:
        x = x + self.out(self.qkv_attention(self.query(x), self.key(x), self.value(x)))
        return self.out(self.qkv_attention(self.query(x), self.key(xa), self.value(xa)))


def complex_freqs(head_dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    """Unit complex numbers e^{i·pos·θ_k}, one per position and pair of features (Llama 2's ``freqs_cis``)."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    angles = torch.outer(torch.arange(end).float(), inv)
    return torch.polar(torch.ones_like(angles), angles)


def rotate_complex(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """(B, T, H, d) rotated as d/2 complex numbers, one per pair of features."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs_cis[None, :, None, :]).flatten(3).type_as(x)


class Llama2Cached(nn.Module):
    """Meta's layout: (B, T, H, d), a cache written at ``start_pos``, keys read back as ``cache_k[:bsz, :end]``."""

    def __init__(self, dim: int = D, heads: int = H, max_seq: int = 8) -> None:
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(dim, dim, bias=False) for _ in range(4))
        self.cache_k = torch.zeros(1, max_seq, heads, self.hd)
        self.cache_v = torch.zeros(1, max_seq, heads, self.hd)
        self.freqs_cis = complex_freqs(self.hd, max_seq)

    def forward(self, x: torch.Tensor, start_pos: int) -> torch.Tensor:
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.heads, self.hd)
        xk = self.wk(x).view(bsz, seqlen, self.heads, self.hd)
        xv = self.wv(x).view(bsz, seqlen, self.heads, self.hd)
        freqs = self.freqs_cis[start_pos : start_pos + seqlen]
        xq, xk = rotate_complex(xq, freqs), rotate_complex(xk, freqs)
        self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk
        self.cache_v[:bsz, start_pos : start_pos + seqlen] = xv
        keys = self.cache_k[:bsz, : start_pos + seqlen].transpose(1, 2)
        values = self.cache_v[:bsz, : start_pos + seqlen].transpose(1, 2)
        scores = torch.matmul(xq.transpose(1, 2), keys.transpose(2, 3)) / math.sqrt(self.hd)
        if seqlen > 1:
            mask = torch.triu(torch.full((seqlen, seqlen), float("-inf")), diagonal=1)
            scores = scores + torch.hstack([torch.zeros(seqlen, start_pos), mask])
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        out = torch.matmul(scores, values).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)


class StaticCache(nn.Module):
    """gpt-fast's cache: zero buffers of the longest length, written with ``k_out[:, :, input_pos] = k``."""

    def __init__(self, dim: int = D, heads: int = H, max_seq: int = 8) -> None:
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.wqkv = nn.Linear(dim, 3 * dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.register_buffer("k_cache", torch.zeros(1, heads, max_seq, self.hd))
        self.register_buffer("v_cache", torch.zeros(1, heads, max_seq, self.hd))
        self.register_buffer("causal", torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool)))

    def forward(self, x: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.wqkv(x).split([self.heads * self.hd] * 3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, self.hd).transpose(1, 2) for z in (q, k, v))
        self.k_cache[:, :, input_pos] = k
        self.v_cache[:, :, input_pos] = v
        mask = self.causal[None, None, input_pos]
        y = F.scaled_dot_product_attention(q, self.k_cache, self.v_cache, attn_mask=mask)
        return self.wo(y.transpose(1, 2).contiguous().view(b, t, -1))


class PairRotary(nn.Module):
    """llama2.c's rotary positions in real numbers: features as (even, odd) pairs by ``unbind``, then a mask buffer."""

    def __init__(self, dim: int = D, heads: int = H, max_seq: int = 8) -> None:
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(dim, dim, bias=False) for _ in range(4))
        inv = 1.0 / (10000.0 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        angles = torch.outer(torch.arange(max_seq).float(), inv)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())
        self.register_buffer("mask", torch.triu(torch.full((1, 1, max_seq, max_seq), float("-inf")), diagonal=1))

    def rope(self, x: torch.Tensor, t: int) -> torch.Tensor:
        r, i = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
        cos, sin = self.cos[:t].view(1, t, 1, -1), self.sin[:t].view(1, t, 1, -1)
        return torch.stack([r * cos - i * sin, r * sin + i * cos], dim=-1).flatten(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        xq = self.rope(self.wq(x).view(b, t, self.heads, self.hd), t).transpose(1, 2)
        xk = self.rope(self.wk(x).view(b, t, self.heads, self.hd), t).transpose(1, 2)
        xv = self.wv(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.hd) + self.mask[:, :, :t, :t]
        out = torch.matmul(F.softmax(scores.float(), dim=-1).type_as(xq), xv)
        return self.wo(out.transpose(1, 2).contiguous().view(b, t, -1))


class NanoStyle(nn.Module):
    """nanochat's attention: rotary by halves, q and k RMS-normed, two key/value heads shared through ``enable_gqa``."""

    def __init__(self, dim: int = D, heads: int = 4, kv_heads: int = 2) -> None:
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv_heads, dim // heads
        self.c_q = nn.Linear(dim, heads * self.hd, bias=False)
        self.c_k = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.c_v = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.c_proj = nn.Linear(dim, dim, bias=False)

    @staticmethod
    def rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]
        return torch.cat([a * cos + b * sin, a * (-sin) + b * cos], dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        inv = 1.0 / (10000.0 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        angles = torch.outer(torch.arange(t).float(), inv)[None, :, None, :]
        cos, sin = angles.cos(), angles.sin()
        q = self.rotary(self.c_q(x).view(b, t, self.heads, self.hd), cos, sin)
        k = self.rotary(self.c_k(x).view(b, t, self.kv, self.hd), cos, sin)
        v = self.c_v(x).view(b, t, self.kv, self.hd)
        q, k = F.rms_norm(q, (self.hd,)), F.rms_norm(k, (self.hd,))
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, -1))


class ViTAttention(nn.Module):
    """timm's ViT: one ``qkv`` reshaped to (B, N, 3, H, d), permuted to (3, B, H, N, d); q scaled first."""

    def __init__(self, dim: int = D, num_heads: int = H) -> None:
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.scale = self.head_dim**-0.5
        self.qkv, self.proj = nn.Linear(dim, dim * 3), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


class Head(nn.Module):
    """One head of a lecture's GPT: its own key, query and value, a ``tril`` buffer, scaled by C^-1/2 of the head."""

    def __init__(self, n_embd: int, head_size: int, block: int = 8) -> None:
        super().__init__()
        self.key, self.query, self.value = (nn.Linear(n_embd, head_size, bias=False) for _ in range(3))
        self.register_buffer("tril", torch.tril(torch.ones(block, block)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, t, _ = x.shape
        k, q = self.key(x), self.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = wei.masked_fill(self.tril[:t, :t] == 0, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        return wei @ self.value(x)


class LectureHeads(nn.Module):
    """Heads side by side: each head's output concatenated on features, then one projection."""

    def __init__(self, n_embd: int = D, heads: int = H) -> None:
        super().__init__()
        self.heads = nn.ModuleList([Head(n_embd, n_embd // heads) for _ in range(heads)])
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(torch.cat([h(x) for h in self.heads], dim=-1))


class LayerNormBlock(nn.Module):
    """A decoder block: LayerNorm, fused causal attention, residual, LayerNorm, a GELU MLP, residual."""

    def __init__(self, dim: int = 16, heads: int = H) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.c_attn, self.c_proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.c_fc, self.mlp_proj = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(torch.tril(torch.ones(t, t)).view(1, 1, t, t) == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


# -- runners -------------------------------------------------------------------------------------------------


def bert() -> torch.Tensor:
    torch.manual_seed(31)
    return BertSelf()(_x(), torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.0]]))


def gpt2_upcast() -> torch.Tensor:
    torch.manual_seed(32)
    return GPT2Upcast()(_x())


def whisper() -> torch.Tensor:
    torch.manual_seed(33)
    return WhisperStyle()(_x(3), torch.rand(1, T, D))


def llama2_cache() -> torch.Tensor:
    torch.manual_seed(34)
    model, x = Llama2Cached(), _x()
    model(x[:, :4], 0)
    return model(x[:, 4:], 4)


def gpt_fast() -> torch.Tensor:
    torch.manual_seed(35)
    model, x = StaticCache(), _x()
    model(x[:, :4], torch.arange(4))
    return model(x[:, 4:], torch.tensor([4]))


def llama2c() -> torch.Tensor:
    torch.manual_seed(36)
    return PairRotary()(_x())


def nanochat() -> torch.Tensor:
    torch.manual_seed(37)
    return NanoStyle()(_x())


def vit() -> torch.Tensor:
    torch.manual_seed(38)
    return ViTAttention()(_x())


def lecture() -> torch.Tensor:
    torch.manual_seed(39)
    return LectureHeads()(_x())


def layer_norm_block() -> torch.Tensor:
    torch.manual_seed(40)
    return LayerNormBlock()(_x(d=16))
