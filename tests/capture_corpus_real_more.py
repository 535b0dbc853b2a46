"""More attention layouts of public projects, in our own words: sequence first, batch·heads merged, additive.

labml's multi-head attention keeps the sequence first ((T, B, H, d), scores
by ``einsum('ibhd,jbhd->ijbh')``, softmax over ``j`` at axis 1); d2l merges
batch and heads for the whole computation (``transpose_qkv``, ``bmm``, a
masked softmax from valid lengths); d2l's additive attention and the PyTorch
seq2seq tutorial's RNN decoder score with ``v · tanh(W q + U k)``; Gemma
caps its logits with ``tanh`` and hides keys out of a sliding window; a
module over a preallocated cache may read nothing but its own buffers.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.capture_corpus_real import D, H, T, _x


class SeqFirst(nn.Module):
    """labml's layout: (T, B, d) in, heads as (T, B, H, d), scores (i, j, b, h), softmax along keys at axis 1."""

    def __init__(self, d_model: int = D, heads: int = H) -> None:
        super().__init__()
        self.heads, self.d_k = heads, d_model // heads
        self.query, self.key, self.value = (nn.Linear(d_model, d_model) for _ in range(3))
        self.output = nn.Linear(d_model, d_model)
        self.scale = 1 / math.sqrt(self.d_k)

    def prepare(self, x: torch.Tensor, proj: nn.Linear) -> torch.Tensor:
        return proj(x).view(*x.shape[:-1], self.heads, self.d_k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq_len, batch, _ = x.shape
        q, k, v = self.prepare(x, self.query), self.prepare(x, self.key), self.prepare(x, self.value)
        scores = torch.einsum("ibhd,jbhd->ijbh", q, k) * self.scale
        mask = torch.tril(torch.ones(seq_len, seq_len)).unsqueeze(-1).unsqueeze(-1)
        scores = scores.masked_fill(mask == 0, float("-inf"))
        attn = torch.softmax(scores, dim=1)
        out = torch.einsum("ijbh,jbhd->ibhd", attn, v).reshape(seq_len, batch, -1)
        return self.output(out)


def transpose_qkv(x: torch.Tensor, heads: int) -> torch.Tensor:
    """(B, T, H·d) -> (B·H, T, d): batch and heads merged, as d2l keeps them through the attention."""
    x = x.reshape(x.shape[0], x.shape[1], heads, -1).permute(0, 2, 1, 3)
    return x.reshape(-1, x.shape[2], x.shape[3])


def transpose_output(x: torch.Tensor, heads: int) -> torch.Tensor:
    """(B·H, T, d) -> (B, T, H·d), the inverse of :func:`transpose_qkv`."""
    x = x.reshape(-1, heads, x.shape[1], x.shape[2]).permute(0, 2, 1, 3)
    return x.reshape(x.shape[0], x.shape[1], -1)


def masked_softmax(x: torch.Tensor, valid_lens: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis with the keys past each row's valid length set to -1e6 first (d2l's form)."""
    shape = x.shape
    lens = torch.repeat_interleave(valid_lens, shape[1]) if valid_lens.dim() == 1 else valid_lens.reshape(-1)
    flat = x.reshape(-1, shape[-1])
    keep = torch.arange(shape[-1], dtype=torch.float32)[None, :] < lens[:, None]
    flat = flat.masked_fill(~keep, -1e6)
    return F.softmax(flat.reshape(shape), dim=-1)


class D2LMultiHead(nn.Module):
    """d2l's multi-head attention: heads merged with the batch, scaled dot products by ``bmm``, valid lengths."""

    def __init__(self, num_hiddens: int = D, num_heads: int = H) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.LazyLinear(num_hiddens, bias=False) for _ in range(4))

    def forward(self, queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, valid_lens: torch.Tensor):
        q = transpose_qkv(self.W_q(queries), self.num_heads)
        k = transpose_qkv(self.W_k(keys), self.num_heads)
        v = transpose_qkv(self.W_v(values), self.num_heads)
        valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        self.attention_weights = masked_softmax(scores, valid_lens)
        out = torch.bmm(self.attention_weights, v)
        return self.W_o(transpose_output(out, self.num_heads))


class Additive(nn.Module):
    """d2l's additive attention: every query plus every key through ``tanh``, scored by one vector ``w_v``."""

    def __init__(self, num_hiddens: int = 6) -> None:
        super().__init__()
        self.W_k, self.W_q = nn.LazyLinear(num_hiddens, bias=False), nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)

    def forward(self, queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, valid_lens: torch.Tensor):
        features = self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1)
        scores = self.w_v(torch.tanh(features)).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.attention_weights, values)


