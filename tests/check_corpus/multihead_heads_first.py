# expect: lesson=multihead name=MultiHeadAttention exit=0
# num_heads before context_length and dropout with a default: built by keywords, so the order does not matter.
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False):
        super().__init__()
        self.num_heads, self.head_dim, self.d_out = num_heads, d_out // num_heads, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = (
            w(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
            for w in (self.W_query, self.W_key, self.W_value)
        )
        s = (q @ k.transpose(2, 3)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        a = self.dropout(torch.softmax(s / self.head_dim**0.5, dim=-1))
        return self.out_proj((a @ v).transpose(1, 2).contiguous().view(b, n, self.d_out))
