# expect: lesson=multihead name=MultiHeadedAttention exit=0
# The Annotated Transformer's attention() helper; the layer's forward needs the caller's keep mask (1 = may attend).
import copy
import math

import torch
import torch.nn as nn


def clones(module, n):
    "Stack n independent copies of a layer."
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


def attention(query, key, value, mask, dropout=None):
    "Scaled dot-product attention; positions where mask is 0 are shut out before the softmax."
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_k, self.h = d_out // num_heads, num_heads
        self.linears = nn.ModuleList([nn.Linear(d_in, d_out, bias=False) for _ in range(3)])
        self.out = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(p=dropout)
        self.attn = None

    def forward(self, x, mask):
        "x: (batch, tokens, d_in); mask: broadcastable to (batch, heads, tokens, tokens), 1 where a token may look."
        nbatches = x.size(0)
        query, key, value = [lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2) for lin in self.linears]
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.out(x)
