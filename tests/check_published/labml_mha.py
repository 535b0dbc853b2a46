# expect: lesson=multihead name=MultiHeadAttention exit=0
# labml's style of multi-head attention, in our own words: the sequence comes first everywhere. The tokens go in as
# (T, batch, d_model); each projection keeps them so and splits its output into (T, batch, heads, d_k); the scores
# are einsum('ibhd,jbhd->ijbh'), (query, key, batch, head), normalised over the keys at axis 1; the context is
# einsum('ijbh,jbhd->ibhd') merged back to (T, batch, d_model) and projected. MultiHeadAttention(heads, d_model,
# dropout_prob=0.1, bias=True): its biases are on by default, its own design. This decoder layer masks causally.
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
        self.softmax = nn.Softmax(dim=1)
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
