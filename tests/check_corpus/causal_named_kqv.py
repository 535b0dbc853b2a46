# expect: lesson=causal name=CausalAttention exit=0
# Correct, with layers named key, query, value and declared in that order (roles go by name, not by order).
import torch
import torch.nn as nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.key = nn.Linear(d_in, d_out, bias=False)
        self.query = nn.Linear(d_in, d_out, bias=False)
        self.value = nn.Linear(d_in, d_out, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.query(x), self.key(x), self.value(x)
        s = (q @ k.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        w = self.dropout(torch.softmax(s / k.shape[-1] ** 0.5, dim=-1))
        return w @ v
