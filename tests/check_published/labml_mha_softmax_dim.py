# expect: lesson=multihead name=MultiHeadAttention exit=1 stage=weights diagnosis=softmax_dim
# labml-style layer with one mistake: the softmax runs along axis 0 of the (query, key, batch, head) scores, over
# the queries, where the sequence-first layout keeps the keys at axis 1.
import math

import torch
from torch import nn


class HeadSplit(nn.Module):
    """A linear layer whose output is cut into heads, whatever axes come before the features."""

    def __init__(self, d_model: int, heads: int, d_k: int, bias: bool):
        super().__init__()
        self.linear = nn.Linear(d_model, heads * d_k, bias=bias)
        self.heads, self.d_k = heads, d_k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        leading = x.shape[:-1]
        return self.linear(x).view(*leading, self.heads, self.d_k)


class MultiHeadAttention(nn.Module):
    def __init__(self, heads: int, d_model: int, dropout_prob: float = 0.1, bias: bool = True):
        super().__init__()
        self.d_k = d_model // heads
        self.heads = heads
        self.query = HeadSplit(d_model, heads, self.d_k, bias)
        self.key = HeadSplit(d_model, heads, self.d_k, bias)
        self.value = HeadSplit(d_model, heads, self.d_k, True)
        self.softmax = nn.Softmax(dim=0)
        self.output = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout_prob)
        self.scale = 1 / math.sqrt(self.d_k)

    def get_scores(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        return torch.einsum("ibhd,jbhd->ijbh", query, key)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq_len, batch_size, _ = x.shape
        query, key, value = self.query(x), self.key(x), self.value(x)
        scores = self.get_scores(query, key) * self.scale
        keep = torch.tril(torch.ones(seq_len, seq_len, device=x.device))[:, :, None, None]
        scores = scores.masked_fill(keep == 0, float("-inf"))
        attn = self.dropout(self.softmax(scores))
        context = torch.einsum("ijbh,jbhd->ibhd", attn, value)
        return self.output(context.reshape(seq_len, batch_size, -1))
