# expect: lesson=causal name=MaskedAttention exit=0
# Own attribute names (registration order query, key, value), a precomputed -inf mask added to the scores.
import torch
import torch.nn as nn


class MaskedAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.drop = nn.Dropout(dropout)
        future = torch.triu(torch.ones(context_length, context_length), diagonal=1)
        self.register_buffer("bias_mask", future.masked_fill(future.bool(), float("-inf")))

    def forward(self, x):
        t = x.size(1)
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = q @ k.transpose(-2, -1)
        scores = scores + self.bias_mask[:t, :t]
        w = torch.softmax(scores * k.size(-1) ** -0.5, dim=-1)
        return self.drop(w) @ v