class AttnDecoder(nn.Module):
    """The seq2seq tutorial's decoder: a GRU cell steps over the outputs, each step attending to the encoder's."""

    def __init__(self, hidden: int = D, vocab: int = 7) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.Wa, self.Ua, self.Va = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, 1)
        self.cell = nn.GRUCell(2 * hidden, hidden)
        self.out = nn.Linear(hidden, vocab)

    def attend(self, query: torch.Tensor, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        weights = F.softmax(scores.squeeze(2).unsqueeze(1), dim=-1)
        return torch.bmm(weights, keys), weights

    def forward(self, encoder_outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        hidden = encoder_outputs[:, -1]
        outputs = []
        for step in range(targets.shape[1]):
            embedded = self.embedding(targets[:, step])
            context, _ = self.attend(hidden.unsqueeze(1), encoder_outputs)
            hidden = self.cell(torch.cat((embedded, context.squeeze(1)), dim=-1), hidden)
            outputs.append(self.out(hidden))
        return F.log_softmax(torch.stack(outputs, dim=1), dim=-1)


class GemmaStyle(nn.Module):
    """Gemma's attention: a query scale of its own, logits capped by ``cap · tanh(s / cap)``, a sliding window, GQA."""

    def __init__(self, dim: int = D, heads: int = 4, kv_heads: int = 2, window: int = 3, cap: float = 50.0) -> None:
        super().__init__()
        self.heads, self.kv, self.hd, self.window, self.cap = heads, kv_heads, dim // heads, window, cap
        self.q_proj = nn.Linear(dim, heads * self.hd, bias=False)
        self.kv_proj = nn.Linear(dim, 2 * kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.hd).transpose(1, 2) * self.hd**-0.5
        k, v = self.kv_proj(x).view(b, t, 2 * self.kv, self.hd).transpose(1, 2).chunk(2, dim=1)
        k = k.repeat_interleave(self.heads // self.kv, dim=1)
        v = v.repeat_interleave(self.heads // self.kv, dim=1)
        logits = torch.matmul(q, k.transpose(2, 3))
        logits = torch.tanh(logits / self.cap) * self.cap
        pos = torch.arange(t)
        hidden = (pos[None, :] > pos[:, None]) | (pos[:, None] - pos[None, :] >= self.window)
        logits = logits.masked_fill(hidden, torch.finfo(logits.dtype).min)
        probs = F.softmax(logits.float(), dim=-1).type_as(q)
        return self.o_proj(torch.matmul(probs, v).transpose(1, 2).reshape(b, t, -1))


class OwnState(nn.Module):
    """A module whose forward reads only its buffers: the prompt's vectors sit in a preallocated cache already."""

    def __init__(self, dim: int = D, max_seq: int = 8) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(max_seq, dim))
        self.wq, self.wk = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)

    def forward(self, length: int) -> torch.Tensor:
        self.cache[:length] = torch.arange(1, length * self.cache.shape[1] + 1).view(length, -1) / 10.0
        keys = self.cache[:length]
        scores = self.wq(keys) @ self.wk(keys).T / math.sqrt(keys.shape[-1])
        return torch.softmax(scores, dim=-1) @ keys


# -- runners -------------------------------------------------------------------------------------------------


def labml() -> torch.Tensor:
    torch.manual_seed(41)
    return SeqFirst()(torch.rand(T, 1, D))


def d2l_multihead() -> torch.Tensor:
    torch.manual_seed(42)
    x = _x()
    return D2LMultiHead()(x, x, x, torch.tensor([4]))


def d2l_additive() -> torch.Tensor:
    torch.manual_seed(43)
    queries, keys = torch.rand(1, 3, 4), torch.rand(1, T, 5)
    return Additive()(queries, keys, torch.rand(1, T, 3), torch.tensor([T]))


def seq2seq() -> torch.Tensor:
    torch.manual_seed(44)
    return AttnDecoder()(torch.rand(1, T, D), torch.tensor([[1, 4, 2]]))


def gemma() -> torch.Tensor:
    torch.manual_seed(45)
    return GemmaStyle()(_x())


def own_state() -> torch.Tensor:
    torch.manual_seed(46)
    return OwnState()(4)


HEADS = {
    "bert": (1, H), "gpt2_upcast": (1, H), "whisper": (2, H), "llama2_cache": (2, H), "gpt_fast": (2, H),
    "llama2c": (1, H), "nanochat": (1, 4), "vit": (1, H), "lecture": (H, 1), "layer_norm_block": (1, H),
    "labml": (1, H), "d2l_multihead": (1, H), "d2l_additive": (1, 1), "seq2seq": (3, 1), "gemma": (1, 4),
    "own_state": (1, 1),
}  # fmt: skip
"""Runner -> (how many attentions it computes, how many heads each has), for the tests."""
SHAPES = {"whisper": [(3, 3), (3, 5)], "llama2_cache": [(4, 4), (1, 5)], "gpt_fast": [(4, 8), (1, 8)]}
SHAPES |= {"d2l_additive": [(3, T)], "seq2seq": [(1, T)] * 3, "own_state": [(4, 4)]}
"""Runner -> (queries, keys) of each attention, where they are not (T, T)."""
